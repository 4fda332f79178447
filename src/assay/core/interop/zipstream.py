"""Reading the members of a large zip archive one at a time, without a table of all of them in memory.

`zipfile.ZipFile` reads the whole central directory into one object per member first (tens of MB
for an Inspect log of 100,000 samples); here the directory is read in chunks as it is walked, and
each wanted member is read and inflated on its own, whole (`read_members`, `iter_members`) or a
piece at a time (`member_chunks`: a member larger than memory should hold, like the `summaries.json`
of a 100,000-sample Inspect log). Stored, deflate and zstd (Inspect's default since 2025) members are
read; zstd needs the `zstandard` package (assay's `interop` extra).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "Member", "ZipStreamError", "find_members", "is_zip", "iter_members", "member_chunks", "member_names", "read_member",
    "read_members",
]

_END = b"PK\x05\x06"
_END64_LOCATOR = b"PK\x06\x07"
_END64 = b"PK\x06\x06"
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"
_STORED, _DEFLATED, _ZSTD = 0, 8, 93
_CHUNK = 1 << 20
# A central directory header: signature, method, sizes, name/extra/comment lengths, local header offset.
_CENTRAL_HEADER = struct.Struct("<4s6xH8xIIHHH8xI")


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


@dataclass(frozen=True, slots=True)
class Member:
    """One member as the central directory describes it."""

    name: str
    method: int
    compressed: int
    uncompressed: int
    offset: int  # of its local header


def _entries(path: Path) -> Iterator[tuple[bytes, int, int, int, int]]:
    """(name as stored, method, compressed size, uncompressed size, local header offset) of each
    member, in the order of the central directory (the order they were written)."""
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
            if len(buffer) < position + 46:
                fill(position + 46)
            header = _header(buffer, position, path)
            end = position + 46 + header[4] + header[5] + header[6]
            if len(buffer) < end:
                fill(end)
            yield _entry(buffer, position, header)
            position = end


_unpack_entry = _CENTRAL_HEADER.unpack_from  # ~1 µs a member: an Inspect log of 100,000 samples has 110,000


def _header(buffer: bytes, position: int, path: Path) -> tuple[Any, ...]:
    """The fixed part of the central directory entry at `position` (signature, method, sizes, the name, extra
    and comment lengths, local header offset), which must be in `buffer`."""
    header = _unpack_entry(buffer, position)
    if header[0] != _CENTRAL:
        raise ZipStreamError(f"{path}: the zip central directory is damaged")
    return header


def _entry(buffer: bytes, position: int, header: tuple[Any, ...]) -> tuple[bytes, int, int, int, int]:
    """The entry at `position`, whole in `buffer`, as `_entries` yields it."""
    _, method, compressed, uncompressed, name_length, extra_length, _, local = header
    name = buffer[position + 46 : position + 46 + name_length]
    if 0xFFFFFFFF in (uncompressed, compressed, local):
        sizes = [uncompressed, compressed, local]
        _zip64_extra(buffer[position + 46 + name_length : position + 46 + name_length + extra_length], sizes)
        uncompressed, compressed, local = sizes
    return name, method, compressed, uncompressed, local


_NO_ZSTD = ("the log's members are compressed with zstd (Inspect's default); reading them needs the zstandard "
            "package: pip install 'assay[interop]' (or pip install zstandard)")


def _zstd() -> tuple[Callable[[bytes, int], bytes], type[Exception]]:
    """A whole member's zstd inflater, and the error it raises on damaged data."""
    try:
        import zstandard
    except ImportError:
        zstandard = None
    if zstandard is not None:
        decompressor = zstandard.ZstdDecompressor()
        return (lambda data, size: decompressor.decompress(data, max_output_size=max(size, 1))), zstandard.ZstdError
    try:  # Python 3.14 has zstd in the standard library
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        raise ZipStreamError(_NO_ZSTD) from None
    return (lambda data, size: zstd.decompress(data)), zstd.ZstdError


