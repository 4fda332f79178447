"""A LangGraph graph as an assay agent, and LangChain messages as a turn (the converter NiceEval's Python scope names).

`langgraph_agent(graph)` invokes your compiled graph once per turn, the way your app does: with a checkpointer,
on one thread per session line (only the new message is sent); without one, with the session line's messages.
`turn_from_langchain_messages(messages)` is the converter alone.

What a turn's new messages become: an AI message's text is an assistant message (its reasoning blocks
`Thinking`), each of its tool calls `operation.started`; a `ToolMessage` finishes its call, `failed` when its
status is `error`, with its content as the output (JSON text read as JSON, as `ToolNode` writes a dict); a
tool call the model wrote that could not be parsed is a failed call. An `interrupt(...)` the graph stops at
is a `waiting` turn with an input request per interrupt; `t.respond(answer)` resumes the graph with
`Command(resume=answer)` (the option's id, or the text).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from assay.agent.adapter import DefinedAgent, SendFailure, define_agent
from assay.agent.context import AgentContext
from assay.agent.model import (
    COMPLETE, EvidenceCoverage, InputOption, InputRequest, InputRequested, Message, OperationFinished,
    OperationStarted, StreamEvent, Thinking, ToolOperation, Turn, TurnInput, Usage, unavailable,
)
from assay.agent.session import create_session_slot

__all__ = ["langgraph_agent", "langgraph_evidence_coverage", "turn_from_langchain_messages"]

# The graph's messages hold every model reply and tool result it keeps; a node that calls tools without
# writing messages is yours to declare (evidence_coverage=).
langgraph_evidence_coverage = EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE)
_THREAD = create_session_slot("langgraph thread")
_FAILED_FINISH = frozenset({"length", "content_filter", "max_tokens"})


class _Thread:
    """One session line's conversation: its thread id, the messages seen so far, what waits for an answer."""

    __slots__ = ("id", "messages", "seen", "interrupts", "open_calls")

    def __init__(self) -> None:
        self.id = f"assay-{uuid.uuid4().hex[:16]}"
        self.messages: list[Any] = []  # (a graph without a checkpointer: the history is sent each turn)
        self.seen = 0
        self.interrupts: list[str] = []
        self.open_calls: set[str] = set()


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=repr)


def _output(content: Any) -> Any:
    """A tool message's content: JSON text (what `ToolNode` makes of a dict) as JSON, anything else as it is."""
    if isinstance(content, str) and content[:1] in ("{", "["):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return _jsonable(content)


def _text_and_reasoning(content: Any) -> tuple[str, list[str]]:
    if isinstance(content, str):
        return content, []
    texts, reasoning = [], []
    for block in content or []:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, Mapping):
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind in ("reasoning", "thinking"):
                said = block.get("reasoning") or block.get("thinking") or block.get("text")
                if said:
                    reasoning.append(str(said))
    return "".join(texts), reasoning


def _add_usage(total: dict[str, int], usage: Mapping[str, Any]) -> None:
    given = usage.get("input_tokens") or 0
    details = usage.get("input_token_details") or {}
    read, written = details.get("cache_read") or 0, details.get("cache_creation") or 0
    total["input_tokens"] += max(0, given - read - written)
    total["cache_read_tokens"] += read
    total["cache_creation_tokens"] += written
    total["output_tokens"] += usage.get("output_tokens") or 0
    total["reasoning_tokens"] += (usage.get("output_token_details") or {}).get("reasoning") or 0
    total["requests"] += 1


def turn_from_langchain_messages(messages: Iterable[Any], *, interrupts: Iterable[Any] = (),
                                 open_calls: Iterable[str] = ()) -> Turn:
    """A turn from the messages a graph (or a LangChain agent) added this turn, and the interrupts it stopped at.

    `open_calls` are the ids of tool calls an earlier turn started that these messages may finish."""
    events: list[StreamEvent] = []
    started = set(open_calls)
    status = "completed"
    usage = dict.fromkeys(("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
                           "reasoning_tokens", "requests"), 0)
    for message in messages:
        kind = getattr(message, "type", None)
        if kind == "ai":
            text, reasoning = _text_and_reasoning(message.content)
            events.extend(Thinking(said) for said in reasoning)
            if text:
                events.append(Message(text))
            for call in message.tool_calls or []:
                started.add(call["id"])
                events.append(OperationStarted(call["id"], ToolOperation(call["name"], _jsonable(call.get("args")))))
            for call in getattr(message, "invalid_tool_calls", None) or []:  # arguments the model wrote badly
                call_id = call.get("id") or f"invalid-{len(events)}"
                events.append(OperationStarted(call_id, ToolOperation(str(call.get("name")), call.get("args"))))
                events.append(OperationFinished(call_id, "failed", {"error": call.get("error") or "invalid arguments"}))
            if message.usage_metadata:
                _add_usage(usage, message.usage_metadata)
            if (message.response_metadata or {}).get("finish_reason") in _FAILED_FINISH:
                status = "failed"
        elif kind == "tool" and message.tool_call_id in started:
            finished = "failed" if getattr(message, "status", "success") == "error" else "completed"
            events.append(OperationFinished(message.tool_call_id, finished, _output(message.content)))
    for waiting in interrupts:
        value = getattr(waiting, "value", waiting)
        asked = value if isinstance(value, Mapping) else {}
        options = tuple(InputOption(str(option)) for option in asked.get("options") or () if isinstance(option, str))
        events.append(InputRequested(InputRequest(
            id=str(getattr(waiting, "id", "interrupt")), prompt=str(asked.get("question") or asked.get("prompt") or value),
            action=asked.get("action") if isinstance(asked.get("action"), str) else None,
            input=_jsonable(value), options=options,
        )))
        if status == "completed":
            status = "waiting"
    counted = Usage(**{**usage, "reasoning_tokens": usage["reasoning_tokens"] or None}) if usage["requests"] else None
    return Turn(events, status, usage=counted)


