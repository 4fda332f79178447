"""Calling user code that may be sync or async, without blocking the event loop.

Sync callables run in a caller-owned thread pool (sized to the run's concurrency, so that many
sync calls really overlap); an awaitable returned by a sync call is awaited.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from concurrent.futures import Executor
from typing import Any, Callable


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
