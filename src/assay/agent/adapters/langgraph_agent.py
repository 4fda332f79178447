"""A LangGraph graph as an assay agent, and LangChain messages as a turn (the converter NiceEval's Python scope names).

`langgraph_agent(graph)` invokes your compiled graph once per turn, the way your app does: with a checkpointer,
on one thread per session line (only the new message is sent); without one, with the session line's messages.
`turn_from_langchain_messages(messages)` is the converter alone.

What a turn's new messages (told apart by id, so a graph that trims its history still shows each reply) become:
an AI message's text is an assistant message (its reasoning `Thinking`, read from LangChain's `content_blocks`),
each of its tool calls `operation.started`, a reply cut short (`length`, `max_tokens`) a failed turn; a
`ToolMessage` finishes its call, `failed` when its status is `error`, with its content as the output (JSON text
read as JSON, as `ToolNode` writes a dict); a
tool call the model wrote that could not be parsed is a failed call. An `interrupt(...)` the graph stops at
is a `waiting` turn with an input request per interrupt; `t.respond(answer)` resumes the graph with
`Command(resume=answer)` (the option's id, or the text); resuming needs a checkpointer, and a graph without
one is told so at `t.respond`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from assay.agent.adapter import DefinedAgent, SendFailure, define_agent, partly_answered
from assay.agent.context import AgentContext
from assay.agent.model import (
    COMPLETE, EvidenceCoverage, InputOption, InputRequest, InputRequested, Message, OperationFinished,
    OperationStarted, StreamEvent, Thinking, ToolOperation, Turn, TurnInput, Usage, partial, unavailable,
)
from assay.agent.session import create_session_slot
from assay.core.jsonvalue import jsonable

__all__ = ["langgraph_agent", "langgraph_evidence_coverage", "turn_from_langchain_messages"]

# The graph's messages hold every model reply and tool result it keeps; a node that calls tools without
# writing messages is yours to declare (evidence_coverage=).
langgraph_evidence_coverage = EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE)
_THREAD = create_session_slot("langgraph thread")
# Why a reply stopped, as OpenAI (`finish_reason`), Anthropic (`stop_reason`) and Gemini (`MAX_TOKENS`, `SAFETY`) say it
_FAILED_FINISH = frozenset({"length", "content_filter", "max_tokens", "safety"})
_CONFIG_KEYS = ("tags", "metadata", "callbacks", "run_name", "max_concurrency", "recursion_limit", "configurable", "run_id")


class _Thread:
    """One session line's conversation: its thread id, the messages seen so far, what waits for an answer."""

    __slots__ = ("id", "messages", "seen", "seen_ids", "interrupts", "open_calls")

    def __init__(self) -> None:
        self.id = f"assay-{uuid.uuid4().hex[:16]}"
        self.messages: list[Any] = []  # (a graph without a checkpointer: the history is sent each turn)
        self.seen = 0
        self.seen_ids: set[str] = set()
        self.interrupts: list[tuple[str, str]] = []  # (id, prompt)
        self.open_calls: set[str] = set()

    def new_messages(self, everything: list[Any]) -> list[Any]:
        """The messages this turn added: by id (`add_messages` gives every message one, and a graph that trims or
        summarises its history removes old ones, so a position would miss the new), else by position."""
        ids = [getattr(message, "id", None) for message in everything]
        if all(ids):
            added = [message for message, known in zip(everything, ids) if known not in self.seen_ids]
            self.seen_ids.update(ids)
        else:
            added = everything[self.seen:]
        self.seen = len(everything)
        return [message for message in added if getattr(message, "type", None) != "human"]


def _output(content: Any) -> Any:
    """A tool message's content: JSON text (what `ToolNode` makes of a dict) as JSON, anything else as it is."""
    if isinstance(content, str) and content[:1] in ("{", "["):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return jsonable(content)


