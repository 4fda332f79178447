"""Durable file writes: replace a file atomically so a reader never sees half of it.

Write a temporary file in the same directory, fsync it, `os.replace` it over the target, then
fsync the directory so the rename itself survives a crash. Also the one file hash.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path


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


def write_atomically(path: Path, data: bytes | str, *, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically; `mode` defaults to the existing file's bits (or 0o644)."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
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
