"""Resending a request that failed before it could do anything: one policy, one loop, for every caller.

What may be resent is one rule for every caller: a 429 (the server refused admission, so nothing ran;
wait its Retry-After) and a transport failure that provably never reached the server
(`core/transport_failure.py`). Anything else is reported at once, so work a server may have done is
never silently repeated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from assay.core.ratelimit import LimiterSlots, retry_after_seconds

__all__ = [
    "CONNECTION",
    "RATE_LIMITED",
    "Resend",
    "RetriesExhausted",
    "RetryPolicy",
    "call_with_retries",
]

T = TypeVar("T")

RATE_LIMITED = "rate_limited"  # a 429: the server said "not now" before doing anything
CONNECTION = "connection"  # the request never reached the server (refused, DNS, TLS, connect timeout)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`max_attempts` in all; between them exponential backoff from `backoff` seconds, doubling and
    capped at `max_backoff` (None: uncapped), unless the server asked for a wait of its own."""

    max_attempts: int = 4
    backoff: float = 0.5
    max_backoff: float | None = 30.0
    # A server may ask for longer than our backoff would ever wait, so its ask has a cap of its own.
    max_retry_after: float = 60.0

    @property
    def attempts(self) -> int:
        return max(1, self.max_attempts)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based): the server's ask when it made one."""
        if retry_after is not None:
            return retry_after
        wait = self.backoff * 2 ** (attempt - 1)
        return wait if self.max_backoff is None else min(self.max_backoff, wait)

    def retry_after(self, headers: Mapping[str, str] | Any) -> float | None:
        """The wait a reply's headers ask for (Retry-After, retry-after-ms), capped; None when absent."""
        return retry_after_seconds(headers, self.max_retry_after)


@dataclass(frozen=True, slots=True)
class Resend:
    """An attempt that may be sent again: `reason` counts it (rate_limited, connection, …), `detail` tells
    a person what happened, `cause` is what a caller chains to when the attempts run out."""

    reason: str
    detail: str
    retry_after: float | None = None  # seconds the server asked for (a 429's Retry-After)
    cause: BaseException | None = None

    @property
    def rate_limited(self) -> bool:
        return self.reason == RATE_LIMITED


class RetriesExhausted(Exception):
    """Every attempt ended in a `Resend`; `last` is the final one. Callers turn it into their own error."""

    def __init__(self, last: Resend, attempts: int) -> None:
        super().__init__(f"failed after {attempts} attempt(s): {last.detail}")
        self.last = last
        self.attempts = attempts


async def call_with_retries(
    policy: RetryPolicy,
    attempt: Callable[[int], Awaitable[T | Resend]],
    *,
    limiter: LimiterSlots | None = None,
    before_attempt: Callable[[], object] | None = None,
    on_retry: Callable[[int, Resend, float], object] | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """`await attempt(n)` for n = 1, 2, … until it returns anything but a `Resend`, which is the result.

    An exception from `attempt` ends the loop as it is (the caller decided it must not be resent).
    Each attempt holds one `limiter` slot: a rate-limited `Resend` halves the endpoint's limit and
    pauses its other callers for the Retry-After; any other `Resend` or exception releases it as an
    error. Between attempts `on_retry(n, resend, delay)` runs (count it, show progress), then the wait;
    after the last attempt a `Resend` raises `RetriesExhausted`.
    """
    attempts = policy.attempts
    for number in range(1, attempts + 1):
        if before_attempt is not None:
            before_attempt()
        if limiter is None:
            outcome = await attempt(number)
        else:
            async with limiter.slot() as slot:
                outcome = await attempt(number)
                if isinstance(outcome, Resend):
                    if outcome.rate_limited:
                        slot.rate_limited(outcome.retry_after)
                    else:
                        slot.failed()
        if not isinstance(outcome, Resend):
            return outcome
        if number == attempts:
            raise RetriesExhausted(outcome, attempts)
        delay = policy.delay(number, outcome.retry_after)
        if on_retry is not None:
            on_retry(number, outcome, delay)
        await sleep(delay)
    raise AssertionError("unreachable")
