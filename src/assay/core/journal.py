"""Durable checkpoints: an append-only, fsynced event journal plus the checkpoint directory around it.

Kind-independent: a kind decides what a key and a payload mean; this module makes them survive crashes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import secrets
import shlex
import shutil
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.core import timestamps
from assay.core.file_lock import HeldLock, LockFile, LockHeld
from assay.core.fsutil import (
    STALE_TEMPORARY_AGE_S,
    file_in_the_way,
    fsync_directory,
    is_contained,
    make_directories_under,
    remove_stale_temporary_files,
    write_atomically,
)
from assay.errors import CheckpointError

CHECKPOINT_SCHEMA_VERSION = 1
JOURNAL_FILE_NAME = "events.jsonl"
MANIFEST_FILE_NAME = "manifest.json"
LOCK_FILE_NAME = "active.lock"
STATUS_IN_PROGRESS = "in_progress"
STATUS_COMPLETE = "complete"
# A lock file that cannot be parsed may be one another process is still writing; only after this
# long is it treated as left behind by a crash.
UNREADABLE_LOCK_STALE_AFTER_SECONDS = 5.0

_DIRECTORY_MODE = 0o700
_FILE_MODE = 0o600
_TAIL_SCAN_CHUNK = 64 * 1024


def utc_timestamp(moment: datetime | None = None) -> str:
    """`2026-11-29T18:43:19.936387Z`: a checkpoint's times keep Python's full precision."""
    return timestamps.utc_timestamp(moment, precision="auto")


def plan_hash(payload: Any) -> str:
    """SHA-256 hex of the canonical JSON of `payload` (sorted keys, compact, ASCII)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def format_resume_command(argv: list[str]) -> str:
    """The command a person can paste to resume, quoted for a POSIX shell."""
    return shlex.join(argv)


def checkpoints_root(eval_dir: Path) -> Path:
    return Path(eval_dir) / "runs" / "checkpoints"


# ---------------------------------------------------------------------------------------------
# The event journal


@dataclass(frozen=True)
class JournalRecord:
    """One line of the journal."""

    type: str
    key: str
    payload: dict[str, Any]
    recorded_at: str


def _encode_line(record: JournalRecord) -> bytes:
    document = {"key": record.key, "payload": record.payload, "recorded_at": record.recorded_at, "type": record.type}
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"


def _encode_line_unsorted(record: JournalRecord) -> bytes:
    """The same line with the payload's keys as given: sorting a transcript's every object costs
    more than the rest of encoding it, and only GlassKit's own checkpoints promise sorted keys."""
    document = {"key": record.key, "payload": record.payload, "recorded_at": record.recorded_at, "type": record.type}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"


# GlassKit's checkpoint kinds (spec/video.md §14.4): their journals keep its canonical, sorted lines.
CANONICAL_KINDS = frozenset({"run", "seed"})


def _corrupt(line_number: int, detail: str) -> CheckpointError:
    return CheckpointError(f"checkpoint event log is corrupt at line {line_number}: {detail}")


def _decode_line(line: bytes, line_number: int) -> JournalRecord:
    try:
        document = json.loads(line)
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
        raise _corrupt(line_number, str(error)) from None
    if not isinstance(document, dict):
        raise _corrupt(line_number, f"expected a JSON object, got {type(document).__name__}")
    for field_name, expected_type in (("type", str), ("key", str), ("payload", dict), ("recorded_at", str)):
        if not isinstance(document.get(field_name), expected_type):
            expected = "an object" if expected_type is dict else "a string"
            raise _corrupt(line_number, f"field {field_name!r} must be {expected}")
    return JournalRecord(
        type=document["type"], key=document["key"], payload=document["payload"], recorded_at=document["recorded_at"]
    )


def iter_journal_events(path: Path) -> Iterator[JournalRecord]:
    """Every event in file order, strictly: a missing final newline or a bad line is an error."""
    with open(path, "rb") as stream:
        for line_number, line in enumerate(stream, start=1):
            if not line.endswith(b"\n"):
                raise _corrupt(line_number, "line is incomplete (no trailing newline)")
            yield _decode_line(line[:-1], line_number)


