"""Durable, contained file writes: replace a file atomically so a reader never sees half of it, and
never let a symbolic link carry a write out of the folder it belongs in.

Write a temporary file in the same directory, fsync it, `os.replace` it over the target, then
fsync the directory so the rename itself survives a crash. A write under a root (an eval dir, a
project, a results root) resolves its links first and is refused when they lead outside that root;
links that stay inside are written through, so a symlinked file stays a link. The temporary files
an interrupted write leaves behind are removed by the next run of the command that owns the folder.
Also the one file hash.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "STALE_TEMPORARY_AGE_S",
    "OutsideRoot",
    "contained_target",
    "file_in_the_way",
    "fsync_directory",
    "is_contained",
    "make_directories_under",
    "remove_stale_temporaries_of",
    "remove_stale_temporary_files",
    "remove_stale_temporary_files_beside",
    "sha256_file",
    "shown_path",
    "write_atomically",
]

# A temporary file older than this is left over from a write that was killed: `write_atomically`
# holds all its data before it creates the file, so a live write lasts milliseconds, not a minute.
# Age rather than the writer's pid, because a pid says nothing on another host (a shared folder)
# or once it is reused.
STALE_TEMPORARY_AGE_S = 60.0
# `.<name>.<12 hex digits>.tmp`, exactly what `write_atomically` creates (nothing else is removed).
_TEMPORARY_NAME = re.compile(r"\..+\.[0-9a-f]{12}\.tmp", re.DOTALL)


class OutsideRoot(OSError):
    """A write refused because its path, symbolic links followed, leaves the folder it belongs in.

    An OSError, so every caller that already reports a failed write reports this one the same way.
    """

    def __init__(self, path: Path, root: Path) -> None:
        super().__init__(f"refusing to write {path}: it leads outside {root} (through a symbolic link or '..')")
        self.path = Path(path)
        self.root = Path(root)


def shown_path(path: str | os.PathLike[str], base: str | os.PathLike[str] | None = None) -> str:
    """`path` as the user can type it in a message's fix: relative to `base` (the current folder) when inside it,
    else whole."""
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(base if base is not None else os.curdir))
    return Path(path).as_posix() if relative.startswith("..") else Path(relative).as_posix()


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of a file's bytes, streamed (OSError if it cannot be read)."""
    with open(path, "rb", buffering=0) as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# Containment


def is_contained(root: Path, path: Path) -> bool:
    """Whether `path` is `root` or inside it, both as written and with every symbolic link resolved."""
    lexical_root = Path(os.path.abspath(root))
    lexical = Path(os.path.abspath(path))
    if not lexical.is_relative_to(lexical_root):
        return False
    return Path(os.path.realpath(lexical)).is_relative_to(Path(os.path.realpath(lexical_root)))


def contained_target(root: Path, path: Path) -> Path:
    """Where a write to `path` lands: its real path (links resolved), if that is inside `root`.

    Raises `OutsideRoot` otherwise, naming both. The parts that do not exist yet are taken as
    written, so a folder about to be created is checked as well.
    """
    if not is_contained(root, path):
        raise OutsideRoot(Path(os.path.abspath(path)), Path(os.path.abspath(root)))
    return Path(os.path.realpath(os.path.abspath(path)))


def make_directories_under(root: Path, path: Path, *, mode: int = 0o777) -> Path:
    """`mkdir -p` of a folder inside `root`, refused (`OutsideRoot`) when a link leads it outside.

    Returns `path` as given. Checked again once created, so a link planted meanwhile is caught too.
    """
    contained_target(root, path)
    os.makedirs(path, mode=mode, exist_ok=True)
    contained_target(root, path)
    return Path(path)


# ---------------------------------------------------------------------------------------------
# Atomic replacement


