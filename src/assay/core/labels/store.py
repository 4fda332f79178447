"""Where labels live: appended to `labels.jsonl` beside the results store, and indexed in its `labels` table.

The file is the source of truth, as run records are for runs: every label is appended to it (one
write, fsynced) before it is indexed, so `assay runs reindex` — which may set a damaged store aside
and build a new one from the records — reads the labels back from it (`restore_labels`). Nothing
ever rewrites or removes a line; a label is superseded by a later one of the same labeller.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from assay.core.labels.model import Label, LabelError, parse_label
from assay.core.record import STORE_ENVIRONMENT, STATE_FOLDER, dumps_storable

__all__ = ["LABELS_FILE", "LabelBook", "labels_file", "read_label_lines", "restore_labels"]

LABELS_FILE = "labels.jsonl"
_INSERT = "INSERT OR IGNORE INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


def labels_file(database: Path) -> Path:
    """`labels.jsonl` beside the database, so `ASSAY_STORE` moves it with the store and the records."""
    return Path(database).parent / LABELS_FILE


def _check_location(path: Path) -> None:
    if path.is_dir():
        raise LabelError(f"{path} is a folder; the store keeps its labels in a file of that name: move the folder away")
    # As for the store itself: a link planted in a checkout's `.assay` would carry labels elsewhere.
    if path.is_symlink() and not os.environ.get(STORE_ENVIRONMENT) and path.parent.name == STATE_FOLDER:
        raise LabelError(
            f"{path} is a link (to {os.readlink(path)}); assay does not append labels through a link it did not "
            f"make: remove the link, or set {STORE_ENVIRONMENT} to the store you mean"
        )


def read_label_lines(path: Path, skipped: list[str] | None = None) -> Iterator[Label]:
    """Every readable label in a JSONL file, in file order; each line that cannot be read is named in
    `skipped` (`<file>:<line>: <why>`) and left out — a torn last line, an edited label."""
    try:
        stream = open(path, "rb")
    except FileNotFoundError:
        return
    with stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            try:
                yield parse_label(json.loads(raw))
            except (ValueError, LabelError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                if skipped is not None:
                    skipped.append(f"{path}:{number}: {type(error).__name__}: {error}")


def _row(label: Label) -> tuple[Any, ...]:
    return (label.label_id, label.labeller, label.created_at, label.run_id, label.unit_id, label.kind, label.subject,
            label.content, dumps_storable(label.to_json()))


def _has_table(store: Any) -> bool:
    return store.read("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'labels'").fetchone() is not None


def restore_labels(store: Any) -> tuple[int, tuple[str, ...]]:
    """Index every label of the store's `labels.jsonl` that its table lacks; (labels indexed in
    all, unreadable lines). `assay runs reindex` calls it after rebuilding the runs."""
    skipped: list[str] = []
    path = labels_file(store.path)
    _check_location(path)
    store.write(_INSERT, (_row(label) for label in read_label_lines(path, skipped)))
    total = store.read("SELECT count(*) FROM labels").fetchone()[0]
    return int(total), tuple(skipped)


class LabelBook:
    """The labels of one results store (a `SqliteRunStore`): add, read, export.

    On a store opened read-only by an assay whose store has no `labels` table yet, labels are read
    from `labels.jsonl` directly."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.path = labels_file(store.path)
        _check_location(self.path)
        self._indexed = _has_table(store)
        self._pending: list[Label] | None = None
        self.skipped: list[str] = []  # the lines of `labels.jsonl` read here that could not be (`<file>:<line>: <why>`)

    def _unindexed(self) -> list[Label]:
        """The labels `labels.jsonl` holds and the table lacks, read on a store opened read-only (which cannot
        index them): an import stopped by Ctrl-C, or a process killed, between appending and indexing left them,
        and `labels export` or `judge agreement` would otherwise not see them until a write synced them.
        Counting the file's lines first keeps this to one cheap read when nothing is missing."""
        if self._pending is None:
            self._pending = []
            if self.store.read_only and self._indexed:
                try:
                    data = self.path.read_bytes()
                except OSError:  # none yet, or unreadable here: the table is all there is to show
                    data = b""
                lines = data.count(b"\n") + (not data.endswith(b"\n") if data else 0)
                if lines > self.store.read("SELECT count(*) FROM labels").fetchone()[0]:
                    present = {row[0] for row in self.store.read("SELECT label_id FROM labels")}
                    self._pending = [label for label in read_label_lines(self.path, self.skipped)
                                     if label.label_id not in present]
        return self._pending

    def sync(self) -> list[str]:
        """Index what `labels.jsonl` holds and the table does not (another process's labels, or a
        label appended just before a crash); the unreadable lines."""
        if self.store.read_only:
            return []
        return list(restore_labels(self.store)[1])

    def add(self, labels: Iterable[Label]) -> list[Label]:
        """Append the labels not stored yet (by id) to `labels.jsonl`, then index them; the new ones."""
        if self.store.read_only:
            raise LabelError(f"the results store {self.store.path} is open read-only; labels cannot be added")
        wanted = list({label.label_id: label for label in labels}.values())
        present = self._present_ids([label.label_id for label in wanted])
        new = [label for label in wanted if label.label_id not in present]
        if not new:
            return []
        self._append([dumps_storable(label.to_json()) for label in new])
        self.store.write(_INSERT, (_row(label) for label in new))
        return new

    def _present_ids(self, ids: list[str]) -> set[str]:
        present: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.store.read(f"SELECT label_id FROM labels WHERE label_id IN ({','.join('?' * len(chunk))})", chunk)
            present.update(row[0] for row in rows)
        return present

    def _append(self, lines: list[str]) -> None:
        """One write and one fsync for all lines. A torn last line left by a crash gets its own line
        (the reader skips it), so the first new label never runs into it."""
        data = ("\n".join(lines) + "\n").encode("utf-8")
        _check_location(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise LabelError(f"could not open {self.path} to add labels: {error}") from None
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as error:
            raise LabelError(f"could not add labels to {self.path}: {error}") from None
        finally:
            os.close(fd)

    def labels(self, *, labeller: str | None = None, run_id: str | None = None) -> list[Label]:
        """Every label in the order it was added (optionally one labeller's, or one run's)."""
        if not self._indexed:
            return [label for label in read_label_lines(self.path)
                    if (labeller is None or label.labeller == labeller) and (run_id is None or label.run_id == run_id)]
        clauses, parameters = [], []
        if labeller is not None:
            clauses.append("labeller = ?")
            parameters.append(labeller)
        if run_id is not None:
            clauses.append("run_id = ?")
            parameters.append(run_id)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self.store.read(f"SELECT body FROM labels{where} ORDER BY rowid", parameters)
        return [parse_label(json.loads(row[0])) for row in rows] + [
            label for label in self._unindexed()
            if (labeller is None or label.labeller == labeller) and (run_id is None or label.run_id == run_id)]

    def labellers(self) -> set[str]:
        """Everyone who has labelled anything in this store."""
        if not self._indexed:
            return {label.labeller for label in read_label_lines(self.path)}
        return {row[0] for row in self.store.read("SELECT DISTINCT labeller FROM labels")} | {
            label.labeller for label in self._unindexed()}

    def check_labeller(self, labeller: str | None, option: str = "--labeller") -> None:
        """`--labeller NAME` names someone who labelled here (when anyone has): a name with no labels is a
        typo far more often than a person yet to start, and an empty answer would not say which. `option`:
        how the message names where the name was given."""
        known = self.labellers() if labeller is not None else set()
        if not known or labeller in known:
            return
        from assay.core.format import did_you_mean, join_first
        from assay.errors import UsageError

        same = next((name for name in sorted(known) if name.casefold() == labeller.casefold()), None)
        hint = f"; did you mean {same!r}?" if same else did_you_mean(labeller, known)
        raise UsageError(f"{option} {labeller!r}: no labels by {labeller!r}{hint} (labellers here: "
                         f"{join_first(sorted(known), separator=', ')})", "--labeller")

    def labels_of_unit(self, run_id: str, unit_id: str) -> list[Label]:
        if not self._indexed:
            return [label for label in read_label_lines(self.path) if (label.run_id, label.unit_id) == (run_id, unit_id)]
        rows = self.store.read("SELECT body FROM labels WHERE run_id = ? AND unit_id = ? ORDER BY rowid", (run_id, unit_id))
        return [parse_label(json.loads(row[0])) for row in rows] + [
            label for label in self._unindexed() if (label.run_id, label.unit_id) == (run_id, unit_id)]
