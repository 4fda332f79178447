"""The run pipeline every kind plugs into: open, execute, conclude, report, record, seal — and merge.

The pipeline owns the order every kind shares: reporters (chosen here from the `Outputs`) hear
`run_finished` before the run is recorded in the results store and before the checkpoint is sealed,
so a run killed after its reports were written can still be resumed and reported again; Ctrl-C is
exit 130 (after the summary, while the run is recorded, too: the checkpoint is kept and its resume records it); an error a user can fix is exit 2 with one message. `merge` finishes a set of shard records
by the same path. This module is the only one that records runs in the store (`StorePublisher`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shlex
import sys
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ContextManager, TypeVar

from assay.core.record import UnitResult
from assay.core.run.kinds import OpenedRun, Resumed, RunKind, ShardRecord, WorkerSpec, kind_named
from assay.core.run.request import Execution, Outputs
from assay.core.run_events import RunEvents, RunFinished, RunListener
from assay.errors import EXIT_INTERRUPTED, AssayError, UsageError

__all__ = ["RunResult", "merge", "record", "reporters_for", "run", "run_async"]

Request = TypeVar("Request")


def _connect_executor(execution: Execution, opened: OpenedRun) -> Any:
    if execution.executor == "local":
        return None  # without asking for the worker: its module (Ray's side of a kind) stays unimported
    worker: WorkerSpec | None = opened.worker()
    if worker is None:
        return None
    from assay.core.ray_executor import RayExecutor

    return RayExecutor.connect(
        worker.factory, worker.arguments, address=execution.ray_address, remainder=worker.remainder,
        concurrency=worker.concurrency,
    )


def _open(run_kind: RunKind[Request], request: Request, outputs: Outputs, resume: Resumed | None, events: RunEvents) -> OpenedRun:
    """Plan the run (discovery, the plan, carry) with the run's collection settings too: planning
    50,000 evals allocates that many long-lived objects, and the default settings walked them all.
    The report paths are checked first, for every kind: hours of work never end in a report that fails."""
    from assay.core.fsutil import check_report_path
    from assay.core.gcpolicy import collection_sized_for_runs

    check_report_path("--output-json", outputs.output_json)
    check_report_path("--junit", outputs.junit)
    if resume is None:  # a checkpoint keeps the shard as it was written: its plan was made with it
        request = _canonical_shard(request)

    with collection_sized_for_runs():
        return run_kind.open(request, outputs, resume, events)


def _canonical_shard(request: Request) -> Request:
    """A request's `--shard` as the shard it names (`1/3` for ` 1/3` or `01/03`): the run records and
    lists it, and the store keeps a shard's runs as one series, so one shard is one spelling."""
    shard = getattr(request, "shard", None)
    if not isinstance(shard, str) or not dataclasses.is_dataclass(request) or isinstance(request, type):
        return request
    from assay.core.shard import parse_shard

    canonical = str(parse_shard(shard))
    return request if canonical == shard else dataclasses.replace(request, shard=canonical)


async def _execute(opened: OpenedRun, events: RunEvents, execution: Execution) -> object:
    from assay.core.gcpolicy import collection_sized_for_runs

    executor = _connect_executor(execution, opened)
    try:
        with collection_sized_for_runs():
            return await opened.execute(events, executor)
    finally:
        if executor is not None:
            await executor.close()


