"""Video evaluators backed by an adapter command speaking the NDJSON process protocol (spec §24).

Frames travel as lossless PNG in base64; encoding runs in worker threads so frames encode in parallel.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from assay.adapters.ndjson import EncodedJson, NdjsonProcess, start_ndjson_process
from assay.errors import AdapterRuntimeError
from assay.video.adapters import AdapterConfig, FrameSample, TargetContext

__all__ = [
    "CommandEvaluator",
    "encode_png",
    "encode_sample_json",
    "sample_payload",
    "start_command_evaluator",
    "target_payload",
]

PROTOCOL_VERSION = 1
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_FILTER_UP = 2


def _select_base64() -> Any:
    # pybase64 (SIMD) encodes a 1 MB frame ~10x faster than the stdlib, which holds the GIL while it works.
    try:
        from pybase64 import b64encode  # type: ignore[import-not-found]
    except ImportError:
        return base64.b64encode
    return b64encode


_b64encode = _select_base64()


def _select_deflate() -> Any:
    # ISA-L (the `isal` package) deflates a noisy 720p frame ~4x faster than zlib at a similar size,
    # and its crc32 is ~15x faster.
    try:
        from isal import isal_zlib  # type: ignore[import-not-found]
    except ImportError:
        return zlib
    return isal_zlib


_DEFLATE = _select_deflate()
DEFLATE_LEVEL = 1


_thread_buffers = threading.local()


def _thread_buffer(name: str, size: int) -> np.ndarray:
    # Reused per worker thread: fresh multi-megabyte allocations cost page faults on every frame.
    buffer = getattr(_thread_buffers, name, None)
    if buffer is None or buffer.size < size:
        buffer = np.empty(size, dtype=np.uint8)
        setattr(_thread_buffers, name, buffer)
    return buffer[:size]


# A noisy camera frame keeps 35-65% of its size under fast deflate, and deflating it costs more
# CPU (~7 ms per 720p frame) than sending the extra bytes through base64, the pipe and the
# adapter's reader (~1.7 ms per megabyte of PNG here). Frames whose sample rows keep more than
# this share are sent as stored (uncompressed) deflate blocks: still a standard, lossless PNG,
# and the cheapest kind to decode. docs/benchmarks.md has the measurements behind the threshold.
STORED_ABOVE_RATIO = 0.3
_PROBE_BANDS = 8
_PROBE_ROWS = 4
_STORED_BLOCK = 65535  # the most one stored deflate block holds
_PNG_HEAD = 8 + 25 + 8  # signature, IHDR chunk, IDAT length and type
_PNG_TAIL = 4 + 12  # IDAT crc, IEND chunk
_IEND = struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND"))


def _worth_deflating(pixels: np.ndarray) -> bool:
    """Whether deflate shrinks this (height, width*3) frame below STORED_ABOVE_RATIO, judged
    from a few Up-filtered bands of rows spread over its height."""
    height, row_bytes = pixels.shape
    if height <= 2 * _PROBE_BANDS * _PROBE_ROWS:
        return True
    probe = _thread_buffer("probe", _PROBE_BANDS * _PROBE_ROWS * row_bytes).reshape(-1, row_bytes)
    for band in range(_PROBE_BANDS):
        top = 1 + band * (height - 1 - _PROBE_ROWS) // (_PROBE_BANDS - 1)
        out = probe[band * _PROBE_ROWS : (band + 1) * _PROBE_ROWS]
        np.subtract(pixels[top : top + _PROBE_ROWS], pixels[top - 1 : top - 1 + _PROBE_ROWS], out=out)
    return len(_DEFLATE.compress(probe.data, DEFLATE_LEVEL)) <= STORED_ABOVE_RATIO * probe.size


def _png_header(buffer: np.ndarray, width: int, height: int, idat_length: int) -> None:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    ihdr_crc = _DEFLATE.crc32(header, _DEFLATE.crc32(b"IHDR"))
    ihdr = struct.pack(">I", 13) + b"IHDR" + header + struct.pack(">I", ihdr_crc)
    head = PNG_SIGNATURE + ihdr + struct.pack(">I", idat_length) + b"IDAT"
    buffer[:_PNG_HEAD] = np.frombuffer(head, dtype=np.uint8)


def _png_tail(buffer: np.ndarray, idat_end: int) -> None:
    idat_crc = _DEFLATE.crc32(buffer[_PNG_HEAD - 4 : idat_end].data)
    buffer[idat_end:] = np.frombuffer(struct.pack(">I", idat_crc) + _IEND, dtype=np.uint8)


def _deflated_png(pixels: np.ndarray, width: int, level: int) -> np.ndarray:
    # Every row uses the PNG "Up" filter: cheap with numpy, and it compresses camera frames about
    # as well as adaptive filtering.
    height, row_bytes = pixels.shape
    rows = _thread_buffer("rows", height * (row_bytes + 1)).reshape(height, row_bytes + 1)
    rows[:, 0] = PNG_FILTER_UP
    rows[0, 1:] = pixels[0]
    np.subtract(pixels[1:], pixels[:-1], out=rows[1:, 1:])
    compressed = _DEFLATE.compress(rows.data, level)
    png = _thread_buffer("png", _PNG_HEAD + len(compressed) + _PNG_TAIL)
    _png_header(png, width, height, len(compressed))
    png[_PNG_HEAD : _PNG_HEAD + len(compressed)] = np.frombuffer(compressed, dtype=np.uint8)
    _png_tail(png, _PNG_HEAD + len(compressed))
    return png


def _stored_png(pixels: np.ndarray, width: int) -> np.ndarray:
    # A zlib stream (RFC 1950) of stored deflate blocks (RFC 1951), each holding whole unfiltered
    # rows, so numpy writes block headers, filter bytes and pixels into the PNG in one copy.
    height, row_bytes = pixels.shape
    line = row_bytes + 1
    per_block = _STORED_BLOCK // line
    full, rest = divmod(height, per_block)
    groups = [(rows, count) for rows, count in ((per_block, full), (rest, 1 if rest else 0)) if count]
    zlib_length = 2 + sum(count * (5 + rows * line) for rows, count in groups) + 4
    png = _thread_buffer("png", _PNG_HEAD + zlib_length + _PNG_TAIL)
    _png_header(png, width, height, zlib_length)
    stream = png[_PNG_HEAD : _PNG_HEAD + zlib_length]
    stream[:2] = (0x78, 0x01)  # deflate, 32 KiB window, no dictionary, check bits
    at, first_row, checksum = 2, 0, 1
    for rows, count in groups:
        size = rows * line
        blocks = stream[at : at + count * (5 + size)].reshape(count, 5 + size)
        blocks[:, 0] = 0  # not the final block (set below for the last one)
        blocks[:, 1:5] = np.frombuffer(struct.pack("<HH", size, size ^ 0xFFFF), dtype=np.uint8)
        body = blocks[:, 5:].reshape(count, rows, line)
        body[:, :, 0] = 0  # filter type None
        body[:, :, 1:] = pixels[first_row : first_row + count * rows].reshape(count, rows, row_bytes)
        for block in blocks:
            checksum = _DEFLATE.adler32(block[5:].data, checksum)
        at += count * (5 + size)
        first_row += count * rows
    stream[at - 5 - size] = 1  # BFINAL on the last block
    stream[-4:] = np.frombuffer(struct.pack(">I", checksum), dtype=np.uint8)
    _png_tail(png, _PNG_HEAD + zlib_length)
    return png


def _png_view(pixels: np.ndarray, compression: str) -> memoryview:
    # The PNG in this thread's reused buffer: valid until the thread encodes its next frame.
    height, width = pixels.shape[:2]
    rows = pixels.reshape(height, width * 3)
    if compression not in ("auto", "deflate", "stored"):
        raise ValueError(f"compression must be 'auto', 'deflate' or 'stored', not {compression!r}")
    fits_a_block = width * 3 + 1 <= _STORED_BLOCK  # up to 21,844 pixels wide
    if fits_a_block and (compression == "stored" or (compression == "auto" and not _worth_deflating(rows))):
        return _stored_png(rows, width).data
    return _deflated_png(rows, width, DEFLATE_LEVEL).data


def encode_png(pixels: np.ndarray, compression: str = "auto") -> bytes:
    """Encode a (height, width, 3) uint8 RGB array as a lossless 8-bit RGB PNG, tuned for speed.

    `compression="auto"` deflates frames that compress well (Up filter, ISA-L's fast level) and
    stores the rest uncompressed (see STORED_ABOVE_RATIO); "deflate" and "stored" force one
    (frames wider than 21,844 pixels, whose rows do not fit a stored block, are always deflated).
    numpy and ISA-L release the GIL, so frames encode in parallel threads.
    """
    return bytes(_png_view(pixels, compression))


def _frame_base64(sample: FrameSample, compression: str) -> tuple[bytes, int, int]:
    """The sample's frame as base64 PNG, with its width and height. Targets that sample the same
    decoded frame share one encoding of it."""
    pixels = sample.pixels()
    height, width = pixels.shape[:2]
    data = sample._shared(("png-base64", compression), lambda: _b64encode(_png_view(pixels, compression)))
    return data, width, height


def sample_payload(sample: FrameSample) -> dict[str, Any]:
    """The protocol's sample object: lower-camel fields, the frame as a base64 PNG."""
    data, width, height = _frame_base64(sample, "auto")
    return {
        "image": {"mimeType": "image/png", "dataBase64": data.decode("ascii"), "width": width, "height": height},
        **_sample_fields(sample),
    }


def _sample_fields(sample: FrameSample) -> dict[str, Any]:
    return {
        "timestampS": sample.timestamp_s,
        "frameIndex": sample.frame_index,
        "sampleIndex": sample.sample_index,
        "videoPath": sample.video_path,
        "caseName": sample.case_name,
    }


def encode_sample_json(sample: FrameSample, compression: str = "auto") -> tuple[bytes, ...]:
    """`sample_payload(sample)` as compact JSON parts (join them for the text), without escaping
    the base64 (it needs none) and without copying the megabytes of it once more."""
    data, width, height = _frame_base64(sample, compression)
    fields = _json_bytes(_sample_fields(sample))
    return (
        b'{"image":{"mimeType":"image/png","dataBase64":"',
        data,
        b'","width":%d,"height":%d},' % (width, height),
        fields[1:],
    )


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def target_payload(target: TargetContext) -> dict[str, Any]:
    return {"id": target.id, "index": target.index, "label": target.label, "config": dict(target.config)}


def _target_json(target: TargetContext) -> bytes:
    try:
        return _json_bytes(target_payload(target))
    except (TypeError, ValueError) as error:
        raise AdapterRuntimeError(f"target {target.id!r} config cannot be sent to the adapter command: {error}") from None


# What a request line holds besides its samples and target: id, method, the params' keys.
_ENVELOPE_BYTES = 96

# Encoding is CPU-bound: more threads than cores only add transient frame copies (and malloc
# arenas) without finishing sooner.
ENCODER_THREADS = max(1, min(4, os.cpu_count() or 1))


@dataclass(slots=True)
class CommandEvaluator:
    """A `VideoEvaluator` whose calls are requests to one adapter process (one per trial)."""

    process: NdjsonProcess
    supports_evaluate: bool
    supports_evaluate_many: bool
    encoders: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(ENCODER_THREADS, thread_name_prefix="assay-png")
    )

    # Its encoder threads turn each frame into RGB right before the PNG filter reads it (one thread
    # hop and one cache trip fewer than converting ahead in the feed: ~2% of a 600-frame run).
    converts_frames = True

    async def _encode_all(self, samples: Sequence[FrameSample], other_bytes: int) -> list[tuple[bytes, ...]]:
        """Each sample as JSON parts, encoded in the PNG threads. Stored blocks save CPU but take
        ~2.4x the bytes of deflate on noisy frames: once they would push the request past the
        protocol's size limit, the rest are abandoned and every frame is deflated instead."""
        loop = asyncio.get_running_loop()
        room = self.process.message_limit - other_bytes

        def submit(compression: str) -> list[asyncio.Future[tuple[bytes, ...]]]:
            return [loop.run_in_executor(self.encoders, encode_sample_json, sample, compression) for sample in samples]

        jobs = submit("auto")
        try:
            for finished in asyncio.as_completed(jobs):
                room -= sum(map(len, await finished))
                if room < 0:
                    break
            else:
                return [job.result() for job in jobs]
        finally:
            for job in jobs:
                job.cancel()  # only those not done: after an error, or once over the limit
        del jobs
        return list(await asyncio.gather(*submit("deflate")))

    @property
    def batch(self) -> bool:
        return self.supports_evaluate_many

    async def evaluate(self, sample: FrameSample, target: TargetContext) -> Any:
        target_json = _target_json(target)
        (sample_json,) = await self._encode_all((sample,), len(target_json) + _ENVELOPE_BYTES)
        params = (b'{"sample":', *sample_json, b',"target":', target_json, b"}")
        return await self.process.request("evaluate", EncodedJson(params))

    async def evaluate_many(self, samples: Sequence[FrameSample], target: TargetContext) -> list[Any]:
        target_json = _target_json(target)
        sample_jsons = await self._encode_all(samples, len(target_json) + _ENVELOPE_BYTES + len(samples))
        joined: list[bytes] = []
        for position, parts in enumerate(sample_jsons):
            joined.extend((b",", *parts) if position else parts)
        params = (b'{"samples":[', *joined, b'],"target":', target_json, b"}")
        # GlassKit words a failed batch like a failed single call: `adapter command evaluate failed`.
        result = await self.process.request("evaluateMany", EncodedJson(params), error_label="evaluate")
        if not isinstance(result, list):
            raise AdapterRuntimeError("adapter command evaluateMany result must be a list")
        return result

    async def close(self) -> None:
        try:
            await self.process.close()
        finally:
            self.encoders.shutdown(wait=False, cancel_futures=True)


