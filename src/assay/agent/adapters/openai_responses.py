"""OpenAI Responses: the `turn_from_responses` converter and a complete agent with a tool loop.

Reading chosen for evidence: `output` lists every function call, so actions are complete unless a
turn skipped an output item of a type this converter does not know (a hosted tool, say), which
downgrades that turn's actions and events to partial; reasoning without a summary is not shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from assay.agent.adapter import DefinedAgent, define_agent
from assay.agent.adapters.endpoint import OpenAIEndpoint, as_plain, call_endpoint, post_json
from assay.agent.adapters.openai_chat import _parse_output, _run_tool, add_usage, parse_arguments
from assay.agent.adapters.tools import as_tools
from assay.agent.context import AgentContext
from assay.agent.model import (
    COMPLETE, MISSING, ErrorEvent, EvidenceCoverage, Message, OperationStarted, Thinking, ToolOperation, Turn, TurnInput,
    Usage, partial, unavailable,
)
from assay.agent.session import create_session_slot

responses_evidence_coverage = EvidenceCoverage(
    events=partial("reasoning items without a summary are not shown as events"),
    actions=COMPLETE, messages=COMPLETE, usage=COMPLETE, status=COMPLETE,
    data=unavailable("a Responses object carries no structured-output contract"),
)
responses_agent_evidence_coverage = EvidenceCoverage(
    events=responses_evidence_coverage.events, actions=COMPLETE, messages=COMPLETE, usage=COMPLETE,
    status=COMPLETE, data=COMPLETE,
)

_HISTORY = create_session_slot("openai-responses-history")
_KNOWN_ITEMS = frozenset({"message", "function_call", "reasoning"})


def usage_from_responses(usage: Mapping[str, Any] | None, requests: int | None = None) -> Usage | None:
    if not usage:
        return None
    total_input = usage.get("input_tokens")
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
    cost = usage.get("cost")
    return Usage(
        input_tokens=None if total_input is None else max(0, total_input - cached),
        output_tokens=usage.get("output_tokens"),
        cache_read_tokens=cached or None,
        reasoning_tokens=(usage.get("output_tokens_details") or {}).get("reasoning_tokens"),
        requests=requests,
        cost_usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
    )


def turn_from_responses(response: Any) -> Turn:
    """A Turn from one Responses object (an SDK object or its JSON); function calls stay pending."""
    document = as_plain(response)
    events: list[Any] = []
    skipped: list[str] = []
    for position, item in enumerate(document.get("output") or []):
        kind = item.get("type")
        if kind == "message":
            text = "".join(
                part.get("text", "") for part in item.get("content") or [] if part.get("type") == "output_text"
            )
            if text:
                events.append(Message(text))
        elif kind == "function_call":
            events.append(OperationStarted(
                item.get("call_id") or item.get("id") or f"call-{position}",
                ToolOperation(item.get("name", ""), parse_arguments(item.get("arguments"))),
            ))
        elif kind == "reasoning":
            summary = "".join(part.get("text", "") for part in item.get("summary") or [])
            if summary:
                events.append(Thinking(summary))
        else:
            skipped.append(str(kind))
    coverage: dict[str, Any] = {}
    if skipped:
        reason = f"output items of unknown type were skipped: {', '.join(sorted(set(skipped)))}"
        coverage = {"events": partial(reason), "actions": partial(reason)}
    usage = usage_from_responses(document.get("usage"))
    if usage is None:
        coverage["usage"] = unavailable("the response reported no usage")
    status = "completed"
    state = document.get("status")
    if state in ("failed", "incomplete", "cancelled"):
        status = "failed"
        error = document.get("error") or {}
        details = document.get("incomplete_details") or {}
        events.append(ErrorEvent(error.get("message") or f"response {state}: {details.get('reason') or 'no reason given'}"))
    return Turn(events, status, MISSING, usage, coverage or None)


def _user_item(turn_input: TurnInput) -> dict[str, Any]:
    if not turn_input.files:
        return {"role": "user", "content": turn_input.text}
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": turn_input.text}] if turn_input.text else []
    for file in turn_input.files:
        url = f"data:{file.mime_type};base64,{file.data_base64}"
        if file.mime_type.startswith("image/"):
            parts.append({"type": "input_image", "image_url": url})
        else:
            parts.append({"type": "input_file", "filename": file.filename or "file", "file_data": url})
    return {"role": "user", "content": parts}


async def _create(client: Any, body: dict[str, Any], extra: dict[str, Any], stream: bool) -> dict[str, Any]:
    if not stream:
        return await post_json(client, "/responses", {**body, **extra})
    events = await client.responses.create(**body, stream=True, extra_body=extra or None)
    final = None
    async for event in events:
        document = as_plain(event)
        kind = document.get("type")
        if kind in ("response.completed", "response.failed", "response.incomplete"):
            final = document.get("response")
        elif kind == "error":
            raise ValueError(f"the response stream reported an error: {document.get('message')}")
    if final is None:
        raise ValueError("the response stream ended without a final response")
    return final


def _history_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """An output item as the next request's input (status and other read-only fields dropped)."""
    kind = item.get("type")
    if kind == "function_call":
        return {"type": "function_call", "call_id": item.get("call_id"), "name": item.get("name"),
                "arguments": item.get("arguments")}
    if kind == "message":
        text = "".join(part.get("text", "") for part in item.get("content") or [] if part.get("type") == "output_text")
        return {"role": "assistant", "content": text}
    return {key: value for key, value in item.items() if key not in ("status",)}