class _Held:
    """A main task's result behind a constant repr. Python 3.11's `asyncio.run` formats the main task's
    repr, its result included, twice as it puts the SIGINT handler back (`signal.getsignal` tries the
    handler, a partial over the task, as an enum value): a run's outcome of 2,000 attempts cost 0.15 s
    each time, and the cost grows with the run."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


async def _held(coroutine: Any) -> _Held:
    return _Held(await coroutine)


@dataclass(frozen=True)
class RunResult:
    """What a run came to: its exit code and what its reporters saw (outcome, units, checkpoint)."""

    exit_code: int
    finished: RunFinished

    @property
    def outcome(self) -> Any:
        return self.finished.outcome

    @property
    def resume_lines(self) -> Sequence[str]:
        """How to continue the run, when its checkpoint was kept (for whoever shows them: the
        command line repeats them on stderr when its stdout was closed)."""
        return self.finished.resume_lines if self.finished.checkpoint_kept else ()

    def units(self) -> Iterable[UnitResult]:
        return self.finished.units()


def _resumed_where_it_ran(finished: RunFinished, execution: Execution) -> None:
    """A run on Ray resumes on Ray: its resume command names the executor (not part of a checkpoint)."""
    if execution.executor == "local" or not finished.resume_lines:
        return
    extra = ["--executor", execution.executor, *(["--ray-address", execution.ray_address] if execution.ray_address else [])]
    head, tail = "Resume with `", "`."
    finished.resume_lines = [
        f"{line[:-len(tail)]} {shlex.join(extra)}{tail}" if line.startswith(head) and line.endswith(tail) else line
        for line in finished.resume_lines
    ]


def _finish(events: RunEvents, finished: RunFinished, opened: OpenedRun | None,
            execution: Execution = Execution()) -> RunResult:
    """Report and record the run with the run's collection settings too: the record and the store read
    every unit back, and with the defaults each full collection walked every object the run still holds
    (its plan, summaries and a project's eval definitions: a growing share of the CPU at 1,000,000 evals)."""
    from assay.core.gcpolicy import collection_sized_for_runs
    from assay.core.stdout_guard import results_made

    results_made()  # a reader leaving the console from here on does not stop the run's recording
    _resumed_where_it_ran(finished, execution)
    try:
        with collection_sized_for_runs():
            events.run_finished(finished)  # the store publisher, registered last, records the run
    except KeyboardInterrupt:
        if opened is None or finished.interrupted:
            raise
        return _stopped_while_recording(opened, execution)
    if opened is not None:
        opened.seal(finished)
    return RunResult(finished.exit_code, finished)


def _stopped_while_recording(opened: OpenedRun, execution: Execution) -> RunResult:
    """Ctrl-C after the summary was shown, while the run was being recorded (a big run takes seconds): the
    run is not in the store yet, but every result is in its checkpoint, so it is let go of as an interrupted
    run is and its resume, which runs nothing again, records it. A kind without a checkpoint is interrupted."""
    stopped = opened.interrupted()
    _resumed_where_it_ran(stopped, execution)
    opened.seal(stopped)
    if not (stopped.checkpoint_kept and stopped.resume_lines):
        raise KeyboardInterrupt
    with contextlib.suppress(OSError):  # stderr may be a closed pipe too
        print("Interrupted while recording the run, which may not be in the results store yet. Its results are kept:"
              " resuming records it without running anything again.", *stopped.resume_lines, sep="\n",
              file=sys.stderr, flush=True)
    return RunResult(EXIT_INTERRUPTED, stopped)


def reporters_for(run_kind: RunKind[Any], outputs: Outputs) -> list[RunListener]:
    """The reporters `outputs` asks for, in the order they hear each event: progress first (its closing
    line comes before the summary), the kind's own files, JUnit, and last the console or the NDJSON
    stream (whose last line carries the exit code JUnit may have raised)."""
    native = run_kind.output(outputs)
    chosen: list[RunListener] = []
    if outputs.shows_progress:
        from assay.core.report.progress import ProgressReporter

        chosen.append(ProgressReporter())
    chosen.extend(native.files)
    if outputs.junit is not None:
        from assay.core.report.junit import JUnitReport

        chosen.append(JUnitReport(outputs.junit))
    if not outputs.json:
        chosen.append(native.console)
    elif native.machine is not None:
        chosen.append(native.machine)
    else:
        from assay.core.report.ndjson import NdjsonEvents

        chosen.append(NdjsonEvents())
    return chosen


def _events(run_kind: RunKind[Any], outputs: Outputs, reporters: Sequence[RunListener] | None) -> RunEvents:
    from assay.core.report.store import StorePublisher

    # The caller's own reporters (the Python API): nothing printed unless asked. The run is recorded either way.
    events = RunEvents(reporters_for(run_kind, outputs) if reporters is None else reporters)
    events.add(StorePublisher())
    return events


def _interrupted(run_kind: RunKind[Any], events: RunEvents, opened: OpenedRun | None,
                 execution: Execution = Execution()) -> RunResult:
    events.close()
    finished = opened.interrupted() if opened is not None else RunFinished(
        run_kind.name, "", EXIT_INTERRUPTED, None, interrupted=True
    )
    return _finish(events, finished, opened, execution)


def _failed(
    run_kind: RunKind[Request], request: Request, events: RunEvents, opened: OpenedRun | None, error: Exception,
    execution: Execution = Execution(),
) -> RunResult:
    from assay.errors import show_tracebacks

    if show_tracebacks():
        traceback.print_exception(error, file=sys.stderr)
    events.close()
    if not isinstance(error, AssayError):
        error = AssayError(f"internal error: {type(error).__name__}: {error}")
    finished = opened.failed(error) if opened is not None else run_kind.open_failed(request, error)
    return _finish(events, finished, opened, execution)


def run(
    kind: RunKind[Request] | str, request: Request, *, outputs: Outputs = Outputs(), resume: Resumed | None = None,
    execution: Execution = Execution(), reporters: Sequence[RunListener] | None = None,
) -> RunResult:
    """Open, execute and conclude one run in a loop of its own (the command line's way).

    Never raises for a user error or an interruption: the result's exit code says what happened."""
    run_kind: RunKind[Request] = kind_named(kind) if isinstance(kind, str) else kind
    events = _events(run_kind, outputs, reporters)
    with _only_events_on_stdout(outputs, reporters):
        opened: OpenedRun | None = None
        try:
            opened = _open(run_kind, request, outputs, resume, events)
            outcome = asyncio.run(_held(_execute(opened, events, execution))).value
        except (KeyboardInterrupt, asyncio.CancelledError):  # a second Ctrl-C may cancel every task
            return _interrupted(run_kind, events, opened, execution)
        except Exception as error:  # noqa: BLE001 - a bug still ends as one message (traceback with --debug)
            return _failed(run_kind, request, events, opened, error, execution)
        return _finish(events, opened.conclude(outcome), opened, execution)


def _only_events_on_stdout(outputs: Outputs, reporters: Sequence[RunListener] | None) -> ContextManager[Any]:
    """With `--json`, stdout carries the event lines and nothing else: while the run goes on, `sys.stdout`
    is stderr, so a Python adapter's or an eval's `print()` (in any thread) goes there, as a process
    adapter's own output does. The event reporters hold the real stdout, taken when they were made.
    Only for the command line's reporters: the Python API leaves its caller's `sys.stdout` alone."""
    if not outputs.json or reporters is not None:
        return contextlib.nullcontext()
    return contextlib.redirect_stdout(sys.stderr)


async def run_async(
    kind: RunKind[Request] | str, request: Request, *, outputs: Outputs = Outputs(), resume: Resumed | None = None,
    execution: Execution = Execution(), reporters: Sequence[RunListener] | None = None,
) -> RunResult:
    """`run` inside the caller's event loop. A cancellation ends the run as an interruption (its
    checkpoint kept) and is then raised again, as a cancelled task must."""
    run_kind: RunKind[Request] = kind_named(kind) if isinstance(kind, str) else kind
    events = _events(run_kind, outputs, reporters)
    opened: OpenedRun | None = None
    try:
        opened = _open(run_kind, request, outputs, resume, events)
        outcome = await _execute(opened, events, execution)
    except asyncio.CancelledError:
        _interrupted(run_kind, events, opened, execution)
        raise
    except Exception as error:  # noqa: BLE001 - as in `run`
        return _failed(run_kind, request, events, opened, error, execution)
    return _finish(events, opened.conclude(outcome), opened, execution)


def merge(records: Sequence[ShardRecord], outputs: Outputs = Outputs(quiet=True)) -> RunResult:
    """`assay runs merge`: every shard record of one invocation as the run the unsharded invocation
    would have recorded, reported and recorded the way a run is. UsageError (before anything is
    shown or recorded) for records that are not the complete shard set of one run of a kind that merges."""
    from assay.core.shard import check_shard_set

    if not records:
        raise UsageError("no shard records to merge")
    run_kind = kind_named(records[0][0].kind)
    if run_kind.merge is None:
        raise UsageError(f"{run_kind.name} runs cannot be sharded or merged yet")
    check_shard_set([manifest for manifest, _ in records], identity_keys=run_kind.merge.identity_keys,
                    pace_options=run_kind.merge.pace_options)
    finished = run_kind.merge.merged(records, outputs)
    return _finish(_events(run_kind, outputs, None), finished, None)


def record(finished: RunFinished) -> RunResult:
    """A run that finished outside `run` (the pytest plugin's session) recorded as every run is."""
    from assay.core.report.store import StorePublisher

    return _finish(RunEvents([StorePublisher()]), finished, None)
