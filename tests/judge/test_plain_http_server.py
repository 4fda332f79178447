"""An https:// base URL pointed at a plain-HTTP server (a local model server on http://127.0.0.1:PORT given as
https://127.0.0.1:PORT/v1): the TLS handshake fails the same way every time, so it is no failure to resend.

It was resent with backoff like any failure to connect (3.5 s for a judge, twice that for an agent) and
reported as `TLS handshake failed ([SSL: WRONG_VERSION_NUMBER] …)`; it fails at once, saying to use http://.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from assay.judge import ChatRequest, JudgeClient, JudgeEndpoint, JudgeError
from assay.judge.client import openai_sdk_client
from assay.judge.openai_http import probe_endpoint
from servers.fake_openai import as_https, json_reply, plain_http_message


def judge_once(endpoint: JudgeEndpoint, **options) -> tuple[str, dict, float]:
    async def go():
        async with JudgeClient(endpoint, **options) as client:
            started = time.monotonic()
            with pytest.raises(JudgeError) as caught:
                await client.complete(ChatRequest.from_prompt("m", "p"))
            return str(caught.value), client.retries, time.monotonic() - started

    return asyncio.run(go())


def test_a_judge_given_https_for_a_plain_http_server_fails_at_once_saying_to_use_http(fake_openai):
    fake_openai.enqueue(json_reply({"verdict": "pass"}))
    # ASSAY_JUDGE_BASE_URL, as a user sets it; the defaults (four attempts, 0.5 s backoff) are what took 3.5 s
    endpoint = JudgeEndpoint.from_environment({"ASSAY_JUDGE_BASE_URL": as_https(fake_openai.base_url)})
    message, retries, elapsed = judge_once(endpoint)
    assert message == f"judge endpoint failed: {plain_http_message(fake_openai.base_url)}"
    assert retries == {}  # not resent
    assert elapsed < 3, elapsed  # (a loaded CI machine; the retries above are what tell a resend)
    assert fake_openai.requests == []  # the server only ever saw a TLS hello it could not read


def test_a_judge_through_a_callers_sdk_client_fails_the_same_way(fake_openai):
    pytest.importorskip("openai")
    endpoint = JudgeEndpoint(base_url=as_https(fake_openai.base_url))

    async def go():
        client = openai_sdk_client(base_url=as_https(fake_openai.base_url), api_key="k", timeout=5)
        try:
            async with JudgeClient(endpoint, client=client) as judge:
                started = time.monotonic()
                with pytest.raises(JudgeError) as caught:
                    await judge.complete(ChatRequest.from_prompt("m", "p"))
                return str(caught.value), judge.retries, time.monotonic() - started
        finally:
            await client.close()

    message, retries, elapsed = asyncio.run(go())
    assert message == f"judge endpoint failed: {plain_http_message(fake_openai.base_url)}"
    assert retries == {} and elapsed < 3, (retries, elapsed)


def test_the_judge_preflight_probe_says_to_use_http(fake_openai):
    why = asyncio.run(probe_endpoint(as_https(fake_openai.base_url), api_key=None, timeout=5))
    assert why == plain_http_message(fake_openai.base_url)


def test_a_refused_https_connection_is_still_resent_as_a_failure_to_connect():
    """Only a server that answered in plain HTTP is told apart: nothing listening stays a resendable refusal."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"https://127.0.0.1:{port}/v1"

    async def no_wait(seconds: float) -> None:
        return None

    message, retries, _ = judge_once(JudgeEndpoint(base_url=base_url, max_attempts=2), sleep=no_wait)
    assert message == f"judge endpoint failed after 2 attempt(s): {base_url}: connection refused"
    assert retries == {"connection": 1}
