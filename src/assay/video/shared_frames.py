"""Frames handed to a process adapter through a shared-memory file instead of base64 PNG.

assay's extension to GlassKit's protocol (docs/video/protocol.md, "Shared-memory frames"): the
host writes each frame's RGB pixels into a slot of a per-adapter file in /dev/shm and the request
names the slot; the adapter reads them there. Both the host's segment and the adapter's reader
live here, so the layout is written down once.

Layout (version 1): a 64-byte header (`ASSAYFR1`, then the 16-byte token the setup message
carries), then slots, each starting on a page: 56 bytes unused, the 8-byte little-endian generation
of the frame the slot holds, then the pixels. A request names a frame by `offset` (of its pixels),
`length`, `slot` and `generation`; the generation sits in the 8 bytes before `offset`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import secrets
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assay.core.file_lock import pid_is_alive

try:
    import fcntl
except ImportError:  # Windows: no /dev/shm either
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CAPABILITY",
    "ENABLE_VARIABLE",
    "SETUP_METHOD",
    "SharedFrame",
    "SharedFrameReader",
    "SharedFrameSegment",
    "StaleFrameError",
    "create_segment",
    "remove_stale_segments",
    "shared_frames_enabled",
]

CAPABILITY = "assay.sharedFrames"  # in `initialize`'s capabilities: the adapter can read frames here
SETUP_METHOD = "assay.sharedFrames"  # the host's offer of one segment; the reply accepts it
VERSION = 1
ENABLE_VARIABLE = "ASSAY_SHARED_FRAMES"  # "0": never offer (every adapter gets base64 PNG)

SHM_DIRECTORY = Path("/dev/shm")
NAME_PREFIX = "assay-frames-"
_NAME = re.compile(r"assay-frames-(\d+)-[0-9a-f]+")
MAGIC = b"ASSAYFR1"
HEADER_BYTES = 64
PAGE = 4096
SLOT_HEADER_BYTES = 64  # the generation is its last 8 bytes
_GENERATION = struct.Struct("<Q")
WRITING = 0  # the generation while a slot is being written: never a frame's
# Frames in flight at once are few (--concurrency of them, or one batch): 256 MiB holds 97 720p
# frames. The segment never takes more than half of what /dev/shm has free either; a frame that
# finds no room goes as base64 PNG, as it would without the extension.
MAX_SEGMENT_BYTES = 256 * 1024 * 1024
# A segment whose owner holds no lock on it is stale once its owner is dead, or (pid reused) once
# it is older than this: a live owner locks it right after creating it, then removes its name
# as soon as the adapter has opened it.
STALE_AFTER_S = 60.0


_OFF = ("0", "false", "no", "off")
_ON = ("", "1", "true", "yes", "on")


def shared_frames_enabled() -> bool:
    """Whether to offer the extension (ASSAY_SHARED_FRAMES, on unless "0"). ValueError for any other
    value: a misspelt "0" would otherwise leave shared memory on without a word."""
    text = os.environ.get(ENABLE_VARIABLE, "").strip()
    if text.lower() in _OFF:
        return False
    if text.lower() in _ON:
        return True
    raise ValueError(f"{ENABLE_VARIABLE} must be 0 (send PNG frames) or 1 (offer shared memory, the default), got {text!r}")


class StaleFrameError(RuntimeError):
    """The slot no longer holds the frame the request named (it was reused or is being written)."""


@dataclass(slots=True, eq=False)
class _Slot:
    number: int
    start: int  # the slot's first byte in the file
    capacity: int  # pixel bytes it holds
    memory: mmap.mmap  # the slot, mapped: a copy into it costs a third of a pwrite (no per-page lookups)
    bytes: np.ndarray | None  # `memory` as uint8
    generation: int = 0  # of the frame written there last


class _FrameLease:
    """One decoded frame's place in the segment, shared by every target that samples the frame:
    free once the last request that named it has been answered, and taken back unwritten if the
    frame is asked for again before another frame took the slot."""

    __slots__ = ("generation", "lock", "references", "slot")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slot: _Slot | None = None
        self.generation = 0
        self.references = 0


@dataclass(frozen=True, slots=True)
class SharedFrame:
    """A frame written to the segment, as one request names it; `release()` it once answered."""

    segment: SharedFrameSegment
    lease: _FrameLease
    slot: int
    generation: int
    offset: int
    length: int
    width: int
    height: int

    def image_json(self) -> bytes:
        """The sample's `image` object on the wire."""
        return (
            b'{"sharedFrame":{"slot":%d,"generation":%d,"offset":%d,"length":%d},"width":%d,"height":%d,"channels":3}'
            % (self.slot, self.generation, self.offset, self.length, self.width, self.height)
        )

    def release(self) -> None:
        self.segment.release(self.lease)


