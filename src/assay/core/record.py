"""The run record every kind writes: a manifest (who, when, how, gates, summary) and its units.

A record is a folder `<records>/<run_id>/` with `units.jsonl` (one unit result a line, append-only)
and `manifest.json`, written last so a folder without a manifest is an unfinished record.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import secrets
import subprocess
import tempfile
import time
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from json.decoder import scanstring
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from assay.core.jsonvalue import jsonable
from assay.core.fsutil import STALE_TEMPORARY_AGE_S, fsync_directory, remove_stale_temporary_files, write_atomically
from assay.core.timestamps import time_ordered_id, utc_timestamp
from assay.errors import ConfigError

__all__ = [
    "FAILING_VERDICTS",
    "RECORD_SCHEMA",
    "VERDICTS",
    "RunManifest",
    "UnitLine",
    "UnitResult",
    "UnitSpool",
    "UnreadableRecord",
    "check_store_location",
    "check_store_writable",
    "checkpoint_time_and_suffix",
    "checkpointed_run_id",
    "count_verdicts",
    "decode_json",
    "git_state",
    "group_counts",
    "iter_unit_documents",
    "jsonable",
    "merged_created_at",
    "merged_run_id",
    "new_run_id",
    "project_root",
    "read_record",
    "records_dir",
    "state_folder",
    "store_path",
    "unpublished_dir",
    "dumps_if_plain",
    "unit_document",
    "unit_lines",
    "utc_timestamp",
    "RecordWriter",
    "write_record",
]

RECORD_SCHEMA = "assay.run-record.v1"
VERDICTS = ("passed", "failed", "errored", "skipped", "ignored")
FAILING_VERDICTS = frozenset({"failed", "errored"})
STORE_ENVIRONMENT = "ASSAY_STORE"
STATE_FOLDER = ".assay"
MANIFEST_FILE = "manifest.json"
UNITS_FILE = "units.jsonl"


@dataclass(frozen=True, slots=True)
class UnitResult:
    """One unit of work's outcome, with a stable identity so two runs can be paired unit by unit.

    `group` is the per-target / per-eval table a unit is counted in (`/`-separated, outermost
    first); `title` names the unit for a person and `details` explains a failure in a few lines
    (JUnit shows both); `detail` holds what the viewer's drill-down shows for the kind (a
    transcript, findings); `artifacts` names files. A unit `carried_from` `{run_id, unit_id}`
    adopts that published unit's outcome: its record holds the reference, not a copy, and the
    results store reads the adopted unit's detail through it.
    """

    unit_id: str
    verdict: str  # passed | failed | errored | skipped | ignored
    group: str = ""
    title: str = ""
    details: str = ""
    expected: Any = None
    observed: Any = None
    reason: str = ""
    duration_seconds: float | None = None
    usage: Mapping[str, Any] | None = None
    cost_usd: float | None = None
    artifacts: Mapping[str, Any] | None = None
    detail: Mapping[str, Any] | None = None
    carried_from: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        _check_verdict(self.unit_id, self.verdict)

    def to_json(self) -> dict[str, Any]:
        return unit_document(
            self.unit_id, self.verdict, self.group, expected=self.expected, observed=self.observed, title=self.title,
            details=self.details, reason=self.reason, duration_seconds=self.duration_seconds, usage=self.usage,
            cost_usd=self.cost_usd, artifacts=self.artifacts, detail=self.detail, carried_from=self.carried_from,
        )

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> UnitResult:
        return cls(
            unit_id=document["unit_id"],
            verdict=document["verdict"],
            group=document.get("group", ""),
            title=document.get("title", ""),
            details=document.get("details", ""),
            expected=document.get("expected"),
            observed=document.get("observed"),
            reason=document.get("reason", ""),
            duration_seconds=document.get("duration_seconds"),
            usage=document.get("usage"),
            cost_usd=document.get("cost_usd"),
            artifacts=document.get("artifacts"),
            detail=document.get("detail"),
            carried_from=document.get("carried_from"),
        )


def _check_verdict(unit_id: str, verdict: str) -> None:
    if verdict not in VERDICTS:
        raise ValueError(f"unit {unit_id!r}: verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")


_EMPTY = (None, "", {})


def unit_document(
    unit_id: str, verdict: str, group: str = "", *, expected: Any = None, observed: Any = None, title: str = "",
    details: str = "", reason: str = "", duration_seconds: float | None = None, usage: Mapping[str, Any] | None = None,
    cost_usd: float | None = None, artifacts: Mapping[str, Any] | None = None, detail: Mapping[str, Any] | None = None,
    carried_from: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A unit's record document (`UnitResult.to_json`) from its fields, without making the
    `UnitResult`: an importer encodes 100,000 units it never reads again, and making each frozen
    dataclass and reading it back cost 3.8 µs where this costs 1.1. The key order is the record's
    (`UnitLine.parse` reads the identity from the first three keys); empty optional fields are left
    out."""
    _check_verdict(unit_id, verdict)
    document: dict[str, Any] = {
        "unit_id": unit_id, "verdict": verdict, "group": group, "expected": expected, "observed": observed,
    }
    if title not in _EMPTY:
        document["title"] = title
    if details not in _EMPTY:
        document["details"] = details
    if reason not in _EMPTY:
        document["reason"] = reason
    if duration_seconds not in _EMPTY:
        document["duration_seconds"] = duration_seconds
    if usage not in _EMPTY:
        document["usage"] = usage
    if cost_usd not in _EMPTY:
        document["cost_usd"] = cost_usd
    if artifacts not in _EMPTY:
        document["artifacts"] = artifacts
    if detail not in _EMPTY:
        document["detail"] = detail
    if carried_from not in _EMPTY:
        document["carried_from"] = carried_from
    return document


