"""OpenAI Responses: the `turn_from_responses` converter and a complete agent with a tool loop.

Reading chosen for evidence: `output` lists every function call, so actions are complete unless a
turn skipped an output item of a type this converter does not know (a hosted tool, say), which
downgrades that turn's actions and events to partial; reasoning without a summary is not shown.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from assay.agent.adapter import DefinedAgent
from assay.agent.adapters.endpoint import BrokenReply, as_plain, check_options
from assay.agent.adapters.loop import ToolLoopProtocol, define_tool_loop_agent
from assay.agent.adapters.openai_chat import parse_arguments
from assay.agent.adapters.tools import Tool
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
    refusals: list[str] = []
    for position, item in enumerate(document.get("output") or []):
        kind = item.get("type")
        if kind == "message":
            text = "".join(
                part.get("text", "") for part in item.get("content") or [] if part.get("type") == "output_text"
            )
            if text:
                events.append(Message(text))
            refused = "".join(
                part.get("refusal") or "" for part in item.get("content") or []
                if part.get("type") == "refusal" and isinstance(part.get("refusal"), str)
            )
            if refused:  # the model declined: its words are its answer, and the turn failed (see below)
                events.append(Message(refused))
                refusals.append(refused)
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
    elif refusals:
        status = "failed"
        events.append(ErrorEvent(f"the model refused: {' '.join(refusals)}"))
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


_FINAL_EVENTS = frozenset({"response.completed", "response.failed", "response.incomplete"})


class _ResponsesStream:
    """The final Responses object of a streamed reply: a stream without a final event is broken."""

    def __init__(self) -> None:
        self.final: dict[str, Any] | None = None
        self.received = 0

    def add(self, data: bytes) -> None:
        if self.final is not None or data.strip() == b"[DONE]":
            return  # the transport reads to the end so the connection can be reused
        try:
            document = json.loads(data)
        except ValueError:
            raise BrokenReply(
                f"the reply stream has a malformed event after {self.received} event(s): "
                f"{data[:120].decode('utf-8', 'replace')!r}"
            ) from None
        if not isinstance(document, dict):
            raise BrokenReply("the reply stream has an event that is not a JSON object")
        self.received += 1
        kind = document.get("type")
        if kind in _FINAL_EVENTS:
            self.final = document.get("response") or {}
        elif kind == "error" or document.get("error"):
            error = document.get("error")
            message = error.get("message") if isinstance(error, Mapping) else error or document.get("message")
            raise BrokenReply(f"the server reported an error in the middle of the reply stream: {message}")

    def response(self) -> dict[str, Any]:
        if self.final is None:
            raise BrokenReply(
                f"the reply stream ended after {self.received} event(s) without response.completed, .failed or .incomplete"
            )
        return self.final


async def _create(transport: Any, body: dict[str, Any], stream: bool, extra: dict[str, Any]) -> dict[str, Any]:
    if not stream:
        return await transport.post_json("/responses", body, **extra)
    events = _ResponsesStream()
    await transport.post_stream("/responses", {**body, "stream": True}, events.add, **extra)
    return events.response()


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


def _assistant_history(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [_history_item(item) for item in document.get("output") or []]


def _tool_result_history(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def _check_response(document: Mapping[str, Any]) -> None:
    if not isinstance(document.get("output"), list):
        shown = json.dumps(document, ensure_ascii=False, default=str)
        shown = shown if len(shown) <= 200 else shown[:200] + "…"
        raise ValueError(f"the reply is not a Responses object (no output list): {shown}")


_RESPONSES_LOOP = ToolLoopProtocol(turn_from_responses, _assistant_history, _tool_result_history, _check_response)


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
    client: Any = None,
) -> DefinedAgent:
    """A Responses API agent; the conversation is kept client-side (no server-stored state needed).
    `client`, an `openai.AsyncOpenAI` of yours, sends the requests instead of assay's own transport."""
    def prepare(
        turn_input: TurnInput, ctx: AgentContext, chosen_model: str, history: list[Any], declared: tuple[Tool, ...],
    ) -> Callable[[Any], Awaitable[dict[str, Any]]]:
        history.append(_user_item(turn_input))
        extra: dict[str, Any] = dict(request_options or {})
        if instructions:
            extra["instructions"] = instructions
        if ctx.reasoning_effort:
            extra["reasoning"] = {"effort": ctx.reasoning_effort}
        if turn_input.output_schema is not None:
            extra["text"] = {"format": {"type": "json_schema", "name": "output", "schema": turn_input.output_schema}}
        body: dict[str, Any] = {"model": chosen_model, "input": history}
        if declared:
            body["tools"] = [item.responses_definition() for item in declared]
        body.update(extra)

        # The turn's traceparent, so the endpoint's spans join the turn's trace (only when telemetry is on).
        headers = {"headers": dict(ctx.telemetry.headers)} if ctx.telemetry is not None and ctx.telemetry.headers else {}

        async def request(transport: Any) -> dict[str, Any]:
            return await _create(transport, body, stream, headers)

        return request

    check_options("openai_responses_agent", {
        "instructions": (instructions, "text?", "'You are a support agent.'"),
        "request_options": (request_options, "mapping?", "{'temperature': 0}"),
    })
    return define_tool_loop_agent(
        name=name, factory="openai_responses_agent", protocol=_RESPONSES_LOOP, tools=tools, model=model,
        base_url=base_url, api_key=api_key, api_key_env=api_key_env, timeout=timeout, max_attempts=max_attempts,
        backoff=backoff, max_concurrency=max_concurrency, max_tool_rounds=max_tool_rounds,
        evidence_coverage=evidence_coverage, history_slot=_HISTORY, prepare=prepare, client=client,
    )


__all__ = [
    "openai_responses_agent", "responses_agent_evidence_coverage", "responses_evidence_coverage",
    "turn_from_responses", "usage_from_responses",
]
