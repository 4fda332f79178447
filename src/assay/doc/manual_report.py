"""`report`: a manual combined report compiled by the adapter from earlier runs, bundled with a manifest.

The adapter chooses the content and extra files; the kit checks every file stays in the run directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from assay.doc.artifacts import Clock, open_run, utc_now
from assay.doc.config import DocSuite
from assay.doc.hooks import CompileReportInput
from assay.doc.paths import assert_safe_id
from assay.doc.session import adapter_module_path, adapter_session, require_hook
from assay.errors import AdapterError

__all__ = ["REPORT_RUN_KEYS", "ReportResult", "compile_report"]

REPORT_RUN_KEYS = ("generate", "deterministic", "judge-coverage", "judge", "outcome")


@dataclass(frozen=True)
class ReportResult:
    case_ids: tuple[str, ...]
    result_dir: Path
    manifest: Mapping[str, Any]


def _field(value: Mapping[str, Any], snake: str, camel: str, default: Any) -> Any:
    if snake in value:
        return value[snake]
    return value.get(camel, default)


# The fields the kit reads, each by its snake_case or eval-kit's camelCase name.
_RESULT_FIELDS = (("report_content", "reportContent"), ("case_ids", "caseIds"), ("artifacts",),
                  ("output_files", "outputFiles"))
_ARTIFACT_FIELDS = (("role",), ("path",), ("media_type", "mediaType"))


def _misspelt_field(returned: Mapping[str, Any], fields: tuple[tuple[str, ...], ...], what: str) -> None:
    """A key one typo away from a field it lacks is refused: fields are read by exact name, so `artifact`
    (for `artifacts`) or `output_file` left the adapter's files out of the manifest, and the run passed."""
    from assay.core.format import did_you_mean

    names = [name for names in fields for name in names]
    absent = [name for names in fields if not any(name in returned for name in names) for name in names]
    for key in returned:
        if key in names or not isinstance(key, str):
            continue
        meant = did_you_mean(key, absent, cutoff=0.8, form="{}", shown=str)
        if meant:
            raise AdapterError(f"compile_report returned {what}{key!r}, which is no field it reads (did you mean "
                               f"{meant}?); fields are read by exact name ({', '.join(names)}), so rename it")


def _string_list(value: Any, label: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise AdapterError(f"compile_report {label} must be a list of strings")
    return value


async def compile_report(
    suite: DocSuite, *, run_id: str, runs: Mapping[str, str], clock: Clock = utc_now
) -> ReportResult:
    """Run ids in `runs` are checked as safe ids here (eval-kit left that to the adapter)."""
    assert_safe_id(run_id, "run id")
    for key, value in runs.items():
        if key not in REPORT_RUN_KEYS:
            raise AdapterError(f"unknown report source {key}")
        assert_safe_id(value, f"--{key} run id")
    adapter_path = adapter_module_path(suite)
    if adapter_path is None:
        raise AdapterError("report requires an adapter exporting compile_report or compileReport")
    async with adapter_session(suite, adapter_path) as adapter:
        export = require_hook(adapter, "compile_report", "report")
        bundle = open_run(suite, run_id, clock=clock, node_version=adapter.node_version)
        compiled = await adapter.call(
            export, CompileReportInput(suite, run_id, dict(runs), bundle.run_dir, suite.resolver)
        )
    if not isinstance(compiled, Mapping):
        raise AdapterError("compile_report must return an object")
    _misspelt_field(compiled, _RESULT_FIELDS, "")
    content = _field(compiled, "report_content", "reportContent", None)
    if not isinstance(content, str):
        raise AdapterError("compile_report must return report_content (reportContent) as a string")
    # Missing lists crashed eval-kit; absent means "none" here.
    case_ids = _string_list(_field(compiled, "case_ids", "caseIds", []), "case_ids")
    extra_artifacts = _field(compiled, "artifacts", "artifacts", [])
    output_files = _string_list(_field(compiled, "output_files", "outputFiles", []), "output_files")
    if not isinstance(extra_artifacts, list):
        raise AdapterError("compile_report artifacts must be a list")
    bundle.write_text("report.md", content + "\n")
    records: list[tuple[str, str, str | None]] = [("report", "report.md", None)]
    for entry in extra_artifacts:
        if not isinstance(entry, Mapping):
            raise AdapterError("compile_report artifacts entries must be objects with role and path")
        _misspelt_field(entry, _ARTIFACT_FIELDS, "an artifact with ")
        records.append((entry.get("role"), entry.get("path"), _field(entry, "media_type", "mediaType", None)))
    for path in output_files:
        bundle.path(path, "compile_report output file")
    manifest = bundle.build_manifest(
        run_type="manual-report",
        runner_suffix="manual-report",
        case_ids=case_ids,
        artifacts=records,
        output_files=["manifest.json", "report.md", *output_files],
    )
    bundle.write_manifest(manifest)
    return ReportResult(tuple(case_ids), bundle.run_dir, manifest)
