"""The official OpenAI-compatible agents against the fake server, through the real openai SDK."""

from __future__ import annotations

import time

import pytest
from pydantic import BaseModel

from agent_helpers import run_evals, run_one, statuses
from agent_projects import agent_project
from assay.agent import Turn, define_eval, includes, tool_match
from assay.agent.adapters import (
    openai_chat_agent, openai_responses_agent, tool, turn_from_chat_completion, turn_from_responses,
)
from assay.agent.run_options import RunOptions
from servers.fake_openai import (
    chat_reply, cut_off, error_reply, function_call_item, json_body, json_reply, malformed_reply, rate_limited,
    responses_reply, stream_stops_after, tool_call,
)


def get_weather(city: str, unit: str = "C") -> dict:
    """Current weather for a city."""
    return {"city": city, "temp": 21, "unit": unit}


def chat_agent(server, **options):
    return openai_chat_agent(base_url=server.base_url, api_key="k", backoff=0.001, timeout=5, **options)


def responses_agent(server, **options):
    return openai_responses_agent(base_url=server.base_url, api_key="k", backoff=0.001, timeout=5, **options)


class Invoice(BaseModel):
    amount: float
    currency: str


# ---- Chat Completions ---------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tool_loop_runs_declared_tools_and_sums_usage_over_requests(fake_openai, stream):
    fake_openai.enqueue(
        chat_reply(None, tool_calls=[tool_call("get_weather", {"city": "Beijing"}, "c1")],
                   usage={"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34,
                          "prompt_tokens_details": {"cached_tokens": 10}}),
        chat_reply("Beijing is 21°C.", usage={"prompt_tokens": 50, "completion_tokens": 6, "total_tokens": 56}),
    )
    agent = chat_agent(fake_openai, tools=[get_weather], stream=stream)

    async def body(t):
        turn = await t.send("Weather in Beijing?")
        t.succeeded()
        turn.called_tool("get_weather")
        t.check(t.reply, includes("21"))

    result = run_one(agent, body, model="gpt-test", reasoning_effort="low")
    assert result.verdict == "passed", result.assertions
    events = result.turns[0]["events"]
    assert [event["type"] for event in events] == ["operation.started", "operation.finished", "message"]
    assert events[0]["operation"]["input"] == {"city": "Beijing"}
    assert events[1] == {"type": "operation.finished", "operation_id": "c1", "kind": "tool", "status": "completed",
                         "output": {"city": "Beijing", "temp": 21, "unit": "C"}}
    assert result.usage == {"input_tokens": 70, "output_tokens": 10, "cache_read_tokens": 10, "requests": 2}
    first, second = (request.body for request in fake_openai.chat_requests)
    assert first["model"] == "gpt-test" and first["reasoning_effort"] == "low"
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assert first["tools"][0]["function"]["parameters"]["required"] == ["city"]
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": '{"city": "Beijing", "temp": 21, "unit": "C"}'}
    assert first.get("stream", False) is stream


def test_chat_history_is_kept_per_session_line(fake_openai):
    fake_openai.enqueue(chat_reply("one"), chat_reply("two"), chat_reply("fresh"))
    agent = chat_agent(fake_openai, instructions="Be brief.")

    async def body(t):
        await t.send("first")
        await t.send("second")
        await t.new_session().send("other")

    assert run_one(agent, body, model="m").verdict == "passed"
    second, fresh = fake_openai.chat_requests[1].body, fake_openai.chat_requests[2].body
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert [m["content"] for m in fresh["messages"]] == ["Be brief.", "other"]


