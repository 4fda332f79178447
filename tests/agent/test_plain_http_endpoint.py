"""An agent whose https:// base URL points at a plain-HTTP server (a local fake model endpoint on
http://127.0.0.1:PORT given as https://127.0.0.1:PORT/v1).

The TLS handshake fails the same way every time, yet it was resent as a failure to connect: four tries with
backoff, then the runner resent the whole round (about 7 s), ending in `TLS handshake failed ([SSL:
WRONG_VERSION_NUMBER] …)`. It fails at once, once, saying the server answered in plain HTTP and to use http://.
"""

from __future__ import annotations

import time

import pytest

from agent_helpers import run_one
from servers.fake_openai import as_https, plain_http_message
from assay.agent import complete_evidence_coverage
from assay.agent.adapters import http_agent, openai_chat_agent, openai_responses_agent


async def send_hi(t):
    await t.send("hi")


def timed_run(agent, **options):
    started = time.monotonic()
    result = run_one(agent, send_hi, **options)
    return result, time.monotonic() - started


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("make", [openai_chat_agent, openai_responses_agent])
def test_an_official_agent_given_https_for_a_plain_http_server_fails_at_once_saying_to_use_http(
        fake_openai, make, stream):
    # The defaults: four attempts, 0.5 s backoff doubling, and the runner's own resend of a rejected send.
    agent = make(base_url=as_https(fake_openai.base_url), api_key="k", stream=stream)
    result, elapsed = timed_run(agent, model="m")
    assert result.verdict == "errored" and result.error["code"] == "network", result.error
    assert result.error["message"] == f"agent '{agent.name}' send failed: {plain_http_message(fake_openai.base_url)}"
    assert result.retries is None  # not resent by the adapter, nor by the runner
    assert elapsed < 3, elapsed  # (a loaded CI machine; the retries above are what tell a resend)
    assert fake_openai.requests == []


def test_a_callers_sdk_client_given_https_for_a_plain_http_server_fails_the_same_way(fake_openai):
    openai = pytest.importorskip("openai")
    client = openai.AsyncOpenAI(base_url=as_https(fake_openai.base_url), api_key="k", max_retries=0)
    agent = openai_chat_agent(client=client)
    result, elapsed = timed_run(agent, model="m")
    assert result.verdict == "errored" and result.error["code"] == "network", result.error
    assert result.error["message"] == f"agent 'openai-chat' send failed: {plain_http_message(fake_openai.base_url)}"
    assert result.retries is None and elapsed < 3, (result.retries, elapsed)


def test_an_http_agent_given_https_for_a_plain_http_server_fails_at_once_saying_to_use_http(fake_openai):
    server = fake_openai.base_url.removesuffix("/v1")
    agent = http_agent(as_https(server) + "/", evidence_coverage=complete_evidence_coverage)
    result, elapsed = timed_run(agent)
    assert result.verdict == "errored" and result.error["code"] == "network", result.error
    assert result.error["message"] == f"agent 'web-agent' send failed: {plain_http_message(server)}"
    assert result.retries is None and elapsed < 3, (result.retries, elapsed)
