"""The shared adaptive limiter: AIMD around the endpoint's capacity, and Retry-After held for every caller."""

from __future__ import annotations

import asyncio
import time

from assay.core.ratelimit import AdaptiveLimiter, limiter_for, retry_after_seconds


def test_a_rate_limit_halves_the_limit_once_per_burst_and_success_grows_it_back():
    limiter = AdaptiveLimiter(8)

    async def go():
        for _ in range(4):
            await limiter.acquire()
        for _ in range(4):
            limiter.release("rate_limited")  # one burst: every call in flight was refused
        assert limiter.limit == 4.0 and limiter.rate_limited == 4
        for _ in range(40):
            await limiter.acquire()
            limiter.release("ok")
        assert limiter.limit == 8.0  # capped at the maximum

    asyncio.run(go())


def test_calls_beyond_the_limit_wait_for_a_release():
    limiter = AdaptiveLimiter(2)
    peak = {"now": 0, "max": 0}

    async def call():
        async with limiter.slot():
            peak["now"] += 1
            peak["max"] = max(peak["max"], peak["now"])
            await asyncio.sleep(0.01)
            peak["now"] -= 1

    async def go():
        await asyncio.gather(*(call() for _ in range(10)))

    asyncio.run(go())
    assert peak["max"] == 2 and limiter.in_flight == 0


def test_retry_after_pauses_every_new_call_on_the_endpoint():
    async def go():
        limiter = limiter_for("http://endpoint-a")
        assert limiter_for("http://endpoint-a") is limiter and limiter_for("http://endpoint-b") is not limiter
        await limiter.acquire()
        limiter.release("rate_limited", retry_after=0.2)
        started = time.monotonic()
        await limiter.acquire()
        return time.monotonic() - started

    assert asyncio.run(go()) >= 0.19


def test_retry_after_accepts_seconds_milliseconds_and_http_dates():
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_seconds({"retry-after": "999"}, cap=60) == 60
    assert retry_after_seconds({}) is None and retry_after_seconds({"retry-after": "soon"}) is None


def test_a_cancelled_waiter_passes_its_wake_up_on():
    limiter = AdaptiveLimiter(1)

    async def go():
        await limiter.acquire()
        first = asyncio.ensure_future(limiter.acquire())
        second = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        limiter.release("ok")  # limit grows to 2: both could go, cancel one
        first.cancel()
        await asyncio.wait_for(second, 1)
        return limiter.in_flight

    assert asyncio.run(go()) == 1


def test_a_limiter_factory_replaces_local_limiters_until_removed():
    import asyncio

    from assay.core.ratelimit import AdaptiveLimiter, limiter_for, set_limiter_factory

    made = []

    def factory(endpoint, maximum):
        made.append((endpoint, maximum))
        return AdaptiveLimiter(maximum)

    async def scenario():
        first = limiter_for("http://a", 7)
        assert limiter_for("http://a", 7) is first  # one per endpoint and loop
        return first

    set_limiter_factory(factory)
    try:
        asyncio.run(scenario())
    finally:
        set_limiter_factory(None)
    assert made == [("http://a", 7)]
    asyncio.run(scenario())
    assert made == [("http://a", 7)]  # local limiters again once the factory is removed
