"""Bounded-concurrency execution with deterministic result order, fail-fast or keep-going.

Workers pull items from one source (an iterable or an async iterator) in order, run `work` on each
with at most `concurrency` in flight, and report every completion; results come back in source
order whatever order they finished in. Kinds layer trials, repeats and journaling on top. (Garbage
collection sized for a run is the caller's choice: `assay.core.gcpolicy`, which the run pipeline uses.)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["Completed", "run_bounded"]


@dataclass(slots=True)
class Completed(Generic[T]):
    position: int  # the item's position in the source
    item: T
    value: Any = None
    error: BaseException | None = None
    duration_seconds: float = 0.0


async def run_bounded(
    source: Iterable[T] | AsyncIterable[T],
    work: Callable[[T], Awaitable[Any]],
    *,
    concurrency: int,
    keep_going: bool = False,
    on_complete: Callable[[Completed[T]], Any] | None = None,
    collect: bool = True,
) -> list[Completed[T]]:
    """Run `work` over `source`; return the completed items in source order.

    With `collect=False` only failed items are kept (callers that stream results through
    `on_complete` should not hold every item, e.g. decoded frames, until the end). Without `keep_going`, the first error stops workers from taking new items; items already in
    flight finish (their completions are still reported). `on_complete` may be sync or async; an
    exception it raises aborts the run."""
    if concurrency < 1:
        raise ValueError("concurrency must be greater than 0")
    if isinstance(source, AsyncIterable):
        iterator: Any = source.__aiter__()
        is_async = True
    else:
        iterator = iter(source)
        is_async = False
    pull_lock = asyncio.Lock()
    completed: list[Completed[T]] = []
    state = {"next": 0, "stopped": False, "exhausted": False}

    async def pull() -> tuple[int, T] | None:
        async with pull_lock:
            if state["stopped"] or state["exhausted"]:
                return None
            try:
                item = await iterator.__anext__() if is_async else next(iterator)
            except (StopIteration, StopAsyncIteration):
                state["exhausted"] = True
                return None
            position = state["next"]
            state["next"] = position + 1
            return position, item

    async def worker() -> None:
        while True:
            pulled = await pull()
            if pulled is None:
                return
            position, item = pulled
            started = time.perf_counter()
            try:
                value = await work(item)
                done = Completed(position, item, value, None, time.perf_counter() - started)
            except Exception as error:  # noqa: BLE001 - reported to the caller, never swallowed
                done = Completed(position, item, None, error, time.perf_counter() - started)
                if not keep_going:
                    state["stopped"] = True
            if collect or done.error is not None:
                completed.append(done)
            if on_complete is not None:
                outcome = on_complete(done)
                if asyncio.iscoroutine(outcome):
                    await outcome

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())
    except BaseExceptionGroup as failure:
        # A failing source or on_complete is one error for the caller, not a group of them.
        raise failure.exceptions[0] from None
    completed.sort(key=lambda done: done.position)
    return completed
