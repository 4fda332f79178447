"""The kinds of run: the typed `RunKind` protocol every kind implements, and the one registry of kinds.

A kind contributes its semantics — how a run opens (load, plan, checkpoint), executes and concludes,
its native console and machine output — and declares what else it can do (`resume`, `merge`,
`commands`) as attributes that are None or empty when absent, never probed. Kinds are looked up by
name and imported only when used (like Inspect's providers), so `core/` imports no kind.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

from assay.core.record import RunManifest, UnitResult
from assay.core.run.request import Outputs
from assay.core.run_events import RunEvents, RunFinished, RunListener
from assay.errors import AssayError, UsageError

__all__ = [
    "KINDS", "VIEWS", "KindOutput", "KindView", "OpenedRun", "Resumable", "Resumed", "RunKind", "ShardMerge", "ShardRecord", "WorkerSpec",
    "kind_named", "kind_names", "kind_view",
]

Request = TypeVar("Request")

# The one list of kind names: name -> "module:attribute" of its RunKind, imported on first use.
# None: runs of that kind are only recorded (imported from other tools' logs), never run here.
KINDS: Mapping[str, str | None] = {
    "video": "assay.video.run_kind:VIDEO",
    "agent": "assay.agent.run_kind:AGENT",
    "doc": "assay.doc.run_kind:DOC",
    "imported": None,
}


# What the results viewer shows of a kind's units beyond the shared columns: name -> "module:attribute" of
# its KindView, imported on first use (the viewer never imports a kind's engine). Absent: nothing more.
VIEWS: Mapping[str, str] = {
    "video": "assay.video.view_extras:VIEW",
    "agent": "assay.agent.view_extras:VIEW",
}


@dataclass(frozen=True)
class KindView:
    """What the viewer shows of a kind's units beyond what every unit has; each part optional."""

    # A unit row's expected and observed, before the viewer cuts them to a preview.
    previews: Callable[[UnitResult], tuple[Any, Any]] | None = None
    # Added to a unit page's document (a video frame, an agent attempt's File Changes and waterfall).
    unit_extras: Callable[[UnitResult], Mapping[str, Any]] | None = None
    # The unit's row on the Traces page, None for a unit without spans; absent: the kind has no traces.
    trace_row: Callable[[UnitResult], Mapping[str, Any] | None] | None = None


_PLAIN_VIEW = KindView()


@functools.cache
def kind_view(name: str) -> KindView:
    """What the viewer shows of units of the kind `name` (plain for a kind that adds nothing)."""
    target = VIEWS.get(name)
    if target is None:
        return _PLAIN_VIEW
    module_name, attribute = target.split(":")
    view: KindView = getattr(importlib.import_module(module_name), attribute)
    return view


def kind_names() -> tuple[str, ...]:
    """Every kind a recorded run can be of (`assay runs list --kind`, the history's series)."""
    return tuple(KINDS)


def kind_named(name: str) -> RunKind[Any]:
    """The kind called `name`; a kind assay cannot run (or no kind) is a usage error."""
    target = KINDS.get(name)
    if target is None:
        runnable = ", ".join(known for known, module in KINDS.items() if module is not None)
        raise UsageError(f"unknown kind {name!r}; known kinds: {runnable}")
    module_name, attribute = target.split(":")
    kind: RunKind[Any] = getattr(importlib.import_module(module_name), attribute)
    return kind


@dataclass(frozen=True)
class WorkerSpec:
    """How a remote worker is built: `factory(*arguments)`, and what of a group a dead worker left."""

    factory: Callable[..., Any]
    arguments: Sequence[object]
    remainder: Callable[[Any, list[Any]], Any] | None = None
    concurrency: int = 1


class Resumed(NamedTuple):
    """The checkpoint a `--resume` found: its folder and the manifest read from it."""

    path: Path
    manifest: dict[str, Any]


