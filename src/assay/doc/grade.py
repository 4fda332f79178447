"""`run-case`: grade one candidate deterministically with the adapter and write the result bundle.

The adapter decides the verdict; the kit validates it, records it, and fails the command on `red`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence

from assay.core.jsonvalue import check_json_like
from assay.doc.adapter import DocAdapter
from assay.doc.artifacts import Clock, RunBundle, open_run, utc_now
from assay.doc.candidates import read_candidate, start_candidate_run
from assay.doc.cases import load_grader_inputs
from assay.doc.config import DocSuite
from assay.doc.hooks import GradeInput, ReportInput
from assay.doc.session import adapter_module_path, adapter_session
from assay.errors import AdapterError, JsonValueError

__all__ = ["CaseRunResult", "GRADES_SCHEMA", "deterministic_modules", "run_case"]

GRADES_SCHEMA = "grades.schema.json"


@dataclass(frozen=True)
class CaseRunResult:
    case_id: str
    verdict: str
    findings: Sequence[Mapping[str, Any]]
    result_dir: Path
    manifest: Mapping[str, Any]


@dataclass(frozen=True)
class _Modules:
    grader: DocAdapter
    grade_export: str
    reporter: DocAdapter
    report_export: str


def _legacy_name(suite: DocSuite, kind: str, table: Mapping[str, str]) -> str | None:
    deterministic = suite.method("deterministic") or {}
    defaults = suite.raw.get("runner_defaults") or {}
    name = deterministic.get(kind) or defaults.get(kind)
    if name:
        return name
    return next(iter(table), None)


def _no_module_hint(suite: DocSuite, kind: str, name: str | None, table: Mapping[str, str]) -> str:
    """What to set when run-case finds no grader or reporter module (eval-kit said only that there was none)."""
    where = suite.relative_config_path()
    if name and table:
        return f" ({kind} {name!r} is not in {kind}s in {where}; it has {', '.join(sorted(table))})"
    if (suite.raw.get("hooks") or {}).get("module"):  # eval-kit's run-case never read hooks.module either
        return f" (run-case does not use hooks.module; name that module in adapter in {where})"
    return f" (set adapter, the module with the grading hooks, in {where})"


@contextlib.asynccontextmanager
async def deterministic_modules(suite: DocSuite) -> AsyncIterator[_Modules]:
    """The adapter serves both roles; without one, the legacy `graders`/`reporters` maps are used (`doctor`
    loads them this way too)."""
    async with contextlib.AsyncExitStack() as stack:
        adapter_path = adapter_module_path(suite, allow_hooks_module=False)
        if adapter_path is not None:
            adapter = await stack.enter_async_context(adapter_session(suite, adapter_path))
            grader = reporter = adapter
        else:
            graders = suite.raw.get("graders") or {}
            reporters = suite.raw.get("reporters") or {}
            grader_name = _legacy_name(suite, "grader", graders)
            reporter_name = _legacy_name(suite, "reporter", reporters)
            if not grader_name or grader_name not in graders:
                raise AdapterError(f"no grader configured{_no_module_hint(suite, 'grader', grader_name, graders)}")
            if not reporter_name or reporter_name not in reporters:
                hint = _no_module_hint(suite, "reporter", reporter_name, reporters)
                raise AdapterError(f"no reporter configured{hint}")
            grader_path = suite.module_path(graders[grader_name], f"graders.{grader_name}")
            reporter_path = suite.module_path(reporters[reporter_name], f"reporters.{reporter_name}")
            grader = await stack.enter_async_context(adapter_session(suite, grader_path))
            reporter = (
                grader
                if reporter_path == grader_path
                else await stack.enter_async_context(adapter_session(suite, reporter_path))
            )
        grade_export = grader.export_for("grade")
        if grade_export is None:  # eval-kit's words, then ours
            raise AdapterError("grader module does not export a grading function: the adapter exports no "
                               "grade_candidate/gradeCandidate")
        report_export = reporter.export_for("report")
        if report_export is None:
            raise AdapterError("reporter module does not export a report rendering function: the adapter exports no "
                               "render_report/renderDeterministicReport")
        yield _Modules(grader, grade_export, reporter, report_export)


def _grades(case_id: str, graded: Any) -> dict[str, Any]:
    try:
        check_json_like(graded, "grader result")
    except JsonValueError as error:
        raise AdapterError(str(error)) from None
    if not isinstance(graded, dict):
        return {"case_id": case_id, "verdict": None, "findings": None}
    return {"case_id": case_id, "verdict": graded.get("verdict"), "findings": graded.get("findings")}


_GRADES_SHAPE = (
    "it must return {verdict: red|yellow|green|great, findings: [{id, kind, severity, verdict, evidence}, ...]}, "
    "each finding's fields non-empty strings"
)


def _validated_grades(suite: DocSuite, modules: _Modules, case_id: str, graded: Any) -> dict[str, Any]:
    """The grades, or eval-kit's `grades failed schema validation: …` followed by which hook returned
    them and what they must look like: the schema's words alone (`/verdict must be equal to one of the
    allowed values`) named neither the adapter nor the values it allows."""
    from assay.doc.paths import relative_posix
    from assay.doc.schemas import SchemaValidationError

    grades = _grades(case_id, graded)
    try:
        return suite.schemas.validate(GRADES_SCHEMA, grades, "grades")
    except SchemaValidationError as error:
        where = relative_posix(suite.repo_root, modules.grader.path) or str(modules.grader.path)
        if graded is None or not isinstance(graded, dict):
            kinds = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
            returned = "returned nothing" if graded is None else (
                f"returned {kinds.get(type(graded), 'a value')}, not an object"
            )
        elif isinstance(grades["verdict"], str) and grades["verdict"] not in ("red", "yellow", "green", "great"):
            returned = f"returned verdict {grades['verdict']!r}"
        else:
            returned = "returned grades the schema refuses"
        raise SchemaValidationError(f"{error} ({modules.grade_export} in {where} {returned}; {_GRADES_SHAPE})") from None


_RETURNED_KINDS = {list: "a list (array)", dict: "an object", bool: "a boolean", int: "a number", float: "a number"}


def _not_a_report(suite: DocSuite, modules: _Modules, report: Any) -> str:
    """What the reporter returned instead of Markdown, in words a JavaScript author reads too: Python's
    type names (`got list`, `got NoneType`) named neither the hook nor the usual slip, lines not joined."""
    from assay.doc.paths import relative_posix

    where = relative_posix(suite.repo_root, modules.reporter.path) or str(modules.reporter.path)
    returned = "nothing" if report is None else _RETURNED_KINDS.get(type(report), "a value that is not a string")
    hint = " (join the lines with newlines)" if isinstance(report, list) else ""
    return (f"the reporter must return a Markdown string: {modules.report_export} in {where} returned "
            f"{returned}{hint}")


async def run_case(
    suite: DocSuite,
    *,
    case_id: str,
    candidate: str,
    run_id: str | None = None,
    clock: Clock = utc_now,
) -> CaseRunResult:
    """Grade `candidate` for `case_id`, write the bundle (manifest last) and return the verdict."""
    candidate_path, case, run_id = start_candidate_run(suite, case_id, candidate, run_id, "deterministic", clock)
    grader_inputs = load_grader_inputs(case)
    candidate_text = read_candidate(candidate_path, candidate)
    async with deterministic_modules(suite) as modules:
        bundle: RunBundle = open_run(
            suite, run_id, clock=clock, node_version=modules.grader.node_version or modules.reporter.node_version
        )
        graded = await modules.grader.call(
            modules.grade_export, GradeInput(case.case_id, candidate_text, grader_inputs)
        )
        grades = _validated_grades(suite, modules, case.case_id, graded)
        findings = grades["findings"]
        candidate_copy = f"cases/{case.case_id}/candidate.md"
        grader_output = f"cases/{case.case_id}/grader-output.json"
        bundle.write_bytes(candidate_copy, candidate_path.read_bytes())
        bundle.write_json(grader_output, {"findings": findings})
        bundle.write_json("grades.json", grades)
        report = await modules.reporter.call(
            modules.report_export,
            ReportInput(case.case_id, grades, findings, case.case_dir, candidate_path, suite.resolver),
        )
        if not isinstance(report, str):
            raise AdapterError(_not_a_report(suite, modules, report))
        bundle.write_text("report.md", report + "\n")
    manifest = bundle.build_manifest(
        run_type="deterministic",
        runner_suffix="eval-case",
        case_ids=[case.case_id],
        artifacts=[
            ("grades", "grades.json"),
            ("report", "report.md"),
            ("candidate_markdown", candidate_copy),
            ("grader_output", grader_output),
        ],
        output_files=["manifest.json", "grades.json", "report.md", candidate_copy, grader_output],
    )
    bundle.write_manifest(manifest)
    return CaseRunResult(case.case_id, grades["verdict"], findings, bundle.run_dir, manifest)
