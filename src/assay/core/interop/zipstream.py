"""Reading the members of a large zip archive one at a time, without a table of all of them in memory.

`zipfile.ZipFile` reads the whole central directory into one object per member first (tens of MB
for an Inspect log of 100,000 samples); here the directory is read in chunks as it is walked, and
each wanted member is read and inflated on its own. Stored, deflate and zstd (Inspect's default
since 2025) members are read; zstd needs the `zstandard` package (assay's `interop` extra).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["ZipStreamError", "is_zip", "iter_members", "member_names", "read_members"]

_END = b"PK\x05\x06"
_END64_LOCATOR = b"PK\x06\x07"
_END64 = b"PK\x06\x06"
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"
_STORED, _DEFLATED, _ZSTD = 0, 8, 93
_CHUNK = 1 << 20


class ZipStreamError(ValueError):
    """The archive cannot be read; the message names it and why."""


def is_zip(head: bytes) -> bool:
    return head.startswith(_LOCAL) or head.startswith(_END)


def _directory(handle: BinaryIO, name: str) -> tuple[int, int, int]:
    """(entries, directory size, directory offset), from the end record (zip64 when needed)."""
    handle.seek(0, 2)
    size = handle.tell()
    tail_length = min(size, 65_535 + 22)
    handle.seek(size - tail_length)
    tail = handle.read(tail_length)
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < 22:
        raise ZipStreamError(f"{name}: not a complete zip archive (no end of central directory; a log still being written?)")
    entries, directory_size, directory_offset = struct.unpack("<xxxxxxxxxxHII", tail[at : at + 20])
    if entries == 0xFFFF or directory_size == 0xFFFFFFFF or directory_offset == 0xFFFFFFFF:
        locator = at - 20
        if locator < 0 or tail[locator : locator + 4] != _END64_LOCATOR:
            raise ZipStreamError(f"{name}: a zip64 archive without its zip64 locator")
        (record_offset,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
        handle.seek(record_offset)
        record = handle.read(56)
        if record[:4] != _END64:
            raise ZipStreamError(f"{name}: the zip64 end record is not where its locator says")
        entries, directory_size, directory_offset = struct.unpack("<QQQ", record[32:56])
    return entries, directory_size, directory_offset


def _zip64_extra(extra: bytes, sizes: list[int]) -> None:
    """Replace the 0xFFFFFFFF fields of (uncompressed, compressed, offset) from a zip64 extra field."""
    position = 0
    while position + 4 <= len(extra):
        tag, length = struct.unpack("<HH", extra[position : position + 4])
        data = extra[position + 4 : position + 4 + length]
        if tag == 0x0001:
            index = 0
            for slot in range(3):
                if sizes[slot] == 0xFFFFFFFF and index + 8 <= len(data):
                    (sizes[slot],) = struct.unpack("<Q", data[index : index + 8])
                    index += 8
            return
        position += 4 + length


def _entries(path: Path) -> Iterator[tuple[str, int, int, int, int]]:
    """(name, method, compressed size, uncompressed size, local header offset) of each member, in
    the order of the central directory (the order they were written)."""
    with open(path, "rb") as handle:
        entries, remaining, offset = _directory(handle, str(path))
        handle.seek(offset)
        buffer = b""
        position = 0

        def fill(end: int) -> None:
            nonlocal buffer, remaining
            while len(buffer) < end:
                more = handle.read(min(_CHUNK, remaining)) if remaining > 0 else b""
                if not more:
                    raise ZipStreamError(f"{path}: the zip central directory is cut short")
                remaining -= len(more)
                buffer += more

        for _ in range(entries):
            if position > _CHUNK:
                buffer, position = buffer[position:], 0
            fill(position + 46)
            if buffer[position : position + 4] != _CENTRAL:
                raise ZipStreamError(f"{path}: the zip central directory is damaged")
            (method, compressed, uncompressed, name_length, extra_length, comment_length, local) = struct.unpack(
                "<10xH8xIIHHH8xI", buffer[position : position + 46]
            )
            end = position + 46 + name_length + extra_length + comment_length
            fill(end)
            name = buffer[position + 46 : position + 46 + name_length].decode("utf-8", "replace")
            sizes = [uncompressed, compressed, local]
            if 0xFFFFFFFF in sizes:
                _zip64_extra(buffer[position + 46 + name_length : position + 46 + name_length + extra_length], sizes)
            yield name, method, sizes[1], sizes[0], sizes[2]
            position = end


def _zstd() -> Callable[[bytes, int], bytes]:
    try:
        import zstandard
    except ImportError:
        zstandard = None
    if zstandard is not None:
        decompressor = zstandard.ZstdDecompressor()
        return lambda data, size: decompressor.decompress(data, max_output_size=max(size, 1))
    try:  # Python 3.14 has zstd in the standard library
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        raise ZipStreamError(
            "the log's members are compressed with zstd (Inspect's default); reading them needs the zstandard "
            "package: pip install 'assay[interop]' (or pip install zstandard)"
        ) from None
    return lambda data, size: zstd.decompress(data)


class _Reader:
    """Reads members by their local header, inflating each with its method."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle = open(path, "rb")
        self._zstd: Callable[[bytes, int], bytes] | None = None

    def read(self, name: str, method: int, compressed: int, uncompressed: int, local: int) -> bytes:
        self.handle.seek(local)
        header = self.handle.read(30)
        if header[:4] != _LOCAL:
            raise ZipStreamError(f"{self.path}: member {name} is not where the central directory says")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        self.handle.seek(local + 30 + name_length + extra_length)
        data = self.handle.read(compressed)
        if len(data) != compressed:
            raise ZipStreamError(f"{self.path}: member {name} is cut short")
        if method == _STORED:
            return data
        if method == _DEFLATED:
            return zlib.decompress(data, -15)
        if method == _ZSTD:
            if self._zstd is None:
                self._zstd = _zstd()
            return self._zstd(data, uncompressed)
        raise ZipStreamError(f"{self.path}: member {name} uses zip compression method {method}, which assay does not read")

    def close(self) -> None:
        self.handle.close()


def iter_members(path: Path, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    """(name, content) of each member `wanted` accepts, one at a time, in the archive's order."""
    reader = _Reader(path)
    try:
        for name, method, compressed, uncompressed, local in _entries(path):
            if wanted(name):
                yield name, reader.read(name, method, compressed, uncompressed, local)
    except (OSError, zlib.error) as error:
        raise ZipStreamError(f"{path}: {error}") from None
    finally:
        reader.close()


def member_names(path: Path, *, limit: int | None = None) -> list[str]:
    names: list[str] = []
    for name, *_ in _entries(path):
        names.append(name)
        if limit is not None and len(names) >= limit:
            break
    return names


def read_members(path: Path, names: Collection[str]) -> dict[str, bytes]:
    """The content of each of `names` the archive holds, in one walk of its directory."""
    return dict(iter_members(path, names.__contains__))

