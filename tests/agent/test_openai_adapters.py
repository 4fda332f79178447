"""The official OpenAI-compatible agents against the fake server, through the real openai SDK."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agent_helpers import run_evals, run_one, statuses
from assay.agent import Turn, define_eval, includes
from assay.agent.adapters import (
    openai_chat_agent, openai_responses_agent, tool, turn_from_chat_completion, turn_from_responses,
)
from assay.agent.runner import RunOptions
from servers.fake_openai import (
    chat_reply, error_reply, function_call_item, json_reply, malformed_reply, rate_limited, responses_reply,
    tool_call,
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


def test_chat_negative_tool_assertions_are_unavailable_because_a_server_may_hide_tools(fake_openai):
    fake_openai.enqueue(chat_reply("hi"))

    async def body(t):
        await t.send("hello")
        t.not_called_tool("delete_everything")

    result = run_one(chat_agent(fake_openai), body, model="m")
    assert statuses(result) == ["unavailable"] and result.verdict == "errored"
    assert "may run tools it does not report" in result.assertions[0]["reason"]


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


def test_chat_429_honours_retry_after_and_5xx_is_retried_and_both_are_counted(fake_openai):
    fake_openai.enqueue(rate_limited(0.05), error_reply(502), chat_reply("ok"))

    async def body(t):
        await t.send("hi")
        t.succeeded()

    result = run_one(chat_agent(fake_openai), body, model="m")
    assert result.verdict == "passed"
    assert result.retries == {"rate_limited": 1, "server_error": 1}
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

        fake_openai.enqueue(chat_reply("one"), error_reply(502), chat_reply("two"), rate_limited(0), chat_reply("three"))
        replies = [await send() for _ in range(3)]
        fake_openai.enqueue(error_reply(400, "bad"))
        with pytest.raises(SendFailure, match="rejected the request"):
            await send()
        await endpoint.aclose()
        return [reply["choices"][0]["message"]["content"] for reply in replies], states, feedback.retries

    contents, states, retries = asyncio.run(scenario())
    assert contents == ["one", "two", "three"]
    assert retries == {"server_error": 1, "rate_limited": 1}
    # after each call nothing is held; a 5xx leaves the limit alone, the 429 halves it (8 -> 4, then grows)
    assert [(in_flight, rate_limited) for in_flight, _, rate_limited in states] == [(0, 0), (0, 0), (0, 1), (0, 1)]
    assert states[1][1] == 8 and 4 <= states[2][1] < 5


def test_chat_persistent_500_errors_the_attempt_after_the_last_retry(fake_openai):
    fake_openai.enqueue(*[error_reply(500, "boom")] * 3)

    async def body(t):
        await t.send("hi")

    result = run_one(chat_agent(fake_openai, max_attempts=3), body, model="m")
    assert result.verdict == "errored" and result.error["code"] == "network"
    assert "failed after 3 attempt(s): HTTP 500: boom" in result.error["message"]
    assert result.retries == {"server_error": 2}


def test_chat_malformed_json_body_is_a_send_failure_not_retried(fake_openai):
    fake_openai.enqueue(malformed_reply())

    async def body(t):
        await t.send("hi")

    result = run_one(chat_agent(fake_openai), body, model="m")
    assert result.verdict == "errored" and result.error["code"] == "agent-invalid-response"
    assert len(fake_openai.chat_requests) == 1


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
def test_requests_go_to_the_url_the_sdk_itself_would_resolve(base_url, path):
    import openai

    from assay.agent.adapters.endpoint import _absolute_url

    client = openai.AsyncOpenAI(base_url=base_url, api_key="k")
    assert _absolute_url(client, path) == str(client._prepare_url(path))
    assert _absolute_url(client, path) is _absolute_url(client, path)  # resolved once per client
    client.base_url = "http://127.0.0.1:10/v2"
    assert _absolute_url(client, path) == str(client._prepare_url(path))  # and again when it moves
