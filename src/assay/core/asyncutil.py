"""Calling user code that may be sync or async, without blocking the event loop.

Sync callables run in a caller-owned thread pool (sized to the run's concurrency, so that many
sync calls really overlap); an awaitable returned by a sync call is awaited.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
from concurrent.futures import Executor
from typing import Any, Awaitable, Callable


def is_async_callable(function: Any) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(type(function), "__call__", None)
    if call is not None and inspect.iscoroutinefunction(call):
        return True
    if isinstance(function, functools.partial):
        return is_async_callable(function.func)
    return False


async def call_user_code(function: Callable[..., Any], *args: Any, executor: Executor | None = None) -> Any:
    """Await `function(*args)`; run it in `executor` when it is synchronous."""
    if is_async_callable(function):
        return await function(*args)
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(executor, functools.partial(function, *args))
    if inspect.isawaitable(result):
        result = await result
    return result


async def call_on_own_thread(function: Callable[..., Any], *args: Any,
                             until: Callable[[], Awaitable[Any]] | None = None) -> tuple[bool, Any]:
    """`(True, function(*args))`, the sync `function` run on a daemon thread of its own (an awaitable it returns
    is awaited; its exception is raised here); `(False, None)` when `until()` completes first.

    For a hook that may take long (an experiment's setup): a thread cannot be stopped, so `until` (or the
    awaiting task's cancellation, a second Ctrl-C) stops the waiting, and the thread runs on until it returns or
    the process exits. Being a daemon is what lets the process exit then: a thread pool's worker is joined at
    exit, so a run interrupted during a `time.sleep(30)` setup waited the 30 s out."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    # Retrieved once set: a hook that fails after nobody waits for it logs no "exception was never retrieved".
    done.add_done_callback(lambda future: future.cancelled() or future.exception())

    def settle(result: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)

    def target() -> None:
        try:
            result, error = function(*args), None
        except BaseException as raised:  # noqa: BLE001 - handed to the awaiting task as it is
            result, error = None, raised
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is closed: nobody waits for it any more
            pass

    context = contextvars.copy_context()  # as asyncio.to_thread does: the run's context variables go along
    threading.Thread(target=context.run, args=(target,), name=f"assay-{getattr(function, '__name__', 'hook')}",
                     daemon=True).start()
    if until is not None:
        stopper = asyncio.ensure_future(until())
        try:
            await asyncio.wait((done, stopper), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
        if not done.done():
            return False, None
    result = await done
    if inspect.isawaitable(result):
        result = await result
    return True, result