def _text_and_reasoning(message: Any) -> tuple[str, list[str]]:
    """An AI message's text and reasoning, read from LangChain's standard `content_blocks` (which turn OpenAI's
    reasoning summaries and `reasoning_content` into reasoning blocks), else from its content as written."""
    try:
        blocks = message.content_blocks
    except Exception:  # noqa: BLE001 - an older langchain-core, or content its translators refuse
        blocks = message.content
    if isinstance(blocks, str):
        return blocks, []
    texts, reasoning = [], []
    for block in blocks or []:
        if isinstance(block, Mapping) and block.get("type") == "non_standard" and isinstance(block.get("value"), Mapping):
            block = block["value"]  # (an Anthropic thinking block on a message that does not name its provider)
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, Mapping):
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind in ("reasoning", "thinking"):
                said = block.get("reasoning") or block.get("thinking") or block.get("text") or "".join(
                    str(part.get("text", "")) for part in block.get("summary") or () if isinstance(part, Mapping))
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
    replies = 0
    for message in messages:
        kind = getattr(message, "type", None)
        if kind == "ai":
            replies += 1
            text, reasoning = _text_and_reasoning(message)
            events.extend(Thinking(said) for said in reasoning)
            if text:
                events.append(Message(text))
            for call in message.tool_calls or []:
                # LangChain allows a call without an id (no ToolMessage can answer it): one of its own, so it is a call
                call_id = call.get("id") or f"call-{len(events)}"
                started.add(call_id)
                events.append(OperationStarted(call_id, ToolOperation(call["name"], jsonable(call.get("args")))))
            for call in getattr(message, "invalid_tool_calls", None) or []:  # arguments the model wrote badly
                call_id = call.get("id") or f"invalid-{len(events)}"
                events.append(OperationStarted(call_id, ToolOperation(str(call.get("name")), call.get("args"))))
                events.append(OperationFinished(call_id, "failed", {"error": call.get("error") or "invalid arguments"}))
            if message.usage_metadata:
                _add_usage(usage, message.usage_metadata)
            stopped = message.response_metadata or {}
            if str(stopped.get("finish_reason") or stopped.get("stop_reason") or "").lower() in _FAILED_FINISH:
                status = "failed"
        elif kind == "tool" and message.tool_call_id in started:
            finished = "failed" if getattr(message, "status", "success") == "error" else "completed"
            events.append(OperationFinished(message.tool_call_id, finished, _output(message.content)))
    for waiting in interrupts:
        value = getattr(waiting, "value", waiting)
        asked = value if isinstance(value, Mapping) else {}
        options = tuple(
            InputOption(option) if isinstance(option, str) else InputOption(
                str(option["id"]), str(option["label"]) if option.get("label") is not None else None)
            for option in (asked.get("options") if isinstance(asked.get("options"), (list, tuple)) else ())
            if isinstance(option, str) or (isinstance(option, Mapping) and option.get("id") is not None))
        events.append(InputRequested(InputRequest(
            id=str(getattr(waiting, "id", "interrupt")), prompt=str(asked.get("question") or asked.get("prompt") or value),
            action=asked.get("action") if isinstance(asked.get("action"), str) else None,
            input=jsonable(value), options=options,
        )))
        if status == "completed":
            status = "waiting"
    counted = Usage(**{**usage, "reasoning_tokens": usage["reasoning_tokens"] or None}) if usage["requests"] else None
    coverage = None
    if replies and not usage["requests"]:
        coverage = {"usage": unavailable("the graph's AI messages carry no usage_metadata")}
    elif usage["requests"] < replies:  # a sum over only some of the model's replies is not the turn's usage
        coverage = {"usage": partial(f"{replies - usage['requests']} of the turn's {replies} AI messages carry no "
                                     "usage_metadata")}
    return Turn(events, status, usage=counted, evidence_coverage=coverage)


