"""OpenAI Chat Completions: the `turn_from_chat_completion` converter and a complete agent with a tool loop.

The agent keeps the conversation client-side in a session slot, runs the tools the eval author
declared as Python functions, forwards model / reasoning effort / output schema, and sums usage
over every request of the turn. Any OpenAI-compatible server works (vLLM, Ollama, llama.cpp, hosted).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from assay.agent.adapter import DefinedAgent
from assay.agent.adapters.endpoint import BrokenReply, as_plain, check_options
from assay.agent.adapters.loop import ToolLoopProtocol, add_usage, define_tool_loop_agent
from assay.agent.adapters.tools import Tool
from assay.agent.context import AgentContext
from assay.agent.model import (
    COMPLETE, MISSING, ErrorEvent, EvidenceCoverage, Message, OperationStarted, ToolOperation, Turn,
    TurnInput, Usage, partial, unavailable,
)
from assay.agent.session import create_session_slot

_HIDDEN_TOOLS = "a Chat Completions server may run tools it does not report"

# The converter alone: tool calls stay pending (their results are not in a completion), and one
# completion says nothing of a loop a caller ran around it.
chat_completion_evidence_coverage = EvidenceCoverage(
    events=partial(_HIDDEN_TOOLS), actions=partial(_HIDDEN_TOOLS), messages=COMPLETE, usage=COMPLETE,
    status=COMPLETE, data=unavailable("a chat completion carries no structured-output contract"),
)
# The agent runs the tool loop itself, so every tool call passes through it: actions are complete by
# construction. It parses structured output itself, so data is complete; reasoning a server returns
# beside the answer is not turned into events.
chat_agent_evidence_coverage = EvidenceCoverage(
    events=partial("reasoning a server returns beside the answer is not shown as events"), actions=COMPLETE,
    messages=COMPLETE, usage=COMPLETE, status=COMPLETE, data=COMPLETE,
)

_HISTORY = create_session_slot("openai-chat-history")
_FAILED_FINISH = {"length": "the model stopped at its output token limit", "content_filter": "the content filter stopped the model"}


def parse_arguments(text: Any) -> Any:
    """Tool-call arguments as JSON; an unparsable string is kept raw (the spec's rule)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def usage_from_chat(usage: Mapping[str, Any] | None, requests: int | None = None) -> Usage | None:
    if not usage:
        return None
    prompt = usage.get("prompt_tokens")
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    cost = usage.get("cost")  # some gateways report what they charged; kept apart from our estimate
    return Usage(
        input_tokens=None if prompt is None else max(0, prompt - cached),
        output_tokens=usage.get("completion_tokens"),
        cache_read_tokens=cached or None,
        reasoning_tokens=reasoning,
        requests=requests,
        cost_usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
    )


def turn_from_chat_completion(response: Any) -> Turn:
    """A Turn from one Chat Completions response (an SDK object or its JSON)."""
    document = as_plain(response)
    choices = document.get("choices") or []
    message = (choices[0].get("message") if choices else None) or {}
    events: list[Any] = []
    content = _content_text(message.get("content"))
    if content:
        events.append(Message(content))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        # The model declined (structured outputs' refusal field): what it said is its answer, and the
        # turn failed as a content-filter stop does, rather than completing with nothing said.
        events.append(Message(refusal))
    for position, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or call.get("custom") or {}
        arguments = function.get("arguments", function.get("input"))
        events.append(OperationStarted(
            call.get("id") or f"tool-call-{position}", ToolOperation(function.get("name", ""), parse_arguments(arguments))
        ))
    usage = usage_from_chat(document.get("usage"))
    coverage = None if usage is not None else {"usage": unavailable("the response reported no usage")}
    finish = choices[0].get("finish_reason") if choices else None
    status = "completed"
    if finish in _FAILED_FINISH:
        status = "failed"
        events.append(ErrorEvent(_FAILED_FINISH[finish]))
    elif isinstance(refusal, str) and refusal:
        status = "failed"
        events.append(ErrorEvent(f"the model refused: {refusal}"))
    return Turn(events, status, MISSING, usage, coverage)


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return content or ""


def _user_message(turn_input: TurnInput) -> dict[str, Any]:
    if not turn_input.files:
        return {"role": "user", "content": turn_input.text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": turn_input.text}] if turn_input.text else []
    for file in turn_input.files:
        url = f"data:{file.mime_type};base64,{file.data_base64}"
        if file.mime_type.startswith("image/"):
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            parts.append({"type": "file", "file": {"filename": file.filename or "file", "file_data": url}})
    return {"role": "user", "content": parts}


class _ChatStream:
    """A streamed completion put back together in the shape of a non-streamed one, event by event.

    A stream that stops before its choice finished and `[DONE]` arrived is a broken reply, however
    cleanly the connection closed."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: Any = None
        self.done = False
        self.chunks = 0

    def add(self, data: bytes) -> None:
        if self.done:
            return  # the transport reads to the end so the connection can be reused
        if data.strip() == b"[DONE]":
            self.done = True
            return
        try:
            document = json.loads(data)
        except ValueError:
            raise BrokenReply(
                f"the reply stream has a malformed event after {self.chunks} chunk(s): {_shown(data)}"
            ) from None
        if not isinstance(document, dict):
            raise BrokenReply(f"the reply stream has an event that is not a JSON object: {_shown(data)}")
        if document.get("error"):
            error = document["error"]
            message = error.get("message") if isinstance(error, Mapping) else error
            raise BrokenReply(f"the server reported an error in the middle of the reply stream: {message}")
        self.chunks += 1
        if document.get("usage"):
            self.usage = document["usage"]
        for choice in document.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.content.append(delta["content"])
            if isinstance(delta.get("refusal"), str) and delta["refusal"]:
                self.refusal.append(delta["refusal"])
            for piece in delta.get("tool_calls") or []:
                call = self.calls.setdefault(piece.get("index", 0), {"id": None, "type": "function",
                                                                      "function": {"name": "", "arguments": ""}})
                if piece.get("id"):
                    call["id"] = piece["id"]
                function = piece.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]

    def completion(self) -> dict[str, Any]:
        text = "".join(self.content)
        if self.finish is None or not self.done:
            expected = (("a finish_reason", self.finish is not None), ("[DONE]", self.done))
            missing = " and ".join(name for name, seen in expected if not seen)
            received = f"; the partial text was {text[:200]!r}" if text else ""
            raise BrokenReply(f"the reply stream ended after {self.chunks} chunk(s) without {missing}{received}")
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if self.refusal:
            message["refusal"] = "".join(self.refusal)
        if self.calls:
            message["tool_calls"] = [self.calls[index] for index in sorted(self.calls)]
        return {"choices": [{"index": 0, "message": message, "finish_reason": self.finish}], "usage": self.usage}


def _shown(data: bytes) -> str:
    return repr(data[:120].decode("utf-8", "replace"))


async def _stream_completion(transport: Any, body: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    stream = _ChatStream()
    await transport.post_stream(
        "/chat/completions", {**body, "stream": True, "stream_options": {"include_usage": True}}, stream.add, **extra
    )
    return stream.completion()


def openai_chat_agent(
    *,
    name: str = "openai-chat",
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
    evidence_coverage: EvidenceCoverage = chat_agent_evidence_coverage,
    client: Any = None,
) -> DefinedAgent:
    """A Chat Completions agent. `model` is a default: the experiment's model wins. `tools` are Python
    functions (or `tool(...)`s) run locally when the model calls them. `request_options` are extra body
    fields (e.g. `{"temperature": 0}`). `client`, an `openai.AsyncOpenAI` of yours, sends the requests
    instead of assay's own transport (its base URL and key then apply)."""
    def prepare(
        turn_input: TurnInput, ctx: AgentContext, chosen_model: str, history: list[Any], declared: tuple[Tool, ...],
    ) -> Callable[[Any], Awaitable[dict[str, Any]]]:
        if not history and instructions:
            history.append({"role": "system", "content": instructions})
        history.append(_user_message(turn_input))
        extra: dict[str, Any] = dict(request_options or {})
        if ctx.reasoning_effort:
            extra["reasoning_effort"] = ctx.reasoning_effort
        if turn_input.output_schema is not None:
            extra["response_format"] = {
                "type": "json_schema", "json_schema": {"name": "output", "schema": turn_input.output_schema},
            }
        body: dict[str, Any] = {"model": chosen_model, "messages": history}
        if declared:
            body["tools"] = [item.chat_definition() for item in declared]
        body.update(extra)

        # The turn's traceparent, so the endpoint's spans join the turn's trace (only when telemetry is on).
        headers = {"headers": dict(ctx.telemetry.headers)} if ctx.telemetry is not None and ctx.telemetry.headers else {}

        async def request(transport: Any) -> dict[str, Any]:
            if stream:
                return await _stream_completion(transport, body, headers)
            return await transport.post_json("/chat/completions", body, **headers)

        return request

    check_options("openai_chat_agent", {
        "instructions": (instructions, "text?", "'You are a support agent.'"),
        "request_options": (request_options, "mapping?", "{'temperature': 0}"),
    })
    return define_tool_loop_agent(
        name=name, factory="openai_chat_agent", protocol=_CHAT_LOOP, tools=tools, model=model, base_url=base_url,
        api_key=api_key, api_key_env=api_key_env, timeout=timeout, max_attempts=max_attempts, backoff=backoff,
        max_concurrency=max_concurrency, max_tool_rounds=max_tool_rounds, evidence_coverage=evidence_coverage,
        history_slot=_HISTORY, prepare=prepare, client=client,
    )


def _assistant_history(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = ((document.get("choices") or [{}])[0].get("message")) or {}
    entry: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("refusal"):
        entry["refusal"] = message["refusal"]
    if message.get("tool_calls"):
        entry["tool_calls"] = [
            {"id": call.get("id"), "type": call.get("type") or "function", "function": call.get("function")}
            for call in message["tool_calls"]
        ]
    return [entry]


def _tool_result_history(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _check_completion(document: Mapping[str, Any]) -> None:
    choices = document.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping) or not isinstance(
        choices[0].get("message"), Mapping
    ):
        raise ValueError(f"the reply is not a chat completion (no choices[0].message): {_shown_json(document)}")


def _shown_json(document: Any) -> str:
    text = json.dumps(document, ensure_ascii=False, default=str)
    return text if len(text) <= 200 else text[:200] + "…"


_CHAT_LOOP = ToolLoopProtocol(turn_from_chat_completion, _assistant_history, _tool_result_history, _check_completion)


__all__ = [
    "add_usage", "chat_agent_evidence_coverage", "chat_completion_evidence_coverage", "openai_chat_agent",
    "parse_arguments", "turn_from_chat_completion", "usage_from_chat",
]
