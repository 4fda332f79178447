"""The tool-calling loop shared by the OpenAI-compatible agents: request, run the called tools, repeat.

A wire protocol supplies only how one response becomes a Turn and how its history records assistant
output and tool results; usage totals, status, the round limit and structured output are handled here once.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from assay.agent.adapter import DefinedAgent, define_agent
from assay.agent.adapters.endpoint import OpenAIEndpoint, call_endpoint, check_options
from assay.agent.adapters.tools import Tool, as_tools
from assay.agent.context import AgentContext
from assay.agent.model import (
    MISSING, ErrorEvent, EvidenceCoverage, Message, OperationFinished, OperationStarted, Turn, TurnInput, Usage,
    partial, unavailable,
)

# (turn input, ctx, chosen model, history, declared tools) -> `request(transport)`; appends the user item to history
PrepareRequest = Callable[
    [TurnInput, AgentContext, str, list[Any], tuple[Tool, ...]], Callable[[Any], Awaitable[dict[str, Any]]]
]


@dataclass(frozen=True, slots=True)
class ToolLoopProtocol:
    """What differs between Chat Completions and Responses inside the loop."""

    convert: Callable[[Mapping[str, Any]], Turn]  # one response document -> Turn with pending tool calls
    assistant_history: Callable[[Mapping[str, Any]], Iterable[Any]]  # response document -> history items
    tool_result_history: Callable[[str, str], Any]  # (call id, result text) -> history item
    # Raises ValueError for a reply that is JSON but not this protocol's response (an error page's
    # `{"detail": …}`, a proxy's own answer): an invalid response, never an empty completed turn.
    check_reply: Callable[[Mapping[str, Any]], None] = lambda document: None


async def run_tool_loop(
    protocol: ToolLoopProtocol,
    request: Callable[[Any], Awaitable[dict[str, Any]]],
    *,
    endpoint: OpenAIEndpoint,
    ctx: AgentContext,
    history: list[Any],
    history_slot: Any,
    tools_by_name: Mapping[str, Tool],
    max_tool_rounds: int,
    expects_output: bool,
) -> Turn:
    """One turn: `request(transport)` sends the current `history` (mutated in place, saved to the session
    slot at the end) until the model stops calling tools, fails, or exceeds `max_tool_rounds`."""
    events: list[Any] = []
    usage: Usage | None = None
    coverage: dict[str, Any] = {}
    requests = 0
    requests_without_usage = 0
    ran_tools = False
    status = "completed"
    final_text = ""

    async def checked(transport: Any) -> dict[str, Any]:
        document = await request(transport)
        protocol.check_reply(document)  # its ValueError is call_endpoint's invalid response
        return document

    for round_number in range(max_tool_rounds + 1):
        document = await call_endpoint(endpoint, ctx, checked, started=ran_tools)
        requests += 1
        converted = protocol.convert(document)
        # usage coverage is decided over the whole turn below; other channels hold per response
        for channel, value in (converted.evidence_coverage or {}).items():
            if channel != "usage":
                coverage[channel] = value
        if converted.usage is None:
            requests_without_usage += 1
        usage = add_usage(usage, converted.usage)
        history.extend(protocol.assistant_history(document))
        calls = [event for event in converted.events if isinstance(event, OperationStarted)]
        for event in converted.events:
            if isinstance(event, Message):
                final_text = event.text
            if not isinstance(event, OperationStarted):
                events.append(event)
        if converted.status != "completed":
            status = converted.status
            break
        if not calls:
            break
        if round_number == max_tool_rounds:
            status = "failed"
            events.append(ErrorEvent(f"the model kept calling tools after {max_tool_rounds} rounds"))
            break
        for started in calls:
            events.append(started)
            finished, text = await run_tool(tools_by_name, started)
            events.append(finished)
            history.append(protocol.tool_result_history(started.operation_id, text))
        ran_tools = True
    ctx.session.set(history_slot, history)
    data: Any = MISSING
    if expects_output and status == "completed":
        data = parse_output(final_text, ctx)
    if usage is None or requests_without_usage:
        # Some requests counted is a sum kept and marked partial; none counted is no usage at all.
        lowered = unavailable if usage is None else partial
        coverage["usage"] = lowered(
            f"the endpoint reported no usage for {requests_without_usage} of {requests} request(s)"
        )
    if usage is not None:
        usage = Usage(**{**{n: getattr(usage, n) for n in Usage.__dataclass_fields__}, "requests": requests})
    return Turn(events, status, data, usage, coverage or None)


def define_tool_loop_agent(
    *,
    name: str,
    factory: str,
    protocol: ToolLoopProtocol,
    tools: Iterable[Any],
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    api_key_env: str,
    timeout: float,
    max_attempts: int,
    backoff: float,
    max_concurrency: int | None,
    max_tool_rounds: int,
    evidence_coverage: EvidenceCoverage,
    history_slot: Any,
    prepare: PrepareRequest,
    client: Any = None,
) -> DefinedAgent:
    """An agent running `protocol`'s tool loop against an OpenAI-compatible endpoint. Per turn: pick the
    model (the experiment's wins over `model`), load the history from `history_slot`, let `prepare` add
    the user item and build `request(transport)`, then run the loop. `factory` names the public factory
    in the no-model error; `client` is the caller's own `openai.AsyncOpenAI`, if any."""
    check_options(factory, {
        "name": (name, "text", "'support-bot'"), "model": (model, "text?", "'gpt-4.1-mini'"),
        "base_url": (base_url, "text?", "'http://127.0.0.1:8000/v1'"), "api_key": (api_key, "text?", "'sk-…'"),
        "api_key_env": (api_key_env, "text", "'OPENAI_API_KEY'"), "timeout": (timeout, "seconds", "120"),
        "max_attempts": (max_attempts, "count", "4"), "backoff": (backoff, "seconds>=0", "0.5"),
        "max_tool_rounds": (max_tool_rounds, "count", "10"), "max_concurrency": (max_concurrency, "count?", "16"),
    })
    declared = as_tools(tools)
    by_name = {item.name: item for item in declared}
    endpoint = OpenAIEndpoint(
        base_url, api_key, api_key_env, timeout, max_attempts, backoff,
        **({"max_concurrency": max_concurrency} if max_concurrency else {}), sdk_client=client,
    )

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        chosen_model = ctx.model or model
        if not chosen_model:
            raise ValueError(f"agent {name!r} has no model: set Experiment(model=...) or {factory}(model=...)")
        history: list[Any] = list(ctx.session.get(history_slot) or [])
        request = prepare(turn_input, ctx, chosen_model, history, declared)
        return await run_tool_loop(
            protocol, request, endpoint=endpoint, ctx=ctx, history=history, history_slot=history_slot,
            tools_by_name=by_name, max_tool_rounds=max_tool_rounds, expects_output=turn_input.output_schema is not None,
        )

    return define_agent(name=name, send=send, evidence_coverage=evidence_coverage, close=endpoint.aclose)


def add_usage(first: Usage | None, second: Usage | None) -> Usage | None:
    if first is None or second is None:
        return first or second
    values = {}
    for name in Usage.__dataclass_fields__:
        a, b = getattr(first, name), getattr(second, name)
        values[name] = None if a is None and b is None else (a or 0) + (b or 0)
    return Usage(**values)


async def run_tool(by_name: Mapping[str, Tool], started: OperationStarted) -> tuple[OperationFinished, str]:
    """The finished event and the text the model reads; an unknown tool fails instead of raising."""
    operation = started.operation
    declared = by_name.get(operation.name)
    if declared is None:
        text = f"unknown tool {operation.name!r}"
        return OperationFinished(started.operation_id, "failed", text), text
    result = await declared.invoke(operation.input)
    status = "failed" if result.failed else "completed"
    return OperationFinished(started.operation_id, status, result.output), result.text()


def parse_output(text: str, ctx: AgentContext) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        ctx.diagnostic(
            "output-not-json", "error", f"the model's answer to an output schema is not JSON: {text[:200]!r}"
        )
        return MISSING


__all__ = [
    "PrepareRequest", "ToolLoopProtocol", "add_usage", "define_tool_loop_agent", "parse_output", "run_tool",
    "run_tool_loop",
]
