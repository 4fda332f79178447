"""Lossless RGB PNG encoding tuned for sending camera frames to process adapters.

Frames that deflate well are deflated (Up filter, ISA-L's fast level); noisy ones are sent as stored
blocks, which cost less to encode and decode than the bytes deflate would save.
"""

from __future__ import annotations

import struct
import threading
import zlib
from typing import Any

import numpy as np

__all__ = ["DEFLATE_LEVEL", "STORED_ABOVE_RATIO", "encode_png", "png_view"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_FILTER_UP = 2




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


def png_view(pixels: np.ndarray, compression: str) -> memoryview:
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
    return bytes(png_view(pixels, compression))
