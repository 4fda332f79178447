"""Pointwise judge results: verdict counts, the calibration summary, and run-metadata validation.

Advisory numbers for people: model verdicts never change a deterministic result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from assay.errors import CaseError

__all__ = [
    "CALIBRATION_OUTCOMES",
    "DEFAULT_REQUIRED_ROLES",
    "POINTWISE_VERDICTS",
    "CalibrationFlags",
    "calibration_flags",
    "count_pointwise_verdicts",
    "format_pointwise_calibration_summary",
    "format_pointwise_verdict_counts",
    "validate_pointwise_run_metadata",
]

POINTWISE_VERDICTS = ("covered", "partial", "missing", "contradicted", "unknown")
ADVERSE_VERDICTS = ("partial", "missing", "contradicted")
CALIBRATION_OUTCOMES = ("expected-good", "expected-bad")
DEFAULT_SUMMARY_TITLE = "Advisory Pointwise Model-Judge Summary"
ADVISORY_SENTENCE = (  # eval-kit's words
    "Model-judge evidence is manual and advisory. It cannot upgrade deterministic red or yellow results."
)
DEFAULT_REQUIRED_ROLES = ("report", "pointwise_result", "judge_request", "raw_judge_response")
# The roles of an eval-kit (promptfoo) judge-coverage bundle: a manifest that lists any of its promptfoo files is held
# to eval-kit's own required roles, so an eval-kit run's manifest validates here as it did there.
EVAL_KIT_REQUIRED_ROLES = (
    "report", "pointwise_result", "promptfoo_config", "raw_promptfoo_results", "promptfoo_html_report",
)
# eval-kit's `expected` keys (camelCase, `effort`) for the snake_case ones this function documents.
_EXPECTED_ALIASES = {
    "run_id": "runId", "case_id": "caseId", "reasoning_effort": "effort", "prompt_version": "promptVersion",
    "rubric_version": "rubricVersion", "runner_version": "runnerVersion", "required_roles": "requiredArtifactRoles",
}


def count_pointwise_verdicts(items: Any) -> dict[str, int]:
    if not isinstance(items, list):
        raise CaseError("pointwise items must be a list")
    counts = dict.fromkeys(POINTWISE_VERDICTS, 0)
    for item in items:
        verdict = item.get("verdict") if isinstance(item, Mapping) else None
        if verdict not in counts:
            raise CaseError(f"unknown pointwise verdict {verdict!r}")
        counts[verdict] += 1
    return counts


def format_pointwise_verdict_counts(counts: Mapping[str, int]) -> list[str]:
    return [f"- {verdict}: {counts.get(verdict, 0)}" for verdict in POINTWISE_VERDICTS]


@dataclass(frozen=True, slots=True)
class CalibrationFlags:
    """What a reviewer should look at, given the fixture's expected outcome (advisory, not a verdict)."""

    false_pass: str
    false_fail: str
    notes: str


