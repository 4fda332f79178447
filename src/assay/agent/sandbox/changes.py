"""The agent's file changes as sandbox assertions read them: per send window, one endpoint delta per path.

A window's delta compares the workspace when the send was issued with the workspace when it settled;
content that is binary or too large is elided (its blob id and size kept), so content checks on it are
unavailable rather than passed. `changes_json` is the bounded, redacted form stored with the attempt.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

ADDED = "added"
MODIFIED = "modified"
DELETED = "deleted"
STATUSES = (ADDED, MODIFIED, DELETED)
MAX_CONTENT_BYTES = 1024 * 1024  # larger sides are elided: never loaded, never matched
DIFF_LIMIT_CHARACTERS = 64 * 1024  # per file, in the stored record
RECORD_DIFF_BUDGET = 1024 * 1024  # per attempt: later diffs are left out of the record (the delta stays)


@dataclass(frozen=True, slots=True)
class Content:
    """One side of a change: the blob, its size and its text (None when elided, with the reason)."""

    blob: str
    size: int
    text: str | None
    elided: str | None = None  # binary | oversized | embedded repository

    def to_json(self) -> dict[str, Any]:
        return {"blob": self.blob, "size": self.size}


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    status: str  # added | modified | deleted
    before: Content | None
    after: Content | None

    @property
    def elided(self) -> str | None:
        """Why some side's content is not available, or None when both are (or do not exist)."""
        for side in (self.before, self.after):
            if side is not None and side.text is None:
                return side.elided or "elided"
        return None

    def lines(self) -> tuple[list[str], list[str]] | None:
        """(added lines, removed lines), or None when content is elided."""
        if self.elided is not None:
            return None
        before = (self.before.text or "").splitlines() if self.before is not None else []
        after = (self.after.text or "").splitlines() if self.after is not None else []
        added: list[str] = []
        removed: list[str] = []
        for tag, first, last, start, end in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
            if tag in ("replace", "delete"):
                removed.extend(before[first:last])
            if tag in ("replace", "insert"):
                added.extend(after[start:end])
        return added, removed

    def unified_diff(self) -> str | None:
        if self.elided is not None:
            return None
        before = (self.before.text or "") if self.before is not None else ""
        after = (self.after.text or "") if self.after is not None else ""
        return "".join(difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            fromfile="/dev/null" if self.before is None else f"a/{self.path}",
            tofile="/dev/null" if self.after is None else f"b/{self.path}",
        ))


@dataclass(frozen=True, slots=True)
class WindowDelta:
    """What one send window changed: `label` is `turn2` or `session1/turn1`, as `sandbox diff --window` takes it."""

    label: str
    session: int
    turn: int
    start: str  # the workspace tree when the send was issued
    end: str  # … and when it settled
    changes: tuple[FileChange, ...]


@dataclass(frozen=True, slots=True)
class FileChangesView:
    """Every send window's delta; `complete` is False (with a reason) when the ledger could not follow."""

    windows: tuple[WindowDelta, ...] = ()
    complete: bool = True
    reason: str = ""

    def changed_paths(self) -> set[str]:
        return {change.path for window in self.windows for change in window.changes}

    def deltas(self, path: str | None = None) -> Iterator[tuple[WindowDelta, FileChange]]:
        for window in self.windows:
            for change in window.changes:
                if path is None or change.path == path:
                    yield window, change


def changes_json(view: FileChangesView, redact: Callable[[str], str]) -> dict[str, Any]:
    """The record's File Changes: per window, each path's status, blobs and a bounded, redacted diff."""
    budget = RECORD_DIFF_BUDGET
    windows = []
    for window in view.windows:
        rows = []
        for change in window.changes:
            row: dict[str, Any] = {"path": redact(change.path), "status": change.status}
            if change.before is not None:
                row["before"] = change.before.to_json()
            if change.after is not None:
                row["after"] = change.after.to_json()
            if change.elided is not None:
                row["elided"] = change.elided
            else:
                diff = redact(change.unified_diff() or "")
                if len(diff) > DIFF_LIMIT_CHARACTERS:
                    diff = diff[:DIFF_LIMIT_CHARACTERS] + "\n… (diff cut at 64 KiB)\n"
                    row["diff_cut"] = True
                if len(diff) <= budget:
                    row["diff"] = diff
                    budget -= len(diff)
                else:
                    row["diff_omitted"] = "the attempt's diffs reached 1 MiB"
            rows.append(row)
        windows.append({
            "window": window.label, "session": window.session, "turn": window.turn, "start": window.start,
            "end": window.end, "changes": rows,
        })
    document: dict[str, Any] = {"windows": windows, "complete": view.complete}
    if not view.complete:
        document["reason"] = view.reason
    return document


__all__ = [
    "ADDED", "Content", "DELETED", "FileChange", "FileChangesView", "MAX_CONTENT_BYTES", "MODIFIED", "STATUSES",
    "WindowDelta", "changes_json",
]
