"""The OpenAI-compatible judge client against the fake server: request shape, resend rules, failures, cache.

The resend rules are the agent endpoint's (`core/retry.py`): a 429 and a request that never reached
the server are resent with backoff; a 5xx, a read timeout or a reply cut off are reported at once.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from assay.judge import ChatRequest, DirectoryCallCache, JudgeClient, JudgeEndpoint, JudgeError, MemoryCallCache
from assay.judge.cache import call_cache_key
from servers.fake_openai import (
    chat_reply,
    cut_off,
    error_reply,
    json_reply,
    malformed_reply,
    rate_limited,
)

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict"],
    "properties": {"verdict": {"enum": ["pass", "fail"]}, "evidence": {"type": "array"}},
    "allOf": [{"if": {"properties": {"verdict": {"const": "pass"}}}, "then": {"required": ["evidence"]}}],
}


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def run(coroutine):
    return asyncio.run(coroutine)


def client_for(server, *, sleep=None, cache=None, **endpoint_options):
    endpoint = JudgeEndpoint(base_url=server.base_url, api_key="test-key", timeout_s=5, **endpoint_options)
    return JudgeClient(endpoint, sleep=sleep or RecordingSleep(), cache=cache)


async def ask(server, request=None, **options):
    async with client_for(server, **options) as client:
        return await client.complete_json(
            request or ChatRequest.from_prompt("judge-1", "grade this", json_schema=SCHEMA)
        )


def test_request_is_temperature_zero_with_stripped_schema_and_effort(fake_openai):
    fake_openai.enqueue(json_reply({"verdict": "fail"}))
    request = ChatRequest.from_prompt("judge-1", "grade this", json_schema=SCHEMA, reasoning_effort="low")
    result = run(ask(fake_openai, request))
    assert result.value == {"verdict": "fail"}
    sent = fake_openai.chat_requests[0]
    assert sent.headers["authorization"] == "Bearer test-key"
    assert sent.body["model"] == "judge-1" and sent.body["temperature"] == 0
    assert sent.body["messages"] == [{"role": "user", "content": "grade this"}]
    assert sent.body["reasoning_effort"] == "low"
    sent_schema = sent.body["response_format"]["json_schema"]["schema"]
    assert sent.body["response_format"]["type"] == "json_schema" and "allOf" not in sent_schema
    assert sent_schema["properties"] == SCHEMA["properties"]


def test_json_object_mode_and_effort_switch_change_the_request(fake_openai):
    fake_openai.enqueue(json_reply({"verdict": "fail"}))
    request = ChatRequest.from_prompt("judge-1", "p", json_schema=SCHEMA, reasoning_effort="high")
    run(ask(fake_openai, request, response_format="json_object", send_reasoning_effort=False))
    sent = fake_openai.chat_requests[0].body
    assert sent["response_format"] == {"type": "json_object"} and "reasoning_effort" not in sent


def test_fenced_and_prose_answers_are_accepted(fake_openai):
    fake_openai.enqueue(
        chat_reply('```json\n{"verdict": "fail"}\n```'),
        chat_reply('My answer is {"verdict": "fail"} as requested.'),
    )
    assert run(ask(fake_openai)).value == {"verdict": "fail"}
    assert run(ask(fake_openai)).value == {"verdict": "fail"}


def test_full_schema_including_all_of_is_enforced(fake_openai):
    fake_openai.enqueue(json_reply({"verdict": "pass"}))
    with pytest.raises(
        JudgeError, match="^model output failed schema validation: <root> must have required property 'evidence'$"
    ):
        run(ask(fake_openai))


def test_wrong_schema_is_reported_with_its_location(fake_openai):
    fake_openai.enqueue(json_reply({"verdict": "maybe", "x": 1}))
    with pytest.raises(JudgeError) as caught:
        run(ask(fake_openai))
    assert "/verdict must be equal to one of the allowed values" in str(caught.value)
    assert "must NOT have additional properties (x)" in str(caught.value)


@pytest.mark.parametrize("content", ["", None, "   "])
def test_empty_output_fails(fake_openai, content):
    fake_openai.enqueue(chat_reply(content))
    with pytest.raises(JudgeError, match="^model output was empty$"):
        run(ask(fake_openai))


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens here once the probe is closed


def test_a_server_error_is_reported_at_once_because_the_server_got_the_request(fake_openai):
    sleep = RecordingSleep()
    fake_openai.enqueue(error_reply(500, "boom"), json_reply({"verdict": "fail"}))
    with pytest.raises(JudgeError, match="^judge endpoint failed: HTTP 500: boom$"):
        run(ask(fake_openai, sleep=sleep))
    assert len(fake_openai.chat_requests) == 1 and sleep.delays == []


def test_a_refused_connection_is_resent_with_backoff_and_reported_as_refused():
    sleep = RecordingSleep()
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    endpoint = JudgeEndpoint(base_url=base_url, timeout_s=120, max_attempts=3, backoff_s=0.25)

    async def go():
        async with JudgeClient(endpoint, sleep=sleep) as client:
            with pytest.raises(JudgeError) as caught:
                await client.complete(ChatRequest.from_prompt("m", "p"))
            return str(caught.value), client.retries

    message, retries = run(go())
    # the SDK's bridge calls a refused connection a connect timeout; it is reported as what it was
    assert message == f"judge endpoint failed after 3 attempt(s): {base_url}: connection refused"
    assert sleep.delays == [0.25, 0.5] and retries == {"connection": 2}


def test_a_read_timeout_is_reported_at_once_never_resent(fake_openai):
    slow = json_reply({"verdict": "fail"})
    slow.delay_s = 1.0
    fake_openai.enqueue(slow, json_reply({"verdict": "fail"}))
    endpoint = JudgeEndpoint(base_url=fake_openai.base_url, timeout_s=0.2)

    async def go():
        async with JudgeClient(endpoint, sleep=RecordingSleep()) as client:
            return await client.complete_json(ChatRequest.from_prompt("m", "p"))

    with pytest.raises(JudgeError, match=r"^judge endpoint failed: http://127\.0\.0\.1:\d+/v1: no complete reply") as caught:
        run(go())
    assert len(fake_openai.chat_requests) == 1
    assert "a longer timeout: `timeout` in the judge's settings, or ASSAY_JUDGE_TIMEOUT" in str(caught.value)


def test_a_model_the_server_does_not_have_names_the_model_and_base_url(fake_openai):
    fake_openai.enqueue(error_reply(404, "The model 'gpt-9' does not exist"))
    with pytest.raises(JudgeError) as caught:
        run(ask(fake_openai, sleep=RecordingSleep()))
    assert str(caught.value).startswith("judge endpoint rejected the request: HTTP 404: The model 'gpt-9' does not exist")
    assert f"or its base URL {fake_openai.base_url} is not one this server has" in str(caught.value)


def test_a_reply_cut_off_mid_body_is_reported_at_once_never_resent(fake_openai):
    fake_openai.enqueue(cut_off(json_reply({"verdict": "fail", "evidence": ["a long enough answer"]}), at=40))
    fake_openai.respond_with(lambda request: json_reply({"verdict": "fail"}))
    with pytest.raises(JudgeError) as caught:
        run(ask(fake_openai))
    assert str(caught.value).startswith("judge endpoint failed: ")
    assert "timed out" not in str(caught.value) and len(fake_openai.chat_requests) == 1


def test_rate_limit_waits_for_retry_after(fake_openai):
    sleep = RecordingSleep()
    fake_openai.enqueue(rate_limited(7), json_reply({"verdict": "fail"}))
    result = run(ask(fake_openai, sleep=sleep))
    assert sleep.delays == [7.0] and result.completion.attempts == 2


def test_a_retry_after_longer_than_the_backoff_cap_is_capped(fake_openai):
    sleep = RecordingSleep()
    fake_openai.enqueue(rate_limited(600), json_reply({"verdict": "fail"}))
    run(ask(fake_openai, sleep=sleep, max_backoff_s=9))
    assert sleep.delays == [9.0]


def test_persistent_rate_limit_fails_after_the_last_attempt(fake_openai):
    fake_openai.enqueue(*[rate_limited(0, "slow down")] * 3)
    with pytest.raises(JudgeError, match=r"^judge endpoint failed after 3 attempt\(s\): HTTP 429: slow down$"):
        run(ask(fake_openai, max_attempts=3))


def test_client_errors_are_not_retried(fake_openai):
    fake_openai.enqueue(error_reply(401, "bad key"))
    with pytest.raises(JudgeError, match="^judge endpoint rejected the request: HTTP 401: bad key$"):
        run(ask(fake_openai))
    assert len(fake_openai.chat_requests) == 1


def test_malformed_response_body_is_an_error(fake_openai):
    fake_openai.enqueue(*[malformed_reply()] * 4)
    with pytest.raises(JudgeError, match="judge endpoint"):
        run(ask(fake_openai))


def test_cache_answers_repeated_calls_without_the_server(fake_openai):
    cache = MemoryCallCache()
    fake_openai.enqueue(json_reply({"verdict": "fail"}))
    first = run(ask(fake_openai, cache=cache))
    second = run(ask(fake_openai, cache=cache))
    assert not first.completion.cached and second.completion.cached
    assert second.value == first.value and len(fake_openai.chat_requests) == 1


def test_an_answer_that_fails_its_schema_is_not_cached_and_the_next_call_asks_again(fake_openai):
    fake_openai.enqueue(json_reply({"verdict": "maybe"}), json_reply({"verdict": "fail"}))
    cache = MemoryCallCache()
    with pytest.raises(JudgeError, match="verdict"):
        run(ask(fake_openai, cache=cache))
    assert run(ask(fake_openai, cache=cache)).value == {"verdict": "fail"}
    assert len(fake_openai.chat_requests) == 2
    assert run(ask(fake_openai, cache=cache)).completion.cached  # a valid answer is kept


def test_a_cached_answer_that_no_longer_validates_is_dropped_and_asked_again(fake_openai):
    """An invalid answer cached by an earlier assay must not hide a judge that now answers well."""
    fake_openai.enqueue(json_reply({"verdict": "pass", "evidence": []}))
    request = ChatRequest.from_prompt("judge-1", "grade this", json_schema=SCHEMA)
    cache = MemoryCallCache()
    client = client_for(fake_openai, cache=cache)
    body = client.request_body(request)
    key = call_cache_key("judge-1", body["messages"], {k: v for k, v in body.items() if k not in {"model", "messages"}})
    cache.put(key, json.dumps({"text": "not json at all", "response": {}}).encode())
    result = run(ask(fake_openai, request, cache=cache))
    assert result.value == {"verdict": "pass", "evidence": []} and not result.completion.cached
    assert len(fake_openai.chat_requests) == 1
    assert json.loads(cache.get(key))["text"] == '{"verdict": "pass", "evidence": []}'


@pytest.mark.parametrize("entry", [
    {"text": None, "response": {}},
    {"text": 5, "response": {}},
    {"text": '{"verdict": "pass", "evidence": []}', "response": 3},
    ['{"verdict": "pass", "evidence": []}'],
])
def test_a_cache_entry_of_another_shape_is_dropped_and_asked_again(fake_openai, tmp_path, entry):
    """`{"text": null, …}` in a cache file (edited by hand, or written by another tool) raised `AttributeError: 'NoneType'
    object has no attribute 'strip'`: a doc command's `internal error`, an agent's `judge-call-failed`. And a
    `response` that is no object was handed on as the raw reply."""
    fake_openai.enqueue(json_reply({"verdict": "pass", "evidence": []}))
    request = ChatRequest.from_prompt("judge-1", "grade this", json_schema=SCHEMA)
    cache = DirectoryCallCache(tmp_path / "cache")
    body = client_for(fake_openai).request_body(request)
    key = call_cache_key("judge-1", body["messages"], {k: v for k, v in body.items() if k not in {"model", "messages"}})
    cache.put(key, json.dumps(entry).encode())
    result = run(ask(fake_openai, request, cache=cache))
    assert result.value == {"verdict": "pass", "evidence": []} and not result.completion.cached
    assert len(fake_openai.chat_requests) == 1
    stored = json.loads((tmp_path / "cache" / key[:2] / key).read_bytes())
    assert stored["text"] == '{"verdict": "pass", "evidence": []}' and isinstance(stored["response"], dict)


class _FullCache(MemoryCallCache):
    """A cache that reads but cannot keep anything (a full disk, a folder turned read-only mid-run)."""

    def put(self, key, value):
        from assay.judge.errors import JudgeCacheError

        raise JudgeCacheError("the judge cache /cache cannot be written: No space left on device")


def test_an_answer_the_cache_cannot_keep_is_still_used_and_the_cache_named_once(fake_openai, capsys):
    """The model was called and paid for: a cache that fails to keep its answer must not turn the answer into an
    error (the judged assertion unavailable, the money spent for nothing); one warning says the cache is not kept."""
    async def two_answers():
        async with client_for(fake_openai, cache=_FullCache()) as client:
            return [await client.complete_json(ChatRequest.from_prompt("judge-1", prompt, json_schema=SCHEMA))
                    for prompt in ("grade this", "grade that")]

    fake_openai.enqueue(json_reply({"verdict": "pass", "evidence": []}))
    fake_openai.enqueue(json_reply({"verdict": "fail", "evidence": []}))
    assert [result.value["verdict"] for result in run(two_answers())] == ["pass", "fail"]
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("Warning:")]
    assert warnings == ["Warning: the judge cache /cache cannot be written: No space left on device; judge answers are "
                        "used but not kept for the next run"]


def test_endpoint_from_environment_requires_an_explicit_base_url():
    with pytest.raises(JudgeError, match="no judge endpoint configured"):
        JudgeEndpoint.from_environment({})
    endpoint = JudgeEndpoint.from_environment(
        {"ASSAY_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k", "ASSAY_JUDGE_REASONING_EFFORT": "off"}
    )
    assert endpoint.api_key == "k" and not endpoint.send_reasoning_effort and endpoint.auth_mode == "api-key"
    with pytest.raises(JudgeError, match="ASSAY_JUDGE_RESPONSE_FORMAT"):
        JudgeEndpoint.from_environment({"OPENAI_BASE_URL": "http://x/v1", "ASSAY_JUDGE_RESPONSE_FORMAT": "xml"})


def test_endpoint_from_environment_prefers_explicit_then_assay_judge_then_openai_variables():
    env = {
        "ASSAY_JUDGE_BASE_URL": "http://judge/v1", "OPENAI_BASE_URL": "http://openai/v1",
        "ASSAY_JUDGE_API_KEY": "judge-key", "OPENAI_API_KEY": "openai-key",
    }
    assert JudgeEndpoint.from_environment(env, base_url="http://flag/v1", api_key="flag-key").base_url == "http://flag/v1"
    endpoint = JudgeEndpoint.from_environment(env)
    assert (endpoint.base_url, endpoint.api_key) == ("http://judge/v1", "judge-key")
    fallback = JudgeEndpoint.from_environment({"OPENAI_BASE_URL": "http://openai/v1", "ASSAY_JUDGE_BASE_URL": ""})
    assert (fallback.base_url, fallback.api_key, fallback.auth_mode) == ("http://openai/v1", None, "none")



@pytest.mark.parametrize(
    ("env", "explicit", "message"),
    [
        ({}, "notaurl", "--base-url notaurl is not an http(s) URL"),
        ({"ASSAY_JUDGE_BASE_URL": "ftp://judge/v1"}, None, "ASSAY_JUDGE_BASE_URL ftp://judge/v1 is not an http(s) URL"),
        ({"OPENAI_BASE_URL": "127.0.0.1:8000"}, None, "OPENAI_BASE_URL 127.0.0.1:8000 is not an http(s) URL"),
        ({"OPENAI_BASE_URL": "http://[::1/v1"}, None, "OPENAI_BASE_URL http://[::1/v1 is not a valid URL"),
        ({"ASSAY_JUDGE_BASE_URL": "http://h:99999/v1"}, None, "ASSAY_JUDGE_BASE_URL http://h:99999/v1 is not a valid URL"),
        # The endpoint's own URL, copied from its docs: requests went to …/chat/completions/chat/completions.
        ({}, "http://judge:8000/v1/chat/completions", "--base-url http://judge:8000/v1/chat/completions is an endpoint's "
                                                      "URL, not its base URL: leave out /chat/completions (http://judge:8000/v1)"),
    ],
)
def test_endpoint_from_environment_refuses_a_base_url_that_is_not_http_naming_where_it_was_set(env, explicit, message):
    with pytest.raises(JudgeError) as raised:
        JudgeEndpoint.from_environment(env, base_url=explicit)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ASSAY_JUDGE_REASONING_EFFORT": "of"}, "ASSAY_JUDGE_REASONING_EFFORT must be on or off, got 'of'"),
        ({"ASSAY_JUDGE_MAX_ATTEMPTS": "0.5"}, "ASSAY_JUDGE_MAX_ATTEMPTS must be a whole number of at least 1, got '0.5'"),
        ({"ASSAY_JUDGE_MAX_ATTEMPTS": "2.5"}, "ASSAY_JUDGE_MAX_ATTEMPTS must be a whole number of at least 1, got '2.5'"),
        ({"ASSAY_JUDGE_TIMEOUT": "inf"}, "ASSAY_JUDGE_TIMEOUT must be a positive number, got 'inf'"),
        ({"ASSAY_JUDGE_TIMEOUT": "nan"}, "ASSAY_JUDGE_TIMEOUT must be a positive number, got 'nan'"),
    ],
)
def test_endpoint_from_environment_refuses_a_misspelt_switch_a_fractional_attempt_count_and_an_endless_timeout(env, message):
    """`of` kept sending reasoning_effort; `0.5` attempts became 0 and `2.5` became 2, silently. A timeout of `inf`
    was taken, and a doc judge command then failed as `internal error: OverflowError: cannot convert float infinity
    to integer`."""
    with pytest.raises(JudgeError, match=f"^{re.escape(message)}$"):
        JudgeEndpoint.from_environment({"ASSAY_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", **env})
    for switch, sends in (("on", True), ("OFF", False), ("no", False), ("", True)):
        endpoint = JudgeEndpoint.from_environment(
            {"ASSAY_JUDGE_BASE_URL": "https://judge.example/v1", "ASSAY_JUDGE_REASONING_EFFORT": switch}
        )
        assert endpoint.send_reasoning_effort is sends


def test_retries_are_counted_by_reason_and_share_the_endpoint_limiter(fake_openai):
    from assay.core.ratelimit import AdaptiveLimiter

    limiter = AdaptiveLimiter(4)
    fake_openai.enqueue(rate_limited(0), rate_limited(0), json_reply({"verdict": "fail"}))

    async def go():
        endpoint = JudgeEndpoint(base_url=fake_openai.base_url, timeout_s=5, backoff_s=0.001)
        async with JudgeClient(endpoint, limiter=limiter) as client:
            await client.complete_json(ChatRequest.from_prompt("m", "p"))
            return client.retries

    assert run(go()) == {"rate_limited": 2}
    assert limiter.rate_limited == 2 and limiter.limit < 4 and limiter.in_flight == 0


def test_sdk_client_uses_the_aiohttp_transport_with_sdk_retries_off():
    import openai

    from assay.judge.client import openai_sdk_client

    client = openai_sdk_client(base_url="http://127.0.0.1:9/v1", api_key="k", timeout=3)
    # aiohttp halves the SDK's CPU per request (docs/benchmarks.md); our own retries count attempts.
    assert isinstance(client._client, openai.DefaultAioHttpClient)
    assert client.max_retries == 0 and client.timeout == 3


def test_a_callers_sdk_client_carries_the_judge_requests_and_stays_open(fake_openai):
    import openai

    sleep = RecordingSleep()
    fake_openai.enqueue(rate_limited(3), json_reply({"verdict": "fail"}), error_reply(500, "boom"))

    async def go():
        client = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="users-key", max_retries=0)
        endpoint = JudgeEndpoint(base_url=fake_openai.base_url, timeout_s=5)
        async with JudgeClient(endpoint, sleep=sleep, client=client) as judge:
            first = await judge.complete_json(ChatRequest.from_prompt("judge-1", "grade this", json_schema=SCHEMA))
            with pytest.raises(JudgeError, match="^judge endpoint failed: HTTP 500: boom$"):
                await judge.complete(ChatRequest.from_prompt("judge-1", "again"))
        still_open = not client.is_closed()
        await client.close()
        return first, judge.retries, still_open

    first, retries, still_open = run(go())
    assert first.value == {"verdict": "fail"} and first.completion.attempts == 2
    assert retries == {"rate_limited": 1} and sleep.delays == [3.0] and still_open
    assert {request.headers["user-agent"] for request in fake_openai.chat_requests} == {f"AsyncOpenAI/Python {openai.__version__}"}
    assert fake_openai.chat_requests[0].body["response_format"]["type"] == "json_schema"


def test_the_judge_keeps_the_endpoints_json_body_as_evidence(fake_openai):
    reply = json_reply({"verdict": "fail"})
    reply.completion["system_fingerprint"] = "fp-1"
    fake_openai.enqueue(reply)
    result = run(ask(fake_openai))
    assert result.completion.response == reply.completion  # the body as sent, not a model of it


def test_an_invalid_body_names_what_arrived(fake_openai):
    fake_openai.enqueue(malformed_reply("<html>maintenance</html>"))
    with pytest.raises(JudgeError, match=r"^judge endpoint returned an invalid response: the body is not JSON \(.*\): <html>maintenance</html>$"):
        run(ask(fake_openai))


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"choices": [None]}, "its first choice is null, not an object"),
        ({"choices": ["a judgement"]}, "its first choice is a string, not an object"),
        ({"choices": [{"index": 0, "finish_reason": "stop"}]}, "its first choice's message is null, not an object"),
        ({"choices": [{"index": 0, "message": [1]}]}, "its first choice's message is a list, not an object"),
    ],
)
def test_a_choice_that_is_no_object_is_an_invalid_response_and_no_repair_is_paid_for(fake_openai, body, said):
    # Read as an empty answer, it would be sent back to the model for repair: a second call that cannot help.
    from servers.fake_openai import json_body

    fake_openai.enqueue(json_body(body), json_reply({"verdict": "fail"}))

    async def checked():
        async with client_for(fake_openai) as client:
            return await client.complete_checked(ChatRequest.from_prompt("judge-1", "grade this"), str, repair=True)

    with pytest.raises(JudgeError) as caught:
        run(checked())
    assert str(caught.value) == f"judge endpoint returned an invalid response: {said}"
    assert len(fake_openai.chat_requests) == 1


def test_a_refusal_is_named_with_the_models_words_not_called_empty(fake_openai):
    refused = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                    "refusal": "I can't grade this content."}}]}
    from servers.fake_openai import json_body

    fake_openai.enqueue(json_body(refused))
    with pytest.raises(JudgeError, match=r"^the judge model refused to answer: I can't grade this content\.$"):
        run(ask(fake_openai))
    assert len(fake_openai.chat_requests) == 1


def test_usage_is_counted_as_the_endpoint_reported_it_and_never_guessed():
    from assay.judge.usage import count_usage, merged_usage

    tally: dict = {}
    count_usage(tally, "m", {"usage": {"prompt_tokens": 100, "completion_tokens": 7,
                                       "prompt_tokens_details": {"cached_tokens": 40}}})
    count_usage(tally, "m", {"usage": {"input_tokens": 5, "output_tokens": 2}})  # the Responses API's names
    count_usage(tally, "m", {"usage": {"prompt_tokens": True, "completion_tokens": -3}})  # no counts at all
    count_usage(tally, "m", {"choices": []})  # no usage
    count_usage(tally, "m", None)  # read from the cache
    # More cached tokens than prompt tokens is the server's slip: never a negative input count.
    count_usage(tally, "n", {"usage": {"prompt_tokens": 10, "completion_tokens": 1,
                                       "prompt_tokens_details": {"cached_tokens": 50}}})
    assert tally["m"] == {"calls": 4, "cached": 1, "no_usage": 2, "input_tokens": 65, "output_tokens": 9,
                          "cache_read_tokens": 40}
    assert tally["n"] == {"calls": 1, "cached": 0, "no_usage": 0, "input_tokens": 0, "output_tokens": 1,
                          "cache_read_tokens": 10}
    assert merged_usage([tally, {"m": tally["m"]}])["m"]["calls"] == 8