def _item_ids(items: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(str(item.get("item_id")) for item in items)


def calibration_flags(items: Sequence[Mapping[str, Any]], expected_outcome: str) -> CalibrationFlags:
    """Flag possible false passes/fails on critical items for a labelled fixture.

    expected-good: an adverse verdict on a critical item may be a false fail. expected-bad: a
    `covered` critical item may be the targeted defect slipping through (a false pass). Repeated
    `unknown` verdicts point at an ambiguous prompt or item.
    """
    if expected_outcome not in CALIBRATION_OUTCOMES:
        raise CaseError(f"expected outcome must be one of {', '.join(CALIBRATION_OUTCOMES)}, got {expected_outcome}")
    critical = [item for item in items if item.get("severity") == "critical"]
    unknown = [item for item in items if item.get("verdict") == "unknown"]
    notes = (
        f"repeated unknown verdicts ({_item_ids(unknown)}): review the prompt or items" if len(unknown) > 1 else "none"
    )
    if expected_outcome == "expected-good":
        adverse = [item for item in critical if item.get("verdict") in ADVERSE_VERDICTS]
        false_fail = f"review {_item_ids(adverse)} (critical, judged adverse)" if adverse else "none flagged"
        return CalibrationFlags("not applicable (expected-good fixture)", false_fail, notes)
    covered = [item for item in critical if item.get("verdict") == "covered"]
    false_pass = f"review {_item_ids(covered)} (critical, judged covered)" if covered else "none flagged"
    return CalibrationFlags(false_pass, "not applicable (expected-bad fixture)", notes)


def format_pointwise_calibration_summary(
    *,
    counts: Mapping[str, int],
    title: str = DEFAULT_SUMMARY_TITLE,
    fixture_label: str | None = None,
    expected_outcome: str | None = None,
    false_pass: str | None = None,
    false_fail: str | None = None,
    notes: str | None = None,
) -> str:
    lines = [
        f"## {title}",
        "",
        ADVISORY_SENTENCE,
        "",
        "### Verdict Counts",
        "",
        *format_pointwise_verdict_counts(counts),
        "",
        "### Calibration Record",
        "",
        f"- fixture label: {fixture_label or 'not recorded'}",
        f"- expected outcome: {expected_outcome or 'not recorded'}",
        f"- false pass: {false_pass or 'not reviewed'}",
        f"- false fail: {false_fail or 'not reviewed'}",
        f"- notes: {notes or 'not reviewed'}",
    ]
    return "\n".join(lines) + "\n"


def _check_strict_relative(path: Any, label: str) -> None:
    """eval-kit's strict rule, its checks in its order (so `./x` is a `.` segment, as eval-kit says)."""
    if not isinstance(path, str) or not path.strip() or path != path.strip():
        raise CaseError(f"{label} must be a relative contained path")
    if "\\" in path or path.startswith("/") or path.startswith("../"):
        raise CaseError(f"{label} must be a relative contained path: {path}")
    if any(segment in {".", ".."} for segment in path.split("/")):
        raise CaseError(f"{label} must not contain . or .. path segments: {path}")
    if "//" in path:
        raise CaseError(f"{label} must be a relative contained path (normalized): {path}")


def _blank(value: Any) -> bool:
    return not isinstance(value, str) or not value.strip()


def validate_pointwise_run_metadata(manifest: Any, expected: Mapping[str, Any] | None = None) -> None:
    """Check a judge-coverage manifest against the run that produced it (eval-kit's order and wording).

    `expected` keys: run_id, case_id, model, provider, reasoning_effort, prompt_version,
    rubric_version, runner_version, and optionally required_roles; a key left out (or None) is not
    compared, only required to be non-blank, as in eval-kit. eval-kit's own names (runId, caseId, effort,
    promptVersion, rubricVersion, runnerVersion, requiredArtifactRoles) are read too; required roles given
    as an empty list require none, as there. The required roles default to
    assay's (report, pointwise_result, judge_request, raw_judge_response), or to eval-kit's when the manifest
    lists a promptfoo file (report, pointwise_result, promptfoo_config, raw_promptfoo_results,
    promptfoo_html_report).
    """
    given = expected or {}
    expected = {key: given.get(key, given.get(_EXPECTED_ALIASES.get(key, key))) for key in (
        "run_id", "case_id", "model", "provider", "reasoning_effort", "prompt_version", "rubric_version",
        "runner_version", "required_roles",
    )}
    if not isinstance(manifest, Mapping):
        raise CaseError("pointwise run manifest must be an object")
    if _blank(manifest.get("run_id")):
        raise CaseError("pointwise run manifest missing run_id")
    if expected.get("run_id") is not None and manifest["run_id"] != expected["run_id"]:
        raise CaseError(f"run_id mismatch: expected {expected['run_id']}, received {manifest['run_id']}")
    if manifest.get("run_type") != "judge-coverage":
        raise CaseError(f"run_type mismatch: expected judge-coverage, received {manifest.get('run_type')}")
    case_ids = manifest.get("case_ids")
    if not isinstance(case_ids, list) or len(case_ids) != 1:
        raise CaseError(f"pointwise run manifest must contain exactly one case id, received {case_ids}")
    if _blank(case_ids[0]):
        raise CaseError("pointwise run manifest missing case_id")
    if expected.get("case_id") is not None and case_ids[0] != expected["case_id"]:
        raise CaseError(f"case_ids mismatch: expected [{expected['case_id']}], received {case_ids}")
    runner = manifest.get("runner") if isinstance(manifest.get("runner"), Mapping) else {}
    actual_values = {
        "model": manifest.get("model"),
        "provider": manifest.get("provider"),
        "reasoning_effort": manifest.get("reasoning_effort"),
        "prompt_version": manifest.get("prompt_version"),
        "rubric_version": manifest.get("rubric_version"),
        "runner.version": runner.get("version"),
    }
    expected_values = {
        **{key: expected.get(key) for key in actual_values},
        "runner.version": expected.get("runner_version"),
    }
    for key, actual in actual_values.items():
        wanted = expected_values[key]
        if key == "reasoning_effort" and actual is None and wanted is None:
            continue
        if _blank(actual):
            raise CaseError(f"pointwise run manifest missing {key}")
        if wanted is not None and actual != wanted:  # as eval-kit: a value not expected is only required
            raise CaseError(f"{key} mismatch: expected {wanted}, received {actual}")
    artifacts = manifest.get("artifacts")
    if not isinstance(artifacts, list) or not artifacts:
        raise CaseError("pointwise run manifest must list artifacts")
    roles = set()
    for artifact in artifacts:
        role = artifact.get("role") if isinstance(artifact, Mapping) else None
        if _blank(role):
            raise CaseError("pointwise run manifest artifact missing role")
        _check_strict_relative(artifact.get("path"), f"artifact {role} path")
        roles.add(role)
    eval_kit_bundle = bool(roles & {"promptfoo_config", "raw_promptfoo_results", "promptfoo_html_report"})
    required = expected.get("required_roles")
    if required is None:
        required = EVAL_KIT_REQUIRED_ROLES if eval_kit_bundle else DEFAULT_REQUIRED_ROLES
    for role in required:
        if role not in roles:
            raise CaseError(f"pointwise run manifest missing artifact role {role}")
    output_files = manifest.get("output_files")
    if not isinstance(output_files, list):
        raise CaseError("pointwise run manifest output_files must be an array")
    for path in output_files:
        _check_strict_relative(path, "output_files entry")
    if "manifest.json" not in output_files:
        raise CaseError("pointwise run manifest output_files missing manifest.json")
    for artifact in artifacts:
        if artifact["path"] not in output_files:
            raise CaseError(f"pointwise run manifest output_files missing artifact path {artifact['path']}")
