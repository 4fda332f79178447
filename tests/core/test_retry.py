"""The one retry loop and its policy: backoff, Retry-After, limiter slots, and what may be resent.

The resend rule is checked against real sockets on 127.0.0.1: a refused connection is resent, a
request the server read (then hung up on, or answered too slowly) is not.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from assay.core.ratelimit import AdaptiveLimiter
from assay.core.retry import CONNECTION, RATE_LIMITED, Resend, RetriesExhausted, RetryPolicy, call_with_retries
from assay.core.transport_failure import transport_failure


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def scripted(*outcomes):
    """An attempt that returns (or raises) `outcomes` in order, counting its calls."""
    calls: list[int] = []

    async def attempt(number: int):
        calls.append(number)
        outcome = outcomes[len(calls) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return attempt, calls


def test_backoff_doubles_from_the_base_and_is_capped():
    policy = RetryPolicy(max_attempts=5, backoff=0.5, max_backoff=1.5)
    assert [policy.delay(attempt) for attempt in (1, 2, 3, 4)] == [0.5, 1.0, 1.5, 1.5]
    uncapped = RetryPolicy(backoff=5.0, max_backoff=None)
    assert [uncapped.delay(attempt) for attempt in (1, 2, 3)] == [5.0, 10.0, 20.0]


def test_the_loop_waits_the_capped_backoff_between_attempts():
    sleep = RecordingSleep()
    attempt, calls = scripted(Resend(CONNECTION, "refused"), Resend(CONNECTION, "refused"), "answer")
    policy = RetryPolicy(max_attempts=3, backoff=1.0, max_backoff=1.5)
    assert asyncio.run(call_with_retries(policy, attempt, sleep=sleep)) == "answer"
    assert calls == [1, 2, 3] and sleep.delays == [1.0, 1.5]


def test_retry_after_is_waited_instead_of_the_backoff_and_capped():
    policy = RetryPolicy(backoff=0.5, max_retry_after=30.0)
    assert policy.retry_after({"retry-after": "7"}) == 7.0
    assert policy.retry_after({"retry-after-ms": "250"}) == 0.25
    assert policy.retry_after({"retry-after": "600"}) == 30.0
    assert policy.retry_after({}) is None
    sleep = RecordingSleep()
    attempt, _ = scripted(Resend(RATE_LIMITED, "HTTP 429", retry_after=7.0), Resend(RATE_LIMITED, "HTTP 429"), "ok")
    assert asyncio.run(call_with_retries(policy, attempt, sleep=sleep)) == "ok"
    assert sleep.delays == [7.0, 1.0]  # no Retry-After on the second 429: the backoff of attempt 2


def test_an_exception_ends_the_loop_at_once():
    attempt, calls = scripted(ValueError("reported as it is"), "never reached")
    with pytest.raises(ValueError, match="reported as it is"):
        asyncio.run(call_with_retries(RetryPolicy(), attempt, sleep=RecordingSleep()))
    assert calls == [1]


def test_the_last_resend_raises_retries_exhausted_and_retries_are_reported_between_attempts():
    seen: list[tuple[int, str, float]] = []
    cause = ConnectionRefusedError(111, "refused")
    attempt, calls = scripted(*[Resend(CONNECTION, "connection refused", cause=cause)] * 3)
    with pytest.raises(RetriesExhausted) as caught:
        asyncio.run(call_with_retries(
            RetryPolicy(max_attempts=3, backoff=0.25), attempt, sleep=RecordingSleep(),
            on_retry=lambda number, resend, delay: seen.append((number, resend.reason, delay)),
        ))
    assert caught.value.attempts == 3 and caught.value.last.cause is cause
    assert str(caught.value) == "failed after 3 attempt(s): connection refused"
    assert calls == [1, 2, 3] and seen == [(1, "connection", 0.25), (2, "connection", 0.5)]


def test_before_attempt_runs_before_every_attempt_and_can_stop_the_loop():
    attempt, calls = scripted(Resend(CONNECTION, "refused"), "never reached")
    checks: list[int] = []

    def cancelled_after_the_first() -> None:
        checks.append(len(calls))
        if calls:
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(call_with_retries(RetryPolicy(), attempt, before_attempt=cancelled_after_the_first,
                                      sleep=RecordingSleep()))
    assert checks == [0, 1] and calls == [1]


def test_each_attempt_holds_one_limiter_slot_and_a_429_halves_and_pauses_the_endpoint():
    async def scenario():
        limiter = AdaptiveLimiter(8)
        attempt, _ = scripted(Resend(RATE_LIMITED, "HTTP 429", retry_after=0.0), Resend(CONNECTION, "refused"), "ok")
        held: list[int] = []

        async def watched(number: int):
            held.append(limiter.in_flight)
            return await attempt(number)

        result = await call_with_retries(RetryPolicy(backoff=0.0), watched, limiter=limiter, sleep=RecordingSleep())
        return result, held, limiter

    result, held, limiter = asyncio.run(scenario())
    assert result == "ok" and held == [1, 1, 1] and limiter.in_flight == 0
    assert limiter.rate_limited == 1 and 4 <= limiter.limit < 5  # halved once, a refusal is neutral, then +1/limit


# ---- what may be resent, against real sockets --------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens here once the probe is closed


@pytest.fixture
def reading_server() -> Iterator[tuple[str, dict[str, float]]]:
    """A server on 127.0.0.1 that reads each request, waits `settings["delay_s"]`, then hangs up unanswered."""
    settings = {"delay_s": 0.0}
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.recv(65536)
                time.sleep(settings["delay_s"])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1/turn", settings
    stop.set()
    thread.join(timeout=5)
    listener.close()


def post_until_answered(url: str, timeout: float) -> tuple[list[int], BaseException | None]:
    """POST through the one loop, resending only what never reached the server; the attempts made and
    the error that ended them (None never happens here: no server in these tests answers)."""

    async def scenario():
        async with httpx.AsyncClient(timeout=timeout) as client:
            calls: list[int] = []

            async def attempt(number: int):
                calls.append(number)
                try:
                    return await client.post(url, json={"message": "hi"})
                except httpx.HTTPError as error:
                    failure = transport_failure(error, timeout=timeout)
                    if failure is not None and failure.never_sent:
                        return Resend(CONNECTION, failure.detail, cause=error)
                    raise

            try:
                await call_with_retries(RetryPolicy(max_attempts=3, backoff=0.001), attempt)
            except (RetriesExhausted, httpx.HTTPError) as error:
                return calls, error
            return calls, None

    return asyncio.run(scenario())


def test_a_refused_connection_never_reached_the_server_so_it_is_resent():
    calls, error = post_until_answered(f"http://127.0.0.1:{free_port()}/v1/turn", timeout=5)
    assert calls == [1, 2, 3] and isinstance(error, RetriesExhausted)
    assert error.last.detail.startswith("could not connect") or error.last.detail == "connection refused"


def test_a_request_the_server_read_then_hung_up_on_is_not_resent(reading_server):
    url, _ = reading_server
    calls, error = post_until_answered(url, timeout=5)
    assert calls == [1] and isinstance(error, httpx.HTTPError)
    failure = transport_failure(error, timeout=5)
    assert failure is not None and not failure.never_sent


def test_a_read_timeout_is_not_resent(reading_server):
    url, settings = reading_server
    settings["delay_s"] = 1.0
    calls, error = post_until_answered(url, timeout=0.2)
    assert calls == [1] and isinstance(error, httpx.ReadTimeout)
    assert transport_failure(error, timeout=0.2).detail == "no complete reply within 0.2s"
