"""Decode a case's video once and hand each sample its frame, across all targets, in time order.

Targets keep their declaration order internally; the feed merges them by time so one sequential
decode pass serves every target and each distinct frame is converted once. Memory stays bounded:
a decode thread runs at most `window` frames ahead of the samples still being evaluated.
"""

from __future__ import annotations

import asyncio
import heapq
import threading
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from assay.video.decode import DecodedFrame, FrameCursor
from assay.video.model import Sample


def merge_in_time_order(sequences: Sequence[Sequence[Sample]]) -> list[Sample]:
    """Merge per-target sample lists (each kept in its own order) by timestamp, ties by target."""
    heap: list[tuple[float, int, int]] = []
    for position, sequence in enumerate(sequences):
        if sequence:
            heap.append((sequence[0].timestamp_s, position, 0))
    heapq.heapify(heap)
    merged: list[Sample] = []
    while heap:
        _, position, offset = heapq.heappop(heap)
        sequence = sequences[position]
        merged.append(sequence[offset])
        if offset + 1 < len(sequence):
            heapq.heappush(heap, (sequence[offset + 1].timestamp_s, position, offset + 1))
    return merged


def frames_in_order(path: Path, samples: Sequence[Sample]) -> Any:
    """Yield `(sample, frame)` pairs; a sample earlier than its predecessor restarts the decoder.

    Restarting (rather than buffering frames) keeps memory flat when a target declares blocks out
    of time order; the frames chosen are the same as one sorted pass would choose."""
    cursor: FrameCursor | None = None
    previous = -1.0
    try:
        for sample in samples:
            if cursor is None or sample.timestamp_s < previous:
                if cursor is not None:
                    cursor.close()
                cursor = FrameCursor(path)
            previous = sample.timestamp_s
            yield sample, cursor.frame_at(sample.timestamp_s)
    finally:
        if cursor is not None:
            cursor.close()


class FrameFeed:
    """An async iterator of `(sample, frame)` fed by a decode thread, at most `window` ahead.

    Two stages run beside the event loop: the decode thread picks frames, converter threads
    turn them into RGB images (so decoding the next frame overlaps converting this one).
    With `convert_ahead=False` frames are handed over unconverted, for a consumer that converts
    them in its own worker threads (`DecodedFrame.pixels` converts on first use).
    Call `release()` once per item when its evaluation is over; `close()` stops both."""

    _DONE = object()

    def __init__(self, path: Path, samples: Sequence[Sample], window: int, *, convert_ahead: bool = True) -> None:
        self._path = path
        self._samples = samples
        self._slots = threading.Semaphore(window)
        self._stop = threading.Event()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        # Two converters: RGB conversion costs about as much as decoding, and both release the GIL.
        self._converter = (
            ThreadPoolExecutor(max_workers=2, thread_name_prefix="assay-convert") if convert_ahead else None
        )
        self._thread = threading.Thread(target=self._produce, name="assay-decode", daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        put = self._queue.put_nowait
        try:
            for sample, frame in frames_in_order(self._path, self._samples):
                if self._stop.is_set():
                    return
                converted = self._converter.submit(frame.prepare) if self._converter is not None else frame
                self._loop.call_soon_threadsafe(put, (sample, converted))
                self._slots.acquire()
                if self._stop.is_set():
                    return
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, re-raised there
            self._loop.call_soon_threadsafe(put, error)
            return
        finally:
            if not self._stop.is_set():
                try:
                    self._loop.call_soon_threadsafe(put, self._DONE)
                except RuntimeError:  # the loop is already closed
                    pass

    def __aiter__(self) -> AsyncIterator[tuple[Sample, DecodedFrame]]:
        return self

    async def __anext__(self) -> tuple[Sample, DecodedFrame]:
        item = await self._queue.get()
        if item is self._DONE:
            self._queue.put_nowait(item)
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._queue.put_nowait(self._DONE)
            raise item
        sample, converted = item
        if isinstance(converted, DecodedFrame):  # handed over unconverted
            return sample, converted
        if converted.done():  # skip a cross-thread wake-up when the frame is already converted
            return sample, converted.result()
        return sample, await asyncio.wrap_future(converted)

    def release(self) -> None:
        self._slots.release()

    async def close(self) -> None:
        self._stop.set()
        self._slots.release()
        await asyncio.to_thread(self._thread.join)
        if self._converter is not None:
            self._converter.shutdown(wait=True, cancel_futures=True)
