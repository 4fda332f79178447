"""The results store: an embedded SQLite (WAL) index over run records, for history, compare and view.

The interface is small (add a run, list runs, read a run, page its units, read one unit, read
its verdicts); the record files stay the source of truth and `reindex` rebuilds from them. A unit
carried from an earlier run holds a reference, which every read follows to the adopted unit. A
store file SQLite cannot use surfaces as one `StoreError` that names the file and the remedy.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, Protocol, Self, TypeVar

from assay.core.gates import pass_rate
from assay.core.record import (
    dumps_storable,
    MANIFEST_FILE,
    VERDICTS,
    RecordWriter,
    RunManifest,
    UnitLine,
    UnitResult,
    check_store_location,
    checkpoint_time_and_suffix,
    decode_json,
    iter_readable_unit_lines,
    iter_unit_lines,
    records_dir,
    store_path,
    unit_lines,
    unpublished_dir,
    write_record,
)
from assay.errors import AssayError, UsageError

__all__ = [
    "Reindexed",
    "RunStore",
    "SqliteRunStore",
    "StoreError",
    "StoredRun",
    "UnitPage",
    "open_store",
    "hold_run",
    "publish_held_runs",
    "publish_run",
    "publish_run_as_read",
    "publish_run_quietly",
    "reindex",
    "set_damaged_store_aside",
    "store_error",
    "unindexed_records_hint",
]

# `units` is a rowid table: its rows carry a unit's whole JSON (~2 KB for an agent attempt), and a
# WITHOUT ROWID table, which keeps rows in its key's b-tree, took twice as long to index a run of
# them (10,000 rows: 240-275 ms against 133-138). A store made before keeps its layout; the same
# statements read and write both.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    created_at TEXT NOT NULL,
    title TEXT NOT NULL,
    success INTEGER,
    unit_count INTEGER NOT NULL,
    counts TEXT NOT NULL,
    groups TEXT NOT NULL,
    record_path TEXT,
    manifest TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs (created_at);
CREATE TABLE IF NOT EXISTS units (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    unit_id TEXT NOT NULL,
    grp TEXT NOT NULL,
    verdict TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS units_verdicts ON units (run_id, unit_id, verdict, seq);
DROP INDEX IF EXISTS units_by_id;
CREATE TABLE IF NOT EXISTS run_groups (
    run_id TEXT NOT NULL,
    pos INTEGER NOT NULL,
    grp TEXT NOT NULL,
    passed INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    errored INTEGER NOT NULL,
    skipped INTEGER NOT NULL,
    ignored INTEGER NOT NULL,
    PRIMARY KEY (run_id, pos)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS unit_history (
    run_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    grp TEXT NOT NULL,
    passed INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    PRIMARY KEY (run_id, subject)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS labels (
    label_id TEXT PRIMARY KEY,
    labeller TEXT NOT NULL,
    created_at TEXT NOT NULL,
    run_id TEXT NOT NULL,
    unit_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    content TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS labels_by_unit ON labels (run_id, unit_id);
"""

# `units_verdicts` holds what pairing two runs reads (`changed_pairs`, `units_only_in`, `verdicts`), so
# it reads no unit row: a row is a page of body (~3 KB) for a few bytes of verdict (two 100,000-unit
# runs paired in 0.07 s of CPU against 0.43); a lookup by id reads it too. It replaced the unique
# `units_by_id (run_id, unit_id)`: keeping both cost indexing a quarter more CPU (100,000 JUnit units:
# 3.6 s against 2.9), and `add_run` refuses a unit id given twice itself. A store made before gets
# the new index (and loses the old) when first opened for writing; one opened read-only pairs without it.
_VERDICTS_INDEX = "units_verdicts"
_ANY_SHARD = object()
_BEYOND_ANY_STORE = 2**62  # a count no store reaches: a limit, offset or `latest~N` past it means "all", "past the end"


def _sqlite_count(number: int, name: str = "limit") -> int:
    """A limit or offset as SQLite can bind it (its integers stop at 2**63 - 1): `--limit 10**20` means all.
    Anything but a nonnegative integer (a `"5"` from the Python API) is refused, naming `name`."""
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise UsageError(f"{name} must be a nonnegative integer, got {number!r}")
    return min(number, _BEYOND_ANY_STORE)  # `_run_ids_newest_first`: sharded or not


def verdict_filter(verdict: str | Iterable[str] | None) -> list[str]:
    """The verdicts a unit filter keeps: `"failed,errored"` or `["failed", "errored"]` (none: every unit).
    A word that is no verdict is refused: it would only ever show "no units"."""
    from assay.core.format import did_you_mean

    if verdict is None:
        return []
    items = [item for item in verdict.split(",") if item] if isinstance(verdict, str) \
        else list(verdict) if isinstance(verdict, Iterable) else [verdict]
    for item in items:
        if item not in VERDICTS:
            raise UsageError(
                f"verdict must be one of {', '.join(VERDICTS)}, got {item!r}"
                + (did_you_mean(item, VERDICTS) if isinstance(item, str) else "")
            )
    return items


def _shard_of(manifest: RunManifest) -> str | None:
    """The `--shard i/n` a run was made with (None: a whole run, or a merge of shards)."""
    shard = (manifest.options or {}).get("shard")
    return shard if isinstance(shard, str) else None
# A unit's trials are one subject: its id without a trailing `#<n>` (core.run_diff.trial_subject, in SQL).
_SUBJECT = (
    "CASE WHEN rtrim(unit_id, '0123456789') LIKE '_%#' AND rtrim(unit_id, '0123456789') <> unit_id "
    "THEN substr(unit_id, 1, length(rtrim(unit_id, '0123456789')) - 1) ELSE unit_id END"
)
# Each run's verdicts per subject (trials passed, trials failed or errored): the narrow rows history reads.
# A carried unit (agent carry: nothing it depends on changed) is an earlier observation again, not a new
# one, so it adds nothing to its history; its row says so with no trials.
_CARRIED_KEY = '"carried_from"'
_CARRIED = f"instr(body, '{_CARRIED_KEY}') > 0"
# One run's rows in the order they were inserted: `seq >= 0` has SQLite walk the primary key (run_id,
# seq), whose rows lie on consecutive pages, instead of `units_by_id`, whose order (the unit ids')
# sends each row it reads to another page (100,000 rows: 0.05 s against 0.55 s of CPU).
_RUN_ROWS = "run_id = ?1 AND seq >= 0"
# The subquery's LIMIT keeps SQLite from merging it into the GROUP BY, which would carry each row's
# body through the sort to test it there (a third of the statement's time).
_TALLY_HISTORY = (
    "INSERT INTO unit_history SELECT run_id, subject, MIN(grp), SUM(verdict = 'passed' AND NOT carried), "
    "SUM(verdict IN ('failed', 'errored') AND NOT carried) FROM (SELECT run_id, " + _SUBJECT + " AS subject, grp, "
    "verdict, " + _CARRIED + " AS carried FROM units WHERE " + _RUN_ROWS + " LIMIT -1) GROUP BY subject"
)
# The same for a run none of whose units was carried (every imported run, most others), known as its
# lines are inserted: no body is read to look for a reference (100,000 Inspect units: 0.25 s against 0.33).
_TALLY_HISTORY_NONE_CARRIED = _TALLY_HISTORY.replace(_CARRIED, "0")
_HISTORY_VERSION = 2  # PRAGMA user_version once every run's history rows exist (2: carried units count none)