def test_chat_failing_and_unknown_tools_are_failed_operations_the_model_hears_about(fake_openai):
    def explode(order_id: str) -> str:
        raise RuntimeError("database down")

    fake_openai.enqueue(
        chat_reply(None, tool_calls=[tool_call("explode", {"order_id": "1"}, "a"), tool_call("nope", {}, "b"),
                                     tool_call("explode", "{not json", "c")]),
        chat_reply("sorry"),
    )

    async def body(t):
        await t.send("go")
        t.no_failed_actions()

    result = run_one(chat_agent(fake_openai, tools=[explode]), body, model="m")
    assert statuses(result) == ["mismatched"]
    finished = [e for e in result.turns[0]["events"] if e["type"] == "operation.finished"]
    assert [e["status"] for e in finished] == ["failed", "failed", "failed"]
    assert finished[0]["output"] == "RuntimeError: database down"
    assert finished[1]["output"] == "unknown tool 'nope'"
    started = [e for e in result.turns[0]["events"] if e["type"] == "operation.started"]
    assert started[2]["operation"]["input"] == "{not json"  # unparsable arguments are kept raw
    tool_messages = [m for m in fake_openai.chat_requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["a", "b", "c"]


def lookup_order(order_id: str) -> dict:
    """Find an order by id."""
    return {"order_id": order_id, "carrier": "DHL"}


@pytest.mark.parametrize("protocol", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True])
def test_official_agents_run_the_tool_loop_so_counts_and_negative_tool_checks_decide(fake_openai, protocol, stream):
    if protocol == "chat":
        fake_openai.enqueue(
            chat_reply(None, tool_calls=[tool_call("lookup_order", {"order_id": "1001"}, "c1")]),
            chat_reply("Order 1001 ships with DHL."), chat_reply("Hello!"),
        )
        agent = chat_agent(fake_openai, tools=[lookup_order], stream=stream)
    else:
        fake_openai.enqueue(
            responses_reply(function_calls=[function_call_item("lookup_order", {"order_id": "1001"}, "c1")]),
            responses_reply("Order 1001 ships with DHL."), responses_reply("Hello!"),
        )
        agent = responses_agent(fake_openai, tools=[lookup_order], stream=stream)

    async def body(t):  # the example of docs/agent.md, plus the negative checks
        turn = await t.send("Where is my order 1001?")
        turn.called_tool(tool_match("lookup_order", input={"order_id": "1001"}), count=1)
        turn.not_called_tool("cancel_order")
        t.check(t.reply, includes("DHL"))
        greeting = await t.send("Hi")
        greeting.used_no_tools()
        t.max_tool_calls(1)

    result = run_one(agent, body, model="m")
    assert statuses(result) == ["matched"] * 5, result.assertions
    assert result.verdict == "passed" and result.coverage["actions"] == "complete"


def test_chat_output_schema_is_forwarded_as_response_format_and_validated(fake_openai):
    fake_openai.enqueue(json_reply({"amount": 12.5, "currency": "EUR"}), json_reply({"amount": "lots"}))
    seen = []

    async def body(t):
        good = await t.send("total?", output=Invoice)
        seen.append(good.data)
        bad = await t.send("again?", output=Invoice)
        t.check(bad.status, includes("failed"))

    result = run_one(chat_agent(fake_openai), body, model="m")
    assert seen == [Invoice(amount=12.5, currency="EUR")]
    sent = fake_openai.chat_requests[0].body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"]["required"] == ["amount", "currency"]
    assert result.verdict == "passed"
    assert "does not match the output schema" in result.turns[1]["output_error"]


def test_chat_finish_reason_length_is_a_failed_turn(fake_openai):
    fake_openai.enqueue(chat_reply("trunc", finish_reason="length"))

    async def body(t):
        turn = await t.send("write a novel")
        t.check(turn.status, includes("failed"))

    result = run_one(chat_agent(fake_openai), body, model="m")
    assert result.verdict == "passed"
    assert result.turns[0]["events"][-1] == {"type": "error", "message": "the model stopped at its output token limit"}


def test_chat_429_honours_retry_after_and_is_counted(fake_openai):
    fake_openai.enqueue(rate_limited(0.05), rate_limited(0), chat_reply("ok"))

    async def body(t):
        await t.send("hi")
        t.succeeded()

    result = run_one(chat_agent(fake_openai), body, model="m")
    assert result.verdict == "passed"
    assert result.retries == {"rate_limited": 2}
    assert len(fake_openai.chat_requests) == 3


def test_every_request_gives_its_limiter_slot_back_and_a_429_halves_the_limit(fake_openai):
    import asyncio

    from assay.agent.adapter import SendFailure
    from assay.agent.adapters.endpoint import OpenAIEndpoint, call_endpoint, post_json
    from assay.agent.context import AgentContext, CancelSignal, Feedback
    from assay.agent.session import AgentSession
    from assay.core.ratelimit import limiter_for

    endpoint = OpenAIEndpoint(fake_openai.base_url, "k", timeout=5, max_attempts=2, backoff=0.001, max_concurrency=8)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

    async def scenario():
        feedback = Feedback()
        ctx = AgentContext(signal=CancelSignal(), session=AgentSession(), feedback=feedback)
        limiter = limiter_for(endpoint.resolved_base_url, endpoint.max_concurrency)
        states = []

        async def send():
            try:
                return await call_endpoint(endpoint, ctx, lambda client: post_json(client, "/chat/completions", body),
                                           started=False)
            finally:
                states.append((limiter.in_flight, limiter.limit, limiter.rate_limited))

        fake_openai.enqueue(chat_reply("one"), error_reply(502))
        replies = [await send()]
        with pytest.raises(SendFailure, match="HTTP 502"):
            await send()
        fake_openai.enqueue(rate_limited(0), chat_reply("three"))
        replies.append(await send())
        fake_openai.enqueue(error_reply(400, "bad"))
        with pytest.raises(SendFailure, match="HTTP 400: bad"):
            await send()
        await endpoint.aclose()
        return [reply["choices"][0]["message"]["content"] for reply in replies], states, feedback.retries

    contents, states, retries = asyncio.run(scenario())
    assert contents == ["one", "three"]
    assert retries == {"rate_limited": 1}
    # after each call nothing is held; a 5xx leaves the limit alone, the 429 halves it (8 -> 4, then grows)
    assert [(in_flight, rate_limited) for in_flight, _, rate_limited in states] == [(0, 0), (0, 0), (0, 1), (0, 1)]
    assert states[1][1] == 8 and 4 <= states[2][1] < 5