class OpenedRun(Protocol):
    """A run whose plan exists and whose checkpoint (if the kind keeps one) is open."""

    run_id: str

    def worker(self) -> WorkerSpec | None:
        """What Ray workers need, or None when the kind cannot run remotely."""

    async def execute(self, events: RunEvents, executor: Any) -> object:
        """Run every unit, emitting events; returns the kind's outcome (`executor`: None, or the
        `assay.core.executor.Executor` the run's groups are sent to)."""

    def conclude(self, outcome: Any) -> RunFinished:
        """What the finished run comes to: exit code, record, resume hints (the checkpoint stays open)."""

    def interrupted(self) -> RunFinished:
        """What an interrupted run comes to (the checkpoint is let go of, kept only if it holds work)."""

    def failed(self, error: AssayError) -> RunFinished:
        """What a run that failed part-way comes to."""

    def seal(self, finished: RunFinished) -> None:
        """After every reporter heard `run_finished`: mark the checkpoint complete or keep it."""


@dataclass(frozen=True)
class KindOutput:
    """What a kind shows of a run in its own words; the pipeline adds progress, NDJSON and JUnit.

    `console` speaks to a person on stdout (GlassKit's lines, NiceEval's receipt table, eval-kit's
    lines); `machine` is the kind's own `--json` stream when it has one (NiceEval's NDJSON receipt),
    else the pipeline's NDJSON events are used; `files` are its own report files (GlassKit's JSON
    report), written before anything else reports the finished run."""

    console: RunListener
    machine: RunListener | None = None
    files: Sequence[RunListener] = ()


class Resumable(Protocol[Request]):
    """A kind whose runs keep a checkpoint that `--resume` continues (`assay.core.run.resume`)."""

    checkpoint_kind: str  # the `kind` its checkpoint manifests carry

    def locate(self, ref: str, given: Request) -> Path:
        """The checkpoint folder `--resume REF` names (an id is looked up where the kind keeps them)."""

    def invocation(self, request: Request, outputs: Outputs) -> dict[str, Any]:
        """What the checkpoint stores of a run, in its file's key order."""

    def restored(self, invocation: object, manifest_path: Path, given: Request, outputs: Outputs) -> tuple[Request, Outputs]:
        """The request (and outputs) a checkpoint was made with; what it does not store comes from
        `given` and `outputs` (this invocation's). A malformed invocation is a `CheckpointError`."""

    def refusal(self, flags: Sequence[str]) -> str:
        """The kind's sentence refusing `--resume` with options a checkpoint restores."""


ShardRecord = tuple[RunManifest, Sequence[UnitResult]]


class ShardMerge(Protocol):
    """A kind whose `--shard i/n` runs `assay runs merge` combines into the unsharded run."""

    identity_keys: tuple[str, ...]  # manifest identity every shard of one invocation shares
    # Recorded options that change how fast a shard ran and never what any unit came to: shards of one
    # invocation may differ in them (`check_shard_set`); each kind names why each one is safe.
    pace_options: tuple[str, ...]

    def recorded_units(self, manifest: RunManifest) -> int | None:
        """How many units a shard's manifest says its record holds (None: it does not say), so a record
        cut short at a line boundary is refused rather than merged without its last units."""

    def merged(self, records: Sequence[ShardRecord], outputs: Outputs) -> RunFinished:
        """The complete shard set as the run the unsharded invocation would have finished: its
        outcome for the kind's reporters and its record (units in plan order, gates recomputed)."""


class RunKind(Protocol[Request]):
    """One kind of run, generic over its request type."""

    name: str
    resume: Resumable[Request] | None  # None: its runs cannot be resumed
    merge: ShardMerge | None  # None: its runs cannot be sharded and merged
    commands: Mapping[str, RunKind[Any]]  # further commands of the kind run by the pipeline (video: seed)

    def output(self, outputs: Outputs) -> KindOutput:
        """The kind's console, machine output and files for a run (or merge) with these outputs."""

    def open(self, request: Request, outputs: Outputs, resume: Resumed | None, events: RunEvents) -> OpenedRun:
        """Load, check and plan the run and start its checkpoint (or resume `resume`)."""

    def open_failed(self, request: Request, error: AssayError) -> RunFinished:
        """What a run that could not even start comes to."""

