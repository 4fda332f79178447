"""`doc` in the run pipeline: a graded or judged method over one case, its console lines and record.

The command line loads the suite and checks the options with eval-kit's stage prefixes; a request
holds what it checked. Every failure of the method itself is `Execution failed: <message>` on
stderr with exit 2; only a red verdict exits 1.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from assay.core.run_events import RunEvents, RunFinished, RunStarted, UnitDurable
from assay.errors import EXIT_ERROR, EXIT_GATE_FAILED, AssayError

__all__ = ["DOC", "DocKind", "DocMethodRequest"]

METHODS = ("run-case", "judge-coverage", "judge-pairwise")


@dataclass(frozen=True)
class DocMethodRequest:
    """One method run over one case: the loaded suite, the method's own arguments as the command
    passes them to it, and the options recorded with the run (as given on the command line)."""

    kind: ClassVar[str] = "doc"

    method: str
    suite: Any  # DocSuite
    arguments: Mapping[str, Any] = field(default_factory=dict)
    recorded: Mapping[str, Any] = field(default_factory=dict)
    settings: Any = None  # ModelSettings for the judges
    junit: str | None = None
    json: bool = False  # NDJSON events on stdout instead of eval-kit's lines
    quiet: bool = True  # one unit: a progress line would say nothing the result does not


@dataclass(frozen=True)
class DocConclusion:
    lines: tuple[str, ...]  # what the command prints on success


def _relative(request: DocMethodRequest, path: Path) -> str:
    return str(request.suite.resolver.relative_to_repo(path))


async def _run_method(request: DocMethodRequest) -> Any:
    if request.method == "run-case":
        from assay.doc.grade import run_case

        return await run_case(request.suite, **request.arguments)
    if request.method == "judge-coverage":
        from assay.doc.coverage import judge_coverage

        return await judge_coverage(request.suite, request.settings, **request.arguments)
    from assay.doc.judge_pairwise import judge_pairwise

    return await judge_pairwise(request.suite, request.settings, **request.arguments)


def _candidate(request: DocMethodRequest, name: str = "candidate") -> Path:
    from assay.doc.candidates import resolve_candidate

    return resolve_candidate(request.suite, request.arguments[name])


def _conclusion(request: DocMethodRequest, result: Any) -> tuple[int, tuple[str, ...], Any]:
    """(exit code, lines to print, the record builder) of a finished method."""
    from assay.doc import units

    results = f"Results: {_relative(request, result.result_dir)}"
    model = request.settings.model if request.settings is not None else None
    if request.method == "run-case":
        candidate = result.result_dir / "cases" / result.case_id / "candidate.md"
        failed = _failed_item_lines(result.findings) if result.verdict == "red" else ()
        lines = (f"Verdict: {result.verdict}", *failed, results)
        return (
            EXIT_GATE_FAILED if result.verdict == "red" else 0, lines,
            lambda: units.run_case_record(result, candidate, request.recorded),
        )
    if request.method == "judge-coverage":
        counts = ", ".join(f"{verdict}: {count}" for verdict, count in result.counts.items())
        return 0, (counts, results), lambda: units.coverage_run_record(
            result, _candidate(request), request.recorded, model
        )
    lines = [f"Winner: {result.winner}"]
    if result.position_consistent is not None:
        lines.append(f"Position consistent: {'true' if result.position_consistent else 'false'}")
    lines.append(results)
    return 0, tuple(lines), lambda: units.pairwise_run_record(
        result, [_candidate(request, "candidate_a"), _candidate(request, "candidate_b")], request.recorded, model
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


_DEFAULT_ID_PREFIX = {"run-case": "deterministic", "judge-coverage": "judge-coverage"}  # judge-pairwise needs --run-id


class _OpenedDocRun:
    def __init__(self, request: DocMethodRequest) -> None:
        prefix = _DEFAULT_ID_PREFIX.get(request.method)
        if not request.arguments.get("run_id") and prefix is not None:
            # The bundle's id as the method would choose it, chosen now: `run_started` carries it.
            from assay.doc.artifacts import default_run_id, utc_now

            request = dataclasses.replace(request, arguments={**request.arguments, "run_id": default_run_id(prefix, utc_now())})
        self.request = request
        self.run_id = request.arguments.get("run_id") or ""
        self._built: Any = None
        self._held: Any = None  # the record, held until the pipeline has published it

    def worker(self) -> None:
        return None  # one unit: nothing to spread over workers

    async def execute(self, events: RunEvents, executor: Any) -> Any:
        events.run_started(RunStarted("doc", self.run_id, 1))
        result = await _run_method(self.request)
        self.run_id = result.result_dir.name  # the bundle's id, chosen by the method when not given
        _, _, build = _conclusion(self.request, result)
        record: list[Any] = []

        def built() -> Any:
            if not record:
                manifest, units = build()
                # The suite is the doc run's project: `assay runs compare latest` pairs a run with
                # the run of the same suite before it.
                suite = str(self.request.suite.config_path)
                record.append((dataclasses.replace(manifest, identity={**manifest.identity, "suite": suite}), units))
            return record[0]

        self._built = built
        self._held = _hold_record(self.request, built)
        events.unit_durable(UnitDurable(result, lambda: built()[1][0]))  # the bundle's manifest is on disk
        return result

    def conclude(self, outcome: Any) -> RunFinished:
        exit_code, lines, _ = _conclusion(self.request, outcome)
        built = self._built

        return RunFinished(
            "doc", self.run_id, exit_code, DocConclusion(lines),
            build_units=lambda: list(built()[1]),
            build_manifest=lambda code: built()[0],
            home=self.request.suite.repo_root,
        )

    def interrupted(self) -> RunFinished:
        return RunFinished("doc", self.run_id, 130, interrupted=True)

    def failed(self, error: AssayError) -> RunFinished:
        return RunFinished("doc", self.run_id, EXIT_ERROR, error=error)

    def seal(self, finished: RunFinished) -> None:
        # The result bundle's manifest, written last by the method, is its seal; the record held
        # since then is published now (or this run was interrupted before it showed anything).
        if self._held is not None:
            self._held.release()


def _store(request: DocMethodRequest) -> Path:
    from assay.core.record import store_path

    return store_path(request.suite.repo_root)  # where the pipeline publishes the run (its `home`)


def _hold_record(request: DocMethodRequest, built: Any) -> Any:
    """Hold the run's record before anything is shown: the bundle is this run's only trace, so a
    process killed after printing its verdict but before storing it would otherwise leave a
    verdict that `assay runs` never lists. The next doc run publishes what such a run held."""
    from assay.core.results_store import hold_run

    try:
        manifest, units = built()
        return hold_run(manifest, units, database=_store(request))
    except Exception:  # noqa: BLE001 - the store's problems are reported once, when the run is published
        return None


def _publish_held_records(request: DocMethodRequest) -> None:
    from assay.core.results_store import publish_held_runs

    for run_id in publish_held_runs(database=_store(request)):
        print(f"Recorded {run_id}: an earlier doc run stopped after its result bundle was written, before storing it.",
              file=sys.stderr)


class DocConsole:
    """eval-kit's output: the method's lines on stdout, a failure as `Execution failed: …` on stderr."""

    name = "console"

    def run_finished(self, event: RunFinished) -> None:
        if event.outcome is not None:
            for line in event.outcome.lines:
                print(line)
        elif event.error is not None:
            print(f"Execution failed: {event.error}", file=sys.stderr)
        else:
            print("Interrupted: the result bundle was not finished (its manifest is written last).", file=sys.stderr)


class DocKind:
    name = "doc"

    def reporters(self, request: DocMethodRequest, outputs: Any = None) -> list[Any]:
        from assay.core.report.junit import JUnitReport

        junit = [JUnitReport(Path(request.junit))] if request.junit else []
        if request.json:
            from assay.core.report.ndjson import NdjsonEvents

            return [*junit, NdjsonEvents()]
        return [DocConsole(), *junit]

    def open(self, request: DocMethodRequest, resume: Any, events: RunEvents) -> _OpenedDocRun:
        if request.method not in METHODS:
            raise AssayError(f"unknown method {request.method!r}")
        from assay.core.fsutil import check_report_path

        check_report_path("--junit", request.junit)
        _publish_held_records(request)
        return _OpenedDocRun(request)

    def open_failed(self, request: DocMethodRequest, error: AssayError) -> RunFinished:
        return RunFinished("doc", "", EXIT_ERROR, error=error)


DOC = DocKind()