def test_chat_500_is_reported_at_once_because_the_server_got_the_request(fake_openai):
    fake_openai.enqueue(*[error_reply(500, "boom")] * 3)

    async def body(t):
        await t.send("hi")

    result = run_one(chat_agent(fake_openai, max_attempts=3), body, model="m",
                     options=RunOptions(retry_base_seconds=0.001))
    assert result.verdict == "errored" and result.error["code"] == "agent-http-error"
    assert "answered HTTP 500: boom" in result.error["message"]
    assert result.retries is None and len(fake_openai.chat_requests) == 1


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens here once the probe is closed


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_cut_off_mid_body_is_reported_at_once_never_resent(fake_openai, stream):
    fake_openai.enqueue(cut_off(chat_reply("The order shipped yesterday with DHL."), at=40))
    fake_openai.respond_with(lambda request: chat_reply("a resend that must not happen"))

    async def body(t):
        await t.send("hi")

    started = time.perf_counter()
    result = run_one(chat_agent(fake_openai, stream=stream), body, model="m", timeout=30,
                     options=RunOptions(retry_base_seconds=0.5))
    assert time.perf_counter() - started < 5
    assert result.verdict == "errored" and result.error["code"] == "network", result.error
    assert "the reply was cut off before it was complete" in result.error["message"]
    assert "timed out" not in result.error["message"]
    assert len(fake_openai.chat_requests) == 1 and result.retries is None


@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_connection_is_resent_and_reported_as_refused(stream):
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    agent = openai_chat_agent(base_url=base_url, api_key="k", backoff=0.001, timeout=120, max_attempts=2,
                              stream=stream)

    async def body(t):
        await t.send("hi")

    result = run_one(agent, body, model="m", options=RunOptions(retry_base_seconds=0.001))
    assert result.verdict == "errored" and result.error["code"] == "network"
    assert f"{base_url} refused the connection (2 tries over 0.001s)" in result.error["message"]
    assert "timed out" not in result.error["message"] and "where" not in result.error
    # it never reached a server: the endpoint resent it, and the runner does not resend that round again
    assert result.retries == {"connection": 1}


def test_a_run_against_a_dead_endpoint_fails_in_seconds_naming_it_and_waits_for_it_once(tmp_path):
    import json
    import os
    import subprocess
    import sys
    import textwrap

    base_url = f"http://127.0.0.1:{free_port()}/v1"
    project = tmp_path / "project"
    agent_project(project)
    (project / "experiments" / "dead.py").write_text(textwrap.dedent(f"""
        from assay.agent import Experiment
        from assay.agent.adapters import openai_chat_agent

        dead = Experiment(agent=openai_chat_agent(base_url={base_url!r}, api_key="k"), model="m")
    """))
    for name in ("first", "second"):
        (project / "evals" / f"{name}_eval.py").write_text(
            "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    await t.send('hi')\n"
        )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--concurrency", "1", "--json"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")},
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    attempts = {line["attempt"]["eval_id"]: line["attempt"] for line in map(json.loads, done.stdout.splitlines())
                if line["type"] == "attempt"}
    first, second = attempts["first"], attempts["second"]
    assert first["error"]["message"] == (
        f"agent 'openai-chat' send failed: {base_url} refused the connection (4 tries over 3.5s); "
        "is a server running at that address?"
    )
    assert "where" not in first["error"]  # the console printed it after the message: a line of assay's own
    assert f"{base_url} refused the connection (tried once: it refused every try earlier in this run)" in (
        second["error"]["message"])
    assert first["duration_seconds"] < 6 and second["duration_seconds"] < 1, (first["duration_seconds"],
                                                                               second["duration_seconds"])
    assert elapsed < 15, elapsed  # it was 50 s per attempt


def test_endpoint_defaults_are_openai_base_url_then_openai_and_the_key_variable_alone(monkeypatch):
    import asyncio

    from assay.agent.adapters.endpoint import OpenAIEndpoint

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIEndpoint().resolved_base_url == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env:1/v1")
    monkeypatch.setenv("ASSAY_JUDGE_BASE_URL", "http://judge:1/v1")  # the doc judges' variable, not ours
    assert OpenAIEndpoint().resolved_base_url == "http://env:1/v1"
    assert OpenAIEndpoint("http://own:1/v1").resolved_base_url == "http://own:1/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    monkeypatch.delenv("MY_KEY", raising=False)

    async def key_of(endpoint: OpenAIEndpoint) -> str:
        try:
            return endpoint.client().api_key
        finally:
            await endpoint.aclose()

    assert asyncio.run(key_of(OpenAIEndpoint())) == "openai-key"
    assert asyncio.run(key_of(OpenAIEndpoint(api_key_env="MY_KEY"))) == "not-needed"  # no fallback to OPENAI_API_KEY
    assert asyncio.run(key_of(OpenAIEndpoint(api_key="explicit", api_key_env="MY_KEY"))) == "explicit"


