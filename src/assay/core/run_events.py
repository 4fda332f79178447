"""The run events every reporter listens to, declared once, and the stream that delivers them.

A kind emits these while it runs; reporters (console, JSON, NDJSON, JUnit, the results store) are
plugins that implement the hooks they care about. `unit_durable` is emitted from the journal's
durability callback, so nothing is shown before it is on disk. A reporter that raises is turned off
with one warning: output can never stop a run halfway.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from assay.core.record import RunManifest, UnitResult
from assay.errors import show_tracebacks

__all__ = [
    "RunEvents",
    "RunFinished",
    "RunListener",
    "RunStarted",
    "RecordReady",
    "RunWarning",
    "SectionStarted",
    "UnitDurable",
    "UnitProgress",
]


@dataclass(frozen=True, slots=True)
class RunStarted:
    kind: str
    run_id: str
    total: int  # units of work in the plan
    reused: int = 0  # of those, reused from a checkpoint
    native: Any = None  # the kind's own plan, for the kind's reporters
    reused_verdicts: Mapping[str, int] | None = None  # the reused units by verdict (passed, failed, errored, scored)


@dataclass(frozen=True, slots=True)
class SectionStarted:
    """A heading in the run's display order (a video trial, case or target)."""

    depth: int
    count: int
    native: Any = None


@dataclass(slots=True)
class UnitDurable:
    """One unit is on disk. `unit` is the shared result, built on first use (most reporters never ask)."""

    native: Any
    build: Callable[[], UnitResult]
    _unit: UnitResult | None = None

    @property
    def unit(self) -> UnitResult:
        if self._unit is None:
            self._unit = self.build()
        return self._unit

    @property
    def verdict(self) -> str:
        """passed, failed, errored, skipped, … as the kind's own result says (cheap: no unit is built)."""
        return getattr(self.native, "verdict", None) or ""


@dataclass(frozen=True, slots=True)
class UnitProgress:
    done: int
    total: int
    native: Any = None


@dataclass(frozen=True, slots=True)
class RunWarning:
    code: str
    message: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordReady:
    """A run without a checkpoint (doc: its result bundle is its only trace) has its record, before
    anything of it is shown: the store publisher holds the record until the run is recorded, so a
    process killed in between leaves it for the kind's next run to record (`recovered` says so)."""

    build: Callable[[], tuple[RunManifest, Sequence[UnitResult]]]
    home: Path  # the folder the run belongs to: its repository's store keeps the record
    recovered: str  # said of a held record a later run records: `Recorded <run id>: <recovered>.`


@dataclass
class RunFinished:
    """The run is over (finished, failed or interrupted): what the closing reporters need.

    A reporter whose output was required and could not be written raises the exit code with
    `require(code)`; the run record is built afterwards, with the final code."""

    kind: str
    run_id: str
    exit_code: int
    outcome: Any = None  # the kind's own outcome, for the kind's reporters
    interrupted: bool = False
    error: BaseException | None = None  # what ended a failed run
    checkpoint: Path | None = None
    checkpoint_kept: bool = False  # a checkpoint stays open: `--resume` can continue it
    resume_lines: Sequence[str] = ()
    # The run record: its units in run order (a list, or a collection read from disk each time it
    # is iterated, like a `UnitSpool`), and its manifest given the final exit code (None: not recorded).
    build_units: Callable[[], Iterable[UnitResult]] | None = None
    build_manifest: Callable[[int], RunManifest] | None = None
    # The folder the run belongs to (eval dir, project, suite): its repository's store keeps the record.
    home: Path | None = None
    _units: Iterable[UnitResult] | None = None

    def require(self, exit_code: int) -> None:
        self.exit_code = max(self.exit_code, exit_code)

    def units(self) -> Iterable[UnitResult]:
        """The shared unit results, in run order, for every reporter that asks: iterate them (each
        pass may read them afresh, so a large run's units are never all in memory at once)."""
        if self._units is None:
            self._units = self.build_units() if self.build_units is not None else []
        return self._units


class RunListener(Protocol):
    """Every hook a reporter may implement; each is optional."""

    def run_started(self, event: RunStarted) -> None: ...

    def section_started(self, event: SectionStarted) -> None: ...

    def unit_durable(self, event: UnitDurable) -> None: ...

    def unit_progress(self, event: UnitProgress) -> None: ...

    def warning(self, event: RunWarning) -> None: ...

    def record_ready(self, event: RecordReady) -> None: ...

    def run_finished(self, event: RunFinished) -> None: ...

    def close(self) -> None:
        """Stop live displays (before an error or interruption is printed)."""


_HOOKS = (
    "run_started", "section_started", "unit_durable", "unit_progress", "warning", "record_ready", "run_finished", "close",
)


class RunEvents:
    """Delivers each event to every reporter that implements its hook, in registration order."""

    def __init__(self, listeners: Sequence[Any] = ()) -> None:
        self._listeners: list[Any] = []
        self._hooks: dict[str, list[tuple[Any, Callable[[Any], None]]]] = {name: [] for name in _HOOKS}
        for listener in listeners:
            self.add(listener)

    def add(self, listener: Any) -> None:
        self._listeners.append(listener)
        for name in _HOOKS:
            hook = getattr(listener, name, None)
            if callable(hook):
                self._hooks[name].append((listener, hook))

    def _call(self, name: str, *arguments: Any) -> None:
        for listener, hook in list(self._hooks[name]):
            try:
                hook(*arguments)
            except Exception as error:  # noqa: BLE001 - a broken reporter must not stop the run
                self._drop(listener, name, error)

    def _drop(self, listener: Any, hook: str, error: BaseException) -> None:
        for name in _HOOKS:
            self._hooks[name] = [(owner, call) for owner, call in self._hooks[name] if owner is not listener]
        if show_tracebacks():
            traceback.print_exception(error, file=sys.stderr)
        reporter = getattr(listener, "name", type(listener).__name__)
        message = f"warning: the {reporter} reporter failed in {hook} ({type(error).__name__}: {error}); it is off for the rest of this run"
        try:
            sys.stderr.write(message.encode("utf-8", "backslashreplace").decode("utf-8") + "\n")
        except Exception:  # noqa: BLE001 - nothing left to tell
            pass

    def run_started(self, event: RunStarted) -> None:
        self._call("run_started", event)

    def section_started(self, event: SectionStarted) -> None:
        self._call("section_started", event)

    def unit_durable(self, event: UnitDurable) -> None:
        self._call("unit_durable", event)

    def unit_progress(self, event: UnitProgress) -> None:
        self._call("unit_progress", event)

    def warning(self, event: RunWarning) -> None:
        self._call("warning", event)

    def record_ready(self, event: RecordReady) -> None:
        self._call("record_ready", event)

    def run_finished(self, event: RunFinished) -> None:
        self._call("run_finished", event)

    def close(self) -> None:
        self._call("close")

    def wants(self, hook: str) -> bool:
        """Whether any reporter listens to `hook` (a kind may skip building what nobody reads)."""
        return bool(self._hooks[hook])
