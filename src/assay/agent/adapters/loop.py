"""The tool-calling loop shared by the OpenAI-compatible agents: request, run the called tools, repeat.

A wire protocol supplies only how one response becomes a Turn and how its history records assistant
output and tool results; usage totals, status, the round limit and structured output are handled here once.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from assay.agent.adapters.endpoint import OpenAIEndpoint, call_endpoint
from assay.agent.adapters.tools import Tool
from assay.agent.context import AgentContext
from assay.agent.model import (
    MISSING, ErrorEvent, Message, OperationFinished, OperationStarted, Turn, Usage, unavailable,
)


@dataclass(frozen=True, slots=True)
class ToolLoopProtocol:
    """What differs between Chat Completions and Responses inside the loop."""

    convert: Callable[[Mapping[str, Any]], Turn]  # one response document -> Turn with pending tool calls
    assistant_history: Callable[[Mapping[str, Any]], Iterable[Any]]  # response document -> history items
    tool_result_history: Callable[[str, str], Any]  # (call id, result text) -> history item


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
    """One turn: `request(client)` sends the current `history` (mutated in place, saved to the session
    slot at the end) until the model stops calling tools, fails, or exceeds `max_tool_rounds`."""
    events: list[Any] = []
    usage: Usage | None = None
    coverage: dict[str, Any] = {}
    requests = 0
    requests_without_usage = 0
    ran_tools = False
    status = "completed"
    final_text = ""
    for round_number in range(max_tool_rounds + 1):
        document = await call_endpoint(endpoint, ctx, request, started=ran_tools)
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
        coverage["usage"] = unavailable(
            f"the endpoint reported no usage for {requests_without_usage} of {requests} request(s)"
        )
    if usage is not None:
        usage = Usage(**{**{n: getattr(usage, n) for n in Usage.__dataclass_fields__}, "requests": requests})
    return Turn(events, status, data, usage, coverage or None)


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


__all__ = ["ToolLoopProtocol", "add_usage", "parse_output", "run_tool", "run_tool_loop"]