def test_what_a_transport_failure_proves_about_the_request():
    import socket
    import ssl

    import httpx
    import openai

    from assay.core.transport_failure import TransportFailure, transport_failure

    def wrapped(*causes):
        error = None
        for cause in reversed(causes):
            cause.__cause__ = error
            error = cause
        return error

    request = httpx.Request("POST", "http://h/v1")
    lost = openai.APIConnectionError(request=request)
    refused = wrapped(openai.APITimeoutError(request), httpx.ConnectTimeout("x"), ConnectionRefusedError(111, "no"))
    unresolvable = wrapped(lost, httpx.ConnectError("x"), socket.gaierror(-2, "Name or service not known"))
    handshake = wrapped(openai.APIConnectionError(request=request), httpx.ConnectError("x"), ssl.SSLError(1, "bad"))
    slow_read = wrapped(openai.APITimeoutError(request), httpx.ReadTimeout("read"))
    assert transport_failure(refused) == TransportFailure(True, "connection refused")
    assert transport_failure(unresolvable).never_sent and "could not resolve" in transport_failure(unresolvable).detail
    assert transport_failure(handshake).never_sent and "TLS handshake failed" in transport_failure(handshake).detail
    assert not transport_failure(slow_read, timeout=120).never_sent
    assert transport_failure(slow_read, timeout=120).detail == "no complete reply within 120s"
    assert transport_failure(ValueError("not transport")) is None


@pytest.mark.parametrize("events", [0, 2])
def test_a_chat_stream_that_ends_before_finish_reason_and_done_is_a_send_failure(fake_openai, events):
    fake_openai.enqueue(stream_stops_after(chat_reply("Your order 1001 has shipped with DHL."), events))

    async def body(t):
        await t.send("where is it?")
        t.succeeded()

    result = run_one(chat_agent(fake_openai, stream=True), body, model="m",
                     options=RunOptions(retry_base_seconds=0.001))
    assert result.verdict == "errored" and result.error["code"] == "agent-stream-broken", result.error
    assert "without a finish_reason and [DONE]" in result.error["message"]
    assert result.turns == [] and len(fake_openai.chat_requests) == 1
    if events:
        assert "the partial text was 'Your order 1001 '" in result.error["message"]


def test_a_responses_stream_that_ends_before_its_final_event_is_a_send_failure(fake_openai):
    fake_openai.enqueue(stream_stops_after(responses_reply("Your order 1001 has shipped with DHL."), 2))

    async def body(t):
        await t.send("where is it?")

    result = run_one(responses_agent(fake_openai, stream=True), body, model="m")
    assert result.verdict == "errored" and result.error["code"] == "agent-stream-broken", result.error
    assert "ended after 2 event(s) without response.completed" in result.error["message"]
    assert len(fake_openai.responses_requests) == 1


def test_chat_malformed_json_body_is_a_send_failure_not_retried(fake_openai):
    fake_openai.enqueue(malformed_reply())

    async def body(t):
        await t.send("hi")

    result = run_one(chat_agent(fake_openai), body, model="m")
    assert result.verdict == "errored" and result.error["code"] == "agent-invalid-response"
    assert len(fake_openai.chat_requests) == 1


@pytest.mark.parametrize("protocol", ["chat", "responses"])
def test_a_json_reply_that_is_not_a_completion_is_an_invalid_response_not_an_empty_turn(fake_openai, protocol):
    # A proxy's or error page's own JSON used to become a completed turn with no events: succeeded() passed.
    fake_openai.enqueue(json_body({"detail": "Not Found"}))
    agent = chat_agent(fake_openai) if protocol == "chat" else responses_agent(fake_openai)

    async def body(t):
        await t.send("hi")
        t.succeeded()

    result = run_one(agent, body, model="m")
    assert result.verdict == "errored" and result.error["code"] == "agent-invalid-response", result.error
    assert "not a " in result.error["message"] and '{"detail": "Not Found"}' in result.error["message"]
    assert len(fake_openai.requests) == 1


def test_chat_client_error_is_not_retried(fake_openai):
    fake_openai.enqueue(error_reply(400, "bad schema"))

    async def body(t):
        await t.send("hi")

    result = run_one(chat_agent(fake_openai), body, model="m")
    assert result.error["code"] == "agent-http-error" and "HTTP 400: bad schema" in result.error["message"]
    assert len(fake_openai.chat_requests) == 1