def write_atomically(path: Path, data: bytes | str, *, mode: int | None = None, root: Path | None = None) -> None:
    """Replace `path` with `data` atomically; `mode` defaults to the existing file's bits (or 0o644).

    With `root`, the write goes to the path's real target and is refused (`OutsideRoot`) when that
    leaves `root`: a symlinked file inside the root is written through and stays a link.
    """
    path = Path(path) if root is None else contained_target(root, path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    fsync_directory(path.parent)


# ---------------------------------------------------------------------------------------------
# Leftovers of interrupted writes


def names_a_stream(path: Path) -> bool:
    """Whether `path` names a stream rather than a file to replace: a device (`/dev/null`), a pipe, or a name of an
    open descriptor (`/dev/stdout`, `/dev/fd/3`: whatever it is, a file of the shell's too). A report or an export
    is written into a stream: replacing it put a plain file in its place (as root, /dev/stdout itself). A plain file
    that merely lives under /dev (`/dev/shm/report.json`) is a file."""
    try:
        if not path.exists():
            return False
        if not path.is_file():
            return not path.is_dir()
        given = str(path.absolute())
        return given in ("/dev/stdout", "/dev/stderr") or given.startswith(("/dev/fd/", "/proc/self/fd/"))
    except OSError:
        return False


def write_into_stream(path: Path, data: bytes) -> None:
    """`data` written into the stream `path` names (`names_a_stream`), appended (`> run.log` is the shell's file,
    which holds the console's lines too). When it is this process's own stdout or stderr, through `sys.stdout` or
    `sys.stderr` themselves: after what they hold, so the lines printed next do not land over it (a file opened anew
    writes at its own offset), and a reader that leaves (`| head`) stops the command as for any line."""
    import sys

    own = _own_standard_descriptor(path)
    if own is None:
        with open(path, "ab") as stream:
            stream.write(data)
        return
    stream = sys.stdout if own == 1 else sys.stderr
    stream.write(data.decode("utf-8"))
    stream.flush()


def _own_standard_descriptor(path: Path) -> int | None:
    """1 or 2 when `path` is what this process's stdout or stderr is, else None."""
    try:
        named = os.stat(path)
    except OSError:
        return None
    for descriptor in (1, 2):
        try:
            opened = os.fstat(descriptor)
        except OSError:
            continue
        if (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino):
            return descriptor
    return None


def file_in_the_way(folder: Path) -> Path | None:
    """The file standing where `folder` or a folder above it must be (`eval/runs` a file, so `runs/checkpoints`
    cannot be made): the nearest of them that exists, when it is not a folder; None when none is in the way."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def unwritable_file_reason(path: Path) -> str | None:
    """Why a report could not be written at `path` (a folder there, a file where a folder must be, no
    permission), or None: checked before a run, so hours of work never end in a report that fails."""
    target = Path(os.path.expanduser(path))  # a `~name` naming no user stays as written (Path.expanduser raises)
    if target.is_dir():
        return "is a folder"
    blocker = file_in_the_way(target.parent)
    if blocker is not None:
        return f"cannot be created: {blocker} is a file, not a folder"
    folder = target.parent
    while not folder.exists():
        if folder.parent == folder:
            return "has no folder that exists above it"
        folder = folder.parent
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        return f"cannot be written: no permission in {folder}"
    return None


def check_report_path(flag: str, path: str | Path | None) -> None:
    """Refuse (UsageError, exit 2) a report path given with `flag` that could not be written."""
    if path is None:
        return
    from assay.errors import UsageError

    if names_a_stream(Path(path)):  # written into, not replaced (`write_into_stream`): no folder or file to check
        return
    reason = unwritable_file_reason(Path(path)) or _not_a_report(flag, Path(path))
    if reason is not None:
        if reason == "is a folder":  # the file meant is most likely one in it
            reason += f"; give the report's file, e.g. {flag} {Path(path) / _REPORT_NAMES.get(flag, 'report')}"
        raise UsageError(f"{flag} {path} {reason}", flag)


_REPORT_NAMES = {"--junit": "junit.xml", "--output-json": "report.json"}
# How a report of each flag begins: a file there that begins otherwise is the user's own, which the report would
# replace (`--junit pyproject.toml`, `--output-json notes.md`: a slip of the shell's completion).
_REPORT_STARTS = {"--junit": (b"<",), "--output-json": (b"{",)}  # (any XML: another tool's JUnit report too)


def begins_otherwise(path: Path, starts: tuple[bytes, ...]) -> bool:
    """Whether an existing file at `path` begins as none of `starts` does (after a BOM and blank space): a file of
    the user's that a report or an export would replace. No file, an empty one (a placeholder) or one that cannot
    be read (writing it says why) does not."""
    if not path.is_file():
        return False
    try:
        with path.open("rb") as file:
            head = file.read(512).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False
    return bool(head) and not head.startswith(starts)


def _not_a_report(flag: str, path: Path) -> str | None:
    """Why the existing file at `path` may not be replaced by `flag`'s report (it begins as no such report does;
    an empty file is taken as a placeholder); None when it may."""
    starts = _REPORT_STARTS.get(flag)
    if starts is None:
        return None
    if not begins_otherwise(path, starts):
        root = _xml_root_name(path) if flag == "--junit" else None
        if root is None or root in ("testsuites", "testsuite"):  # any JUnit report, ours or another tool's
            return None
        return (f"is an XML file whose root element is <{root}>, not a JUnit report (<testsuites> or <testsuite>), "
                f"which the report would replace; give the report a file of its own, e.g. {flag} {_REPORT_NAMES[flag]}")
    kind = "XML (a JUnit report)" if flag == "--junit" else "a JSON report"
    return (f"is a file that is not {kind}, which the report would replace; give the report a file of its own, "
            f"e.g. {flag} {_REPORT_NAMES[flag]}")


def _xml_root_name(path: Path) -> str | None:
    """The root element's name (without its namespace) of the XML file at `path`, read no further than its start
    tag; None when there is no file or no element can be read (writing over it is as before)."""
    import xml.etree.ElementTree as ElementTree

    if not path.is_file():
        return None
    parser = ElementTree.XMLPullParser(events=("start",))  # its events up to a mistake later in the file still come
    try:
        with path.open("rb") as file:
            while chunk := file.read(65536):
                parser.feed(chunk)
                for _event, element in parser.read_events():
                    return element.tag.rpartition("}")[2]
    except (OSError, ElementTree.ParseError):
        return None
    return None


def remove_stale_temporary_files(
    directory: Path, *, older_than_s: float = STALE_TEMPORARY_AGE_S, of: str | None = None,
) -> list[Path]:
    """Delete the `write_atomically` temporaries in `directory` older than `older_than_s` (only
    those of the file named `of`, when given); returns them.

    Only regular files named as `write_atomically` names them are touched, and nothing fails: a
    folder that cannot be listed, or a file another cleaner got to first, is skipped.
    """
    prefix = f".{of}." if of is not None else None
    removed: list[Path] = []
    now = time.time()
    try:
        entries = os.scandir(directory)
    except OSError:
        return removed
    with entries:
        for entry in entries:
            name = entry.name
            if prefix is not None and not (name.startswith(prefix) and len(name) == len(prefix) + 16):
                continue
            if not _TEMPORARY_NAME.fullmatch(name):
                continue
            try:
                status = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(status.st_mode) or now - status.st_mtime < older_than_s:
                    continue
                os.unlink(entry.path)
            except OSError:
                continue
            removed.append(Path(entry.path))
    return removed


def remove_stale_temporaries_of(path: Path) -> list[Path]:
    """The stale temporaries of one target (`.<name>.<hex>.tmp` beside it): what a killed write of
    the same report left. For targets rewritten by every run (a JSON or JUnit report), whose
    folders no other cleanup visits."""
    path = Path(path)
    return remove_stale_temporary_files(path.parent, of=path.name)


def remove_stale_temporary_files_beside(root: Path, paths: Iterable[Path]) -> list[Path]:
    """The same for the folders that writes to `paths` land in (their real targets, inside `root` only)."""
    folders = {contained_target(root, path).parent for path in paths if is_contained(root, path)}
    return [removed for folder in sorted(folders) for removed in remove_stale_temporary_files(folder)]
