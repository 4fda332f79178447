"""`assay runs import`: each log file becomes one run of kind `imported` in the results store.

The record is written and indexed in one pass (`publish_run_as_read`), each unit as the log's reader
hands it over: where a second core is free, the log is read in a forked process
(`reader_process`) while this one hashes the file, then writes and indexes each unit. Its id
is `imported-<the tool's time>-<6 hex of the file's SHA-256>`; importing a file whose content the store
already holds (by its whole SHA-256, whatever the file's time) finds the run it made instead of adding a twin.
Its time is the tool's, moved on by a millisecond past an imported run stamped with the same one, so runs
stamped alike keep the order they were imported in (`_after_ties`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.core.interop.formats import LogFormat, detect_format, format_named, readable_head, unread_output
from assay.core.interop.log import ImportedLog, ImportFormatError
from assay.core.record import RunManifest, store_path, utc_timestamp
from assay.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from assay.core.interop.reader_process import ForkedReader

__all__ = ["IMPORTED_KIND", "ImportRefused", "Imported", "RecordedThenInterrupted", "import_log", "plan_imports", "plan_named"]

IMPORTED_KIND = "imported"


@dataclass(frozen=True)
class Imported:
    path: Path
    format: str
    run_id: str
    already: bool  # the file had been imported before: nothing was added
    counts: dict[str, int]
    unit_count: int
    tool: str
    tool_version: str | None
    title: str

    def to_json(self) -> dict[str, Any]:
        return {
            "file": str(self.path), "format": self.format, "run_id": self.run_id, "already_imported": self.already,
            "tool": self.tool, "tool_version": self.tool_version, "title": self.title, "unit_count": self.unit_count,
            "counts": self.counts,
        }


class RecordedThenInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) once the file's run was recorded, while the import read it back or closed its reader: Ctrl-C
    as ever, and the run is kept, so the file need not be imported again (it said "Interrupted while importing")."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


class ImportRefused(UsageError):
    """The check before any file is imported refused the command (`plan_imports`), so nothing was imported. Its
    message is the first error found; `errors` holds each refused file's own (by `_key`), for `--json`."""

    def __init__(self, message: str, option: str | None = None, *, errors: Mapping[str, str] | None = None) -> None:
        super().__init__(message, option)
        self.errors = dict(errors or {})

    def document(self, names: Sequence[str]) -> dict[str, Any]:
        """`runs import --json`'s document: nothing `imported`, and each file named `failed`, with its own error,
        or, when the check passed it, why it was not imported either."""
        failed = []
        for name in names:
            error = self.errors.get(_key(name))
            if error is None and not self.errors:  # an option's error (a misspelt --format): every file's
                error = str(self)
            elif error is None:
                refused = next(iter(self.errors))
                which = _shown(refused) if refused.strip() else "an empty file name"
                error = (f"{_shown(name)}: not imported, because {which} was refused before any file was imported "
                         "(every file is checked first); fix it or leave it out, and import again")
            failed.append({"file": _shown(name), "error": error})
        return {"imported": [], "failed": failed}


def _key(name: str) -> str:
    """A file named on the command line as `plan_imports` is given it (an empty name as written)."""
    return str(Path(name).expanduser()) if name.strip() else name


def _shown(name: str) -> str:
    """A file named as `imported` and `failed` name it: its full path (an empty name as written)."""
    return str(Path(name).expanduser().resolve()) if name.strip() else name


def plan_named(names: Sequence[str], format_name: str | None) -> list[tuple[Path, LogFormat]]:
    """`plan_imports` of the files named on the command line, an empty name refused first."""
    empty = [name for name in names if not name.strip()]  # Path("") would be the current folder
    if empty:
        message = "a file name given is empty (an unset variable in a script?); name the log files to import"
        raise ImportRefused(message, errors=dict.fromkeys(empty, message))
    return plan_imports([Path(_key(name)) for name in names], format_name)


