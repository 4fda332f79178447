"""`judge-coverage`: the pointwise model judge, item by item, with echo checks and a calibration summary.

Fails closed: the manifest is written only after the output, its echo and the bundle metadata check out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from assay.doc.artifacts import RUNNER_VERSION, Clock, open_run, utc_now
from assay.doc.candidates import read_candidate, start_candidate_run
from assay.doc.config import DocSuite
from assay.doc.hooks import PointwiseInput
from assay.doc.model_run import RESPONSE_FILE, JudgeCallLog, ModelSettings, check_vars
from assay.doc.pointwise import (
    calibration_flags,
    count_pointwise_verdicts,
    format_pointwise_calibration_summary,
    validate_pointwise_run_metadata,
)
from assay.doc.prompts import extract_version, load_prompt_template
from assay.doc.schemas import SchemaValidationError
from assay.doc.session import adapter_module_path, adapter_session, require_hook
from assay.errors import AdapterError
from assay.judge.errors import JudgeError

__all__ = ["CoverageResult", "POINTWISE_SCHEMA", "judge_coverage"]

POINTWISE_SCHEMA = "pointwise-judge-result.schema.json"
ECHO_FIELDS = ("case_id", "model", "provider", "prompt_version", "rubric_version")
POINTWISE_VARS = (*ECHO_FIELDS, "source_material", "case_rubric", "expected_items", "candidate_path", "candidate")


@dataclass(frozen=True)
class CoverageResult:
    case_id: str
    counts: Mapping[str, int]
    result: Mapping[str, Any]
    result_dir: Path
    manifest: Mapping[str, Any]
    judge_usage: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # the judge's calls (`assay.judge.usage`)


PRIVATE_EXPECTED_ITEMS = "_expectedItemsForCanonicalization"


def _expected_items_for_canonicalization(variables: Mapping[str, Any]) -> Any:
    """What eval-kit hands `canonicalizeExpectedItemMetadata` as its second argument: the hook's
    `_expectedItemsForCanonicalization`, as returned (None, JavaScript's null, when it returned none)."""
    return variables.get(PRIVATE_EXPECTED_ITEMS)


def _unjudged(judged: list[Any], expected_items: Any) -> str:
    """`; the judge's reply has no item for a, b` when expected items (with `item_id`s) are missing from
    its answer: a hook that builds one item per expected item then makes items of nothing."""
    if not isinstance(expected_items, list):
        return ""
    answered = {item.get("item_id") for item in judged if isinstance(item, Mapping)}
    absent = [str(item["item_id"]) for item in expected_items
              if isinstance(item, Mapping) and item.get("item_id") is not None and item["item_id"] not in answered]
    return f"; the judge's reply has no item for {', '.join(absent)}" if absent else ""


def _item_line(item: Mapping[str, Any]) -> str:
    line = f"- {item['item_id']} ({item['kind']}, {item['severity']}): {item['verdict']} [{item['confidence']}]"
    if item.get("candidate_evidence"):
        line += " evidence=" + " | ".join(item["candidate_evidence"])
    return line + f" explanation={item['explanation']}"


async def judge_coverage(
    suite: DocSuite,
    settings: ModelSettings,
    *,
    case_id: str,
    candidate: str,
    run_id: str | None = None,
    fixture_label: str | None = None,
    expected_outcome: str | None = None,
    clock: Clock = utc_now,
) -> CoverageResult:
    candidate_path, case, run_id = start_candidate_run(suite, case_id, candidate, run_id, "judge-coverage", clock)
    template = load_prompt_template(suite, "pointwise_judge")
    prompt_version = extract_version(template.text, "Prompt version", template.source)
    rubric_version = extract_version(template.text, "Rubric version", template.source)
    schema = suite.schemas.get(POINTWISE_SCHEMA)
    candidate_text = read_candidate(candidate_path, candidate)
    adapter_path = adapter_module_path(suite)
    if adapter_path is None:
        raise AdapterError(
            "judge-coverage requires an adapter exporting resolve_pointwise_vars or resolvePointwiseVars"
        )
    async with adapter_session(suite, adapter_path) as adapter:
        export = require_hook(adapter, "pointwise", "judge-coverage")
        bundle = open_run(suite, run_id, clock=clock, node_version=adapter.node_version)
        hook_input = PointwiseInput(
            case.case_id,
            case.case_dir,
            case.artifacts,
            candidate_text,
            candidate_path,
            prompt_version,
            rubric_version,
            settings.model,
            settings.provider,
            suite.resolver,
        )
        variables = check_vars(await adapter.call(export, hook_input), export, POINTWISE_VARS, template)
        expected = {
            "case_id": case.case_id,
            "model": settings.model,
            "provider": settings.provider,
            "prompt_version": prompt_version,
            "rubric_version": rubric_version,
        }

        def check_echo(output: Mapping[str, Any]) -> None:
            # Inside the call's check, so an answer that echoes the wrong case or model is never cached.
            for name in ECHO_FIELDS:
                if output[name] != expected[name]:
                    raise JudgeError(f"{name} mismatch in result: expected {expected[name]}, received {output[name]}")

        log = JudgeCallLog(bundle, template.source, template.text)
        try:
            async with settings.client() as client:
                judge_usage = client.usage
                result = await log.ask(
                    client, settings, variables, schema=schema, label="pointwise judge output", check=check_echo
                )
        finally:
            log_artifacts = log.write()
        canonicalize = adapter.export_for("canonicalize")
        if canonicalize is not None:  # as eval-kit: whenever the adapter exports it
            expected_items = _expected_items_for_canonicalization(variables)
            try:
                items = await adapter.call(canonicalize, result["items"], expected_items)
            except AdapterError as error:
                if expected_items is not None or PRIVATE_EXPECTED_ITEMS in variables:
                    raise
                raise AdapterError(
                    f"{error}; {export} returned no {PRIVATE_EXPECTED_ITEMS}, so {canonicalize} was given "
                    f"{'null' if adapter.uses_node else 'None'} as its expected items: return them from {export}"
                ) from error
            judged = result["items"]
            result = {**result, "items": items}
            # eval-kit stored the canonicalised items unchecked; they must still satisfy the schema.
            try:
                suite.schemas.validate(POINTWISE_SCHEMA, result, "canonicalized pointwise result")
            except SchemaValidationError as error:
                raise SchemaValidationError(
                    f"{error} ({canonicalize} in {suite.resolver.relative_to_repo(adapter_path)} returned it"
                    f"{_unjudged(judged, expected_items)}; the raw reply is saved in "
                    f"{bundle.relative_to_repo(RESPONSE_FILE)})"
                ) from None
    bundle.write_json("pointwise-result.json", result)
    counts = count_pointwise_verdicts(result["items"])
    flags = calibration_flags(result["items"], expected_outcome) if expected_outcome else None
    summary = format_pointwise_calibration_summary(
        counts=counts,
        fixture_label=fixture_label,
        expected_outcome=expected_outcome,
        false_pass=flags.false_pass if flags else None,
        false_fail=flags.false_fail if flags else None,
        notes=flags.notes if flags else None,
    )
    report = "\n".join(
        [
            f"# Pointwise Judge Report: {case.case_id}",
            "",
            f"Model: {settings.model}",
            f"Provider: {settings.provider}",
            f"Auth mode: {settings.endpoint.auth_mode}",
            f"Prompt version: {prompt_version}",
            f"Rubric version: {rubric_version}",
            f"Candidate: {suite.resolver.relative_to_repo(candidate_path)}",
            "",
            "## Coverage Summary",
            "",
            *(f"- {verdict}: {count}" for verdict, count in counts.items()),
            "",
            summary,
            "## Item Results",
            "",
            *(_item_line(item) for item in result["items"]),
            "",
        ]
    )
    bundle.write_text("report.md", report)
    manifest = bundle.build_manifest(
        run_type="judge-coverage",
        runner_suffix="pointwise-judge",
        case_ids=[case.case_id],
        artifacts=[("report", "report.md"), ("pointwise_result", "pointwise-result.json"), *log_artifacts],
        extra={**settings.manifest_fields(), "prompt_version": prompt_version, "rubric_version": rubric_version},
    )
    validate_pointwise_run_metadata(
        manifest,
        {
            "run_id": run_id,
            **expected,
            "reasoning_effort": settings.effort,
            "runner_version": RUNNER_VERSION,
        },
    )
    bundle.write_manifest(manifest)
    return CoverageResult(case.case_id, counts, result, bundle.run_dir, manifest, judge_usage)
