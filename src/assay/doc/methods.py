"""The doc methods the pipeline runs: one frozen request per method, and the registry that runs it.

A method runs over one case and writes a result bundle (its manifest last); the registry entry says
how to run it, what the command prints when it is done, its exit code, and its run record (the
graded and judged methods are recorded; `generate` and `report` only write their bundle).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from assay.core.record import RunManifest, UnitResult
from assay.errors import EXIT_GATE_FAILED

__all__ = [
    "METHODS", "CoverageRequest", "DocConclusion", "DocMethod", "DocRequest", "GenerateRequest", "PairwiseRequest",
    "ReportRequest", "RunCaseRequest",
]


@dataclass(frozen=True)
class RunCaseRequest:
    """`doc run-case`: grade a candidate deterministically (`recorded`: the options as given, for the record)."""

    method: ClassVar[str] = "run-case"
    suite: Any  # DocSuite
    case_id: str
    candidate: str
    run_id: str | None = None
    recorded: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CoverageRequest:
    """`doc judge-coverage`: the pointwise model judge, item by item (advisory)."""

    method: ClassVar[str] = "judge-coverage"
    suite: Any  # DocSuite
    settings: Any  # ModelSettings
    case_id: str
    candidate: str
    run_id: str | None = None
    fixture_label: str | None = None
    expected_outcome: str | None = None
    recorded: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PairwiseRequest:
    """`doc judge-pairwise`: the pairwise model judge in a seeded display order."""

    method: ClassVar[str] = "judge-pairwise"
    suite: Any  # DocSuite
    settings: Any  # ModelSettings
    case_id: str
    candidate_a: str
    candidate_b: str
    seed: int
    run_id: str
    both_orders: bool = False
    recorded: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GenerateRequest:
    """`doc generate`: one candidate written by the model."""

    method: ClassVar[str] = "generate"
    suite: Any  # DocSuite
    settings: Any  # ModelSettings
    case_id: str
    run_id: str


@dataclass(frozen=True)
class ReportRequest:
    """`doc report`: a manual report the adapter compiles from earlier runs."""

    method: ClassVar[str] = "report"
    suite: Any  # DocSuite
    run_id: str
    runs: Mapping[str, str] = field(default_factory=dict)


DocRequest = RunCaseRequest | CoverageRequest | PairwiseRequest | GenerateRequest | ReportRequest
Record = tuple[RunManifest, Sequence[UnitResult]]


@dataclass(frozen=True)
class DocConclusion:
    """What a finished method comes to: its exit code, the lines it prints, and its run record (None:
    not recorded)."""

    exit_code: int
    lines: tuple[str, ...]
    record: Callable[[], Record] | None = None
    failure: str | None = None  # said on stderr as well (eval-kit's line for a red verdict)


Request = TypeVar("Request")
Result = TypeVar("Result")


@dataclass(frozen=True)
class DocMethod(Generic[Request, Result]):
    run: Callable[[Request], Awaitable[Result]]  # writes the result bundle, its manifest last
    conclude: Callable[[Request, Result], DocConclusion]
    id_prefix: str | None = None  # the bundle id's prefix when none is given (None: --run-id is required)


def _relative(suite: Any, path: Path) -> str:
    return str(suite.resolver.relative_to_repo(path))


def _candidate(suite: Any, given: str) -> Path:
    from assay.doc.candidates import resolve_candidate

    return resolve_candidate(suite, given)


# -- run-case ------------------------------------------------------------------------------------
async def _run_case(request: RunCaseRequest) -> Any:
    from assay.doc.grade import run_case

    return await run_case(request.suite, case_id=request.case_id, candidate=request.candidate, run_id=request.run_id)


def _run_case_conclusion(request: RunCaseRequest, result: Any) -> DocConclusion:
    from assay.doc import units

    candidate = result.result_dir / "cases" / result.case_id / "candidate.md"
    failed = _failed_item_lines(result.findings) if result.verdict == "red" else ()
    return DocConclusion(
        EXIT_GATE_FAILED if result.verdict == "red" else 0,
        (f"Verdict: {result.verdict}", *failed, f"Results: {_relative(request.suite, result.result_dir)}"),
        lambda: units.run_case_record(result, candidate, request.recorded),
        "Deterministic grading failed (verdict red)" if result.verdict == "red" else None,
    )


_LISTED_ITEMS = 20  # failed items printed under a red verdict; report.md has them all


def _failed_item_lines(findings: Any) -> tuple[str, ...]:
    """What made a verdict red, one line per item (method, item, why), as the agent and video
    consoles list their failures: `  FAILED deterministic goal (critical): missing - not found: …`."""
    from assay.doc.units import adverse_findings

    adverse = adverse_findings(findings)
    lines = []
    for item in adverse[:_LISTED_ITEMS]:
        severity = f" ({item['severity']})" if item.get("severity") else ""
        evidence = f" - {_one_line(item['evidence'])}" if item.get("evidence") not in (None, "", []) else ""
        lines.append(f"  FAILED deterministic {item.get('id')}{severity}: {item.get('verdict')}{evidence}")
    if len(adverse) > _LISTED_ITEMS:
        lines.append(f"  … {len(adverse) - _LISTED_ITEMS} more in report.md")
    return tuple(lines)


def _one_line(value: Any, limit: int = 200) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- judge-coverage ------------------------------------------------------------------------------
async def _judge_coverage(request: CoverageRequest) -> Any:
    from assay.doc.coverage import judge_coverage

    return await judge_coverage(
        request.suite, request.settings, case_id=request.case_id, candidate=request.candidate, run_id=request.run_id,
        fixture_label=request.fixture_label, expected_outcome=request.expected_outcome,
    )


def _coverage_conclusion(request: CoverageRequest, result: Any) -> DocConclusion:
    from assay.doc import units

    counts = ", ".join(f"{verdict}: {count}" for verdict, count in result.counts.items())
    return DocConclusion(
        0, (counts, f"Results: {_relative(request.suite, result.result_dir)}"),
        lambda: units.coverage_run_record(
            result, _candidate(request.suite, request.candidate), request.recorded, request.settings.model
        ),
    )


# -- judge-pairwise ------------------------------------------------------------------------------
async def _judge_pairwise(request: PairwiseRequest) -> Any:
    from assay.doc.judge_pairwise import judge_pairwise

    return await judge_pairwise(
        request.suite, request.settings, case_id=request.case_id, candidate_a=request.candidate_a,
        candidate_b=request.candidate_b, seed=request.seed, run_id=request.run_id, both_orders=request.both_orders,
    )


def _pairwise_conclusion(request: PairwiseRequest, result: Any) -> DocConclusion:
    from assay.doc import units

    lines = [f"Winner: {result.winner}"]
    if result.position_consistent is not None:
        lines.append(f"Position consistent: {'true' if result.position_consistent else 'false'}")
    lines.append(f"Results: {_relative(request.suite, result.result_dir)}")
    candidates = [_candidate(request.suite, request.candidate_a), _candidate(request.suite, request.candidate_b)]
    return DocConclusion(
        0, tuple(lines), lambda: units.pairwise_run_record(result, candidates, request.recorded, request.settings.model)
    )


# -- generate and report -------------------------------------------------------------------------
async def _generate(request: GenerateRequest) -> Any:
    from assay.doc.generate import generate_candidate

    return await generate_candidate(request.suite, request.settings, case_id=request.case_id, run_id=request.run_id)


def _generate_conclusion(request: GenerateRequest, result: Any) -> DocConclusion:
    return DocConclusion(0, (
        f"Candidate: {_relative(request.suite, result.candidate_path)}",
        f"Results: {_relative(request.suite, result.result_dir)}",
    ))


async def _compile_report(request: ReportRequest) -> Any:
    from assay.doc.manual_report import compile_report

    return await compile_report(request.suite, run_id=request.run_id, runs=request.runs)


def _report_conclusion(request: ReportRequest, result: Any) -> DocConclusion:
    return DocConclusion(0, (f"Report: {_relative(request.suite, result.result_dir / 'report.md')}",))


METHODS: Mapping[str, DocMethod[Any, Any]] = {
    "run-case": DocMethod(_run_case, _run_case_conclusion, "deterministic"),
    "judge-coverage": DocMethod(_judge_coverage, _coverage_conclusion, "judge-coverage"),
    "judge-pairwise": DocMethod(_judge_pairwise, _pairwise_conclusion),
    "generate": DocMethod(_generate, _generate_conclusion),
    "report": DocMethod(_compile_report, _report_conclusion),
}