def plan_imports(paths: list[Path], format_name: str | None) -> list[tuple[Path, LogFormat]]:
    """Each file with its format (given, or detected from its content): every file is checked
    before any is imported, so a usage error imports nothing: an `ImportRefused` with the first
    error, and each refused file's error in its `errors`."""
    try:
        chosen = format_named(format_name) if format_name is not None else None
    except UsageError as error:
        raise ImportRefused(str(error), error.option) from None
    planned: list[tuple[Path, LogFormat]] = []
    errors: dict[str, str] = {}
    first: UsageError | None = None
    for path in paths:
        try:
            if chosen is None:
                planned.append((path, detect_format(path)))
            else:
                # the same message for a missing, empty or unreadable file or a folder, or promptfoo's output in a
                # form no format reads (an HTML page is left to the format's reader, which names its root element)
                unread = unread_output(readable_head(path), pages=False, path=path)
                if unread is not None:
                    raise UsageError(f"{path}: {unread}", "--format")
                planned.append((path, chosen))
        except UsageError as error:
            first = first or error
            errors.setdefault(str(path), str(error))
    if first is not None:
        raise ImportRefused(str(first), first.option, errors=errors)
    return planned


def _digest(path: Path, between: Callable[[], None] | None = None) -> str:
    """The file's SHA-256; `between` is called after each MiB (a reader process's pipe drained)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            if between is not None:
                between()
    return digest.hexdigest()


def _run_id(created_at: str, digest: str) -> str:
    moment = _dt.datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    return f"{IMPORTED_KIND}-{moment.strftime('%Y%m%dT%H%M%S')}-{digest[:6]}"


def _after_ties(store: Any, created_at: str) -> str:
    """`created_at`, moved on a millisecond at a time past the imported runs already stamped with it (never
    past its second). Runs are ordered by time, then by run id, whose end is a hash: two logs a tool stamped
    in the same second (JUnit's timestamps have no fraction) were ordered by their files' hashes. Now the
    later import is the newer run, so files named together keep the order they were named in; a time
    with a fraction of its own orders them by it, as before."""
    try:
        moment = _dt.datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return created_at
    second = created_at[:19]  # `2026-12-03T08:32:11`, as every stamp of that second begins
    taken = {row[0] for row in store.read(
        "SELECT created_at FROM runs WHERE kind = ? AND substr(created_at, 1, 19) = ?", (IMPORTED_KIND, second))}
    stamp = created_at
    while stamp in taken:
        moment += _dt.timedelta(milliseconds=1)
        stamp = utc_timestamp(moment)
        if not stamp.startswith(second):
            return created_at  # a thousand runs in its second: the run ids order the rest
    return stamp


def import_log(path: Path, log_format: LogFormat, *, database: Path | None = None) -> Imported:
    """Read `path` as `log_format` and publish it; an `AssayError` (exit 2) when the file is not
    what its format says or the store cannot take it."""
    from assay.core.gcpolicy import collection_sized_for_runs

    # Decoding a sample allocates hundreds of short-lived containers: at the default collection
    # settings the collector cost twice what decoding did (Inspect's 7 KB samples: 55 µs against 17).
    with collection_sized_for_runs():
        try:
            try:
                return _import(path, log_format, database or store_path())
            except (TypeError, AttributeError, KeyError, IndexError) as error:
                # A value of a type the tool does not write there (a log edited by hand, or made by another
                # version or tool) that a reader did not check: one message naming the file, not a traceback.
                raise ImportFormatError(
                    f"{path}: cannot be read as {log_format.name}: a value in it is not of the type {log_format.name} "
                    f"writes there ({type(error).__name__}: {error}); `assay --debug runs import …` shows where",
                ) from error
        except ImportFormatError as error:
            actual = _format_of(path)
            if actual is None or actual.name == log_format.name:
                raise
            raise ImportFormatError(f"{error} (the file looks like {actual.name} output, not {log_format.name}: leave "
                                    f"out --format, or give --format {actual.name})", "--format") from None


def _format_of(path: Path) -> LogFormat | None:
    """The format `path` is detected as, when a `--format` given for it did not read it."""
    try:
        return detect_format(path)
    except UsageError:
        return None


def _import(path: Path, log_format: LogFormat, database: Path) -> Imported:
    from assay.core.interop.reader_process import read_beside

    from assay.core.interop.otlp_export import ExportInterrupted

    path = path.resolve()
    log = log_format.read(path)  # its header: the units are a generator, started by whoever reads them
    reader = read_beside(path, log)
    recorded: list[str] = []
    try:
        try:
            return _import_read(path, log_format, log, reader, database, recorded)
        finally:
            if reader is not None:
                reader.close()
    except KeyboardInterrupt as interruption:
        if recorded and not isinstance(interruption, (ExportInterrupted, RecordedThenInterrupted)):
            raise RecordedThenInterrupted(recorded[0]) from None
        raise


def _import_read(path: Path, log_format: LogFormat, log: ImportedLog, reader: ForkedReader | None,
                 database: Path, recorded: list[str]) -> Imported:
    """The import itself; `recorded` gets the run id once the run is recorded (indexed and its record written)."""
    from assay.core.results_store import SqliteRunStore, publish_run_as_read

    created_at = log.created_at or utc_timestamp()
    digest = _digest(path, reader.drain if reader is not None else None)
    run_id = _run_id(created_at, digest)
    if database.exists():
        # By content, not by run id: a copy of the file (a CI artifact downloaded again) has another
        # modification time, the run id of a log that records no time of its own.
        with SqliteRunStore(database, read_only=True) as store:
            earlier = store.run_with_identity(IMPORTED_KIND, "sha256", digest)
            if earlier is None:
                created_at = _after_ties(store, created_at)
        if earlier is not None:
            return _outcome(database, path, run_id=earlier, already=True)
    manifest = RunManifest(
        run_id=run_id, kind=IMPORTED_KIND, created_at=created_at, title=log.title,
        # `project` names the series a run belongs to (the tool, the task or suite, the model), as an
        # eval dir or an agent project does for assay's own kinds.
        identity={"tool": log.tool, "tool_version": log.tool_version, "format": log_format.name, "source": str(path),
                  "sha256": digest, "project": f"{log_format.name}:{_series_title(log.title, path)}", **log.identity},
        options={"file": str(path), "format": log_format.name, "imported_at": utc_timestamp()},
        summary=log.summary,  # filled as the units stream; written with the manifest, after them
    )
    # The run id is the file's: a record of it that the index lacks is this import's, cut short between
    # writing the record and indexing it (Ctrl-C), so it is written again rather than refused.
    record = publish_run_as_read(manifest, log.units if reader is None else reader, database=database, replace=True)
    recorded.append(run_id)
    from assay.core.interop.export_endpoint import exports_anywhere

    if exports_anywhere(None):  # `$ASSAY_OTLP_EXPORT` exports every run as it is recorded, an imported one too
        from assay.core.interop.otlp_export import export_after_run

        export_after_run(record, None)
    return _outcome(database, path, run_id=run_id, already=False)


def _series_title(title: str, path: Path) -> str:
    """The title without the file's name (`Inspect capitals (mockllm/model)`): what the imports of one task have in
    common. Each reader's title ends `: <file name>`, which may hold `: ` itself (`nightly: rerun.xml`)."""
    suffix = f": {path.name}"
    return title[: -len(suffix)] if title.endswith(suffix) else title.rsplit(": ", 1)[0]


def _outcome(database: Path, path: Path, *, run_id: str, already: bool) -> Imported:
    from assay.core.results_store import SqliteRunStore

    with SqliteRunStore(database, read_only=True) as store:
        stored = store.get_run(run_id)
    identity = stored.manifest.identity
    return Imported(
        path=path, format=str(identity.get("format")), run_id=run_id, already=already, counts=stored.counts,
        unit_count=stored.unit_count, tool=str(identity.get("tool")), tool_version=identity.get("tool_version"),
        title=stored.manifest.title,
    )