def test_chat_converter_maps_usage_and_leaves_tool_calls_pending():
    turn = turn_from_chat_completion({
        "choices": [{"message": {"content": "x", "tool_calls": [tool_call("f", {"a": 1}, "id1")]},
                     "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 40},
                  "completion_tokens_details": {"reasoning_tokens": 7}, "cost": 0.5},
    })
    assert [event.type for event in turn.events] == ["message", "operation.started"]
    assert (turn.usage.input_tokens, turn.usage.cache_read_tokens, turn.usage.output_tokens) == (60, 40, 20)
    assert (turn.usage.reasoning_tokens, turn.usage.cost_usd, turn.usage.requests) == (7, 0.5, None)
    assert turn_from_chat_completion({"choices": [{"message": {"content": "x"}}]}).evidence_coverage["usage"].state == "unavailable"


def test_tool_schema_comes_from_the_signature_and_arguments_are_validated():
    declared = tool(get_weather)
    assert declared.description == "Current weather for a city."
    assert declared.parameters["properties"]["city"] == {"title": "City", "type": "string"}
    import asyncio

    bad = asyncio.run(declared.invoke({"unit": "F"}))
    assert bad.failed and "city" in bad.output


# ---- Responses ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_responses_tool_loop_with_text_format_and_usage(fake_openai, stream):
    fake_openai.enqueue(
        responses_reply(function_calls=[function_call_item("get_weather", {"city": "Oslo"}, "call_9")]),
        responses_reply('{"amount": 3, "currency": "NOK"}'),
    )

    async def body(t):
        turn = await t.send("bill?", output=Invoice)
        turn.called_tool("get_weather")
        t.not_called_tool("delete_everything")
        t.check(turn.data.currency, includes("NOK"))

    result = run_one(responses_agent(fake_openai, tools=[get_weather], stream=stream), body,
                     model="gpt-r", reasoning_effort="high")
    assert result.verdict == "passed", result.assertions
    first, second = (request.body for request in fake_openai.responses_requests)
    assert first["text"]["format"]["type"] == "json_schema" and first["reasoning"] == {"effort": "high"}
    assert first["tools"][0] == {**tool(get_weather).responses_definition()}
    assert second["input"][-1] == {"type": "function_call_output", "call_id": "call_9",
                                   "output": '{"city": "Oslo", "temp": 21, "unit": "C"}'}
    assert result.usage == {"input_tokens": 20, "output_tokens": 10, "reasoning_tokens": 0, "requests": 2}


def test_responses_unknown_items_make_negative_tool_assertions_unavailable(fake_openai):
    fake_openai.enqueue(responses_reply("done", items=[{"type": "web_search_call", "id": "ws1", "status": "completed"}]))

    async def body(t):
        await t.send("search")
        t.not_called_tool("x")

    result = run_one(responses_agent(fake_openai), body, model="m")
    assert statuses(result) == ["unavailable"]
    assert "web_search_call" in result.assertions[0]["reason"]


def test_responses_incomplete_status_is_a_failed_turn_and_converter_maps_usage():
    turn = turn_from_responses({
        "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]}],
        "usage": {"input_tokens": 9, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 3,
                  "output_tokens_details": {"reasoning_tokens": 2}},
    })
    assert turn.status == "failed"
    assert [event.type for event in turn.events] == ["thinking", "error"]
    assert (turn.usage.input_tokens, turn.usage.cache_read_tokens, turn.usage.reasoning_tokens) == (5, 4, 2)


def test_responses_rate_limit_exhaustion_is_a_rejected_send_the_runner_resends(fake_openai):
    fake_openai.enqueue(rate_limited(0), rate_limited(0), responses_reply("late but fine"))

    async def body(t):
        await t.send("hi")
        t.succeeded()

    result = run_one(responses_agent(fake_openai, max_attempts=2), body, model="m",
                     options=RunOptions(retry_base_seconds=0.001))
    assert result.verdict == "passed"
    assert result.retries == {"rate_limited": 1, "resend": 1}


# ---- budgets and run sums --------------------------------------------------------------------------


def test_experiment_budget_stops_scheduling_once_the_estimate_is_spent(fake_openai):
    fake_openai.respond_with(lambda request: chat_reply("ok", usage={"prompt_tokens": 1000, "completion_tokens": 0}))

    async def body(t):
        await t.send("hi")

    tests = {f"e{i}": define_eval(body) for i in range(5)}
    options = RunOptions(concurrency=1, pricing={"m": {"input": 1000.0, "output": 0.0}})
    outcome = run_evals(chat_agent(fake_openai), tests, model="m", budget=2.5, options=options)
    assert [r.outcome for r in outcome.results] == ["executed"] * 3 + ["not_dispatched"] * 2
    assert outcome.budget_exhausted == ["exp"] and outcome.exit_code == 1
    assert outcome.estimated_cost_usd == pytest.approx(3.0)
    assert outcome.usage == {"input_tokens": 3000, "output_tokens": 0, "requests": 3}
    assert len(fake_openai.chat_requests) == 3


def test_max_cost_uses_the_estimate_not_the_provider_reported_cost(fake_openai):
    fake_openai.enqueue(chat_reply("ok", usage={"prompt_tokens": 1000, "completion_tokens": 0, "cost": 99.0}))

    async def body(t):
        await t.send("hi")
        t.max_cost(0.01)
        t.max_tokens(1000)

    result = run_one(chat_agent(fake_openai), body, model="m",
                     options=RunOptions(pricing={"m": {"input": 1.0, "output": 1.0}}))
    assert statuses(result) == ["matched", "matched"]
    assert result.usage["cost_usd"] == 99.0 and result.estimated_cost_usd == pytest.approx(0.001)


def test_a_turn_without_model_is_an_errored_attempt(fake_openai):
    async def body(t):
        await t.send("hi")

    result = run_one(chat_agent(fake_openai), body)
    assert result.verdict == "errored" and "has no model" in result.error["message"]
    assert Turn  # the model type is part of the public surface these adapters return


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/", "http://127.0.0.1:9", "http://h:9/openai/v1?api-version=2"]
)
@pytest.mark.parametrize("path", ["/chat/completions", "responses"])
def test_a_callers_sdk_client_is_sent_to_the_url_the_sdk_itself_would_resolve(base_url, path):
    import openai

    from assay.judge.openai_http import SDKTransport

    client = openai.AsyncOpenAI(base_url=base_url, api_key="k")
    transport = SDKTransport(client)
    assert transport.url(path) == str(client._prepare_url(path))
    assert transport.url(path) is transport.url(path)  # resolved once per client
    client.base_url = "http://127.0.0.1:10/v2"
    assert transport.url(path) == str(client._prepare_url(path))  # and again when it moves