def _truncate_torn_tail(fd: int) -> None:
    """Cut a last line that a crash left without its newline; that record was never durable."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    keep = 0
    while end > 0:
        start = max(0, end - _TAIL_SCAN_CHUNK)
        chunk = os.pread(fd, end - start, start)
        newline_at = chunk.rfind(b"\n")
        if newline_at >= 0:
            keep = start + newline_at + 1
            break
        end = start
    os.ftruncate(fd, keep)
    os.fsync(fd)


class Journal:
    """An append-only `events.jsonl`; every append is on disk before it returns.

    Appends from several threads are safe: lines never interleave, and each caller's fsync
    covers its own line (and any written before it).
    """

    def __init__(self, path: Path, fd: int, *, canonical: bool = True) -> None:
        self.path = path
        self._fd = fd
        self._write_lock = threading.Lock()
        self._encode = _encode_line if canonical else _encode_line_unsorted

    @classmethod
    def open(cls, path: Path, *, canonical: bool = True) -> Journal:
        """Open (creating with mode 0600 if missing) and truncate a torn last line; `canonical`
        lines have sorted keys (GlassKit's format), others keep the payload's own order."""
        path = Path(path)
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, _FILE_MODE)
            created = True
        except FileExistsError:
            fd = os.open(path, flags)
            created = False
        except OSError as error:
            raise CheckpointError(f"could not open checkpoint event log {path}: {error}") from None
        try:
            if created:
                os.fchmod(fd, _FILE_MODE)  # the umask must not widen or narrow it
                fsync_directory(path.parent)
            else:
                _truncate_torn_tail(fd)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, canonical=canonical)

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def append(self, type: str, key: str, payload: Mapping[str, Any]) -> JournalRecord:
        """Write one event durably (written, fsynced) and return it as recorded."""
        return self.append_many([(type, key, payload)])[0]

    def append_many(self, entries: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[JournalRecord]:
        """Group commit: all `(type, key, payload)` entries in one write and one fsync."""
        recorded_at = utc_timestamp()
        records = [JournalRecord(type, key, dict(payload), recorded_at) for type, key, payload in entries]
        if records:
            encode = self._encode
            self.append_lines(b"".join(encode(record) for record in records))
        return records

    def encode(self, type: str, key: str, payload: Mapping[str, Any], payload_text: str | None = None) -> bytes:
        """One event's line, as `append_many` would write it now (for `append_lines`). A caller
        that has `payload` as compact JSON already (`payload_text`) spares a non-canonical journal
        encoding it again; a canonical one sorts keys, so it always encodes."""
        recorded_at = utc_timestamp()
        if payload_text is not None and self._encode is _encode_line_unsorted:
            return (f'{{"key":{json.dumps(key)},"payload":{payload_text},"recorded_at":"{recorded_at}",'
                    f'"type":{json.dumps(type)}}}\n').encode()
        return self._encode(JournalRecord(type, key, payload, recorded_at))  # type: ignore[arg-type]

    def append_lines(self, data: bytes) -> None:
        """Write lines made by `encode` in one write and one fsync."""
        if self._fd < 0:
            raise CheckpointError(f"checkpoint event log is closed: {self.path}")
        with self._write_lock:
            self._write_fully(data)
        try:
            os.fsync(self._fd)
        except OSError as error:
            raise CheckpointError(f"could not write checkpoint event log {self.path}: {error}") from None

    def _write_fully(self, data: bytes) -> None:
        size_before = os.fstat(self._fd).st_size
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as error:
            # A half-written line would turn into a corrupt middle line at the next append.
            try:
                os.ftruncate(self._fd, size_before)
            except OSError:
                pass
            raise CheckpointError(f"could not write checkpoint event log {self.path}: {error}") from None

    def events(self) -> list[JournalRecord]:
        """Every event in file order."""
        return list(iter_journal_events(self.path))

    def records(self) -> dict[str, JournalRecord]:
        """The latest event for each key."""
        latest: dict[str, JournalRecord] = {}
        for record in iter_journal_events(self.path):
            latest[record.key] = record
        return latest


# ---------------------------------------------------------------------------------------------
# The checkpoint directory


def _write_manifest(directory: Path, manifest: Mapping[str, Any]) -> None:
    text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    write_atomically(directory / MANIFEST_FILE_NAME, text, mode=_FILE_MODE)


def _owner_pid(content: bytes) -> int | None:
    try:
        pid = json.loads(content)["pid"]
    except (ValueError, KeyError, TypeError):
        return None
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None
    return pid


def _lock_file(directory: Path) -> LockFile:
    # Liveness is the recorded pid (no OS lock held): a checkpoint is resumable once that process is gone.
    return LockFile(directory / LOCK_FILE_NAME, _owner_pid, UNREADABLE_LOCK_STALE_AFTER_SECONDS)


def in_use(directory: Path) -> bool:
    """Whether a live process holds the checkpoint (a `--resume` of it would be refused)."""
    return not _lock_file(directory).is_abandoned()


def _acquire_lock(directory: Path, token: str) -> HeldLock:
    content = json.dumps({"pid": os.getpid(), "started_at": utc_timestamp(), "token": token}, sort_keys=True)
    try:
        return _lock_file(directory).acquire(content.encode("ascii"))
    except LockHeld:
        raise CheckpointError(f"checkpoint is already active in another process: {directory}") from None
    except OSError as error:
        raise CheckpointError(f"could not lock checkpoint {directory}: {error}") from None


def _new_checkpoint_directory(root: Path, kind: str, now: datetime) -> tuple[str, Path]:
    for _attempt in range(100):
        checkpoint_id = timestamps.time_ordered_id(kind, now)
        directory = root / checkpoint_id
        try:
            directory.mkdir(mode=_DIRECTORY_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, _DIRECTORY_MODE)  # mkdir's mode is filtered by the umask
        fsync_directory(root)
        return checkpoint_id, directory
    raise CheckpointError(f"could not create a checkpoint directory in {root}")


def remove_checkpoint_leftovers(eval_dir: Path, kind: str) -> None:
    """`_remove_leftovers` for a command that ends without creating a checkpoint (a seed with
    nothing to seed), so what a killed run of it left does not wait for one that does."""
    eval_dir = Path(os.path.abspath(eval_dir))
    root = checkpoints_root(eval_dir)
    if root.is_dir() and is_contained(eval_dir, root):
        _remove_leftovers(root, kind)


def _remove_leftovers(root: Path, kind: str) -> None:
    """What killed runs of this kind left in `root`: stale temporary manifests, half-discarded directories.

    Only this kind's checkpoints are touched (the next run of the same command cleans up after it);
    a discard still in progress is younger than the stale age and is left alone.
    """
    try:
        with os.scandir(root) as listing:
            entries = list(listing)
    except OSError:
        return
    now = time.time()
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if entry.name.startswith(f"{kind}-"):
                remove_stale_temporary_files(Path(entry.path))
            elif entry.name.startswith(f".{kind}-") and entry.name.endswith(".discarding"):
                status = entry.stat(follow_symlinks=False)
                # ctime: the rename that set it aside changes that, not the folder's mtime.
                if now - max(status.st_mtime, status.st_ctime) >= STALE_TEMPORARY_AGE_S:
                    shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:
            continue


class Checkpoint:
    """A checkpoint directory held by this process: manifest, journal and `active.lock`.

    Use as a context manager (or call `release`) so the lock and the journal are let go.
    """

    def __init__(self, path: Path, manifest: dict[str, Any], token: str, journal: Journal, lock: HeldLock) -> None:
        self.path = path
        self.manifest = manifest
        self.token = token
        self.journal = journal
        self._lock = lock

    @property
    def id(self) -> str:
        return str(self.manifest.get("id") or self.path.name)

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind"))

    @classmethod
    def create(
        cls, eval_dir: Path, kind: str, *, plan_hash: str, total: int, invocation: Mapping[str, Any],
        extra: Mapping[str, Any] | None = None,
    ) -> Checkpoint:
        """A new `in_progress` checkpoint `<kind>-<UTC stamp>-<8 hex>` under `<eval_dir>/runs/checkpoints`;
        `extra` is more of the kind's own keys for its manifest."""
        eval_dir = Path(os.path.abspath(eval_dir))
        root = checkpoints_root(eval_dir)
        now = datetime.now(UTC)
        try:
            # A `runs` or `checkpoints` link out of the eval dir would carry every checkpoint with it.
            make_directories_under(eval_dir, root)
            _remove_leftovers(root, kind)
            checkpoint_id, directory = _new_checkpoint_directory(root, kind, now)
        except (FileExistsError, NotADirectoryError) as error:  # a file where a folder must be (`runs` a file)
            blocker = file_in_the_way(root)
            if blocker is None:
                raise CheckpointError(f"could not create checkpoint in {root}: {error}") from None
            raise CheckpointError(f"could not create checkpoint in {root}: {blocker} is a file, not a folder; move "
                                  "the file aside (the run needs a folder there for its checkpoint)") from None
        except OSError as error:
            raise CheckpointError(f"could not create checkpoint in {root}: {error}") from None
        token = secrets.token_hex(8)
        timestamp = utc_timestamp(now)
        manifest = {
            "schema_version": CHECKPOINT_SCHEMA_VERSION,
            "id": checkpoint_id,
            "kind": kind,
            "status": STATUS_IN_PROGRESS,
            "eval_dir": str(eval_dir),
            "created_at": timestamp,
            "updated_at": timestamp,
            "plan_hash": plan_hash,
            "total": total,
            "invocation": dict(invocation),
            **(extra or {}),
        }
        try:
            lock = _acquire_lock(directory, token)
            _write_manifest(directory, manifest)
            journal = Journal.open(directory / JOURNAL_FILE_NAME, canonical=kind in CANONICAL_KINDS)
        except BaseException as error:
            # Nobody knows this id yet, so a half-made directory is only litter.
            shutil.rmtree(directory, ignore_errors=True)
            if isinstance(error, OSError):
                raise CheckpointError(f"could not create checkpoint {directory}: {error}") from None
            raise
        return cls(directory, manifest, token, journal, lock)

    @classmethod
    def resume(cls, path: Path, manifest: Mapping[str, Any]) -> Checkpoint:
        """Take the lock of an existing checkpoint (already checked with `read_manifest`) and open its journal."""
        path = Path(path)
        token = secrets.token_hex(8)
        lock = _acquire_lock(path, token)
        try:
            remove_stale_temporary_files(path)  # an earlier manifest update that was killed
            journal = Journal.open(path / JOURNAL_FILE_NAME, canonical=manifest.get("kind") in CANONICAL_KINDS)
        except BaseException:
            lock.release()
            raise
        return cls(path, dict(manifest), token, journal, lock)

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def mark_complete(self) -> None:
        """Record that nothing is left to resume (the directory stays on disk)."""
        manifest = {**self.manifest, "status": STATUS_COMPLETE, "updated_at": utc_timestamp()}
        try:
            _write_manifest(self.path, manifest)
        except OSError as error:
            raise CheckpointError(f"could not update checkpoint manifest {self.path}: {error}") from None
        self.manifest = manifest

    def release(self) -> None:
        """Close the journal and remove this process's lock; safe to call twice."""
        self.journal.close()
        self._lock.release()

    def discard(self) -> None:
        """Delete the checkpoint: rename it aside first so a half-deleted one is never mistaken for real."""
        self.journal.close()
        aside = self.path.with_name(f".{self.id}.{self.token}.discarding")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return
        except OSError as error:
            raise CheckpointError(f"could not discard checkpoint {self.path}: {error}") from None
        fsync_directory(aside.parent)
        for entry in list(aside.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        try:
            aside.rmdir()
        except OSError as error:
            raise CheckpointError(f"could not discard checkpoint {self.path}: {error}") from None
        fsync_directory(aside.parent)


# ---------------------------------------------------------------------------------------------
# Resuming


def resolve_checkpoint_ref(ref: str, eval_dir: Path, cwd: Path) -> Path:
    """`--resume REF`: a path if absolute or with a directory part, else relative to cwd if it exists, else an id."""
    if not ref.strip():  # Path("") is the current folder, whose missing manifest.json would be the message
        raise CheckpointError("needs a checkpoint id or folder, and the value given is empty (an unset variable in a "
                              "script?)")
    candidate = Path(ref)
    if candidate.is_absolute() or len(candidate.parts) > 1 or os.sep in ref or (os.altsep and os.altsep in ref):
        return Path(cwd) / candidate
    relative = Path(cwd) / candidate
    if relative.exists():
        return relative
    return checkpoints_root(Path(eval_dir)) / ref


def read_manifest(path: Path, expected_kind: str) -> dict[str, Any]:
    """Load and check a checkpoint's manifest; every problem is a `CheckpointError` (a bad --resume value)."""
    path = Path(path)
    manifest_path = path / MANIFEST_FILE_NAME
    try:
        data = manifest_path.read_bytes()
    except OSError as error:
        raise CheckpointError(f"could not read checkpoint manifest {manifest_path}: {_why_no_manifest(path, error)}") from None
    try:
        manifest = json.loads(data)
    except ValueError as error:
        raise CheckpointError(f"invalid checkpoint manifest {manifest_path}: {error}") from None
    if not isinstance(manifest, dict):
        raise CheckpointError(f"checkpoint manifest must be an object: {manifest_path}")
    schema_version = manifest.get("schema_version")
    if isinstance(schema_version, bool) or schema_version != CHECKPOINT_SCHEMA_VERSION:
        raise CheckpointError(f"unsupported checkpoint schema in {path}: {schema_version}")
    kind = manifest.get("kind")
    if kind != expected_kind:
        raise CheckpointError(f"checkpoint {path} is for '{kind}', not '{expected_kind}'")
    return manifest


def _why_no_manifest(path: Path, error: OSError) -> str:
    """Why a checkpoint's manifest could not be read, in words, with what to give instead (it was `[Errno 20] Not a
    directory: '<path>/manifest.json'`, naming the path a second time, for a file given as the checkpoint)."""
    give = "give a checkpoint's folder (the one holding manifest.json) or its id"
    if path.is_file():
        return f"{path} is a file, not a checkpoint folder; {give}"
    if not path.exists():
        return f"{path} does not exist; {give}"
    if path.is_dir() and isinstance(error, FileNotFoundError):
        return f"{path} is a folder without a manifest.json, so no checkpoint; {give}"
    return error.strerror or str(error)


def ensure_not_complete(path: Path, manifest: Mapping[str, Any]) -> None:
    if manifest.get("status") == STATUS_COMPLETE:
        raise CheckpointError(f"checkpoint is already complete: {path}")


def ensure_plan_unchanged(path: Path, manifest: Mapping[str, Any], current_plan_hash: str) -> None:
    if manifest.get("plan_hash") != current_plan_hash:
        raise CheckpointError(f"checkpoint inputs changed; start a new operation instead of resuming {path}")


def ensure_results_within_plan(path: Path, recorded_keys: Iterable[str], planned_keys: Iterable[str]) -> None:
    planned = set(planned_keys)
    if any(key not in planned for key in recorded_keys):
        raise CheckpointError(f"checkpoint contains results outside the selected run plan: {path}")


__all__ = [
    "CHECKPOINT_SCHEMA_VERSION",
    "JOURNAL_FILE_NAME",
    "LOCK_FILE_NAME",
    "MANIFEST_FILE_NAME",
    "STATUS_COMPLETE",
    "STATUS_IN_PROGRESS",
    "Checkpoint",
    "Journal",
    "JournalRecord",
    "checkpoints_root",
    "ensure_not_complete",
    "ensure_plan_unchanged",
    "ensure_results_within_plan",
    "format_resume_command",
    "iter_journal_events",
    "plan_hash",
    "read_manifest",
    "resolve_checkpoint_ref",
    "utc_timestamp",
]


class JournalWriter:
    """Appends from an event loop without blocking it, with group commit.

    `submit` encodes a record (on the loop) and queues its line; a writer thread takes everything queued, writes it with one
    `append_lines` (one fsync), and only then calls each record's `on_durable` on the loop. So a
    result is shown only once it is on disk, and records finishing together share one fsync.

    `batch_hint` is how many submitters can have a record on its way at once (a run's concurrency).
    Above one, the writer waits up to `batch_window_s` after a record for the others before it
    commits; it never waits once `batch_hint` records are in hand, so one submitter is never held.
    At a few hundred results a second each fsync (with its wake-ups) cost ~0.3 ms of CPU, which made
    per-result commits ~12% of a fast video run (docs/benchmarks.md, checkpoints)."""

    def __init__(self, journal: Journal, *, batch_hint: int = 1, batch_window_s: float = 0.0) -> None:
        self._journal = journal
        self._batch_hint = max(1, batch_hint)
        self._batch_window_s = batch_window_s if self._batch_hint > 1 else 0.0
        self._loop = asyncio.get_running_loop()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._write_loop, name="assay-journal", daemon=True)
        self._thread.start()

    def submit(
        self, type: str, key: str, payload: Mapping[str, Any], on_durable: Any = None, *, payload_text: str | None = None,
    ) -> asyncio.Future[None]:
        """Queue one record; the returned future resolves once it is durable (or fails with the write).
        `payload_text`: `payload` as compact JSON, when the caller has it (see `Journal.encode`)."""
        if self._failure is not None:
            raise self._failure
        self._pending += 1
        self._idle.clear()
        durable: asyncio.Future[None] = self._loop.create_future()
        # Encoded here, on the loop: the writer thread then only writes and fsyncs, which release
        # the GIL, so it keeps up with a busy loop instead of waiting for its turn to encode.
        self._queue.put((self._journal.encode(type, key, payload, payload_text), (on_durable, durable)))
        return durable

    def _write_loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            deadline: float | None = None
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    if len(batch) >= self._batch_hint or self._batch_window_s <= 0:
                        break
                    if deadline is None:
                        deadline = time.monotonic() + self._batch_window_s
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    try:
                        item = self._queue.get(timeout=remaining)
                    except queue.Empty:
                        break
                if item is None:
                    self._queue.put(None)
                    break
                batch.append(item)
            try:
                self._journal.append_lines(b"".join(line for line, _ in batch))
                failure = None
            except BaseException as error:  # noqa: BLE001 - surfaced on the loop
                failure = error
            self._loop.call_soon_threadsafe(self._settle, batch, failure)

    def _settle(self, batch: list[Any], failure: BaseException | None) -> None:
        self._pending -= len(batch)
        if failure is not None:
            self._failure = failure
        for *_, (on_durable, durable) in batch:
            if failure is None and on_durable is not None:
                on_durable()
            if not durable.done():
                if failure is None:
                    durable.set_result(None)
                else:
                    durable.set_exception(failure)
                    durable.exception()  # retrieved: drain() reports it, an unawaited future must not warn
        if self._pending == 0:
            self._idle.set()

    async def drain(self) -> None:
        """Wait until every submitted record is durable (and its callback has run)."""
        await self._idle.wait()
        if self._failure is not None:
            raise self._failure

    async def close(self) -> None:
        await self.drain()
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join)
