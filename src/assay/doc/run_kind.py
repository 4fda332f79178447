"""`doc` in the run pipeline: a method (`methods.py`) over one case, its console lines and its record.

The command line loads the suite and checks the options with eval-kit's stage prefixes; a request
holds what it checked. Every failure of the method itself is `Execution failed: <message>` on
stderr with exit 2; only a red verdict exits 1. A doc run keeps no checkpoint: its result bundle is
its only trace, so its record is ready (and held by the pipeline) before its verdict is shown.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from typing import Any

from assay.core.run.kinds import KindOutput, Resumed, RunKind
from assay.core.run.request import Outputs
from assay.core.run_events import RecordReady, RunEvents, RunFinished, RunStarted, UnitDurable
from assay.doc.methods import METHODS, DocConclusion, DocMethod, DocRequest, Record
from assay.errors import EXIT_ERROR, AssayError

__all__ = ["DOC", "DocConsole", "DocKind"]


class _OpenedDocRun:
    def __init__(self, request: DocRequest, method: DocMethod[Any, Any]) -> None:
        if not request.run_id and method.id_prefix is not None:
            # The bundle's id as the method would choose it, chosen now: `run_started` carries it.
            from assay.doc.artifacts import default_run_id, utc_now

            request = dataclasses.replace(request, run_id=default_run_id(method.id_prefix, utc_now()))
        self.request = request
        self.method = method
        self.run_id = request.run_id or ""
        self._record: list[Record] = []
        self._concluded: DocConclusion | None = None  # once the method's bundle is finished

    def worker(self) -> None:
        return None  # one unit: nothing to spread over workers

    def _recorded(self, conclusion: DocConclusion) -> Record:
        if not self._record:
            assert conclusion.record is not None
            manifest, units = conclusion.record()
            # The suite is the doc run's project: `assay runs compare latest` pairs a run with the run
            # of the same suite before it.
            identity = {**manifest.identity, "suite": str(self.request.suite.config_path)}
            self._record.append((dataclasses.replace(manifest, identity=identity), units))
        return self._record[0]

    async def execute(self, events: RunEvents, executor: Any) -> DocConclusion:
        events.run_started(RunStarted("doc", self.run_id, 1))
        result = await self.method.run(self.request)
        self.run_id = result.result_dir.name  # the bundle's id, chosen by the method when not given
        conclusion = self.method.conclude(self.request, result)
        self._concluded = conclusion
        if conclusion.record is not None:  # the bundle's manifest is on disk: so is the run's record
            events.record_ready(RecordReady(
                lambda: self._recorded(conclusion), self.request.suite.repo_root,
                "an earlier doc run stopped after its result bundle was written, before storing it",
            ))
            events.unit_durable(UnitDurable(result, lambda: self._recorded(conclusion)[1][0]))
        return conclusion

    def conclude(self, outcome: DocConclusion) -> RunFinished:
        recorded = outcome.record is not None
        return RunFinished(
            "doc", self.run_id, outcome.exit_code, outcome,
            build_units=(lambda: list(self._recorded(outcome)[1])) if recorded else None,
            build_manifest=(lambda code: self._recorded(outcome)[0]) if recorded else None,
            home=self.request.suite.repo_root,
        )

    def interrupted(self) -> RunFinished:
        """Stopped before the bundle was finished: nothing to record. Stopped after (its manifest is written,
        so the run is done: Ctrl-C a moment late, or the reader of `--json | head -1` leaving as the verdict
        is shown), the run is concluded and recorded as it would have been, with its own exit code."""
        if self._concluded is not None and self._concluded.record is not None:
            return self.conclude(self._concluded)
        return RunFinished("doc", self.run_id, 130, interrupted=True)

    def failed(self, error: AssayError) -> RunFinished:
        return RunFinished("doc", self.run_id, EXIT_ERROR, error=error)

    def seal(self, finished: RunFinished) -> None:
        pass  # the result bundle's manifest, written last by the method, is its seal


class DocConsole:
    """eval-kit's output: the method's lines on stdout, a failure as `Execution failed: …` on stderr."""

    name = "console"

    def run_finished(self, event: RunFinished) -> None:
        if event.outcome is not None:
            for line in event.outcome.lines:
                print(line)
            if getattr(event.outcome, "failure", None):
                print(event.outcome.failure, file=sys.stderr)
        elif event.error is not None:
            print(f"Execution failed: {event.error}", file=sys.stderr)
        else:
            print("Interrupted: the result bundle was not finished (its manifest is written last).", file=sys.stderr)


class DocKind:
    name = "doc"
    resume = None  # no checkpoint: a method that stopped is run again
    merge = None
    commands: Mapping[str, RunKind[Any]] = {}

    def output(self, outputs: Outputs) -> KindOutput:
        return KindOutput(DocConsole())

    def open(self, request: DocRequest, outputs: Outputs, resume: Resumed | None, events: RunEvents) -> _OpenedDocRun:
        return _OpenedDocRun(request, METHODS[request.method])

    def open_failed(self, request: DocRequest, error: AssayError) -> RunFinished:
        return RunFinished("doc", "", EXIT_ERROR, error=error)


DOC = DocKind()