@dataclass(frozen=True)
class RunManifest:
    """What a run was: identity, options and gates as given, and what it came to."""

    run_id: str
    kind: str  # video | agent | doc
    created_at: str  # ISO 8601 UTC
    title: str = ""
    git_commit: str | None = None
    git_dirty: bool | None = None
    identity: Mapping[str, Any] = field(default_factory=dict)  # adapter, agent/model, judge, suite
    options: Mapping[str, Any] = field(default_factory=dict)
    gates: Sequence[Mapping[str, Any]] = ()
    summary: Mapping[str, Any] = field(default_factory=dict)
    usage: Mapping[str, Any] | None = None
    cost_usd: float | None = None
    success: bool | None = None
    exit_code: int | None = None
    duration_seconds: float | None = None
    # Other ids its kind shows for the run (GlassKit's checkpoint id `run-…`, an eval-kit bundle id): what a
    # console line, an NDJSON event or a report names, which `assay runs show` and compare accept too.
    aliases: Sequence[str] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": RECORD_SCHEMA,
            "run_id": self.run_id,
            "kind": self.kind,
            "created_at": self.created_at,
            "title": self.title,
            "git": {"commit": self.git_commit, "dirty": self.git_dirty},
            "identity": dict(self.identity),
            "options": dict(self.options),
            "gates": [dict(gate) for gate in self.gates],
            "summary": dict(self.summary),
            "usage": dict(self.usage) if self.usage is not None else None,
            "cost_usd": self.cost_usd,
            "success": self.success,
            "exit_code": self.exit_code,
            "duration_seconds": self.duration_seconds,
            **({"aliases": list(self.aliases)} if self.aliases else {}),
        }

    @classmethod
    def begin(cls, kind: str, folder: Path, *, run_id: str | None = None, **fields: Any) -> RunManifest:
        """A new run's manifest: a fresh id (unless `run_id` is given), the time now, and the git
        state of `folder` (the current directory when `folder` is not a directory); `fields` are the rest."""
        commit, dirty = git_state(folder if folder.is_dir() else Path.cwd())
        return cls(
            run_id=run_id or new_run_id(kind), kind=kind, created_at=utc_timestamp(), git_commit=commit, git_dirty=dirty,
            **fields,
        )

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> RunManifest:
        git = document.get("git") or {}
        return cls(
            run_id=document["run_id"],
            kind=document["kind"],
            created_at=document["created_at"],
            title=document.get("title", ""),
            git_commit=git.get("commit"),
            git_dirty=git.get("dirty"),
            identity=document.get("identity") or {},
            options=document.get("options") or {},
            gates=document.get("gates") or (),
            summary=document.get("summary") or {},
            usage=document.get("usage"),
            cost_usd=document.get("cost_usd"),
            success=document.get("success"),
            exit_code=document.get("exit_code"),
            duration_seconds=document.get("duration_seconds"),
            aliases=tuple(alias for alias in _listed(document.get("aliases", _earlier_aliases(document)))
                          if isinstance(alias, str)),
        )


