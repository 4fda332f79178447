"""Resending an agent adapter's request to its endpoint, and remembering an endpoint that refuses.

A refused connection never reached the server, so it is resent with backoff (`core/retry.py`). Once
an endpoint has refused a whole round of resends, later sends to it in the same run (the same event
loop) try it once: a dead server costs one round per run, not one per attempt. Any answer from it,
good or bad, clears the mark. A round that ends refused is a `SendFailure` naming the endpoint, which
the runner does not resend again (the adapter already has).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import TypeVar

from assay.agent.adapter import SendFailure
from assay.agent.context import AgentContext
from assay.core.ratelimit import LimiterSlots
from assay.core.retry import CONNECTION, Resend, RetriesExhausted, RetryPolicy, call_with_retries

__all__ = ["REFUSED", "send_with_resends"]

T = TypeVar("T")

REFUSED = "connection refused"  # core/transport_failure.py's detail for a refused connection
_ONCE = RetryPolicy(1)
_REFUSING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[str]] = weakref.WeakKeyDictionary()


def _refusing() -> set[str]:
    """The endpoints that refused a whole round on the running loop (one loop is one run)."""
    loop = asyncio.get_running_loop()
    found = _REFUSING.get(loop)
    if found is None:
        found = _REFUSING[loop] = set()
    return found


async def send_with_resends(
    endpoint: str,
    policy: RetryPolicy,
    once: Callable[[int], Awaitable[T | Resend]],
    ctx: AgentContext,
    *,
    limiter: LimiterSlots | None = None,
    on_retry: Callable[[int, Resend, float], object] | None = None,
    started: bool = False,
) -> T:
    """`call_with_retries(policy, once, …)` against `endpoint` (a URL, as a person should read it), the
    attempt's cancellation checked before each try. A round that ends refused raises `SendFailure`
    saying so (`started`: this turn already ran tools, so it was not a clean rejection); any other
    `RetriesExhausted` is the caller's to turn into its own failure."""
    refusing = _refusing()
    known_dead = endpoint in refusing
    chosen = _ONCE if known_dead else policy
    try:
        result = await call_with_retries(
            chosen, once, limiter=limiter, before_attempt=ctx.signal.raise_if_cancelled, on_retry=on_retry,
        )
    except RetriesExhausted as exhausted:
        if exhausted.last.reason != CONNECTION or exhausted.last.detail != REFUSED:
            raise
        refusing.add(endpoint)
        if known_dead:
            how = "tried once: it refused every try earlier in this run"
        elif exhausted.attempts == 1:
            how = "tried once"
        else:
            waited = sum(chosen.delay(number) for number in range(1, exhausted.attempts))
            how = f"{exhausted.attempts} tries over {waited:g}s"
        raise SendFailure(
            f"{endpoint} refused the connection ({how}); is a server running at that address?",
            acceptance="started" if started else "rejected", code="network", retried=True,
        ) from None
    except SendFailure:
        refusing.discard(endpoint)  # it answered (with an error): it is there again
        raise
    refusing.discard(endpoint)
    return result
