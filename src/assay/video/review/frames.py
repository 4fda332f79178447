"""Exact eval frames for the review UI: seek-decoded PNGs, cached, shared and superseded per client.

The pixels are those `run` hands an adapter for the same time (spec/video.md §7.5); PNG keeps them
lossless. A newer request from the same client makes older queued decodes give up (409).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from assay.video.decode import select_frame_at
from assay.video.sampling import timestamp_tick

__all__ = ["FrameRenderer", "FrameSuperseded", "RenderedFrame", "file_identity", "frame_digest"]

DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
# zlib level 1: still lossless, several times faster than Pillow's default on 720p frames.
PNG_COMPRESS_LEVEL = 1

FileIdentity = tuple[int, int, int, int, int]


def file_identity(path: Path) -> FileIdentity:
    """Device, inode, size, mtime and ctime: a changed or replaced file gets a new identity."""
    status = os.stat(path)
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def frame_digest(mode: str, width: int, height: int, raw: bytes) -> str:
    """SHA-256 over `"<mode>:<w>x<h>\\0"` and the raw pixel bytes (the X-GlassKit-Frame-SHA256 value)."""
    digest = hashlib.sha256(f"{mode}:{width}x{height}\0".encode("ascii"))
    digest.update(raw)
    return digest.hexdigest()


@dataclass(frozen=True)
class RenderedFrame:
    png: bytes
    sha256: str
    media_time: float
    index: int | None
    width: int
    height: int


class FrameSuperseded(Exception):
    """A newer frame request of the same client made this one pointless."""


@dataclass
class _Decode:
    task: asyncio.Task[RenderedFrame]
    interested: set[tuple[str, int] | None] = field(default_factory=set)


def _render(path: Path, t: float) -> RenderedFrame:
    frame = select_frame_at(path, t)
    image = frame.to_image()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return RenderedFrame(
        png=buffer.getvalue(),
        sha256=frame_digest(image.mode, frame.width, frame.height, frame.pixels.tobytes()),
        media_time=frame.media_time,
        index=frame.index,
        width=frame.width,
        height=frame.height,
    )


class FrameRenderer:
    """Decodes frames off the event loop, at most `workers` at a time, behind an LRU of PNG bytes."""

    def __init__(self, *, cache_bytes: int = DEFAULT_CACHE_BYTES, workers: int = 2) -> None:
        self._cache: OrderedDict[tuple[FileIdentity, int], RenderedFrame] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._used_bytes = 0
        self._in_flight: dict[tuple[FileIdentity, int], _Decode] = {}
        self._slots = asyncio.Semaphore(workers)
        self._latest_generation: dict[str, int] = {}

    def _superseded(self, requester: tuple[str, int] | None) -> bool:
        if requester is None:
            return False
        client, generation = requester
        return generation < self._latest_generation.get(client, generation)

    def _remember(self, key: tuple[FileIdentity, int], frame: RenderedFrame) -> None:
        size = len(frame.png)
        if size > self._cache_bytes:
            return
        self._cache[key] = frame
        self._used_bytes += size
        while self._used_bytes > self._cache_bytes:
            _, evicted = self._cache.popitem(last=False)
            self._used_bytes -= len(evicted.png)

    async def render(self, path: Path, t: float, requester: tuple[str, int] | None = None) -> RenderedFrame:
        """The frame for `t` (already rounded to 9 decimals); raises FrameSuperseded or VideoError."""
        if requester is not None:
            client, generation = requester
            self._latest_generation[client] = max(generation, self._latest_generation.get(client, generation))
            if self._superseded(requester):
                raise FrameSuperseded()
        key = (file_identity(path), timestamp_tick(t))
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        decode = self._in_flight.get(key)
        if decode is None:
            decode = _Decode(task=asyncio.ensure_future(self._decode(key, path, t)))
            self._in_flight[key] = decode
        decode.interested.add(requester)
        try:
            frame = await asyncio.shield(decode.task)
        finally:
            decode.interested.discard(requester)
        if self._superseded(requester):
            raise FrameSuperseded()
        return frame

    async def _decode(self, key: tuple[FileIdentity, int], path: Path, t: float) -> RenderedFrame:
        try:
            async with self._slots:
                decode = self._in_flight.get(key)
                if decode is not None and decode.interested and all(self._superseded(r) for r in decode.interested):
                    raise FrameSuperseded()
                frame = await asyncio.to_thread(_render, path, t)
            self._remember(key, frame)
            return frame
        finally:
            self._in_flight.pop(key, None)