def openai_responses_agent(
    *,
    name: str = "openai-responses",
    model: str | None = None,
    tools: Iterable[Any] = (),
    instructions: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    stream: bool = False,
    timeout: float = 120.0,
    max_attempts: int = 4,
    backoff: float = 0.5,
    max_tool_rounds: int = 10,
    max_concurrency: int | None = None,
    request_options: Mapping[str, Any] | None = None,
    evidence_coverage: EvidenceCoverage = responses_agent_evidence_coverage,
) -> DefinedAgent:
    """A Responses API agent; the conversation is kept client-side (no server-stored state needed)."""
    declared = as_tools(tools)
    by_name = {item.name: item for item in declared}
    endpoint = OpenAIEndpoint(
        base_url, api_key, api_key_env, timeout, max_attempts, backoff,
        **({"max_concurrency": max_concurrency} if max_concurrency else {}),
    )

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        chosen_model = ctx.model or model
        if not chosen_model:
            raise ValueError(
                f"agent {name!r} has no model: set Experiment(model=...) or openai_responses_agent(model=...)"
            )
        history: list[Any] = list(ctx.session.get(_HISTORY) or [])
        history.append(_user_item(turn_input))
        extra: dict[str, Any] = dict(request_options or {})
        if instructions:
            extra["instructions"] = instructions
        if ctx.reasoning_effort:
            extra["reasoning"] = {"effort": ctx.reasoning_effort}
        if turn_input.output_schema is not None:
            extra["text"] = {"format": {"type": "json_schema", "name": "output", "schema": turn_input.output_schema}}
        events: list[Any] = []
        usage: Usage | None = None
        coverage: dict[str, Any] = {}
        requests = 0
        requests_without_usage = 0
        ran_tools = False
        status = "completed"
        final_text = ""
        for round_number in range(max_tool_rounds + 1):
            body: dict[str, Any] = {"model": chosen_model, "input": history}
            if declared:
                body["tools"] = [item.responses_definition() for item in declared]

            async def call(client: Any) -> dict[str, Any]:
                return await _create(client, body, extra, stream)

            document = await call_endpoint(endpoint, ctx, call, started=ran_tools)
            requests += 1
            converted = turn_from_responses(document)
            for channel, value in (converted.evidence_coverage or {}).items():
                if channel != "usage":
                    coverage[channel] = value
            if converted.usage is None:
                requests_without_usage += 1
            usage = add_usage(usage, converted.usage)
            history.extend(_history_item(item) for item in document.get("output") or [])
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
                finished, text = await _run_tool(by_name, started)
                events.append(finished)
                history.append({"type": "function_call_output", "call_id": started.operation_id, "output": text})
            ran_tools = True
        ctx.session.set(_HISTORY, history)
        data: Any = MISSING
        if turn_input.output_schema is not None and status == "completed":
            data = _parse_output(final_text, ctx)
        if usage is None or requests_without_usage:
            coverage["usage"] = unavailable(
                f"the endpoint reported no usage for {requests_without_usage} of {requests} request(s)"
            )
        if usage is not None:
            usage = Usage(**{**{n: getattr(usage, n) for n in Usage.__dataclass_fields__}, "requests": requests})
        return Turn(events, status, data, usage, coverage or None)

    return define_agent(name=name, send=send, evidence_coverage=evidence_coverage, close=endpoint.aclose)


__all__ = [
    "openai_responses_agent", "responses_agent_evidence_coverage", "responses_evidence_coverage",
    "turn_from_responses", "usage_from_responses",
]