@pytest.mark.parametrize("path", ["/chat/completions", "chat/completions"])
@pytest.mark.parametrize(("base_url", "expected"), [
    ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/chat/completions"),
    ("http://127.0.0.1:9/v1/", "http://127.0.0.1:9/v1/chat/completions"),
    ("http://127.0.0.1:9", "http://127.0.0.1:9/chat/completions"),
    ("https://h/a%20b/v1", "https://h/a%20b/v1/chat/completions"),
    # the SDK would send this to /openai/v1/?api-version=2chat/completions
    ("http://h:9/openai/v1?api-version=2", "http://h:9/openai/v1/chat/completions?api-version=2"),
])
def test_the_transport_joins_the_path_under_the_base_url_and_keeps_its_query_last(base_url, expected, path):
    from assay.judge.openai_http import OpenAIHTTP

    transport = OpenAIHTTP(base_url, api_key="k", timeout=5, max_connections=4)
    assert str(transport.url(path)) == expected


# ---- the transport: assay's own HTTP client, or the caller's openai SDK client ---------------------


DEFAULT_PATH_RUN = r"""
import asyncio, sys

class WithoutOpenAI:  # as if the `openai` extra were not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "openai":
            raise ImportError("openai is not installed")

sys.meta_path.insert(0, WithoutOpenAI())
from assay.agent import Experiment, define_eval, includes
from assay.agent.adapters import openai_chat_agent, openai_responses_agent
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun

base_url = sys.argv[1]
agents = {
    "chat": openai_chat_agent(base_url=base_url, api_key="k", model="m"),
    "chat-stream": openai_chat_agent(base_url=base_url, api_key="k", model="m", stream=True),
    "responses-stream": openai_responses_agent(base_url=base_url, api_key="k", model="m", stream=True),
}
# defining the agents loads no HTTP stack (discovery never needs one); the run loads it before it dispatches
assert "aiohttp" not in sys.modules and "assay.judge.openai_http" not in sys.modules

@define_eval(judge={"model": "judge-1", "base_url": base_url, "api_key_env": ""})
async def single_turn(t):
    await t.send("What is the answer?")
    t.check(t.reply, includes("42"))
    t.judge("The answer is 42.")

experiments = [ExperimentEntry(name, Experiment(agent=agent)) for name, agent in agents.items()]
plan = build_plan(experiments, {name: [EvalEntry(f"e{i}", single_turn) for i in range(3)] for name in agents})
run = AgentRun(plan, RunOptions(concurrency=4))
first_sends = []
original = run._prepare
def prepared():  # the moment before the first attempt is dispatched
    first_sends.append(set(sys.modules))
    original()
run._prepare = prepared
outcome = asyncio.run(run.run())
loaded_before_dispatch = first_sends[0]
assert "aiohttp" in loaded_before_dispatch and "assay.judge.openai_http" in loaded_before_dispatch
assert [result.verdict for result in outcome.results] == ["passed"] * 9, [r.verdict for r in outcome.results]
assert [a["status"] for result in outcome.results for a in result.assertions] == ["matched"] * 18
loaded_late = sorted(name for name in set(sys.modules) - loaded_before_dispatch
                     if name.split(".")[0] in ("openai", "aiohttp", "httpx", "httpx2", "yarl", "multidict"))
assert not loaded_late, loaded_late
assert not any(name == "openai" or name.startswith("openai.") for name in sys.modules)
print("ok")
"""


