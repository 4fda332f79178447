"""Adaptive concurrency per endpoint: additive increase on success, halving and a pause on 429.

One limiter per endpoint key (e.g. a base URL) and event loop, shared by every client that calls
it (judges, agent adapters); Retry-After parses here too so every caller honours it the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = ["AdaptiveLimiter", "LimiterSlots", "limiter_for", "retry_after_seconds"]

DEFAULT_MAXIMUM = 256


class LimiterSlots:
    """`async with limiter.slot() as slot:` over a limiter's `acquire()` / `release(outcome, retry_after)`,
    then `slot.rate_limited(seconds)` or `slot.failed()`; an exception inside releases as an error."""

    async def acquire(self) -> None:
        raise NotImplementedError

    def release(self, outcome: str = "ok", retry_after: float | None = None) -> Awaitable[Any] | None:
        """Give the slot back; a limiter held elsewhere returns what to await for the release to have landed."""
        raise NotImplementedError

    def slot(self) -> _Slot:
        # A plain class, not @asynccontextmanager: every model request takes a slot, and the
        # generator-based manager cost ~7 µs each at 64 requests in flight (docs/benchmarks.md).
        return _Slot(self)


class AdaptiveLimiter(LimiterSlots):
    """At most `limit` calls in flight; `limit` grows by 1/limit per success (about +1 per round
    trip) and halves on a rate limit, when new calls also wait out the server's Retry-After."""

    def __init__(
        self,
        maximum: int = DEFAULT_MAXIMUM,
        *,
        minimum: int = 1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if maximum < 1 or minimum < 1 or minimum > maximum:
            raise ValueError("limiter bounds must satisfy 1 <= minimum <= maximum")
        self.maximum = maximum
        self.minimum = minimum
        self.limit = float(maximum)  # start open: a healthy endpoint should never see a slow start
        self.in_flight = 0
        self.paused_until = 0.0
        self.rate_limited = 0
        self._last_decrease = float("-inf")
        self._clock = clock
        self._sleep = sleep
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        while True:
            target = self.paused_until
            pause = target - self._clock()
            if pause > 0:
                await self._sleep(pause)
                if self.paused_until > target:
                    continue  # another 429 extended the pause while we slept
            if self.in_flight < int(self.limit) and not self._waiters:
                self.in_flight += 1
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
                self._wake()  # a wake-up this waiter consumed must go to the next one
                raise
            if self.paused_until <= self._clock() and self.in_flight < int(self.limit):
                self.in_flight += 1
                return

    def release(self, outcome: str = "ok", retry_after: float | None = None) -> None:
        """`outcome`: ok (grow), rate_limited (shrink, pause for `retry_after` seconds) or error (neutral)."""
        self.in_flight = max(0, self.in_flight - 1)
        if outcome == "ok":
            self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
        elif outcome == "rate_limited":
            self.rate_limited += 1
            now = self._clock()
            # One burst of 429s (every call in flight) is one congestion signal, not many.
            if now - self._last_decrease > max(0.05, retry_after or 0.0):
                self.limit = max(float(self.minimum), self.limit / 2)
                self._last_decrease = now
            if retry_after:
                self.paused_until = max(self.paused_until, now + retry_after)
        self._wake()

    def _wake(self) -> None:
        free = int(self.limit) - self.in_flight
        while self._waiters and free > 0:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


class _Slot:
    __slots__ = ("_limiter", "outcome", "retry_after")

    def __init__(self, limiter: LimiterSlots) -> None:
        self._limiter = limiter
        self.outcome = "ok"
        self.retry_after: float | None = None

    async def __aenter__(self) -> _Slot:
        await self._limiter.acquire()
        return self

    async def __aexit__(self, kind: Any, error: Any, traceback: Any) -> None:
        landed = self._limiter.release(self.outcome, self.retry_after) if kind is None else self._limiter.release("error")
        if landed is not None:
            # A cluster-wide limiter: the call is over only once the limiter has seen it, so a 429 this worker
            # met holds back the next call anywhere (sent and forgotten, a worker's next call could overtake it).
            with contextlib.suppress(Exception):  # a limiter lost since: the call's own outcome stands
                await landed

    def rate_limited(self, retry_after: float | None) -> None:
        self.outcome = "rate_limited"
        self.retry_after = retry_after

    def failed(self) -> None:
        self.outcome = "error"


_LIMITERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, AdaptiveLimiter]] = (
    weakref.WeakKeyDictionary()
)


_limiter_factory: Callable[[str, int], Any] | None = None


def set_limiter_factory(factory: Callable[[str, int], Any] | None) -> None:
    """Make `limiter_for` build limiters with `factory(endpoint, maximum)` (None: local ones).

    A distributed executor installs a factory on its workers so every worker of a run shares one
    limiter per endpoint (the same acquire/release/slot interface) instead of one each."""
    global _limiter_factory
    _limiter_factory = factory
    _LIMITERS.clear()


def limiter_for(endpoint: str, maximum: int = DEFAULT_MAXIMUM) -> AdaptiveLimiter:
    """The shared limiter of `endpoint` on the running loop (created on first use)."""
    loop = asyncio.get_running_loop()
    by_endpoint = _LIMITERS.setdefault(loop, {})
    limiter = by_endpoint.get(endpoint)
    if limiter is None:
        limiter = _limiter_factory(endpoint, maximum) if _limiter_factory else AdaptiveLimiter(maximum)
        by_endpoint[endpoint] = limiter
    return limiter


def retry_after_seconds(headers: Mapping[str, str] | Any, cap: float = 60.0) -> float | None:
    """Seconds a server asked for (`retry-after-ms`, `Retry-After` seconds or HTTP date), capped; None if absent."""
    if not headers:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return min(cap, max(0.0, float(milliseconds) / 1000))
        except ValueError:
            pass
    text = headers.get("retry-after")
    if not text:
        return None
    try:
        return min(cap, max(0.0, float(text)))
    except ValueError:
        pass
    import email.utils  # an HTTP date is rare; the email package is not imported for every run

    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return min(cap, max(0.0, when.timestamp() - time.time()))