# Marks a file as an assay results store (SQLite's header field for this; "asay"), so a store is
# never mistaken for another program's database, nor theirs for ours.
APPLICATION_ID = 0x61736179
# `labels` (core/labels/store.py) is never dropped with a run: its rows are indexed from `labels.jsonl`.
_OWN_TABLES = frozenset({"runs", "units", "run_groups", "unit_history", "labels"})


@dataclass(frozen=True)
class StoredRun:
    manifest: RunManifest
    counts: dict[str, int]  # verdict -> units
    groups: dict[str, dict[str, int]]  # group -> verdict -> units
    unit_count: int
    record_path: str | None

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def pass_rate(self) -> float | None:
        """passed / (passed + failed + errored); skipped and ignored units do not count."""
        return pass_rate(self.counts["passed"], self.counts["failed"], self.counts["errored"], when_empty=None)

    def to_json(self, *, with_groups: bool = True) -> dict[str, Any]:
        document = {
            **self.manifest.to_json(),
            "unit_count": self.unit_count,
            "counts": self.counts,
            "pass_rate": self.pass_rate,
            "record_path": self.record_path,
        }
        if with_groups:
            document["groups"] = [{"group": name, "counts": counts} for name, counts in self.groups.items()]
        return document


@dataclass(frozen=True)
class UnitPage:
    units: list[UnitResult]
    total: int  # units matching the filters
    offset: int
    limit: int


class RunStore(Protocol):
    """What `runs`, compare and the viewer need; wrappers (read-only, remote) compose around it."""

    def add_run(self, manifest: RunManifest, units: Iterable[UnitResult], record_path: str | None = None) -> None: ...

    def list_runs(self, *, kind: str | None = None, search: str | None = None, limit: int = 50, offset: int = 0) -> list[StoredRun]: ...

    def get_run(self, ref: str, *, with_groups: bool = False) -> StoredRun: ...

    def unit_page(
        self, run_id: str, *, offset: int = 0, limit: int = 100, verdict: str | None = None,
        group: str | None = None, search: str | None = None,
    ) -> UnitPage: ...

    def get_unit(self, run_id: str, unit_id: str) -> UnitResult | None: ...

    def verdicts(self, run_id: str) -> dict[str, str]: ...


def _dumps(value: Any) -> str:
    return dumps_storable(value)


def _path_text(path: str | None) -> str | None:
    """A path as SQLite can hold it (valid UTF-8). Where the file system's encoding is not UTF-8 (an
    ASCII locale), a name's non-ASCII bytes reach Python as lone surrogates, which SQLite refuses: the
    name's bytes are kept instead, read as UTF-8 (`_path_from_text` turns them back)."""
    if path is None or path.isascii():
        return path
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        text = os.fsencode(path).decode("utf-8", "surrogateescape")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are no UTF-8 either: the run is indexed without its path
            return None
        return text


def _path_from_text(text: str | None) -> str | None:
    if text is None or text.isascii():
        return text
    return os.fsdecode(text.encode("utf-8", "surrogateescape"))


def _shown_text(text: str) -> str:
    """Text kept only to be searched (a run's title): a lone surrogate is shown as the character its bytes spell."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


_VERDICT_SET = frozenset(VERDICTS)


def _tally_sql() -> tuple[str, str]:
    """Two statements over one run's rows in `units`: the first writes its per-group counts into
    `run_groups` in first-seen order, the second reads the run's unit count and its `counts`
    (`{"passed": n, …}`, JSON text) back from them."""
    sums = ", ".join(f"sum(verdict = '{verdict}') AS {verdict}" for verdict in VERDICTS)
    columns = ", ".join(VERDICTS)
    groups = (
        f"INSERT INTO run_groups (run_id, pos, grp, {columns}) "
        f"SELECT ?1, row_number() OVER (ORDER BY first) - 1, grp, {columns} FROM "
        f"(SELECT grp, min(seq) AS first, {sums} FROM units WHERE {_RUN_ROWS} GROUP BY grp)"
    )
    totals = ", ".join(f"'{verdict}', coalesce(sum({verdict}), 0)" for verdict in VERDICTS)
    counts = f"SELECT coalesce(sum({' + '.join(VERDICTS)}), 0), json_object({totals}) FROM run_groups WHERE run_id = ?"
    return groups, counts


# Each group's counts are rows of their own: 50,000 groups as one JSON value cost SQLite ~20 MiB
# of transient memory to build (json_group_object's growing text, then Python's copy of it), as
# much as everything else the run had left. Runs indexed before keep their groups in `runs.groups`.
_TALLY_GROUPS, _TALLY_COUNTS = _tally_sql()


# ---------------------------------------------------------------------------------------------
# A store file SQLite cannot use


class StoreError(AssayError):
    """The results store file cannot be used; the message names the file and what to do (exit 2)."""


_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def _is_damage(error: BaseException) -> bool:
    if isinstance(error, json.JSONDecodeError):  # a stored row that no longer decodes
        return True
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _DAMAGE_CODES  # extended codes keep the primary one in the low byte


def _has_records(folder: Path) -> bool:
    try:
        return any((record / MANIFEST_FILE).is_file() for record in folder.iterdir())
    except OSError:
        return False


def unindexed_records_hint(database: Path) -> str:
    """For a store whose index holds no run: "" when no records lie beside it either, else what to
    do (an emptied or replaced `assay.db` beside the records of earlier runs)."""
    records = records_dir(database)
    if not _has_records(records):
        return ""
    return f"run records exist in {records}: `assay runs reindex` rebuilds the index from them"


_PERMISSION_CODES = frozenset({sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM})


def _is_permission(error: BaseException) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(error, PermissionError) or (code is not None and (code & 0xFF) in _PERMISSION_CODES)


def _unwritable(database: Path) -> str | None:
    """What this user may not do to the store file (or its -wal/-shm) or folder, if anything:
    `read <path>` or `write <path>`."""
    files = (database, Path(f"{database}-wal"), Path(f"{database}-shm"))
    for access, verb in ((os.R_OK, "read"), (os.W_OK, "write")):
        for path in files:
            if path.exists() and not os.access(path, access):
                return f"{verb} {path}"
    folder = database.parent
    return None if not folder.is_dir() or os.access(folder, os.W_OK | os.X_OK) else f"write {folder}"


def store_error(database: Path, error: BaseException) -> StoreError:
    """`error` from SQLite as one line for a person: which file, what is wrong, what to do."""
    if _is_damage(error):
        problem, rebuild = f"is damaged ({error})", "moves it aside and rebuilds it"
    elif "no such table" in str(error):  # an SQLite file with no tables (another program's is refused before): reindex fills it
        problem, rebuild = f"is not an assay results store ({error})", "builds the index in it"
    else:
        unwritable = _unwritable(database) if _is_permission(error) else None
        if unwritable is not None:
            return StoreError(f"the results store {database} cannot be used: no permission to {unwritable} ({error}); "
                              f"give this user {unwritable.split()[0]} access to it, or set ASSAY_STORE to a store this user may write")
        return StoreError(f"the results store {database} cannot be used: {error}")
    records = records_dir(database)
    if _has_records(records):
        remedy = f"`assay runs reindex` {rebuild} from the run records in {records}"
    else:
        remedy = f"move it aside; there are no run records in {records} to rebuild it from, so the next run starts a new store"
    return StoreError(f"the results store {database} {problem}; {remedy}")


_Parameters = ParamSpec("_Parameters")
_Result = TypeVar("_Result")


def _speaks_for_the_file(method: Callable[_Parameters, _Result]) -> Callable[_Parameters, _Result]:
    """A store method whose SQLite errors come out as a `StoreError` about the store's file.

    Damage can sit in any page, so it may first show in any query, long after the store was
    opened. ProgrammingError is a bug in assay, not in the file, and keeps its traceback.
    """

    @functools.wraps(method)
    def translated(*args: _Parameters.args, **kwargs: _Parameters.kwargs) -> _Result:
        try:
            return method(*args, **kwargs)
        except sqlite3.ProgrammingError:
            raise
        except (sqlite3.DatabaseError, json.JSONDecodeError) as error:
            raise store_error(args[0].path, error) from error  # type: ignore[attr-defined]

    return translated


def _read_only_uri(path: Path, *, immutable: bool = False) -> str:
    # as_uri escapes a `?`, `#` or `%` in the path
    return path.resolve().as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")


def _needs_immutable(path: Path) -> bool:
    """Whether reading `path` needs SQLite's `immutable` mode: a WAL reader must create the `-shm`
    file beside the store, which a user who may not write that folder cannot. When neither `-shm`
    nor `-wal` exists (a store closed cleanly) the file alone holds every run, so reading it without
    locking loses nothing; when they exist SQLite reads them itself, writable or not."""
    if Path(f"{path}-shm").exists() or Path(f"{path}-wal").exists():
        return False
    return not os.access(path.parent, os.W_OK)


def _initialise_empty_file(path: Path) -> bool:
    """Give a 0-byte store file (a kill while it was being created) the schema; False if not allowed to."""
    try:
        with closing(sqlite3.connect(path)) as connection:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            connection.executescript(_SCHEMA)
        return True
    except sqlite3.Error:
        return False


def _refuse_a_foreign_database(connection: sqlite3.Connection, path: Path) -> bool:
    """Raise `StoreError` when the file is another program's SQLite database; else whether it is
    marked as assay's already (False: a new, empty file, or a store an earlier assay made)."""
    application_id = connection.execute("PRAGMA application_id").fetchone()[0]
    if application_id == APPLICATION_ID:
        return True
    if application_id:
        found = f"its SQLite application_id is {application_id:#x}, not assay's {APPLICATION_ID:#x}"
    else:
        tables = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )}  # fmt: skip
        foreign = sorted(tables - _OWN_TABLES)
        if not foreign:
            return False
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        found = f"it holds tables assay did not make ({shown})"
    raise StoreError(
        f"the file {path} is not an assay results store: {found}. assay adds nothing to another program's "
        f"database; move it aside (or remove the link to it), or set ASSAY_STORE to a store of assay's own"
    )