class _Reader:
    """Reads members by their local header, inflating each with its method."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle = open(path, "rb")
        self._zstd: tuple[Callable[[bytes, int], bytes], type[Exception]] | None = None

    def _seek_data(self, member: Member) -> None:
        self.handle.seek(member.offset)
        header = self.handle.read(30)
        if header[:4] != _LOCAL:
            raise ZipStreamError(f"{self.path}: member {member.name} is not where the central directory says")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        self.handle.seek(member.offset + 30 + name_length + extra_length)

    def _unknown(self, member: Member) -> ZipStreamError:
        return ZipStreamError(f"{self.path}: member {member.name} uses zip compression method {member.method}, which "
                              "assay does not read")

    def read(self, member: Member) -> bytes:
        self._seek_data(member)
        data = self.handle.read(member.compressed)
        if len(data) != member.compressed:
            raise ZipStreamError(f"{self.path}: member {member.name} is cut short")
        if member.method == _STORED:
            return data
        if member.method == _DEFLATED:
            try:
                return zlib.decompress(data, -15)
            except zlib.error as error:
                raise ZipStreamError(f"{self.path}: member {member.name}: {error}") from None
        if member.method == _ZSTD:
            if self._zstd is None:
                self._zstd = _zstd()
            inflate, damaged = self._zstd
            try:  # (a damaged member, as a member read a piece at a time says it: `_Unzstd`)
                return inflate(data, member.uncompressed)
            except damaged as error:
                raise ZipStreamError(f"{self.path}: member {member.name}: {error}") from None
        raise self._unknown(member)

    def chunks(self, member: Member, size: int) -> Iterator[bytes]:
        """The member's content in pieces of at most about `size` bytes, inflated as they are read."""
        if member.method not in (_STORED, _DEFLATED, _ZSTD):
            raise self._unknown(member)
        self._seek_data(member)
        label = f"{self.path}: member {member.name}"
        window = _Window(self.handle, member.compressed, label)
        source: _Window | _Inflating | _Unzstd = window
        if member.method == _DEFLATED:
            source = _Inflating(window, label)
        elif member.method == _ZSTD:
            source = _Unzstd(window, label)
        while piece := source.read(size):
            yield piece
        if window.remaining:
            raise ZipStreamError(f"{label} ends before its stated size")

    def close(self) -> None:
        self.handle.close()


class _Window:
    """The next `remaining` bytes of a file, as a file: a member's compressed data."""

    def __init__(self, handle: BinaryIO, remaining: int, label: str) -> None:
        self.handle = handle
        self.remaining = remaining
        self.label = label

    def read(self, size: int = -1) -> bytes:
        wanted = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self.handle.read(wanted) if wanted else b""
        if len(data) < wanted:
            raise ZipStreamError(f"{self.label} is cut short")
        self.remaining -= len(data)
        return data