def langgraph_agent(
    graph: Any,
    *,
    name: str = "langgraph",
    config: Mapping[str, Any] | Callable[[AgentContext], Mapping[str, Any]] | None = None,
    messages_key: str = "messages",
    evidence_coverage: EvidenceCoverage = langgraph_evidence_coverage,
) -> DefinedAgent:
    """Your compiled LangGraph graph (a `StateGraph(...).compile()`, or a LangChain agent built on one), invoked once
    per turn with `{messages_key: [the eval's message]}`.

    `config` is merged into every invocation's config (or is a function of the turn's context returning it:
    `configurable` values your nodes read, a `recursion_limit`); assay adds the thread id. A graph that stops at
    `interrupt(...)` needs a checkpointer, as LangGraph says."""
    if not callable(getattr(graph, "ainvoke", None)):
        raise TypeError(f"langgraph_agent takes a compiled graph (StateGraph(...).compile()), got {type(graph).__name__}")
    if config is not None and not callable(config) and not isinstance(config, Mapping):
        raise TypeError(f"langgraph_agent config takes a dict or a function of the context, got {type(config).__name__}")
    try:  # what the graph's input state holds: a misspelt messages_key would feed every node an empty conversation
        fields = list((graph.get_input_jsonschema() or {}).get("properties") or {})
    except Exception:  # noqa: BLE001 - a graph-like object without a schema: checked on the first reply instead
        fields = []
    if fields and messages_key not in fields:
        from assay.core.format import did_you_mean

        raise ValueError(f"langgraph_agent messages_key={messages_key!r} is not in the graph's input state (its keys: "
                         f"{', '.join(fields)}){did_you_mean(messages_key, fields)}: give the key your state keeps "
                         "the conversation under")
    keeps_history = getattr(graph, "checkpointer", None) is not None

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        from langchain_core.messages import HumanMessage
        from langgraph.types import Command

        thread = ctx.session.get(_THREAD)
        if thread is None:
            thread = _Thread()
            ctx.session.set(_THREAD, thread)
            ctx.session.capture(thread.id)
        given = dict((config(ctx) if callable(config) else config) or {})
        run_config = {**given, "configurable": {**dict(given.get("configurable") or {}), "thread_id": thread.id}}
        if thread.interrupts and turn_input.responses:
            answers = {response.request_id: response.option_id or response.text or "" for response in turn_input.responses}
            left = [waiting for waiting in thread.interrupts if waiting not in answers]
            if left:
                raise SendFailure(
                    f"respond answered {len(thread.interrupts) - len(left)} of the {len(thread.interrupts)} interrupts "
                    f"the graph stopped at (unanswered: {', '.join(left)}): answer them together, t.respond(…, …) in "
                    "the order they were asked", acceptance="rejected", retried=True)
            resume: Any = answers[thread.interrupts[0]] if len(thread.interrupts) == 1 else {
                waiting: answers[waiting] for waiting in thread.interrupts}
            state_input: Any = Command(resume=resume)
        else:
            message = HumanMessage(turn_input.text)
            if keeps_history:
                state_input = {messages_key: [message]}
            else:
                thread.messages.append(message)
                state_input = {messages_key: list(thread.messages)}
        result = await graph.ainvoke(state_input, run_config)
        if not isinstance(result, Mapping) or not isinstance(result.get(messages_key), list):
            raise SendFailure(f"langgraph_agent: the graph's state has no list of messages under {messages_key!r} "
                              f"(its keys: {', '.join(map(str, result)) if isinstance(result, Mapping) else type(result).__name__}); "
                              "give messages_key= the key your state keeps them under", acceptance="started")
        everything = result[messages_key]
        added = [message for message in everything[thread.seen:] if getattr(message, "type", None) != "human"]
        thread.seen = len(everything)
        if not keeps_history:
            thread.messages = list(everything)
        interrupts = list(result.get("__interrupt__") or ())
        turn = turn_from_langchain_messages(added, interrupts=interrupts, open_calls=thread.open_calls)
        thread.interrupts = [str(getattr(waiting, "id", "interrupt")) for waiting in interrupts]
        for event in turn.events:
            if isinstance(event, OperationStarted):
                thread.open_calls.add(event.operation_id)
            elif isinstance(event, OperationFinished):
                thread.open_calls.discard(event.operation_id)
        if turn_input.output_schema is not None and result.get("structured_response") is not None:
            turn = Turn(turn.events, turn.status, data=_jsonable(result["structured_response"]), usage=turn.usage,
                        evidence_coverage=turn.evidence_coverage)
        if turn.usage is None and any(getattr(message, "type", None) == "ai" for message in added):
            turn = Turn(turn.events, turn.status, data=turn.data, usage=None,
                        evidence_coverage={"usage": unavailable("the graph's AI messages carry no usage_metadata")})
        return turn

    return define_agent(name=name, send=send, evidence_coverage=evidence_coverage)