def test_the_default_path_runs_without_openai_and_loads_its_transport_before_dispatch(fake_openai):
    import subprocess
    import sys

    def reply(request):
        if request.path.endswith("/responses"):
            return responses_reply("The answer is 42.")
        if request.body["model"] == "judge-1":
            return json_reply({"reasons": "it says 42", "score": 1})
        return chat_reply("The answer is 42.")

    fake_openai.respond_with(reply)
    done = subprocess.run([sys.executable, "-c", DEFAULT_PATH_RUN, fake_openai.base_url], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
    models = [request.body["model"] for request in fake_openai.chat_requests]
    assert models.count("m") == 6 and "judge-1" in models and len(fake_openai.responses_requests) == 3


@pytest.mark.parametrize("protocol", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_callers_own_sdk_client_carries_the_requests(fake_openai, protocol, stream):
    import openai

    client = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="users-key", max_retries=0)
    if protocol == "chat":
        fake_openai.enqueue(
            rate_limited(0), chat_reply(None, tool_calls=[tool_call("lookup_order", {"order_id": "1001"}, "c1")]),
            chat_reply("Order 1001 ships with DHL."), error_reply(500, "boom"),
        )
        agent = openai_chat_agent(client=client, tools=[lookup_order], stream=stream, backoff=0.001)
    else:
        fake_openai.enqueue(
            rate_limited(0), responses_reply(function_calls=[function_call_item("lookup_order", {"order_id": "1001"}, "c1")]),
            responses_reply("Order 1001 ships with DHL."), error_reply(500, "boom"),
        )
        agent = openai_responses_agent(client=client, tools=[lookup_order], stream=stream, backoff=0.001)

    async def body(t):
        turn = await t.send("Where is my order 1001?")
        turn.called_tool(tool_match("lookup_order", input={"order_id": "1001"}), count=1)
        t.check(t.reply, includes("DHL"))
        await t.send("And the next one?")

    result = run_one(agent, body, model="m", options=RunOptions(retry_base_seconds=0.001))
    assert statuses(result) == ["matched", "matched"], result.assertions
    assert result.retries == {"rate_limited": 1}
    assert result.verdict == "errored" and result.error["code"] == "agent-http-error"
    assert f"{fake_openai.base_url} answered HTTP 500: boom" in result.error["message"]
    sent = fake_openai.requests
    assert len(sent) == 4 and {request.headers["user-agent"] for request in sent} == {"AsyncOpenAI/Python " + openai.__version__}
    assert {request.headers["authorization"] for request in sent} == {"Bearer users-key"}
    assert all(request.body.get("stream", False) is stream for request in sent)
    assert not client.is_closed()  # the caller's client is the caller's to close


def test_the_transport_sends_the_body_and_headers_the_sdk_sends(fake_openai, monkeypatch):
    import asyncio

    from assay.agent.adapters.endpoint import OpenAIEndpoint, post_json
    from assay.judge.client import openai_sdk_client

    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    fake_openai.respond_with(lambda request: chat_reply("ok"))
    body = {"model": "m", "messages": [{"role": "user", "content": "Grüße, 東京 \u2028 \"quoted\""}], "temperature": 0.0,
            "tools": [tool(get_weather).chat_definition()],
            "response_format": {"type": "json_schema", "json_schema": {"name": "output", "schema": {"type": "object"}}}}

    async def both():
        client = openai_sdk_client(base_url=fake_openai.base_url, api_key="key-1", timeout=5)
        endpoint = OpenAIEndpoint(fake_openai.base_url, "key-1", timeout=5)
        try:
            return await post_json(client, "/chat/completions", body), await post_json(endpoint.client(), "/chat/completions", body)
        finally:
            await client.close()
            await endpoint.aclose()

    through_sdk, through_transport = asyncio.run(both())
    assert through_sdk["choices"] == through_transport["choices"]
    sdk, ours = fake_openai.chat_requests
    assert ours.raw == sdk.raw and ours.path == sdk.path and ours.method == "POST"
    for name in ("authorization", "accept", "content-type", "openai-organization", "openai-project"):
        assert ours.headers[name] == sdk.headers[name], name
    assert ours.headers["authorization"] == "Bearer key-1" and ours.headers["user-agent"].startswith("assay/")
    assert not [name for name in ours.headers if name.startswith("x-stainless")]  # the SDK's telemetry is its own


def test_one_pooled_session_per_endpoint_sized_to_its_concurrency_keeps_connections_alive(fake_openai):
    import asyncio

    from assay.agent.adapters.endpoint import OpenAIEndpoint, call_endpoint, post_json
    from assay.agent.context import AgentContext, CancelSignal, Feedback
    from assay.agent.session import AgentSession

    endpoint = OpenAIEndpoint(fake_openai.base_url, "k", timeout=5, max_concurrency=3)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    slow = [chat_reply("ok") for _ in range(9)]
    for reply in slow:
        reply.delay_s = 0.05
    fake_openai.enqueue(chat_reply("ok"), chat_reply("ok"), *slow)

    async def scenario():
        ctx = AgentContext(signal=CancelSignal(), session=AgentSession(), feedback=Feedback())

        async def send():
            return await call_endpoint(endpoint, ctx, lambda transport: post_json(transport, "/chat/completions", body),
                                       started=False)

        try:
            await send()
            await send()
            await asyncio.gather(*(send() for _ in range(9)))
            transport = endpoint.client()
            return transport.session.connector.limit, transport is endpoint.client()
        finally:
            await endpoint.aclose()

    limit, same = asyncio.run(scenario())
    assert limit == 3 and same
    ports = [request.client_port for request in fake_openai.chat_requests]
    assert ports[0] == ports[1]  # one request after another: the same kept-alive connection
    assert len(set(ports)) == 3  # nine at once through a limit of three: three connections, reused


def test_an_error_status_without_an_openai_error_body_shows_an_excerpt_of_it(fake_openai):
    from servers.fake_openai import Reply

    page = "<html><head><title>502 Bad Gateway</title></head>\n<body>" + "upstream gone " * 40 + "</body></html>"
    fake_openai.enqueue(Reply(status=502, body=page.encode(), headers={"Content-Type": "text/html"}))

    async def body(t):
        await t.send("hi")

    result = run_one(chat_agent(fake_openai), body, model="m")
    assert result.error["code"] == "agent-http-error"
    message = result.error["message"]
    assert "answered HTTP 502: <html><head><title>502 Bad Gateway</title></head> <body>upstream gone" in message
    assert message.endswith("…") and len(message) < 400


@pytest.mark.parametrize("protocol", ["chat", "responses"])
def test_a_stream_arriving_in_small_pieces_is_put_back_together(fake_openai, protocol):
    from servers.fake_openai import in_pieces

    text = "Grüße aus 東京: your order 1001 ships with DHL on Monday, tracking number 4711."
    if protocol == "chat":
        fake_openai.enqueue(in_pieces(chat_reply(text), 7))
        agent = chat_agent(fake_openai, stream=True)
    else:
        fake_openai.enqueue(in_pieces(responses_reply(text), 7))
        agent = responses_agent(fake_openai, stream=True)

    async def body(t):
        await t.send("where is it?")
        t.succeeded()
        t.check(t.reply, includes(text))

    result = run_one(agent, body, model="m")
    assert result.verdict == "passed", (result.error, result.assertions)
    assert result.usage["requests"] == 1 and result.usage["input_tokens"] == 10


def test_an_error_event_in_the_middle_of_a_chat_stream_is_a_broken_reply(fake_openai):
    from servers.fake_openai import Reply

    events = b'data: {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\n' \
             b'data: {"error": {"message": "the model is overloaded"}}\n\n'
    fake_openai.enqueue(Reply(body=events, headers={"Content-Type": "text/event-stream"}))

    async def body(t):
        await t.send("hi")

    result = run_one(chat_agent(fake_openai, stream=True), body, model="m")
    assert result.error["code"] == "agent-stream-broken"
    assert "the server reported an error in the middle of the reply stream: the model is overloaded" in result.error["message"]


def test_the_proxy_the_environment_names_carries_the_requests_and_no_proxy_is_honoured(fake_openai, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", fake_openai.base_url.rsplit("/", 1)[0])  # the fake answers as the proxy
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    fake_openai.respond_with(lambda request: chat_reply("answered"))

    async def body(t):
        await t.send("hi")
        t.check(t.reply, includes("answered"))

    proxied = openai_chat_agent(base_url="http://model.invalid:8000/v1", api_key="k", timeout=5)
    assert run_one(proxied, body, model="m").verdict == "passed"
    assert run_one(chat_agent(fake_openai), body, model="m").verdict == "passed"
    # a proxy is sent the whole URL; a server reached directly, only the path
    assert [request.path for request in fake_openai.requests] == [
        "http://model.invalid:8000/v1/chat/completions", "/v1/chat/completions",
    ]
