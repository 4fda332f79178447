"""Allocator tuning for frame-heavy work: keep big buffers in the heap instead of mmap/munmap.

Decoding hands out a few megabytes per frame (RGB arrays, PIL images). glibc serves blocks that
size with fresh mmaps and returns them on free, so every frame page-faults its memory in again;
at 720p that is most of a run's system time. Raising the mmap and trim thresholds lets freed
frame buffers be reused. Memory stays bounded (at most the trim threshold is kept spare).
"""

from __future__ import annotations

import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_tuned = False


def tune_allocator_for_frames(*, mmap_threshold: int = 32 << 20, trim_threshold: int = 128 << 20) -> bool:
    """Apply once per process on glibc Linux; returns whether the allocator was tuned."""
    global _tuned
    if _tuned or not sys.platform.startswith("linux"):
        return _tuned
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl): nothing to tune
        return False
    _tuned = bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, trim_threshold))
    return _tuned
