"""Cyclic garbage collection sized for a run.

CPython collects its youngest generation every 700 net container allocations and, now and then,
walks every live object: modules, the openai SDK, pydantic models, numpy, the plan. A harness
allocates thousands of short-lived objects per unit of work, so at those settings the collector
cost about 30 µs of the ~150 µs of CPU per agent eval (`benchmarks/agent_endpoint.py --stub`;
docs/benchmarks.md). While a run is in progress, `collection_sized_for_runs()`
moves everything that existed before it into the permanent generation (`gc.freeze()`: those
objects are not walked again until the run ends) and collects the young generation 10x less often.
Garbage is still collected during the run; both settings are restored when the last run in the
process ends. A process that froze objects itself, or turned collection off, is left alone.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["YOUNG_GENERATION_THRESHOLD", "collection_sized_for_runs"]

YOUNG_GENERATION_THRESHOLD = 7_000

_lock = threading.Lock()
_active = 0
_restore: tuple[tuple[int, ...], bool] | None = None  # (thresholds, whether we froze)


@contextlib.contextmanager
def collection_sized_for_runs() -> Iterator[None]:
    """Run-time garbage collection settings for the duration of the block (nestable, thread-safe)."""
    global _active, _restore
    with _lock:
        _active += 1
        if _active == 1:
            thresholds = gc.get_threshold()
            tune = gc.isenabled() and thresholds[0] > 0
            freeze = tune and gc.get_freeze_count() == 0
            if freeze:
                gc.freeze()
            if tune:
                gc.set_threshold(max(thresholds[0], YOUNG_GENERATION_THRESHOLD), *thresholds[1:])
            _restore = (thresholds, freeze)
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _restore is not None:
                thresholds, froze = _restore
                _restore = None
                gc.set_threshold(*thresholds)
                if froze:
                    gc.unfreeze()