class SqliteRunStore:
    """The embedded store: one SQLite file in WAL mode, safe for a writer and many readers."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise UsageError(f"the results store's path must be a path or a string, got {path!r}")
        self.path = Path(path)
        self.read_only = read_only
        if self.path.is_dir():  # `open_store(".assay")`: SQLite would only say "disk I/O error"
            raise UsageError(f"the results store's path {self.path} is a folder; it names the store's database file "
                             f"(e.g. {self.path / 'assay.db'})")
        check_store_location(self.path)
        if read_only and not self.path.exists():
            hint = unindexed_records_hint(self.path)  # a deleted assay.db beside the records of earlier runs
            raise UsageError(f"no results store at {self.path}" + (f", but {hint}" if hint else "; run an eval first (or set ASSAY_STORE)"))
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if read_only:
                self._connection = self._connect_for_reading()
            else:
                self._connection = sqlite3.connect(self.path, check_same_thread=False)
        except (sqlite3.Error, OSError) as error:
            raise store_error(self.path, error) from error
        try:
            self._prepare()
        except BaseException:
            self._connection.close()
            raise

    def _connect_for_reading(self) -> sqlite3.Connection:
        if self.path.stat().st_size == 0 and not _initialise_empty_file(self.path):
            # Nothing was ever stored in it and this user may not fix it: read it as the empty store it is.
            connection = sqlite3.connect(":memory:", check_same_thread=False)
            connection.executescript(_SCHEMA)
            return connection
        # A store this user may read but not write is still readable: without the shared-memory
        # file there is no WAL to coordinate with, so SQLite may read the file as it stands.
        immutable = _needs_immutable(self.path)
        return sqlite3.connect(_read_only_uri(self.path, immutable=immutable), uri=True, check_same_thread=False)

    @_speaks_for_the_file
    def _prepare(self) -> None:
        self._group_rows = True
        self._verdicts_indexed = True
        marked = _refuse_a_foreign_database(self._connection, self.path)
        if self.read_only:
            # Reading the schema and the first page of runs now makes a file that is no store at
            # all fail as it is opened, with its name, rather than in the middle of a command.
            self._connection.execute("SELECT 1 FROM runs LIMIT 1").fetchall()
            # A store written by an earlier assay, opened where it may not be changed, has no
            # `run_groups`; its runs' groups are all in `runs.groups`.
            self._group_rows = self._connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'run_groups'"
            ).fetchone() is not None
            if self._connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (_VERDICTS_INDEX,)
            ).fetchone() is None:
                self._verdicts_indexed = False  # nor `units_verdicts`: pairing reads the unit rows
        else:
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=NORMAL")
            if not marked:  # a new store, or one an earlier assay made: mark it as assay's
                self._connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self._connection.executescript(_SCHEMA)
            self._backfill_history()
        self._connection.execute("PRAGMA busy_timeout=10000")

    def _backfill_history(self) -> None:
        """Runs indexed by an assay without `unit_history` get their rows once, the first time the
        store is opened for writing (`user_version` remembers it is done)."""
        if self._connection.execute("PRAGMA user_version").fetchone()[0] >= _HISTORY_VERSION:
            return
        with self._connection:
            self._connection.execute("DELETE FROM unit_history")  # rows an earlier rule wrote are redone
            for (run_id,) in self._connection.execute("SELECT run_id FROM runs").fetchall():
                self._connection.execute(_TALLY_HISTORY, (run_id,))
            self._connection.execute(f"PRAGMA user_version = {_HISTORY_VERSION}")

    @property
    def has_history_rows(self) -> bool:
        """Whether every run's history rows exist (a read-only store an earlier assay made may lack them)."""
        try:
            return self._connection.execute("PRAGMA user_version").fetchone()[0] >= _HISTORY_VERSION
        except sqlite3.Error:
            return False

    def verdict_rows(self, alias: str) -> str:
        """`units <alias>`, read through `units_verdicts` where the store has it (see `_VERDICTS_INDEX`): for a query of
        some units of a run by id, which SQLite would otherwise answer by reading every row of the run."""
        return f"units {alias} INDEXED BY {_VERDICTS_INDEX}" if self._verdicts_indexed else f"units {alias}"

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------

    @_speaks_for_the_file
    def add_run(
        self, manifest: RunManifest, units: Iterable[UnitResult | UnitLine], record_path: str | None = None
    ) -> None:
        """Index a run in one transaction, in one pass over `units` (a generator will do); a run id
        already present is replaced whole."""
        run_id = manifest.run_id

        carried = False

        def rows() -> Iterator[tuple[str, int, str, str, str, str]]:
            nonlocal carried
            seen: set[str] = set()
            for seq, line in enumerate(unit_lines(units)):
                if line.verdict not in _VERDICT_SET:
                    raise ValueError(f"unit {line.unit_id!r} has the verdict {line.verdict!r}, not one of {VERDICTS}")
                if line.unit_id in seen:
                    raise ValueError(f"unit id {line.unit_id!r} appears twice in run {run_id}")
                seen.add(line.unit_id)
                if not carried and _CARRIED_KEY in line.text:  # (as `_CARRIED` tests it; a mention in a text counts too)
                    carried = True
                yield run_id, seq, line.unit_id, line.group, line.verdict, line.text

        with self._connection:
            self._delete(run_id)
            # The units first; SQLite then tallies them (the run's counts and its groups in first-seen
            # order), so a 50,000-unit run holds no per-group object here, and both commit together.
            self._connection.executemany("INSERT INTO units VALUES (?, ?, ?, ?, ?, ?)", rows())
            self._connection.execute(_TALLY_GROUPS, (run_id,))
            self._connection.execute(_TALLY_HISTORY if carried else _TALLY_HISTORY_NONE_CARRIED, (run_id,))
            unit_count, counts = self._connection.execute(_TALLY_COUNTS, (run_id,)).fetchone()
            self._connection.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, manifest.kind, manifest.created_at, _shown_text(manifest.title),
                    None if manifest.success is None else int(manifest.success), unit_count,
                    counts, "{}", _path_text(record_path), _dumps(manifest.to_json()),
                ),
            )

    @_speaks_for_the_file
    def write_lock_at_once(self) -> bool:
        """Begin a write transaction now (the next `add_run` is in it), or False, at once, when another
        connection is writing: a caller that would hold the lock for long need not queue for it."""
        self._connection.execute("PRAGMA busy_timeout=0")
        try:
            self._connection.execute("BEGIN IMMEDIATE")
            return True
        except sqlite3.OperationalError as error:
            if (getattr(error, "sqlite_errorcode", 0) & 0xFF) != sqlite3.SQLITE_BUSY:
                raise
            return False
        finally:
            self._connection.execute("PRAGMA busy_timeout=10000")

    @_speaks_for_the_file
    def delete_run(self, run_id: str) -> None:
        with self._connection:
            self._delete(run_id)

    def _delete(self, run_id: str) -> None:
        # Only a writable store deletes, and its schema has every table (a read-only one may lack `run_groups`).
        for table in ("units", "run_groups", "unit_history", "runs"):
            self._connection.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))

    # -- reading -------------------------------------------------------------------------

    @staticmethod
    def _stored(row: Sequence[Any]) -> StoredRun:
        unit_count, counts, groups, record_path, manifest = row
        return StoredRun(
            manifest=RunManifest.from_json(json.loads(manifest)),
            counts={**dict.fromkeys(VERDICTS, 0), **json.loads(counts)},
            groups=json.loads(groups),
            unit_count=unit_count,
            record_path=_path_from_text(record_path),
        )

    @_speaks_for_the_file
    def list_runs(
        self, *, kind: str | None = None, search: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[StoredRun]:
        """Newest first."""
        clauses, parameters = self._run_filters(kind, search)
        query = (
            "SELECT unit_count, counts, '{}', record_path, manifest FROM runs"
            + (" WHERE " + " AND ".join(clauses) if clauses else "")
            + " ORDER BY created_at DESC, run_id DESC LIMIT ? OFFSET ?"
        )
        rows = self._connection.execute(query, (*parameters, _sqlite_count(limit), _sqlite_count(offset, "offset"))).fetchall()
        return [self._stored(row) for row in rows]

    @_speaks_for_the_file
    def count_runs(self, *, kind: str | None = None, search: str | None = None) -> int:
        clauses, parameters = self._run_filters(kind, search)
        query = "SELECT count(*) FROM runs" + (" WHERE " + " AND ".join(clauses) if clauses else "")
        return int(self._connection.execute(query, parameters).fetchone()[0])

    @staticmethod
    def _run_filters(kind: str | None, search: str | None) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        parameters: list[Any] = []
        if kind:
            clauses.append("kind = ?")
            parameters.append(kind)
        if search:  # the text itself: `%` and `_` are not wildcards here
            clauses.append("(run_id LIKE ? ESCAPE '\\' OR title LIKE ? ESCAPE '\\')")
            pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            parameters += [pattern, pattern]
        return clauses, parameters

    @_speaks_for_the_file
    def resolve(self, ref: str, *, kind: str | None = None) -> str:
        """A run id from an id, a unique id prefix, `latest` or `latest~N` (N runs before the latest)."""
        if not isinstance(ref, str) or not ref:
            raise UsageError(f"a run reference is a run id, a unique prefix of one, latest or latest~N; got {ref!r}")
        if ref == "latest" or ref.startswith("latest~"):
            back_text = ref[len("latest~"):] if "~" in ref else "0"
            if not (back_text.isascii() and back_text.isdigit()):  # (`isdigit` alone takes `²`, which int() refuses)
                raise UsageError(f"run reference {ref!r}: write latest or latest~N")
            query = "SELECT run_id FROM runs" + (" WHERE kind = ?" if kind else "") + " ORDER BY created_at DESC, run_id DESC LIMIT 1 OFFSET ?"
            row = self._connection.execute(query, ((kind,) if kind else ()) + (_sqlite_count(int(back_text)),)).fetchone()
            if row is None:
                held = self.count_runs(kind=kind)
                of_kind = f" {kind}" if kind else ""
                hint = (f": it holds {held:,}{of_kind} run{'' if held == 1 else 's'}, and "
                        f"{'latest' if held == 1 else f'latest~{held - 1}'} is the oldest") if held else ""
                raise UsageError(f"no run {ref!r} in the store {self.path}{hint or self._empty_index_hint()}")
            return row[0]
        if self._connection.execute("SELECT 1 FROM runs WHERE run_id = ?", (ref,)).fetchone():
            return ref
        escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._connection.execute(
            "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' LIMIT 3", (escaped + "%",)
        ).fetchall() or self._aliased(ref)
        if not rows:
            from assay.core.format import did_you_mean

            word, _, back = ref.partition("~")  # `latst`, `lastest~1`: a misspelt `latest`
            hint = did_you_mean(word, ["latest"], shown=lambda near: repr(near + ("~" + back if back else ""))) \
                or self._empty_index_hint() or "; `assay runs list` shows the run ids"
            raise UsageError(f"no run {ref!r} in the store {self.path}{hint}")
        if len(rows) > 1:
            raise UsageError(f"run reference {ref!r} is ambiguous; give more characters")
        return rows[0][0]

    def _aliased(self, ref: str) -> list[tuple[str]]:
        """The run another of its ids names: one its manifest lists as an alias (the checkpoint id GlassKit's
        lines show, an eval-kit bundle id), or, for a journaled run recorded before aliases were, its
        checkpoint id (`run-<time>-<hex>`, the record `<kind>-<time>-<hex>`)."""
        rows = self._connection.execute(
            "SELECT run_id, manifest FROM runs WHERE instr(manifest, ?) > 0", (json.dumps(ref, ensure_ascii=False),)
        ).fetchall()
        named = [(run_id,) for run_id, manifest in rows if ref in RunManifest.from_json(json.loads(manifest)).aliases]
        shared = checkpoint_time_and_suffix(ref)
        if named or shared is None:
            return named
        return self._connection.execute("SELECT run_id FROM runs WHERE run_id LIKE ? LIMIT 3", ("%-" + shared,)).fetchall()

    def _empty_index_hint(self) -> str:
        if self.count_runs():
            return ""
        hint = unindexed_records_hint(self.path)
        if hint:
            return f"; its index is empty, but {hint}"
        return ("; it holds no run yet: run an eval (`assay video run`, `assay agent run`, `assay doc run-case`) or import "
                "another tool's log (`assay runs import`), or set ASSAY_STORE to the store that holds your runs")

    @_speaks_for_the_file
    def get_run(self, ref: str, *, with_groups: bool = False) -> StoredRun:
        """One run, with its per-group counts only when asked (`with_groups=True`, to show them): a run
        of 100,000 agent evals has as many groups, and reading them took 0.3 s."""
        run_id = self.resolve(ref)
        groups_column = "groups" if with_groups else "'{}'"
        row = self._connection.execute(
            f"SELECT unit_count, counts, {groups_column}, record_path, manifest FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        stored = self._stored(row)
        groups = self._groups(run_id) if with_groups else {}
        return dataclasses.replace(stored, groups=groups) if groups else stored

    @_speaks_for_the_file
    def group_page(self, run_id: str, limit: int) -> tuple[dict[str, dict[str, int]], int]:
        """A run's first `limit` groups' counts (in first-seen order) and how many groups it has: what
        the viewer's run page shows of a run whose every eval is a group, without reading them all."""
        total = self._connection.execute("SELECT count(*) FROM run_groups WHERE run_id = ?", (run_id,)).fetchone()[0] \
            if self._group_rows else 0
        if not total:  # indexed before `run_groups` existed (or no units): the counts are in `runs.groups`
            groups = self.get_run(run_id, with_groups=True).groups
            return dict(list(groups.items())[:limit]), len(groups)
        rows = self._connection.execute(
            f"SELECT grp, {', '.join(VERDICTS)} FROM run_groups WHERE run_id = ? ORDER BY pos LIMIT ?", (run_id, limit)
        )
        return {row[0]: dict(zip(VERDICTS, row[1:])) for row in rows}, total

    def _groups(self, run_id: str) -> dict[str, dict[str, int]]:
        """A run's per-group counts from `run_groups`, in first-seen order ({} for a run indexed
        before the table existed, whose counts are in `runs.groups`)."""
        if not self._group_rows:
            return {}
        rows = self._connection.execute(
            f"SELECT grp, {', '.join(VERDICTS)} FROM run_groups WHERE run_id = ? ORDER BY pos", (run_id,)
        )
        return {row[0]: dict(zip(VERDICTS, row[1:])) for row in rows}

    @_speaks_for_the_file
    def unit_page(
        self, run_id: str, *, offset: int = 0, limit: int = 100, verdict: str | None = None,
        group: str | None = None, search: str | None = None,
    ) -> UnitPage:
        """A page of a run's units in run order, filtered by verdict (`"failed,errored"` or a list of
        them), group and a text in the unit id. `run_id` may be any run reference (`latest`, a prefix)."""
        limit, offset, verdicts = _sqlite_count(limit), _sqlite_count(offset, "offset"), verdict_filter(verdict)
        page = self._unit_page(run_id, offset, limit, verdicts, group, search)
        if page.total == 0 and (named := self._run_named(run_id)) is not None:
            return self._unit_page(named, offset, limit, verdicts, group, search)
        return page

    def _unit_page(
        self, run_id: str, offset: int, limit: int, verdicts: list[str], group: str | None, search: str | None,
    ) -> UnitPage:
        clauses = ["run_id = ?"]
        parameters: list[Any] = [run_id]
        if verdicts:
            clauses.append(f"verdict IN ({','.join('?' * len(verdicts))})")
            parameters += verdicts
        if group is not None:
            clauses.append("grp = ?")
            parameters.append(group)
        if search:
            clauses.append("instr(lower(unit_id), lower(?)) > 0")
            parameters.append(search)
        where = " AND ".join(clauses)
        total = int(self._connection.execute(f"SELECT count(*) FROM units WHERE {where}", parameters).fetchone()[0])
        rows = self._connection.execute(
            f"SELECT body FROM units WHERE {where} ORDER BY seq LIMIT ? OFFSET ?", (*parameters, limit, offset)
        ).fetchall()
        units = self._adopted([UnitResult.from_json(json.loads(row[0])) for row in rows])
        return UnitPage(units, total, offset, limit)

    @_speaks_for_the_file
    def get_unit(self, run_id: str, unit_id: str, *, adopted: bool = True) -> UnitResult | None:
        """One unit; a carried unit is read through its reference unless `adopted` is False. `run_id` may be
        any run reference (`latest`, a prefix)."""
        query = "SELECT body FROM units WHERE run_id = ? AND unit_id = ?"
        row = self._connection.execute(query, (run_id, unit_id)).fetchone()
        if not row and (named := self._run_named(run_id)) is not None:
            row = self._connection.execute(query, (named, unit_id)).fetchone()
        if not row:
            return None
        unit = UnitResult.from_json(json.loads(row[0]))
        return self._adopted([unit])[0] if adopted else unit

    @_speaks_for_the_file
    def verdicts(self, run_id: str) -> dict[str, str]:
        """unit id -> verdict, in run order: all compare needs, without decoding unit bodies. `run_id` may be
        any run reference (`latest`, a prefix)."""
        query = f"SELECT unit_id, verdict FROM {self.verdict_rows('u')} WHERE run_id = ? ORDER BY seq"
        found = dict(self._connection.execute(query, (run_id,)).fetchall())
        if not found and (named := self._run_named(run_id)) is not None:
            found = dict(self._connection.execute(query, (named,)).fetchall())
        return found

    def _run_named(self, ref: Any) -> str | None:
        """The run a reference other than a run's own id names (`latest`, `latest~1`, a unique prefix), for the
        unit readers, which look a run id up directly: None when `ref` is a run's id or names no run (they then
        find nothing, as for an unknown id). Asked only once the direct lookup found nothing."""
        if not isinstance(ref, str) or self._connection.execute("SELECT 1 FROM runs WHERE run_id = ?", (ref,)).fetchone():
            return None
        try:
            return self.resolve(ref)
        except UsageError:
            return None

    @_speaks_for_the_file
    def carried_units(self, run_id: str) -> int:
        """How many of the run's units were carried from an earlier run (earlier verdicts, not observations)."""
        return int(self._connection.execute(f"SELECT count(*) FROM units WHERE {_RUN_ROWS} AND {_CARRIED}", (run_id,)).fetchone()[0])

    @_speaks_for_the_file
    def changed_pairs(self, before: str, after: str) -> list[tuple[str, str, str | None]]:
        """(unit id, verdict before, verdict after or None when `after` lacks it) for every unit of
        `before` (in its order) except those that passed in both: what a comparison lists, paired by
        SQLite in one join as it reads the rows, so the units that did not change cost no Python."""
        return self._connection.execute(
            f"SELECT a.unit_id, a.verdict, b.verdict FROM {self.verdict_rows('a')} LEFT JOIN {self.verdict_rows('b')} "
            "ON b.run_id = ?2 AND b.unit_id = a.unit_id "
            "WHERE a.run_id = ?1 AND a.seq >= 0 AND (b.verdict IS NULL OR a.verdict <> 'passed' OR b.verdict <> 'passed') "
            "ORDER BY a.seq", (before, after),
        ).fetchall()

    @_speaks_for_the_file
    def units_only_in(self, run_id: str, other: str) -> list[str]:
        """The ids of `run_id`'s units that `other` lacks, in `run_id`'s order."""
        rows = self._connection.execute(
            f"SELECT b.unit_id FROM {self.verdict_rows('b')} WHERE b.run_id = ?1 AND b.seq >= 0 AND NOT EXISTS "
            "(SELECT 1 FROM units a WHERE a.run_id = ?2 AND a.unit_id = b.unit_id) ORDER BY b.seq", (run_id, other),
        )
        return [unit_id for (unit_id,) in rows]

    @_speaks_for_the_file
    def units_by_id(self, run_id: str, unit_ids: Iterable[str], *, adopted: bool = True,
                    leaving_out: Sequence[str] = ()) -> dict[str, UnitResult]:
        """The run's units with these ids; carried ones read through their reference unless `adopted` is False
        (`leaving_out`: JSON paths of the bodies not to decode, as in `latest_units`; only as recorded)."""
        found = self._units_by_id(run_id, unit_ids, leaving_out)
        if not adopted:
            return found
        return dict(zip(found, self._adopted(list(found.values()))))

    def _units_by_id(self, run_id: str, unit_ids: Iterable[str], leaving_out: Sequence[str] = ()) -> dict[str, UnitResult]:
        found: dict[str, UnitResult] = {}
        wanted = list(unit_ids)
        body = f"json_remove(body, {', '.join('?' * len(leaving_out))})" if leaving_out else "body"
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            query = f"SELECT unit_id, {body} FROM units WHERE run_id = ? AND unit_id IN ({','.join('?' * len(chunk))})"
            try:
                rows = self._connection.execute(query, (*leaving_out, run_id, *chunk)).fetchall()
            except sqlite3.OperationalError as error:
                if not leaving_out or "json_remove" not in str(error):
                    raise
                return self._units_by_id(run_id, wanted)  # an SQLite without JSON functions: whole bodies
            found.update((unit_id, UnitResult.from_json(_decoded(text))) for unit_id, text in rows)
        return found

    # -- carried units -------------------------------------------------------------------

    def _adopted(self, units: list[UnitResult]) -> list[UnitResult]:
        """`units` with each carried one read through its reference: the adopted unit's detail, usage
        and artifacts under the carrying unit's id, verdict and reference. A reference to a run no
        longer in the store leaves the unit as recorded (its summary, no transcript)."""
        result = list(units)
        looking = {index: _reference(unit) for index, unit in enumerate(units) if unit.carried_from}
        looking = {index: reference for index, reference in looking.items() if reference is not None}
        for _ in range(_MAX_CARRY_HOPS):  # carries point at the executed unit; hops only guard older chains
            if not looking:
                break
            by_run: dict[str, set[str]] = {}
            for run_id, unit_id in looking.values():
                by_run.setdefault(run_id, set()).add(unit_id)
            found = {
                (run_id, unit_id): unit
                for run_id, unit_ids in by_run.items() for unit_id, unit in self._units_by_id(run_id, unit_ids).items()
            }
            following: dict[int, tuple[str, str]] = {}
            for index, reference in looking.items():
                origin = found.get(reference)
                if origin is None:
                    continue
                further = _reference(origin) if origin.carried_from else None
                if further is not None:
                    following[index] = further
                    continue
                result[index] = _adopt(units[index], origin)
            looking = following
        return result

    @_speaks_for_the_file
    def latest_units(
        self, unit_ids: Iterable[str], *, kind: str, identity: Mapping[str, Any] | None = None,
        leaving_out: Sequence[str] = (),
    ) -> dict[str, tuple[str, UnitResult]]:
        """For each unit id, the newest run of `kind` that holds it (and whose manifest identity has
        every `identity` item), with that unit as recorded: a carried one keeps its reference.
        `leaving_out` are JSON paths of the body the caller never reads (an agent unit's transcript):
        SQLite drops them before the body is decoded, so they cost neither decoding nor memory here."""
        wanted = set(unit_ids)
        found: dict[str, tuple[str, UnitResult]] = {}
        if not wanted:
            return found
        for run_id in self._run_ids_newest_first(kind, identity or {}):
            for unit_id, unit in self._units_by_id(run_id, wanted, leaving_out).items():
                found[unit_id] = (run_id, unit)
            wanted.difference_update(found)
            if not wanted:
                break
        return found

    def _run_ids_newest_first(self, kind: str, identity: Mapping[str, Any], *, shard: Any = _ANY_SHARD) -> list[str]:
        """Runs of `kind` whose manifest identity has every `identity` item, newest first; with `shard`, only
        those run with that `--shard` (None: not sharded)."""
        order = " ORDER BY created_at DESC, run_id DESC"
        if not identity and shard is _ANY_SHARD:
            return [row[0] for row in self._connection.execute("SELECT run_id FROM runs WHERE kind = ?" + order, (kind,))]
        clauses = ["json_extract(manifest, ?) = ?" for _ in identity]
        parameters: list[Any] = [kind]
        for key, value in identity.items():
            parameters += [f"$.identity.{key}", value]
        if shard is not _ANY_SHARD:
            clauses.append("json_extract(manifest, '$.options.shard') IS ?")
            parameters.append(shard)
        try:
            rows = self._connection.execute(f"SELECT run_id FROM runs WHERE kind = ? AND {' AND '.join(clauses)}" + order,
                                            parameters)
            return [row[0] for row in rows.fetchall()]
        except sqlite3.OperationalError as error:
            if "json_extract" not in str(error):
                raise
        # An SQLite without JSON functions: the manifests are read here instead.
        rows = self._connection.execute("SELECT run_id, manifest FROM runs WHERE kind = ?" + order, (kind,))
        return [
            run_id for run_id, manifest in rows.fetchall()
            if all((json.loads(manifest).get("identity") or {}).get(key) == value for key, value in identity.items())
            and (shard is _ANY_SHARD or (json.loads(manifest).get("options") or {}).get("shard") == shard)
        ]

    @_speaks_for_the_file
    def series(self, manifest: RunManifest) -> list[str]:
        """The ids of every run of this manifest's kind and project, newest first: of its `--shard` when it is a
        shard's, else of whole runs (and merged ones), so a shard is never the baseline or a point of a whole run."""
        return self._run_ids_newest_first(manifest.kind, project_identity(manifest), shard=_shard_of(manifest))

    def read(self, query: str, parameters: Sequence[Any] = ()) -> sqlite3.Cursor:
        """A read-only query, for the modules that own reading a table (history: core/history/store.py)."""
        try:
            return self._connection.execute(query, parameters)
        except sqlite3.Error as error:
            raise store_error(self.path, error) from error

    def write(self, statement: str, rows: Iterable[Sequence[Any]]) -> int:
        """One statement over `rows` in one transaction, for the modules that own writing a table
        (labels: core/labels/store.py); how many rows it changed."""
        try:
            with self._connection:
                return self._connection.executemany(statement, rows).rowcount
        except sqlite3.Error as error:
            raise store_error(self.path, error) from error

    @_speaks_for_the_file
    def runs_of(self, kind: str, identity: Mapping[str, Any]) -> list[str]:
        """The ids of the runs of `kind` whose manifest identity has every `identity` item (a project's:
        `{"project": "/path"}`), newest first, shards and merged runs alike."""
        return self._run_ids_newest_first(kind, identity)

    @_speaks_for_the_file
    def previous_run(self, run: StoredRun) -> StoredRun | None:
        """The run of the same kind and project (and `--shard`, see `series`) recorded just before `run`, or None."""
        ids = self.series(run.manifest)
        try:
            position = ids.index(run.run_id)
        except ValueError:
            return None
        return self.get_run(ids[position + 1]) if position + 1 < len(ids) else None

    @_speaks_for_the_file
    def run_with_identity(self, kind: str, key: str, value: str) -> str | None:
        """The earliest run of `kind` whose manifest identity holds `key` = `value` (an imported file's
        SHA-256: the same file imported again, whatever its time says), or None."""
        row = self.read(
            "SELECT run_id FROM runs WHERE kind = ? AND json_extract(manifest, '$.identity.' || ?) = ? "
            "ORDER BY created_at, run_id LIMIT 1", (kind, key, value),
        ).fetchone()
        return None if row is None else row[0]

    def existing_runs(self, run_ids: Iterable[str]) -> set[str]:
        """Which of these run ids the store holds."""
        wanted = list(dict.fromkeys(run_ids))
        present: set[str] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self._connection.execute(
                f"SELECT run_id FROM runs WHERE run_id IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall()
            present.update(row[0] for row in rows)
        return present


_MAX_CARRY_HOPS = 4

# What a run is a run of, by kind: the video eval dir, the agent project, the doc suite's config, an
# imported log's tool and task.
_PROJECT_KEYS = {"video": "eval_dir", "agent": "project", "doc": "suite", "imported": "project"}


def _decoded(body: str) -> Any:
    """A stored body, decoded as a record line is (`decode_json`): by orjson (a fifth of the json module's
    CPU on agent units), and by the json module where orjson refuses it (NaN, a lone surrogate's escape)
    or would read it otherwise (an integer past 64 bits, which orjson makes a float)."""
    try:
        data = body.encode()
    except UnicodeEncodeError:  # (a body is JSON text with escapes; this is only for safety)
        return json.loads(body)
    return decode_json(data)


def project_identity(manifest: RunManifest) -> dict[str, str]:
    """`{key: value}` of the manifest identity that names its project ({} when it names none)."""
    key = _PROJECT_KEYS.get(manifest.kind)
    value = (manifest.identity or {}).get(key) if key else None
    return {key: value} if key and isinstance(value, str) else {}


def _reference(unit: UnitResult) -> tuple[str, str] | None:
    reference = unit.carried_from
    if not isinstance(reference, Mapping):
        return None
    run_id, unit_id = reference.get("run_id"), reference.get("unit_id")
    return (run_id, unit_id) if isinstance(run_id, str) and isinstance(unit_id, str) else None


def _adopt(carrying: UnitResult, origin: UnitResult) -> UnitResult:
    detail = {**(origin.detail or {}), "carried_from": dict(carrying.carried_from or {})}
    return UnitResult(
        unit_id=carrying.unit_id, verdict=carrying.verdict, group=carrying.group, title=carrying.title,
        details=carrying.details or origin.details, expected=origin.expected, observed=origin.observed,
        reason=carrying.reason or origin.reason, duration_seconds=origin.duration_seconds, usage=origin.usage,
        cost_usd=origin.cost_usd, artifacts=origin.artifacts, detail=detail, carried_from=carrying.carried_from,
    )


def open_store(path: Path | None = None, *, read_only: bool = False) -> SqliteRunStore:
    """The project's store (`$ASSAY_STORE` or `<project root>/.assay/assay.db`)."""
    return SqliteRunStore(path or store_path(), read_only=read_only)


def publish_run(
    manifest: RunManifest, units: Iterable[UnitResult], *, database: Path | None = None, replace: bool = False
) -> Path:
    """Write the run record, then index it; returns the record folder. `units` is read once. With
    `replace`, a record of the same run id is replaced (see `write_record`)."""
    database = database or store_path()
    check_store_location(database)
    record = write_record(records_dir(database), manifest, units, replace=replace)
    _index(database, manifest, record)
    return record


def _index(database: Path, manifest: RunManifest, record: Path) -> None:
    # From the record just written, line by line: each unit was encoded once, and the index is
    # exactly what `reindex` would rebuild from the same files.
    with SqliteRunStore(database) as store:
        store.add_run(manifest, iter_unit_lines(record), str(record))


# How long `publish_run_as_read` may hold the store's write lock while its units are still coming:
# another process writing the store waits for it up to its busy timeout (10 s).
_LOCK_WHILE_READING_S = 4.0


class _IndexAfterwards(Exception):
    """The units are coming too slowly to hold the store's write lock until the last: index them afterwards."""


def publish_run_as_read(
    manifest: RunManifest, units: Iterable[UnitResult | UnitLine], *, database: Path | None = None,
    replace: bool = False, lock_for_at_most_s: float = _LOCK_WHILE_READING_S,
) -> Path:
    """`publish_run` in one pass: each unit's row is inserted as its line is written to the record, so
    that indexing runs while `units` is still being produced (an import's log read in another process),
    and the index commits only once the record is complete, as `publish_run`'s does. Its transaction
    holds the store's write lock while `units` is read; when that takes longer than
    `lock_for_at_most_s`, the rows are rolled back, and the rest of the record is written and indexed
    afterwards, as `publish_run` does; so is a run whose store another connection is writing when it
    starts (it is not queued for). When only the index fails, the record is still completed."""
    database = database or store_path()
    check_store_location(database)
    lines = iter(unit_lines(units))
    writer = RecordWriter(records_dir(database), manifest, replace=replace)
    try:
        try:
            with SqliteRunStore(database) as store:
                if not store.write_lock_at_once():  # another writer has it: read them all first, as `publish_run`
                    raise _IndexAfterwards
                store.add_run(manifest, _written(lines, writer, lock_for_at_most_s), str(writer.record))
            return writer.record
        except _IndexAfterwards:
            index_error = None
        except StoreError as error:
            index_error = error
        for line in lines:
            writer.write(line)
        record = writer.finish()
    except BaseException:
        writer.abandon()
        raise
    if index_error is not None:
        raise index_error
    _index(database, manifest, record)
    return record


def _written(lines: Iterator[UnitLine], writer: RecordWriter, lock_for_at_most_s: float) -> Iterator[UnitLine]:
    """`lines`, each written to the record before it is indexed; the record finished after the last."""
    deadline = time.monotonic() + lock_for_at_most_s
    for count, line in enumerate(lines, 1):
        writer.write(line)
        yield line
        if not count % 1024 and time.monotonic() > deadline:
            raise _IndexAfterwards
    writer.finish()


def publish_run_quietly(build: Any, *, database: Path | None = None, replace: bool = False) -> Path | None:
    """Build and publish a run record; any failure is one warning line on stderr, never an exit.

    `build` is a callable returning (manifest, units), so even a conversion bug cannot change a
    run's outcome; the units are read once, as the record is written. The record is written before the index, so when only the index fails the
    warning says where the record is: `assay runs reindex` can still pick it up. With `replace`,
    a record of the same run id is replaced (a resumed run recording itself again).
    """
    database = database or store_path()
    try:
        check_store_location(database)
        manifest, units = build()
        record = write_record(records_dir(database), manifest, units, replace=replace)
    except AssayError as error:  # a message for a person already
        print(f"Warning: run record not stored: {error}", file=sys.stderr)
        return None
    except Exception as error:  # noqa: BLE001 - the run's own results are already durable
        print(f"Warning: run record not stored: {type(error).__name__}: {error}", file=sys.stderr)
        return None
    try:
        _index(database, manifest, record)
    except StoreError as error:
        print(f"Warning: run recorded in {record} but not indexed: {error}", file=sys.stderr)
    except Exception as error:  # noqa: BLE001 - as above
        print(f"Warning: run recorded in {record} but not indexed: {type(error).__name__}: {error}", file=sys.stderr)
    return record


# ---------------------------------------------------------------------------------------------
# Records held until published: a run whose results are already shown, killed before it stored them


_UNPUBLISHED_SUFFIX = ".record"


def _held_lock(path: Path) -> Any:
    from assay.core.fsutil import STALE_TEMPORARY_AGE_S
    from assay.core.file_lock import LockFile

    def owner_pid(content: bytes) -> int | None:
        first = content.split(b"\n", 1)[0]
        return int(first) if first.isdigit() else None

    # The holder keeps an flock while it lives, so a held record is published by the next command
    # only once its process is gone (killed between showing its results and storing them).
    return LockFile(path, owner_pid, unreadable_stale_after_s=STALE_TEMPORARY_AGE_S, hold_os_lock=True)


def hold_run(manifest: RunManifest, units: Iterable[UnitResult | UnitLine], *, database: Path | None = None) -> Any:
    """Keep a run's record in `<store folder>/unpublished/` until this process has published it;
    returns the hold, whose `release()` (after publishing) removes it. A kind without a checkpoint
    (doc: its result bundle is its only trace) holds its record before it shows its results, so a
    kill -9 between showing and storing them leaves the record for `publish_held_runs`."""
    database = database or store_path()
    check_store_location(database)
    folder = unpublished_dir(database)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [str(os.getpid()), dumps_storable(manifest.to_json()), *(line.text for line in unit_lines(units))]
    return _held_lock(folder / f"{manifest.run_id}{_UNPUBLISHED_SUFFIX}").acquire(("\n".join(lines) + "\n").encode("utf-8"))


def publish_held_runs(*, database: Path | None = None) -> list[str]:
    """Publish the records held by processes that died before publishing them; returns their run ids.

    A record already published (the process died after storing it, before letting go) is published
    again under the same id, replacing itself. A held file that cannot be read is left for a person.
    """
    database = database or store_path()
    try:
        check_store_location(database)
    except AssayError:
        return []  # publishing the run that found it says why, once
    folder = unpublished_dir(database)
    try:
        held = sorted(path for path in folder.iterdir() if path.name.endswith(_UNPUBLISHED_SUFFIX))
    except OSError:
        return []
    published: list[str] = []
    for path in held:
        lock = _held_lock(path)
        if not lock.is_abandoned():
            continue  # its process is still running: it publishes the record itself
        record = _read_held(path)
        if record is not None and publish_run_quietly(lambda: record, database=database, replace=True) is not None:
            lock.break_if_stale()
            published.append(record[0].run_id)
    return published


def _read_held(path: Path) -> tuple[RunManifest, list[UnitLine]] | None:
    try:
        _, manifest_text, *unit_texts = path.read_text(encoding="utf-8").splitlines()
        return RunManifest.from_json(json.loads(manifest_text)), [UnitLine.parse(text) for text in unit_texts]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


# ---------------------------------------------------------------------------------------------
# Rebuilding the index from the records


@dataclass(frozen=True)
class Reindexed:
    runs: int  # runs indexed
    set_aside: Path | None = None  # where a damaged store file was moved before rebuilding
    damage: str = ""  # what was wrong with it
    unreadable: tuple[Path, ...] = ()  # record folders with a manifest that could not be read
    unreadable_why: tuple[str, ...] = ()  # why, for each of them
    skipped_lines: tuple[str, ...] = ()  # `<units file>:<line>: <why>` of each unit line left out
    labels: int = 0  # labels in the store after reading labels.jsonl back
    skipped_labels: tuple[str, ...] = ()  # `<labels.jsonl>:<line>: <why>` of each label line left out
    copies: tuple[tuple[Path, Path], ...] = ()  # (copy, the record indexed instead) of each record of a run already indexed


def _damage_of(database: Path) -> str:
    """What SQLite finds wrong with the store file ("" when it is sound or absent).

    quick_check reads every page, which is too slow for every command but right for a rebuild
    that is about to trust the file.
    """
    if not database.exists():
        return ""
    try:
        with closing(sqlite3.connect(_read_only_uri(database), uri=True)) as connection:
            problems = [row[0] for row in connection.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.DatabaseError as error:
        if _is_damage(error):
            return str(error)
        raise store_error(database, error) from error
    return "" if problems == ["ok"] else "; ".join(problems[:3])


def set_damaged_store_aside(database: Path, now: _dt.datetime | None = None) -> Path:
    """Rename the store file to `<name>.corrupt-<UTC time>`, with its -wal and -shm companions.

    The companions move first: a stale write-ahead log left beside a new store could be replayed
    into it, while a store left without its log is merely still damaged.
    """
    stamp = (now or _dt.datetime.now(_dt.UTC)).astimezone(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    target = database.with_name(f"{database.name}.corrupt-{stamp}")
    attempt = 1
    while any(Path(f"{target}{suffix}").exists() for suffix in ("", "-wal", "-shm")):
        attempt += 1
        target = database.with_name(f"{database.name}.corrupt-{stamp}-{attempt}")
    for suffix in ("-wal", "-shm", ""):
        source = Path(f"{database}{suffix}")
        if source.exists():
            source.rename(f"{target}{suffix}")
    return target


def reindex(database: Path | None = None) -> Reindexed:
    """Index every complete record beside the database, first moving a damaged store aside.

    A damaged or missing store is rebuilt in a new file beside it that takes its place only when
    every record is in: a rebuild stopped half-way (Ctrl-C, a kill) leaves the store as it was, not
    an index that silently lacks the runs it had not reached yet."""
    database = database or store_path()
    check_store_location(database)
    damage = _damage_of(database)
    if not damage and database.exists() and database.stat().st_size:
        return _reindex_into(database, set_aside=None, damage="")  # a sound store: each run is replaced whole
    rebuilt = database.with_name(f"{database.name}.rebuilding")
    _remove_store_files(rebuilt)  # what an earlier, stopped rebuild left
    try:
        outcome = _reindex_into(rebuilt, set_aside=None, damage=damage)
    except BaseException:
        _remove_store_files(rebuilt)
        raise
    set_aside = set_damaged_store_aside(database) if damage else None
    if database.exists() and database.stat().st_size:  # made meanwhile (a run recorded during the rebuild): index into it
        _remove_store_files(rebuilt)
        return dataclasses.replace(_reindex_into(database, set_aside=None, damage=""), set_aside=set_aside, damage=damage)
    for suffix in ("-wal", "-shm"):  # none after a clean close; never carried over to another file
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    rebuilt.replace(database)
    return dataclasses.replace(outcome, set_aside=set_aside)


def _remove_store_files(database: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)


def _reindex_into(database: Path, *, set_aside: Path | None, damage: str) -> Reindexed:
    """Index every complete record of `records_dir(database)` (and the labels) into the store at `database`."""
    count = 0
    unreadable: list[Path] = []
    why: list[str] = []
    skipped: list[str] = []
    indexed: dict[str, Path] = {}  # run id -> the record folder indexed for it
    copies: list[tuple[Path, Path]] = []
    folder = records_dir(database)
    with SqliteRunStore(database) as store:
        for record in sorted(folder.iterdir()) if folder.is_dir() else ():
            if not (record / MANIFEST_FILE).is_file():
                continue  # no manifest yet: an unfinished record, not a damaged one
            try:
                try:
                    manifest = RunManifest.from_json(json.loads((record / MANIFEST_FILE).read_text(encoding="utf-8")))
                except (ValueError, KeyError, TypeError, AttributeError) as error:  # say which file: not units.jsonl
                    detail = f"KeyError: {error}" if isinstance(error, KeyError) else str(error) or type(error).__name__
                    raise ValueError(f"{detail} in {MANIFEST_FILE}") from error
                # A record folder copied under another name holds the same run: it is indexed once, from the
                # folder named after its id (where runs write it) when that one is there.
                kept = indexed.get(manifest.run_id)
                if kept is not None and (kept.name == manifest.run_id or record.name != manifest.run_id):
                    copies.append((record, kept))
                    continue
                # Read line by line as it is indexed: a line that cannot be read is named and left out.
                store.add_run(manifest, iter_readable_unit_lines(record, skipped), str(record))
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
                unreadable.append(record)
                why.append(f"{type(error).__name__}: {error}" if isinstance(error, KeyError) else str(error) or type(error).__name__)
                continue
            indexed[manifest.run_id] = record
            if kept is not None:  # the copy indexed first is replaced whole by the run's own folder
                copies.append((kept, record))
                continue
            count += 1
        from assay.core.labels.store import restore_labels  # labels live in labels.jsonl beside the records

        labels, skipped_labels = restore_labels(store)
    return Reindexed(count, set_aside, damage, tuple(unreadable), tuple(why), tuple(skipped), labels, skipped_labels,
                     tuple(copies))