class _Inflating:
    """Raw deflate, read at most `size` bytes of output at a time, however well it packed."""

    def __init__(self, window: _Window, label: str) -> None:
        self.window = window
        self.label = label
        self.inflater = zlib.decompressobj(-15)

    def read(self, size: int) -> bytes:
        while not self.inflater.eof:
            data = self.inflater.unconsumed_tail or self.window.read(_CHUNK // 4)
            if not data:
                raise ZipStreamError(f"{self.label}: its deflate stream ends early")
            try:
                piece = self.inflater.decompress(data, size)
            except zlib.error as error:
                raise ZipStreamError(f"{self.label}: {error}") from None
            if piece:
                return piece
        return b""


class _Unzstd:
    """zstd, read at most `size` bytes of output at a time (the zstandard package, else Python 3.14's own)."""

    def __init__(self, window: _Window, label: str) -> None:
        self.label = label
        try:
            import zstandard
        except ImportError:
            try:
                from compression import zstd  # type: ignore[import-not-found]
            except ImportError:
                raise ZipStreamError(_NO_ZSTD) from None
            self.reader, self.error = zstd.ZstdFile(window), zstd.ZstdError
        else:
            self.reader = zstandard.ZstdDecompressor().stream_reader(
                window, read_size=_CHUNK // 4, read_across_frames=True, closefd=False
            )
            self.error = zstandard.ZstdError

    def read(self, size: int) -> bytes:
        try:
            return self.reader.read(size)
        except self.error as error:
            raise ZipStreamError(f"{self.label}: {error}") from None


def _walk(path: Path, wanted: Callable[[str], bool]) -> Iterator[Member]:
    for name, method, compressed, uncompressed, local in _entries(path):
        text = name.decode("utf-8", "replace")
        if wanted(text):
            yield Member(text, method, compressed, uncompressed, local)


def iter_members(path: Path, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    """(name, content) of each member `wanted` accepts, one at a time, in the archive's order."""
    reader = _Reader(path)
    try:
        for member in _walk(path, wanted):
            yield member.name, reader.read(member)
    except (OSError, zlib.error) as error:
        raise ZipStreamError(f"{path}: {error}") from None
    finally:
        reader.close()


def member_names(path: Path, *, limit: int | None = None) -> list[str]:
    names: list[str] = []
    for name, *_ in _entries(path):
        names.append(name.decode("utf-8", "replace"))
        if limit is not None and len(names) >= limit:
            break
    return names


def find_members(path: Path, names: Collection[str]) -> dict[str, Member]:
    """Each of `names` the archive holds (the last, when a name is there twice: Inspect supersedes a
    member by writing it again). The central directory is read whole and each name searched for in
    it from its end (a 100,000-sample Inspect log's directory is ~8 MB, 110,000 entries: 0.09 s to
    walk entry by entry); a match counts only where an entry of that name's length begins 46 bytes
    before it. An archive whose directory does not fit in memory comfortably is walked."""
    try:
        with open(path, "rb") as handle:
            entries, size, offset = _directory(handle, str(path))
            if size > _DIRECTORY_READ_WHOLE:
                return {member.name: member for member in _walk(path, names.__contains__)}
            handle.seek(offset)
            directory = handle.read(size)
    except OSError as error:
        raise ZipStreamError(f"{path}: {error}") from None
    if len(directory) < size:
        raise ZipStreamError(f"{path}: the zip central directory is cut short")
    if entries and not directory.startswith(_CENTRAL):
        raise ZipStreamError(f"{path}: the zip central directory is damaged")
    found: dict[str, Member] = {}
    for text in names:
        name = text.encode("utf-8")
        at = len(directory)
        while (at := directory.rfind(name, 0, at)) >= 46:
            start = at - 46
            if not directory.startswith(_CENTRAL, start):
                continue
            header = _unpack_entry(directory, start)
            if header[4] == len(name) and start + 46 + header[4] + header[5] + header[6] <= len(directory):
                _, method, compressed, uncompressed, local = _entry(directory, start, header)
                found[text] = Member(text, method, compressed, uncompressed, local)
                break
    return found


_DIRECTORY_READ_WHOLE = 64 << 20


def read_members(path: Path, names: Collection[str]) -> dict[str, bytes]:
    """The content of each of `names` the archive holds, in one walk of its directory."""
    return {name: read_member(path, member) for name, member in find_members(path, names).items()}


def read_member(path: Path, member: Member) -> bytes:
    reader = _Reader(path)
    try:
        return reader.read(member)
    except (OSError, zlib.error) as error:
        raise ZipStreamError(f"{path}: {error}") from None
    finally:
        reader.close()


def member_chunks(path: Path, member: Member, size: int = _CHUNK) -> Iterator[bytes]:
    """The member's content a piece at a time (pieces of at most about `size` bytes), so a member
    of any size is read in constant memory."""
    reader = _Reader(path)
    try:
        yield from reader.chunks(member, size)
    except OSError as error:
        raise ZipStreamError(f"{path}: {error}") from None
    finally:
        reader.close()