def _checked_config(given: Any) -> dict[str, Any]:
    """`config=` (or what its function returned) as a dict; a near miss of a LangGraph config key is named, since
    LangGraph would quietly move it into `configurable` (`recursion_limt` would leave the limit at its default)."""
    from assay.core.format import did_you_mean

    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise TypeError(f"langgraph_agent config must be a dict (a RunnableConfig: configurable, recursion_limit, "
                        f"tags, …), got {type(given).__name__}")
    if given.get("configurable") is not None and not isinstance(given["configurable"], Mapping):
        raise TypeError(f"langgraph_agent config['configurable'] must be a dict of the values your nodes read, "
                        f"got {type(given['configurable']).__name__}")
    limit = given.get("recursion_limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise TypeError(f"langgraph_agent config['recursion_limit'] must be a whole number of steps, got {limit!r}")
    for key in given:
        if key not in _CONFIG_KEYS and (near := did_you_mean(key, _CONFIG_KEYS, cutoff=0.85)):
            raise ValueError(f"langgraph_agent config key {key!r} is not a LangGraph config key{near} (a value your "
                             "nodes read goes under 'configurable')")
    return dict(given)


def _human_message(turn_input: TurnInput) -> Any:
    """The eval's message; its files as LangChain's standard content blocks (image, audio, video, or file)."""
    from langchain_core.messages import HumanMessage

    if not turn_input.files:
        return HumanMessage(turn_input.text)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": turn_input.text}] if turn_input.text else []
    for attached in turn_input.files:
        kind = attached.mime_type.split("/", 1)[0]
        block: dict[str, Any] = {"type": kind if kind in ("image", "audio", "video") else "file",
                                 "base64": attached.data_base64, "mime_type": attached.mime_type}
        if attached.filename:
            block["extras"] = {"filename": attached.filename}
        blocks.append(block)
    return HumanMessage(content=blocks)


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
    if not callable(config):
        _checked_config(config)
    if not isinstance(messages_key, str):
        raise TypeError(f"langgraph_agent messages_key takes the name of the state key that keeps the conversation "
                        f"(\"messages\"), got {type(messages_key).__name__}")
    try:  # what the graph's input state holds: a misspelt messages_key would feed every node an empty conversation
        fields = list((graph.get_input_jsonschema() or {}).get("properties") or {})
    except Exception:  # noqa: BLE001 - a graph-like object without a schema: checked on the first reply instead
        fields = []
    if fields and messages_key not in fields:
        from assay.core.format import did_you_mean

        raise ValueError(f"langgraph_agent messages_key={messages_key!r} is not in the graph's input state (its keys: "
                         f"{', '.join(fields)}){did_you_mean(messages_key, fields)}: give the key your state keeps "
                         "the conversation under")
    # (`compile(checkpointer=False)`, or `True` on a graph that has no parent to inherit one from, keeps nothing)
    keeps_history = not isinstance(getattr(graph, "checkpointer", None), (bool, type(None)))

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        from langgraph.types import Command

        thread = ctx.session.get(_THREAD)
        if thread is None:
            thread = _Thread()
            ctx.session.set(_THREAD, thread)
            ctx.session.capture(thread.id)
        try:
            given = _checked_config(config(ctx) if callable(config) else config)
        except (TypeError, ValueError) as error:
            raise SendFailure(f"{error} (returned by the config function)", acceptance="rejected", retried=True) from None
        run_config = {**given, "configurable": {**dict(given.get("configurable") or {}), "thread_id": thread.id}}
        if thread.interrupts and turn_input.responses:
            if not keeps_history:
                raise SendFailure(
                    "langgraph_agent: the graph stopped at interrupt(...) but was compiled without a checkpointer, so "
                    "LangGraph cannot resume it with the answer: compile it with one (graph.compile(checkpointer="
                    "InMemorySaver())); `langgraph dev` and the LangGraph platform add their own, so a graph exported "
                    "for them has none", acceptance="rejected", retried=True)
            answers = {response.request_id: response.option_id or response.text or "" for response in turn_input.responses}
            left = [f"{prompt!r} ({waiting})" for waiting, prompt in thread.interrupts if waiting not in answers]
            if left:
                raise partly_answered(len(thread.interrupts), left, "interrupts the graph stopped at",
                                      "LangGraph resumes the step only with an answer for each",
                                      "t.respond(…, …) in the order they were asked")
            resume: Any = answers[thread.interrupts[0][0]] if len(thread.interrupts) == 1 else {
                waiting: answers[waiting] for waiting, _ in thread.interrupts}
            state_input: Any = Command(resume=resume)
        else:
            message = _human_message(turn_input)
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
        added = thread.new_messages(everything)
        if not keeps_history:
            thread.messages = list(everything)
        interrupts = list(result.get("__interrupt__") or ())
        if len(interrupts) > 1 and keeps_history:  # (LangGraph lists them as their tasks stopped: put them as asked)
            try:
                snapshot = await graph.aget_state(run_config)
                asked = [waiting.id for task in snapshot.tasks for waiting in task.interrupts]
                interrupts.sort(key=lambda waiting: asked.index(waiting.id) if waiting.id in asked else len(asked))
            except Exception:  # noqa: BLE001 - a state that cannot be read: the order LangGraph gave
                pass
        turn = turn_from_langchain_messages(added, interrupts=interrupts, open_calls=thread.open_calls)
        thread.interrupts = [(event.request.id or "interrupt", event.request.prompt or "") for event in turn.events
                             if isinstance(event, InputRequested)]
        for event in turn.events:
            if isinstance(event, OperationStarted):
                thread.open_calls.add(event.operation_id)
            elif isinstance(event, OperationFinished):
                thread.open_calls.discard(event.operation_id)
        if turn_input.output_schema is not None and result.get("structured_response") is not None:
            turn = replace(turn, data=jsonable(result["structured_response"]))
        return turn

    return define_agent(name=name, send=send, evidence_coverage=evidence_coverage)