def _earlier_aliases(document: Mapping[str, Any]) -> list[Any]:
    """The other id a record written before manifests listed `aliases` already kept: a doc run's eval-kit
    bundle id, as `identity.bundle_run_id` (a video run's checkpoint id is found by its time and suffix)."""
    identity = document.get("identity")
    return [identity.get("bundle_run_id")] if isinstance(identity, Mapping) and document.get("kind") == "doc" else []


def _listed(value: Any) -> list[Any]:
    """A manifest field meant as a list, as one (anything else, as a hand-edited record may hold, as none)."""
    return value if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------------
# Identity of a run: id, time, git state, where it is kept


def new_run_id(kind: str, now: _dt.datetime | None = None) -> str:
    """`<kind>-<YYYYMMDDTHHMMSSZ>-<8 hex>`, the one shape of every run id (a journaled run's is its
    checkpoint's, see `checkpointed_run_id`)."""
    return time_ordered_id(kind, now)


def checkpointed_run_id(kind: str, checkpoint_id: str) -> str:
    """The record id of a journaled run: its checkpoint's time and suffix under the kind's name
    (`run-20261202T041909Z-785031e3` -> `video-20261202T041909Z-785031e3`). A run killed after it
    was recorded but before its checkpoint was sealed is recorded again by `--resume`, under the
    same id, so it replaces itself instead of being listed twice."""
    _, separator, rest = checkpoint_id.partition("-")
    return f"{kind}-{rest}" if separator and rest else f"{kind}-{checkpoint_id}"


def merged_run_id(kind: str, shards: Sequence[RunManifest]) -> str:
    """The record id of the run `assay runs merge` makes of `shards`: the newest shard's time and 8 hex of
    the SHA-256 of their run ids (in whatever order they were given). Merging the same shards again makes
    the same id, so it replaces the merged run instead of recording a second one."""
    import hashlib

    moment = _newest_shard(shards) or _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
    digest = hashlib.sha256("\n".join(sorted(manifest.run_id for manifest in shards)).encode("utf-8")).hexdigest()
    return f"{kind}-{moment.strftime('%Y%m%dT%H%M%SZ')}-{digest[:8]}"


def merged_created_at(shards: Sequence[RunManifest]) -> str:
    """When the run `assay runs merge` makes of `shards` was made: a millisecond after its newest shard, not at the
    merge, so that it is the latest run just after its shards (`runs merge && runs compare latest`) but merging old
    shards again after a newer run does not make their run the latest."""
    newest = _newest_shard(shards)
    return utc_timestamp(newest + _dt.timedelta(milliseconds=1) if newest is not None else None)


def _newest_shard(shards: Sequence[RunManifest]) -> _dt.datetime | None:
    """The newest shard's time (None: no shard's could be read)."""
    moments = []
    for manifest in shards:
        try:
            moments.append(_dt.datetime.fromisoformat(manifest.created_at.replace("Z", "+00:00")).astimezone(_dt.UTC))
        except (AttributeError, TypeError, ValueError):
            continue  # a hand-edited time: the other shards' say when
    return max(moments, default=None)


_TIME_AND_SUFFIX = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}")


