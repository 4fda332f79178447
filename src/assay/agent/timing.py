"""An attempt's phase tree: when its setup, the eval's run, each send and each judge call began and how long each took.

Intervals are measured on the monotonic clock from the attempt's start and kept as the spec's timing
channel, `{phase, label, start_offset_ms, duration_ms, parent}` (parent: the index of the enclosing one).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

__all__ = ["Timeline", "timing_lines"]


class Timeline:
    """Appends intervals; `begin` returns the index that `end` closes, or `with timeline.phase(...)`.

    A phase that a timeout or an interrupt cut short is marked open (`unfinished` when shown): one
    left by a cancellation or while the attempt's signal was set, and one never closed at all (it
    ends when the record is written). Its duration is then how long it ran, not how long it took."""

    __slots__ = ("origin", "_rows", "current")

    def __init__(self, origin: float) -> None:
        self.origin = origin
        self._rows: list[list[Any]] = [["attempt", None, origin, None, None]]
        self.current = 0  # the phase new intervals nest under (eval.run while the test runs)

    def begin(self, phase: str, label: str | None = None, parent: int | None = None) -> int:
        self._rows.append([phase, label, time.perf_counter(), None, self.current if parent is None else parent])
        return len(self._rows) - 1

    def end(self, index: int, finished: bool = True) -> None:
        row = self._rows[index]
        row[3] = time.perf_counter()
        if not finished:
            row.append(True)  # a sixth column: cut short

    def phase(self, phase: str, label: str | None = None, signal: Any = None) -> _Phase:
        """`with timeline.phase("agent.send", "turn 1", signal) as index:` — begun now, ended on leaving,
        marked open when left by a cancellation, or by any error once `signal` (a CancelSignal) is set."""
        return _Phase(self, self.begin(phase, label), signal)

    def to_json(self, ended: float | None = None) -> list[dict[str, Any]]:
        ended = time.perf_counter() if ended is None else ended
        self._rows[0][3] = ended
        origin = self.origin
        documents = []
        for phase, label, start, end, parent, *cut_short in self._rows:
            document: dict[str, Any] = {
                "phase": phase, "start_offset_ms": round((start - origin) * 1000, 3),
                "duration_ms": round(((end if end is not None else ended) - start) * 1000, 3),
            }
            if label is not None:
                document["label"] = label
            if parent is not None:
                document["parent"] = parent
            if end is None or cut_short:
                document["open"] = True
            documents.append(document)
        return documents


class _Phase:
    """`Timeline.phase`'s context manager (a plain class: it wraps every send of every attempt)."""

    __slots__ = ("_timeline", "_index", "_signal")

    def __init__(self, timeline: Timeline, index: int, signal: Any) -> None:
        self._timeline = timeline
        self._index = index
        self._signal = signal

    def __enter__(self) -> int:
        return self._index

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        cut_short = kind is not None and (
            issubclass(kind, (asyncio.CancelledError, TimeoutError))
            or (self._signal is not None and self._signal.cancelled)
        )
        self._timeline.end(self._index, finished=not cut_short)


def timing_lines(timing: list[dict[str, Any]]) -> list[str]:
    """The phase tree as indented text lines: phase (label), start offset, duration."""
    depth: list[int] = []
    lines = []
    for row in timing:
        parent = row.get("parent")
        level = depth[parent] + 1 if isinstance(parent, int) and 0 <= parent < len(depth) else 0
        depth.append(level)
        name = row["phase"] + (f" {row['label']}" if row.get("label") else "")
        tail = " (unfinished)" if row.get("open") else ""
        lines.append(f"{'  ' * level}{name:<{max(8, 44 - 2 * level)}} +{row['start_offset_ms']:>10.1f} ms  "
                     f"{row['duration_ms']:>10.1f} ms{tail}")
    return lines
