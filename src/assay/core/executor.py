"""Where units of work run: here (the default, no executor) or on workers elsewhere (Ray).

A kind hands an executor one unit group at a time and gets its results back while they finish;
the driver alone journals, gates and reports them, so a run reads the same wherever it ran.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

__all__ = ["Executor", "StartedStream"]


class Executor(Protocol):
    """Runs unit groups on workers that keep their adapter, HTTP pools and decoders warm.

    `stream(group)` yields the group's results in completion order (a worker that dies is
    replaced and only the results not yet yielded are asked for again); `call(group)` is the
    one-result form (an agent attempt). Without an executor a kind simply awaits its own
    coroutine for the unit, which is what a local run does.
    """

    def stream(self, group: Any) -> AsyncIterator[Any]: ...

    async def call(self, group: Any) -> Any: ...

    async def close(self) -> None: ...


class StartedStream:
    """A result stream that runs now, not when first read: every group shipped at once spreads over
    the workers while the driver still reads them one at a time (in display order)."""

    _END = object()

    def __init__(self, stream: AsyncIterator[Any]) -> None:
        import asyncio

        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._stream = stream
        self._task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        try:
            async for item in self._stream:
                self._queue.put_nowait((item, None))
        except Exception as error:  # noqa: BLE001 - handed to the reader in order
            self._queue.put_nowait((None, error))
        finally:
            self._queue.put_nowait((self._END, None))

    def __aiter__(self) -> StartedStream:
        return self

    async def __anext__(self) -> Any:
        item, error = await self._queue.get()
        if error is not None:
            raise error
        if item is self._END:
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        import asyncio
        import contextlib

        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        with contextlib.suppress(Exception):
            await self._stream.aclose()  # type: ignore[attr-defined]