def checkpoint_time_and_suffix(checkpoint_id: str) -> str | None:
    """What a checkpoint id shares with its run's record id (`checkpointed_run_id`): the part after its
    kind (`run-20261202T041909Z-785031e3` -> `20261202T041909Z-785031e3`); None for another shape."""
    _, separator, rest = checkpoint_id.partition("-")
    return rest if separator and _TIME_AND_SUFFIX.fullmatch(rest) else None


def project_root(start: Path | None = None) -> Path:
    """The repository `start` (default: cwd) is in (the nearest folder holding `.git`), else `start`.

    One store per repository: an agent project with its own pyproject.toml, an eval dir and the
    repository root all record into the same history, which `assay runs` finds from anywhere in it."""
    origin = (start or Path.cwd()).resolve()
    for folder in (origin, *origin.parents):
        if (folder / ".git").exists():
            return folder
    return origin


def store_path(start: Path | None = None) -> Path:
    """`$ASSAY_STORE` when set, else `<project root>/.assay/assay.db` (see `check_store_location`)."""
    override = os.environ.get(STORE_ENVIRONMENT)
    if override:
        chosen = Path(override).expanduser().resolve()
        if chosen.is_dir():  # `ASSAY_STORE=.assay`: SQLite would only say "disk I/O error"
            raise ConfigError(f"{STORE_ENVIRONMENT}={override} is a folder; it names the store's database file "
                              f"(e.g. {STORE_ENVIRONMENT}={Path(override) / 'assay.db'})")
        return chosen  # a path under a file: see `check_store_location`
    default = project_root(start) / STATE_FOLDER / "assay.db"
    _refuse_a_misspelt_store_variable(default)
    return default


def _refuse_a_misspelt_store_variable(default: Path) -> None:
    """`ASSAY_STOER=/tmp/s.db` (or `ASAY_STORE`, `assay_store`) was ignored: the runs went into, and were read from,
    the project's own store, the one the variable was set to keep them out of. Refused, naming the variable meant."""
    from assay.core.format import variable_meant

    misspelt = variable_meant(os.environ, STORE_ENVIRONMENT)
    if misspelt is not None:
        raise ConfigError(f"{misspelt} is set, but assay reads {STORE_ENVIRONMENT} (did you mean it?), so the results store "
                          f"would be {default}: rename the variable to {STORE_ENVIRONMENT}, or unset it")


def state_folder(root: Path) -> Path:
    """`<root>/.assay`, where assay keeps what it writes for a checkout (the results store, run
    records, agent checkpoints and caches). Refused (`ConfigError`) when `.assay` is a link: one
    planted in a checkout would carry all of that, and what later runs record, somewhere else."""
    folder = Path(root) / STATE_FOLDER
    if folder.is_symlink():
        raise ConfigError(
            f"{folder} is a link (to {_link_target(folder)}); assay keeps what it writes for a checkout (the "
            f"results store, run records, agent checkpoints) inside it and does not follow a linked "
            f"{STATE_FOLDER}: remove the link ({STORE_ENVIRONMENT} chooses another place for the results store)"
        )
    return folder


def check_store_location(database: Path) -> None:
    """Refuse a store in its default place (`<root>/.assay/assay.db`) that a link leads elsewhere:
    a linked `.assay`, store file (or its -wal/-shm), `records` or `unpublished`. A location chosen
    with ASSAY_STORE is the user's own choice and is taken as it is, links and all; so is one a
    caller of the Python API names outside a `.assay` folder. A path under a file is refused too: neither
    the store nor its records could be made there (`ASSAY_STORE=report.xml/assay.db`)."""
    override = os.environ.get(STORE_ENVIRONMENT)
    folder = next(folder for folder in Path(database).absolute().parents if folder.exists())  # (`/` always exists)
    if not folder.is_dir():
        raise ConfigError(
            f"{STORE_ENVIRONMENT}={override} cannot be used: {folder} is a file, not a folder; name a database file in "
            f"a folder (e.g. {STORE_ENVIRONMENT}={folder.parent / 'assay.db'})" if override else
            f"the results store {database} cannot be made: {folder} is a file, not a folder"
        )
    if override or database.parent.name != STATE_FOLDER:
        return
    state_folder(database.parent.parent)
    for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm"), records_dir(database), unpublished_dir(database)):
        if path.is_symlink():
            raise ConfigError(
                f"{path} is a link (to {_link_target(path)}); assay does not write its results store through a "
                f"link it did not make: remove the link, or set {STORE_ENVIRONMENT} to the store you mean"
            )