def _initialize_params(config: AdapterConfig) -> dict[str, Any]:
    artifacts_dir = None if config.artifacts_dir is None else str(config.artifacts_dir.resolve())
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "config": {
            "evalDir": str(config.eval_dir.resolve()),
            "config": config.config,
            "artifactsDir": artifacts_dir,
            "verbose": bool(config.verbose),
        },
    }


def _capabilities(result: Any) -> tuple[bool, bool]:
    if not isinstance(result, dict):
        raise AdapterRuntimeError("initialize result must be a JSON object")
    version = result.get("protocolVersion")
    if not (type(version) is int and version == PROTOCOL_VERSION):
        raise AdapterRuntimeError("initialize result must declare protocolVersion 1")
    capabilities = result.get("capabilities")
    if not isinstance(capabilities, dict):
        raise AdapterRuntimeError("initialize result must contain capabilities")
    supports_evaluate = capabilities.get("evaluate") is True
    supports_evaluate_many = capabilities.get("evaluateMany") is True
    if not (supports_evaluate or supports_evaluate_many):
        raise AdapterRuntimeError("adapter command must support evaluate or evaluateMany")
    return supports_evaluate, supports_evaluate_many


async def start_command_evaluator(command: str, config: AdapterConfig, **process_options: Any) -> CommandEvaluator:
    """Spawn the adapter command and initialize it; `process_options` go to `start_ndjson_process`."""
    process = await start_ndjson_process(command, **process_options)
    try:
        try:
            result = await process.request("initialize", _initialize_params(config))
        except AdapterRuntimeError as error:
            raise AdapterRuntimeError(
                f"adapter command '{process.display_command}' failed to initialize: {error}"
            ) from None
        supports_evaluate, supports_evaluate_many = _capabilities(result)
    except BaseException:
        await asyncio.shield(process.force_stop())
        raise
    return CommandEvaluator(process, supports_evaluate, supports_evaluate_many)
