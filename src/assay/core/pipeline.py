"""The run pipeline every kind plugs into: open, execute, conclude — and the registry of kinds.

A kind is looked up by name (imported only when used, like Inspect's providers) and supplies a
`RunKind`: it opens a run from its request (loading, planning, starting or resuming its checkpoint),
executes it while emitting run events, and concludes it. The pipeline owns the order every kind
shares: reporters hear `run_finished` before the checkpoint is sealed, so a run killed after its
reports were written can still be resumed and reported again; Ctrl-C is exit 130; an error a user
can fix is exit 2 with one message; the run is recorded in the results store.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from assay.core.run_events import RunEvents, RunFinished
from assay.errors import EXIT_INTERRUPTED, AssayError, UsageError


__all__ = ["Execution", "KINDS", "OpenedRun", "RunKind", "RunResult", "kind_named", "run", "run_async"]

# name -> "module:attribute" of its RunKind; imported on first use.
KINDS = {
    "video": "assay.video.run_kind:VIDEO",
    "agent": "assay.agent.run_kind:AGENT",
    "doc": "assay.doc.run_kind:DOC",
}


def kind_named(name: str) -> RunKind:
    target = KINDS.get(name)
    if target is None:
        raise UsageError(f"unknown kind {name!r}; known kinds: {', '.join(KINDS)}")
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


@dataclass(frozen=True)
class Execution:
    """Where units run: here, or on a Ray cluster. Not part of a request: a run may resume elsewhere."""

    executor: str = "local"
    ray_address: str | None = None

    def check(self) -> None:
        if self.executor not in ("local", "ray"):
            raise UsageError("--executor must be local or ray", "--executor")
        if self.ray_address is not None and self.executor != "ray":
            raise UsageError("--ray-address needs --executor ray", "--ray-address")


@dataclass(frozen=True)
class WorkerSpec:
    """How a remote worker is built: `factory(*arguments)`, and what of a group a dead worker left."""

    factory: Callable[..., Any]
    arguments: Sequence[Any]
    remainder: Callable[[Any, list[Any]], Any] | None = None
    concurrency: int = 1


class OpenedRun(Protocol):
    """A run whose plan exists and whose checkpoint (if the kind keeps one) is open."""

    run_id: str

    def worker(self) -> WorkerSpec | None:
        """What Ray workers need, or None when the kind cannot run remotely."""

    async def execute(self, events: RunEvents, executor: Any) -> Any:
        """Run every unit, emitting events; returns the kind's outcome."""

    def conclude(self, outcome: Any) -> RunFinished:
        """What the finished run comes to: exit code, record, resume hints (the checkpoint stays open)."""

    def interrupted(self) -> RunFinished:
        """What an interrupted run comes to (the checkpoint is let go of, kept only if it holds work)."""

    def failed(self, error: AssayError) -> RunFinished:
        """What a run that failed part-way comes to."""

    def seal(self, finished: RunFinished) -> None:
        """After every reporter heard `run_finished`: mark the checkpoint complete or keep it."""


class RunKind(Protocol):
    name: str

    def reporters(self, request: Any, outputs: Any) -> list[Any]:
        """The reporters of a run of this kind (console or NDJSON, its own files, JUnit…)."""

    def open(self, request: Any, resume: Any, events: RunEvents) -> OpenedRun: ...

    def open_failed(self, request: Any, error: AssayError) -> RunFinished:
        """What a run that could not even start comes to."""


def _connect_executor(execution: Execution, worker: WorkerSpec | None) -> Any:
    if execution.executor == "local" or worker is None:
        return None
    from assay.core.ray_executor import RayExecutor

    return RayExecutor.connect(
        worker.factory, worker.arguments, address=execution.ray_address, remainder=worker.remainder,
        concurrency=worker.concurrency,
    )


def _open(run_kind: RunKind, request: Any, resume: Any, events: RunEvents) -> OpenedRun:
    """Plan the run (discovery, the plan, carry) with the run's collection settings too: planning
    50,000 evals allocates that many long-lived objects, and the default settings walked them all."""
    from assay.core.gcpolicy import collection_sized_for_runs

    with collection_sized_for_runs():
        return run_kind.open(request, resume, events)


async def _execute(opened: OpenedRun, events: RunEvents, execution: Execution) -> Any:
    from assay.core.gcpolicy import collection_sized_for_runs

    executor = _connect_executor(execution, opened.worker())
    try:
        with collection_sized_for_runs():
            return await opened.execute(events, executor)
    finally:
        if executor is not None:
            await executor.close()