def check_store_writable(database: Path) -> None:
    """Refuse (`ConfigError`) a store whose run records this user may not write: the folder that holds
    them, or the nearest one that exists to make it in (a read-only store folder), must be writable.
    Writing would only say `PermissionError: [Errno 13]` about a folder the user never named."""
    records = records_dir(Path(database).absolute())
    folder = next(folder for folder in (records, *records.parents) if folder.exists())  # (`/` always exists)
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(
            f"the results store {database} cannot be used: no permission to write {folder}; give this user write "
            f"access to it, or set {STORE_ENVIRONMENT} to a store this user may write"
        )


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "somewhere else"


def records_dir(database: Path) -> Path:
    """Run records live beside the database, so `ASSAY_STORE` moves both together."""
    return database.parent / "records"


def unpublished_dir(database: Path) -> Path:
    """Records held until they are published (see `results_store.hold_run`), beside the records."""
    return database.parent / "unpublished"


def git_state(folder: Path) -> tuple[str | None, bool | None]:
    """(HEAD commit, working tree has changes) or (None, None) outside git or without git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=5, check=False
        )
        if head.returncode != 0:
            return None, None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=folder, capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return head.stdout.strip() or None, dirty


# ---------------------------------------------------------------------------------------------
# Values


# ---------------------------------------------------------------------------------------------
# Summaries


def count_verdicts(units: Iterable[UnitResult]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for unit in units:
        counts[unit.verdict] += 1
    return counts


def group_counts(units: Iterable[UnitResult]) -> dict[str, dict[str, int]]:
    """Verdict counts per group, in first-seen order (the run page's per-target / per-eval table)."""
    groups: dict[str, dict[str, int]] = {}
    for unit in units:
        counts = groups.get(unit.group)
        if counts is None:
            counts = groups[unit.group] = dict.fromkeys(VERDICTS, 0)
        counts[unit.verdict] += 1
    return groups


# ---------------------------------------------------------------------------------------------
# Files


def dumps_storable(value: Any, *, indent: int | None = None) -> str:
    """JSON that is always valid UTF-8 (compact unless `indent`): text with a lone surrogate (an
    adapter's broken decoding, say) is written with `\\u` escapes instead of failing the record."""
    layout: dict[str, Any] = {"indent": indent} if indent is not None else {"separators": (",", ":")}
    text = json.dumps(value, ensure_ascii=False, default=str, **layout)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(value, ensure_ascii=True, default=str, **layout)
    return text


_dumps = dumps_storable


# orjson refuses whatever `jsonable` would convert (keys that are not strings, integers past 64 bits,
# subclasses of the built-in types, dataclasses, dates, unknown objects, lone surrogates); what it
# converts itself it converts as `jsonable(..., non_finite_as_null=True)` does.
_PLAIN = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS


def dumps_if_plain(document: Any) -> str | None:
    """`dumps_storable(jsonable(document, non_finite_as_null=True))` when that conversion would
    change nothing, found by encoding `document` as it is; None when it might (the caller converts
    first and encodes again). Walking a document to ask whether it needs converting costs as much
    as converting it; one strict encoding answers the question and is the answer when it is no."""
    try:
        return orjson.dumps(document, option=_PLAIN).decode()
    except (TypeError, RecursionError):  # orjson.JSONEncodeError is a TypeError
        return None


class UnitLine(NamedTuple):
    """One unit as its line in `units.jsonl`: the text the record and the store keep, with the
    identity the store indexes it by. Encoding a unit once serves both.

    A named tuple rather than a frozen dataclass: one is made for every unit an import reads and
    again for every line the store indexes, and a tuple costs a third as much to make (0.24 µs
    against 0.66)."""

    unit_id: str
    group: str
    verdict: str
    text: str  # the unit's JSON, without the newline

    @classmethod
    def of(cls, unit: UnitResult) -> UnitLine:
        return cls(unit.unit_id, unit.group, unit.verdict, _dumps(unit.to_json()))

    @classmethod
    def parse(cls, text: str) -> UnitLine:
        """A line read back; its identity comes from the first three keys `UnitResult.to_json`
        writes, so the rest of the document is not decoded."""
        try:
            if text.startswith('{"unit_id":"'):
                unit_id, end = scanstring(text, 12)
                if text.startswith(',"verdict":"', end):
                    verdict, end = scanstring(text, end + 12)
                    if text.startswith(',"group":"', end):
                        group, _ = scanstring(text, end + 10)
                        return cls(unit_id, group, verdict, text)
        except ValueError:
            pass
        document = json.loads(text)  # written some other way: read it whole
        return cls(document["unit_id"], document.get("group", ""), document["verdict"], text)


def unit_lines(units: Iterable[UnitResult | UnitLine]) -> Iterator[UnitLine]:
    """`units` as record lines; a source that holds its units encoded already (a `UnitSpool`)
    hands over its lines instead of being decoded and encoded again."""
    lines = getattr(units, "lines", None)
    if callable(lines):
        return lines()
    return (unit if isinstance(unit, UnitLine) else UnitLine.of(unit) for unit in units)


def write_record(
    folder: Path, manifest: RunManifest, units: Iterable[UnitResult | UnitLine], *, replace: bool = False
) -> Path:
    """Write `<folder>/<run_id>/`: units first (streamed, in the order given), manifest last;
    returns the record folder.

    Refuses duplicate unit ids: a run's units must pair one-to-one with another run's. A record
    that cannot be finished is removed, so nothing half-written is left beside the others. A
    record of the same id already there is refused (FileExistsError) unless `replace`: then each of
    its files is replaced atomically, units first, and a failure leaves it as it was.
    """
    writer = RecordWriter(folder, manifest, replace=replace)
    try:
        for line in unit_lines(units):
            writer.write(line)
        return writer.finish()
    except BaseException:
        writer.abandon()
        raise


class RecordWriter:
    """`write_record` a line at a time, for a caller that does something with each line as it is
    written (`results_store.publish_run_as_read` indexes it): `write` each unit's line, then `finish`
    (the units made durable, the manifest written last, as it stands then), or `abandon` on any failure."""

    def __init__(self, folder: Path, manifest: RunManifest, *, replace: bool = False) -> None:
        self.manifest = manifest
        self.record = folder / manifest.run_id
        remove_stale_unfinished_records(folder)
        self._finished = False
        self._existing = replace and self.record.is_dir()
        self.record.mkdir(parents=True, exist_ok=self._existing)
        self._units_path = self.record / (f".{UNITS_FILE}.{secrets.token_hex(6)}.tmp" if self._existing else UNITS_FILE)
        try:
            self._handle = open(self._units_path, "w", encoding="utf-8")
        except BaseException:
            self.abandon()
            raise
        self._seen: set[str] = set()

    def write(self, line: UnitLine) -> None:
        if line.unit_id in self._seen:
            raise ValueError(f"duplicate unit id in run {self.manifest.run_id}: {line.unit_id!r}")
        self._seen.add(line.unit_id)
        self._handle.write(line.text + "\n")

    def finish(self) -> Path:
        """The record as `write_record` leaves it (once: again, it is only returned); the caller abandons
        it if this raises."""
        if self._finished:
            return self.record
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()
        if self._existing:
            os.replace(self._units_path, self.record / UNITS_FILE)
        write_atomically(self.record / MANIFEST_FILE, dumps_storable(self.manifest.to_json(), indent=2) + "\n")
        self._finished = True  # complete: nothing below removes it
        fsync_directory(self.record)
        return self.record

    def abandon(self) -> None:
        """Nothing of this record is left (a record it replaces stays as it was)."""
        if self._finished:
            return
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle.close()
        if self._existing:
            self._units_path.unlink(missing_ok=True)
        else:
            _remove_unfinished_record(self.record)


def remove_stale_unfinished_records(folder: Path) -> None:
    """Record folders a killed publish left without a manifest (its units, a half-written manifest),
    untouched for the stale age: no reader counts them, so they would only take space forever. A
    record being written now is younger than that; a folder holding anything else is left alone."""
    now = time.time()
    try:
        entries = os.scandir(folder)
    except OSError:
        return
    with entries:
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                record = Path(entry.path)
                if (record / MANIFEST_FILE).exists():
                    continue
                # A stale half-written manifest means its writer is dead (a live one's is fresh);
                # without one, the units file's age decides.
                if not remove_stale_temporary_files(record):
                    units = record / UNITS_FILE
                    changed = max(entry.stat(follow_symlinks=False).st_mtime,
                                  units.stat().st_mtime if units.exists() else 0.0)
                    if now - changed < STALE_TEMPORARY_AGE_S:
                        continue
                _remove_unfinished_record(record)
            except OSError:
                continue


def _remove_unfinished_record(record: Path) -> None:
    for name in (MANIFEST_FILE, UNITS_FILE):
        try:
            (record / name).unlink()
        except OSError:
            pass
    try:
        record.rmdir()
    except OSError:
        pass  # something else is in it: leave it, it still has no manifest and reads as unfinished


def iter_unit_lines(record: Path) -> Iterator[UnitLine]:
    """The record's units as written, one line each, without decoding them."""
    with open(record / UNITS_FILE, encoding="utf-8") as handle:
        for line in handle:
            if not line.isspace():  # (`strip()` would copy each line only to test it)
                yield UnitLine.parse(line.rstrip("\n"))


def iter_readable_unit_lines(record: Path, problems: list[str]) -> Iterator[UnitLine]:
    """The record's units as written, skipping each line that cannot be read (not UTF-8, not JSON,
    no unit id, an unknown verdict, an id seen before) and naming it in `problems` as
    `<units file>:<line>: <why>`: one damaged line costs its unit, not the whole run."""
    path = record / UNITS_FILE
    seen: set[str] = set()
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                text = raw.decode("utf-8").rstrip("\n")
                if not text.strip():
                    continue
                # The whole line must decode: `UnitLine.parse` reads only its first keys, and a torn line
                # (a run killed mid-write) indexed as it is would read as a damaged store ever after.
                if not isinstance(decode_json(raw), dict):
                    raise ValueError("not a JSON object")
                line = UnitLine.parse(text)
                if not isinstance(line.unit_id, str) or not isinstance(line.group, str):
                    raise ValueError("unit_id and group must be strings")
                if line.verdict not in VERDICTS:
                    raise ValueError(f"unknown verdict {line.verdict!r}")
                if line.unit_id in seen:
                    raise ValueError(f"unit id {line.unit_id!r} appears twice")
            except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
                problems.append(f"{path}:{number}: {type(error).__name__}: {error}")
                continue
            seen.add(line.unit_id)
            yield line


# orjson turns an integer past 64 bits into a float where the json module keeps it whole; such a literal
# has at least 19 digits, so a text without 19 digits in a row is decoded the same by both.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


def decode_json(text: bytes) -> Any:
    """A record line, decoded by orjson (a fifth of the json module's CPU); by the json module, as
    always, when orjson would decode it otherwise (an integer past 64 bits, ~1 ns a byte to find) or
    refuses it (NaN, a lone surrogate's escape)."""
    if _LONG_NUMBER in text.translate(_DIGITS_AS_ZERO):
        return json.loads(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def iter_unit_documents(record: Path) -> Iterator[dict[str, Any]]:
    """The record's units as their decoded documents (`UnitResult.to_json`), for a reader that needs
    a few fields of each: making the `UnitResult` costs twice what decoding the line does."""
    with open(record / UNITS_FILE, "rb") as handle:  # (orjson reads UTF-8 bytes as they are)
        for line in handle:
            if not line.isspace():  # (`strip()` would copy each line only to test it)
                yield decode_json(line)


def iter_units(record: Path) -> Iterator[UnitResult]:
    return map(UnitResult.from_json, iter_unit_documents(record))


class UnitSpool:
    """A run's units, each encoded once as it becomes durable and kept in a temporary file, so
    the record, the store and JUnit can be written after the run without the units in memory.

    Units arrive in the order they finish and are read back in plan order: each has a slot (its
    position in the plan), and the spool indexes where each slot's line lies. Iterating gives
    `UnitResult`s (decoded afresh each time); `lines()` gives the encoded lines for the record.
    A write that fails is kept and raised when the units are read, never during the run.
    """

    def __init__(self, slots: int, directory: Path | None = None) -> None:
        # Unnamed and removed when closed (or when the process dies): nothing is left to clean up.
        self._file = tempfile.TemporaryFile(prefix="assay-units-", dir=directory)
        # Readers (the record, JUnit, the Python API) come and go after the run; whoever drops the
        # spool last closes it.
        self._closer = weakref.finalize(self, self._file.close)
        self._offsets = array("q", [-1]) * slots
        self._lengths = array("q", [0]) * slots
        self._end = 0
        self.failure: BaseException | None = None

    def __len__(self) -> int:
        return len(self._offsets)

    def add(self, position: int, unit: UnitResult | UnitLine | Callable[[], str]) -> None:
        """Spool the unit of slot `position`: a unit, its line, or a callable encoding its line
        (called here, so an encoding error is kept like a write error)."""
        if self.failure is not None:
            return
        try:
            if isinstance(unit, UnitResult):
                text = _dumps(unit.to_json())
            else:
                text = unit.text if isinstance(unit, UnitLine) else unit()
            data = text.encode("utf-8")
            self._file.write(data)
        except Exception as error:  # noqa: BLE001 - the run goes on; the record reports it
            self.failure = error
            return
        self._offsets[position] = self._end
        self._lengths[position] = len(data)
        self._end += len(data)

    def _read(self, position: int) -> bytes:
        offset = self._offsets[position]
        if offset < 0:
            raise ValueError(f"unit {position} of the run was never recorded")
        return os.pread(self._file.fileno(), self._lengths[position], offset)

    def _ready(self) -> None:
        if self.failure is not None:
            raise self.failure
        self._file.flush()

    def lines(self) -> Iterator[UnitLine]:
        self._ready()
        for position in range(len(self._offsets)):
            yield UnitLine.parse(self._read(position).decode("utf-8"))

    def __iter__(self) -> Iterator[UnitResult]:
        self._ready()
        for position in range(len(self._offsets)):
            yield UnitResult.from_json(json.loads(self._read(position)))

    def __getitem__(self, position: int) -> UnitResult:
        self._ready()
        return UnitResult.from_json(json.loads(self._read(range(len(self._offsets))[position])))

    def close(self) -> None:
        self._closer()


class UnreadableRecord(ValueError):
    """A record file that cannot be read; its message names the file (and line): `<file>:<line>: <why>`."""


_UNREADABLE = (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError)


def _why(error: BaseException) -> str:
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return f"{type(error).__name__}: {error}"


def read_record(record: Path) -> tuple[RunManifest, list[UnitResult]]:
    """A complete record; FileNotFoundError when the manifest (written last) is missing, UnreadableRecord
    naming the file and line when a file of it cannot be read (a torn line, a record copied in part)."""
    path = record / MANIFEST_FILE
    try:
        manifest = RunManifest.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise
    except (OSError, *_UNREADABLE) as error:
        raise UnreadableRecord(f"{path}: {_why(error)}") from error
    path, units = record / UNITS_FILE, []
    try:
        # (a record has no blank line, so the count of units read is the line number)
        for document in iter_unit_documents(record):
            units.append(UnitResult.from_json(document))
    except OSError as error:
        raise UnreadableRecord(f"{path}: {_why(error)}") from error
    except _UNREADABLE as error:
        raise UnreadableRecord(f"{path}:{len(units) + 1}: {_why(error)}") from error
    return manifest, units
