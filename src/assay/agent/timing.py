"""An attempt's phase tree: when its setup, the eval's run, each send and each judge call began and how long each took.

Intervals are measured on the monotonic clock from the attempt's start and kept as the spec's timing
channel, `{phase, label, start_offset_ms, duration_ms, parent}` (parent: the index of the enclosing one).
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["Timeline", "timing_lines"]


class Timeline:
    """Appends intervals; `begin` returns the index that `end` closes. An interval never closed (the
    attempt was interrupted or timed out inside it) ends when the record is written, marked open."""

    __slots__ = ("origin", "_rows", "current")

    def __init__(self, origin: float) -> None:
        self.origin = origin
        self._rows: list[list[Any]] = [["attempt", None, origin, None, None]]
        self.current = 0  # the phase new intervals nest under (eval.run while the test runs)

    def begin(self, phase: str, label: str | None = None, parent: int | None = None) -> int:
        self._rows.append([phase, label, time.perf_counter(), None, self.current if parent is None else parent])
        return len(self._rows) - 1

    def end(self, index: int) -> None:
        self._rows[index][3] = time.perf_counter()

    def to_json(self, ended: float | None = None) -> list[dict[str, Any]]:
        ended = time.perf_counter() if ended is None else ended
        self._rows[0][3] = ended
        origin = self.origin
        documents = []
        for phase, label, start, end, parent in self._rows:
            document: dict[str, Any] = {
                "phase": phase, "start_offset_ms": round((start - origin) * 1000, 3),
                "duration_ms": round(((end if end is not None else ended) - start) * 1000, 3),
            }
            if label is not None:
                document["label"] = label
            if parent is not None:
                document["parent"] = parent
            if end is None:
                document["open"] = True
            documents.append(document)
        return documents


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