@dataclass(frozen=True)
class RunResult:
    """What a run came to: its exit code and what its reporters saw (outcome, units, checkpoint)."""

    exit_code: int
    finished: RunFinished

    @property
    def outcome(self) -> Any:
        return self.finished.outcome

    def units(self) -> Iterable[Any]:
        return self.finished.units()


def _finish(events: RunEvents, finished: RunFinished, opened: OpenedRun | None) -> RunResult:
    events.run_finished(finished)
    kept_for_the_guard = getattr(sys.stdout, "resume_lines", None)  # the command line's stdout guard
    if finished.checkpoint_kept and isinstance(kept_for_the_guard, list):
        kept_for_the_guard[:] = finished.resume_lines
    build_manifest = finished.build_manifest
    if build_manifest is not None:
        from assay.core.record import store_path
        from assay.core.results_store import publish_run_quietly

        # A run's record id comes from its checkpoint, so a run killed after it was recorded but
        # before its checkpoint was sealed replaces its record when `--resume` finishes it.
        record = publish_run_quietly(
            lambda: (build_manifest(finished.exit_code), finished.units()), database=store_path(finished.home),
            replace=True,
        )
        if record is not None:  # and to the project's OTLP endpoint, when it names one (a failure is one warning)
            from assay.core.interop.otlp_export import export_after_run

            export_after_run(record, finished.home)
    if opened is not None:
        opened.seal(finished)
    return RunResult(finished.exit_code, finished)


def _events(run_kind: RunKind, request: Any, outputs: Any, reporters: Sequence[Any] | None) -> RunEvents:
    events = RunEvents()
    if reporters is not None:  # the caller's own (the Python API): nothing printed unless asked
        for reporter in reporters:
            events.add(reporter)
        return events
    if not getattr(request, "quiet", False):
        from assay.core.report.progress import ProgressReporter

        events.add(ProgressReporter())  # first: its closing line comes before the kind's summary
    for reporter in run_kind.reporters(request, outputs):
        events.add(reporter)
    return events


def _interrupted(run_kind: RunKind, events: RunEvents, opened: OpenedRun | None) -> RunResult:
    events.close()
    finished = opened.interrupted() if opened is not None else RunFinished(
        run_kind.name, "", EXIT_INTERRUPTED, None, interrupted=True
    )
    return _finish(events, finished, opened)


def _failed(run_kind: RunKind, request: Any, events: RunEvents, opened: OpenedRun | None, error: Exception) -> RunResult:
    from assay.errors import show_tracebacks

    if show_tracebacks():
        traceback.print_exception(error, file=sys.stderr)
    events.close()
    if not isinstance(error, AssayError):
        error = AssayError(f"internal error: {type(error).__name__}: {error}")
    finished = opened.failed(error) if opened is not None else run_kind.open_failed(request, error)
    return _finish(events, finished, opened)


def run(kind: RunKind | str, request: Any, *, outputs: Any = None, resume: Any = None,
        execution: Execution = Execution(), reporters: Sequence[Any] | None = None) -> RunResult:
    """Open, execute and conclude one run in a loop of its own (the command line's way).

    Never raises for a user error or an interruption: the result's exit code says what happened."""
    run_kind = kind_named(kind) if isinstance(kind, str) else kind
    events = _events(run_kind, request, outputs, reporters)
    opened: OpenedRun | None = None
    try:
        execution.check()
        opened = _open(run_kind, request, resume, events)
        outcome = asyncio.run(_execute(opened, events, execution))
    except (KeyboardInterrupt, asyncio.CancelledError):  # a second Ctrl-C may cancel every task
        return _interrupted(run_kind, events, opened)
    except Exception as error:  # noqa: BLE001 - a bug still ends as one message (traceback with --debug)
        return _failed(run_kind, request, events, opened, error)
    return _finish(events, opened.conclude(outcome), opened)


async def run_async(kind: RunKind | str, request: Any, *, outputs: Any = None, resume: Any = None,
                    execution: Execution = Execution(), reporters: Sequence[Any] | None = None) -> RunResult:
    """`run` inside the caller's event loop. A cancellation ends the run as an interruption (its
    checkpoint kept) and is then raised again, as a cancelled task must."""
    run_kind = kind_named(kind) if isinstance(kind, str) else kind
    events = _events(run_kind, request, outputs, reporters)
    opened: OpenedRun | None = None
    try:
        execution.check()
        opened = _open(run_kind, request, resume, events)
        outcome = await _execute(opened, events, execution)
    except asyncio.CancelledError:
        _interrupted(run_kind, events, opened)
        raise
    except Exception as error:  # noqa: BLE001 - as in `run`
        return _failed(run_kind, request, events, opened, error)
    return _finish(events, opened.conclude(outcome), opened)