class SharedFrameSegment:
    """The host's side: one file in /dev/shm per adapter process, 0600, locked while it lives.

    Its name exists only from creation until the adapter has opened it (`remove_name`); after
    that the file lives as long as an open descriptor (assay's, the adapter's) and no exit path,
    kill -9 included, leaves anything behind. A slot is written only when no request that named
    it is waiting for its answer."""

    def __init__(self, fd: int, path: Path, token: bytes, limit: int) -> None:
        self._fd = fd
        self.path = path
        self.token = token
        self._limit = limit
        # Guards the slot lists, the generation and `closed`; `close` waits on it for writes in
        # progress, so no encoder thread ever writes to a descriptor number that was reused.
        self._lock = threading.Condition()
        self._writers = 0
        self._slots: list[_Slot] = []
        self._free: list[_Slot] = []
        self._end = PAGE  # the header has the first page
        self._generation = 0
        self._can_grow = True
        self.closed = False

    # ---- the offer ---------------------------------------------------------------------------

    def setup_params(self) -> dict[str, Any]:
        return {"version": VERSION, "path": str(self.path), "token": self.token.hex()}

    def remove_name(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._lock.wait_for(lambda: self._writers == 0)
        for slot in self._slots:
            slot.bytes = None  # the last view of the mapping, so it can be unmapped
            slot.memory.close()
        self.remove_name()
        os.close(self._fd)

    # ---- frames --------------------------------------------------------------------------------

    def share(self, sample: Any) -> SharedFrame | None:
        """Write `sample`'s frame to a free slot (or find it there already, written for another
        target); None when there is no room, and the frame goes as PNG instead. Runs in an
        encoder thread: the copy into the mapped slot is numpy's, which releases the GIL."""
        lease: _FrameLease = sample._shared(("shared-frame", self.token), _FrameLease)
        with lease.lock:
            pixels = sample.pixels()
            if lease.references == 0 and not self._take_back(lease) and not self._write_frame(lease, pixels):
                return None
            lease.references += 1
            slot = lease.slot
            assert slot is not None
            height, width = pixels.shape[:2]
            return SharedFrame(
                self, lease, slot.number, lease.generation, slot.start + SLOT_HEADER_BYTES, height * width * 3,
                width, height,
            )

    def release(self, lease: _FrameLease) -> None:
        with lease.lock:
            lease.references -= 1
            if lease.references == 0 and lease.slot is not None:
                self._give_back(lease.slot)

    def _take_back(self, lease: _FrameLease) -> bool:
        """Take the lease's last slot off the free list if it still holds the frame (no other
        frame took it since)."""
        slot = lease.slot
        with self._lock:
            if self.closed or slot is None or slot.generation != lease.generation or slot not in self._free:
                return False
            self._free.remove(slot)
            return True

    def _write_frame(self, lease: _FrameLease, pixels: np.ndarray) -> bool:
        """Write the frame to a slot of its own; False when there is no room."""
        pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
        slot = self._take_slot(pixels.nbytes)
        if slot is None:
            return False
        try:
            lease.generation = self._write(slot, pixels)
        finally:
            with self._lock:
                self._writers -= 1
                self._lock.notify_all()
        lease.slot = slot
        return True

    def _take_slot(self, size: int) -> _Slot | None:
        """A free slot of at least `size` bytes, counted as being written (see `close`)."""
        with self._lock:
            if self.closed:
                return None
            # The free slot given back longest ago: a frame answered just now may be asked for
            # again by another target, and then its slot is taken back without a write.
            slot = next((candidate for candidate in self._free if candidate.capacity >= size), None)
            if slot is not None:
                self._free.remove(slot)
            else:
                span = -(-(SLOT_HEADER_BYTES + size) // PAGE) * PAGE
                if not self._can_grow or self._end + span > self._limit:
                    return None
                try:
                    # Reserve the pages now: a full /dev/shm is ENOSPC here, never a SIGBUS on a
                    # write to the mapping later.
                    os.posix_fallocate(self._fd, self._end, span)
                    memory = mmap.mmap(self._fd, span, offset=self._end)
                except OSError:
                    self._can_grow = False
                    return None
                slot = _Slot(
                    len(self._slots), self._end, span - SLOT_HEADER_BYTES, memory, np.frombuffer(memory, dtype=np.uint8)
                )
                self._slots.append(slot)
                self._end += span
            self._writers += 1
            return slot

    def _give_back(self, slot: _Slot) -> None:
        with self._lock:
            self._free.append(slot)

    def _write(self, slot: _Slot, pixels: np.ndarray) -> int:
        with self._lock:
            self._generation += 1
            generation = self._generation
        # The generation is cleared first and set last, so a reader that comes too late (its
        # request answered, the slot reused) sees a change and never takes a torn frame.
        assert slot.bytes is not None
        stamp = slot.bytes[SLOT_HEADER_BYTES - _GENERATION.size : SLOT_HEADER_BYTES].view("<u8")
        stamp[0] = WRITING
        np.copyto(slot.bytes[SLOT_HEADER_BYTES : SLOT_HEADER_BYTES + pixels.nbytes], pixels.reshape(-1))
        stamp[0] = generation
        slot.generation = generation
        return generation

    @property
    def slot_count(self) -> int:
        return len(self._slots)


def create_segment(directory: Path | None = None) -> SharedFrameSegment | None:
    """A new segment in /dev/shm, after removing what killed runs left there; None where there is
    no usable /dev/shm (macOS, Windows, a read-only one): the adapter then gets PNG frames."""
    directory = directory or SHM_DIRECTORY
    if fcntl is None or not directory.is_dir():
        return None
    remove_stale_segments(directory)
    token = secrets.token_bytes(16)
    path = directory / f"{NAME_PREFIX}{os.getpid()}-{token.hex()[:16]}"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.fchmod(fd, 0o600)  # whatever the umask
        os.pwrite(fd, MAGIC + token, 0)
        os.ftruncate(fd, PAGE)
        space = os.statvfs(directory)
        limit = min(MAX_SEGMENT_BYTES, space.f_bavail * space.f_frsize // 2)
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    return SharedFrameSegment(fd, path, token, limit)


def remove_stale_segments(directory: Path | None = None) -> list[Path]:
    """Remove segments whose run was killed before it removed their name (kill -9 of assay in
    the moment between creating one and the adapter opening it); the ones removed.

    Only this user's files with assay's name, and only when nobody holds the lock: every live
    segment's owner locks it from its first moment, and the lock dies with its holder."""
    directory = directory or SHM_DIRECTORY
    removed: list[Path] = []
    if fcntl is None:
        return removed
    try:
        names = [name for name in os.listdir(directory) if name.startswith(NAME_PREFIX)]
    except OSError:
        return removed
    for name in names:
        match = _NAME.fullmatch(name)
        if match is None:
            continue
        path = directory / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            status = os.fstat(fd)
            if status.st_uid != os.getuid():
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its owner is alive
            owner_gone = not pid_is_alive(int(match.group(1)))
            if owner_gone or time.time() - status.st_mtime > STALE_AFTER_S:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                removed.append(path)
        finally:
            os.close(fd)
    return removed


class SharedFrameReader:
    """The adapter's side (`assay.video.serve`): the segment opened read-only, frames copied out."""

    def __init__(self, params: Any) -> None:
        if not isinstance(params, dict) or params.get("version") != VERSION:
            version = params.get("version") if isinstance(params, dict) else None
            raise ValueError(f"unsupported shared-frames version: {version}")
        self._fd = os.open(str(params["path"]), os.O_RDONLY | os.O_CLOEXEC)
        try:
            header = os.pread(self._fd, HEADER_BYTES, 0)
            if header[: len(MAGIC)] != MAGIC or header[len(MAGIC) : len(MAGIC) + 16].hex() != params.get("token"):
                raise ValueError(f"{params['path']} is not the segment assay offered")
        except BaseException:
            os.close(self._fd)
            raise

    def read(self, reference: dict[str, Any], width: int, height: int) -> np.ndarray:
        """The frame's pixels as a (height, width, 3) array of its own, checked against the
        generation the request named."""
        offset, length, generation = reference["offset"], reference["length"], reference["generation"]
        if length != width * height * 3:
            raise ValueError(f"shared frame length {length} does not match {width}x{height}x3")
        pixels = np.empty((height, width, 3), dtype=np.uint8)
        before = self._generation(offset)
        if os.preadv(self._fd, [pixels], offset) != length:
            raise StaleFrameError(f"shared frame slot {reference['slot']} is shorter than the request says")
        after = self._generation(offset)
        if not before == after == generation:
            raise StaleFrameError(
                f"shared frame slot {reference['slot']} no longer holds generation {generation} "
                f"(it holds {after}): the frame was read after its request was answered"
            )
        return pixels

    def _generation(self, offset: int) -> int:
        return _GENERATION.unpack(os.pread(self._fd, _GENERATION.size, offset - _GENERATION.size))[0]

    def close(self) -> None:
        os.close(self._fd)
