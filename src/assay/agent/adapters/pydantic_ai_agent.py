"""A pydantic-ai `Agent` as an assay agent, and its messages as a turn (the Python converter NiceEval's scope names).

`pydantic_ai_agent(agent)` runs your agent in-process, turn by turn, keeping its message history per session
line (as your app would), so an eval drives the very agent you ship: its tools run, its model is called (or a
`TestModel`/`FunctionModel` in tests). `turn_from_pydantic_ai(messages, …)` is the converter alone, for an
agent you call yourself.

What a run's new messages become:

- a model's text is an assistant message, its thinking `Thinking`, a compaction `Compaction`;
- each tool call is `operation.started` (its arguments as input) and its return `operation.finished`:
  `completed`, or `failed` when the tool failed or asked the model to retry (`ModelRetry`, invalid
  arguments: the retry prompt is the output), `rejected` when a person denied it; a tool the provider ran
  (a native web search) is a call too, and the output tools pydantic-ai uses for structured output are not;
- a run that ends with `DeferredToolRequests` is a `waiting` turn with an input request per call that needs
  approval (its action is the tool's name, its options `approve` and `deny`); `t.respond("approve")` runs
  the agent again with the answers (`DeferredToolResults`), a denial telling the model `deny_reason`;
- the output is the turn's `data` (a pydantic model as its JSON), unless it is plain text;
- usage is the run's: input tokens without the cached ones, output, cache reads and writes, reasoning,
  requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from assay.agent.adapter import DefinedAgent, define_agent, partly_answered
from assay.agent.context import AgentContext
from assay.agent.model import (
    COMPLETE, MISSING, Compaction, EvidenceCoverage, InputOption, InputRequest, InputRequested, Message,
    OperationFinished, OperationStarted, StreamEvent, Thinking, ToolOperation, Turn, TurnInput, Usage,
)
from assay.agent.session import create_session_slot
from assay.core.jsonvalue import jsonable

__all__ = ["DENY_REASON", "pydantic_ai_agent", "pydantic_ai_evidence_coverage", "turn_from_pydantic_ai"]

# Every tool call and message of a run is in its messages: the tool loop runs in this process.
pydantic_ai_evidence_coverage = EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE)
DENY_REASON = "The user denied this tool call. Do not retry it; continue without it."
_HISTORY = create_session_slot("pydantic-ai message history")
_WAITING = create_session_slot("pydantic-ai approvals waiting")
_APPROVE, _DENY = InputOption("approve", "Approve"), InputOption("deny", "Deny")
_FINISHED = {"success": "completed", "denied": "rejected"}  # failed, interrupted and retried: failed
_FAILED_FINISH = frozenset({"length", "content_filter", "error"})
_NO_DEPS: Any = object()  # deps= left out (None given is the agent's dependencies, as pydantic-ai takes it)


def _needs_deps(deps_type: Any) -> bool:
    """Whether an agent's `deps_type` says its tools read dependencies that cannot be None."""
    import types
    import typing

    if deps_type in (None, type(None), Any, object):
        return False
    optional = typing.get_origin(deps_type) in (typing.Union, types.UnionType) and type(None) in typing.get_args(deps_type)
    return not optional


def _arguments(part: Any) -> Any:
    try:
        return part.args_as_dict()
    except Exception:  # noqa: BLE001 - arguments the model wrote that are not JSON: kept as written
        return part.args


def _usage(usage: Any) -> Usage | None:
    if usage is None:
        return None
    read, written = usage.cache_read_tokens or 0, usage.cache_write_tokens or 0
    reasoning = getattr(usage, "output_reasoning_tokens", None) or (usage.details or {}).get("reasoning_tokens")
    return Usage(input_tokens=max(0, (usage.input_tokens or 0) - read - written), output_tokens=usage.output_tokens,
                 cache_read_tokens=read, cache_creation_tokens=written, reasoning_tokens=reasoning or None,
                 requests=getattr(usage, "requests", None))


def _output_tool_names(output_type: Any) -> tuple[str, ...]:
    """The tools pydantic-ai gives the model to answer with: `final_result` (…`_<type>` when there are several)
    and each `ToolOutput(name=…)` of the agent's output type."""
    from pydantic_ai import ToolOutput

    names = ["final_result"]
    for entry in output_type if isinstance(output_type, (list, tuple)) else [output_type]:
        if isinstance(entry, ToolOutput) and entry.name:
            names.append(entry.name)
    return tuple(names)


def _asked_output(schema: Mapping[str, Any], own: Any) -> Any:
    """The output type for a turn the eval asked structured output of: an agent that answers in text is asked for
    the schema (`StructuredDict`, its approvals kept); one with an output type of its own answers with that."""
    from pydantic_ai import DeferredToolRequests, StructuredDict

    entries = list(own) if isinstance(own, (list, tuple)) else [own]
    if any(entry not in (str, DeferredToolRequests) for entry in entries):
        return None
    asked = StructuredDict(dict(schema))
    return [asked, DeferredToolRequests] if DeferredToolRequests in entries else asked


def turn_from_pydantic_ai(messages: Iterable[Any], *, output: Any = MISSING, usage: Any = None,
                          output_tools: Iterable[str] = ("final_result",), open_calls: Iterable[str] = ()) -> Turn:
    """A turn from a pydantic-ai run's new messages (`result.new_messages()`), its `output` and `usage`.

    `output_tools` are the names of the tools the model answers with (not calls of the agent's; `final_result`
    and `final_result_<type>` by default); `open_calls` the ids of calls an earlier turn started that this run
    may finish (the approvals it answered)."""
    from pydantic_ai import DeferredToolRequests
    from pydantic_ai.messages import (
        CompactionPart, ModelResponse, NativeToolCallPart, NativeToolReturnPart, RetryPromptPart, TextPart,
        ThinkingPart, ToolCallPart, ToolReturnPart,
    )

    events: list[StreamEvent] = []
    started: set[str] = set(open_calls)
    answering = tuple(output_tools)
    status = "completed"
    for message in messages:
        for part in message.parts:
            if isinstance(part, (ToolCallPart, NativeToolCallPart)):
                name = part.tool_name
                if name in answering or name.startswith(tuple(f"{tool}_" for tool in answering)):
                    continue  # structured output: reported as the turn's data
                started.add(part.tool_call_id)
                events.append(OperationStarted(part.tool_call_id, ToolOperation(part.tool_name, jsonable(_arguments(part)))))
            elif isinstance(part, (ToolReturnPart, NativeToolReturnPart)):
                if part.tool_call_id in started:
                    outcome = getattr(part, "outcome", "success")
                    events.append(OperationFinished(part.tool_call_id, _FINISHED.get(outcome, "failed"), jsonable(part.content)))
            elif isinstance(part, RetryPromptPart):
                if part.tool_call_id in started:  # the tool failed, or its arguments were refused: the model is told
                    said = part.model_response() if callable(getattr(part, "model_response", None)) else str(part.content)
                    events.append(OperationFinished(part.tool_call_id, "failed", {"error": said}))
            elif isinstance(part, TextPart):
                if part.content:
                    events.append(Message(part.content))
            elif isinstance(part, ThinkingPart):
                if part.content:
                    events.append(Thinking(part.content))
            elif isinstance(part, CompactionPart):
                events.append(Compaction())
        if isinstance(message, ModelResponse) and message.finish_reason in _FAILED_FINISH:
            status = "failed"
    data: Any = MISSING
    if isinstance(output, DeferredToolRequests):
        for call in output.approvals:
            events.append(InputRequested(InputRequest(
                id=call.tool_call_id, prompt=f"Allow the tool {call.tool_name} to run?", action=call.tool_name,
                input=jsonable(_arguments(call)), options=(_APPROVE, _DENY),
            )))
        if output.approvals and status == "completed":
            status = "waiting"
    elif output is not MISSING and output is not None and not isinstance(output, str):
        data = jsonable(output)
    return Turn(events, status, data=data, usage=_usage(usage))


def pydantic_ai_agent(
    agent: Any,
    *,
    name: str | None = None,
    deps: Any = _NO_DEPS,
    model: Callable[[AgentContext], Any] | None = None,
    model_settings: Mapping[str, Any] | None = None,
    deny_reason: str = DENY_REASON,
    evidence_coverage: EvidenceCoverage = pydantic_ai_evidence_coverage,
) -> DefinedAgent:
    """Your pydantic-ai `Agent`, run once per turn with the session line's message history.

    `deps` is the run's dependencies, or a function of the turn's context returning them; `model` a function
    of the context choosing the model (`lambda ctx: f"openai:{ctx.model}"`), else the agent's own is used;
    `model_settings` are passed to every run. For tools that need approval, give the agent
    `output_type=[str, DeferredToolRequests]`, as pydantic-ai asks."""
    run = getattr(agent, "run", None)
    if not callable(run) or not hasattr(agent, "iter"):
        raise TypeError(f"pydantic_ai_agent takes a pydantic_ai.Agent, got {type(agent).__name__}")
    if model is not None and not callable(model):
        raise TypeError("pydantic_ai_agent model takes a function of the turn's context returning the model "
                        f"(model=lambda ctx: f\"openai:{{ctx.model}}\"), got {type(model).__name__}")
    if model_settings is not None and not isinstance(model_settings, Mapping):
        raise TypeError("pydantic_ai_agent model_settings takes a dict of pydantic-ai model settings, like "
                        f"model_settings={{'temperature': 0}}, got {type(model_settings).__name__}")
    if not isinstance(deny_reason, str) or not deny_reason.strip():
        raise TypeError("pydantic_ai_agent deny_reason takes the text a denied tool call tells the model, like "
                        f"deny_reason='The user denied this call.', got {deny_reason!r}")

    deps_type = getattr(agent, "deps_type", None)
    if deps is _NO_DEPS:
        if _needs_deps(deps_type):  # pydantic-ai would run it with None, and the first tool to read ctx.deps fail
            shown = getattr(deps_type, "__name__", None) or repr(deps_type)
            named = f" {agent.name!r}" if getattr(agent, "name", None) else ""
            raise TypeError(f"pydantic_ai_agent: the agent{named} has deps_type={shown} but no deps were given: "
                            "pydantic_ai_agent(agent, deps=…) with what your app passes to agent.run, or "
                            "deps=lambda ctx: … to build them per turn (deps=None if its tools do without)")
        deps = None
    answering = _output_tool_names(getattr(agent, "output_type", None))

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        from pydantic_ai import BinaryContent, DeferredToolResults, ToolDenied

        history = ctx.session.get(_HISTORY)
        waiting = ctx.session.take(_WAITING)
        options: dict[str, Any] = {"message_history": history, "deps": deps(ctx) if callable(deps) else deps}
        if model is not None:
            options["model"] = model(ctx)
        if model_settings is not None:
            options["model_settings"] = dict(model_settings)
        if turn_input.output_schema is not None:
            chosen = _asked_output(turn_input.output_schema, getattr(agent, "output_type", str))
            if chosen is not None:
                options["output_type"] = chosen
        prompt: Any
        if waiting and turn_input.responses:  # answers to the approvals the last turn asked for
            answers = {response.request_id: response for response in turn_input.responses}
            unanswered = [call_id for call_id in waiting if call_id not in answers]
            if unanswered:  # pydantic-ai refuses a run that leaves one out (UserError)
                ctx.session.set(_WAITING, waiting)
                raise partly_answered(len(waiting), unanswered, "tool approvals the last turn waits for",
                                      "pydantic-ai runs the agent again only with an answer for each")
            options["deferred_tool_results"] = DeferredToolResults(approvals={
                call_id: True if answers[call_id].option_id == _APPROVE.id
                else ToolDenied(answers[call_id].text or deny_reason)
                for call_id in waiting if call_id in answers
            })
            prompt = None
        else:
            import base64

            files = [BinaryContent(base64.b64decode(attached.data_base64), media_type=attached.mime_type)
                     for attached in turn_input.files]
            prompt = [turn_input.text, *files] if files else turn_input.text
        result = await agent.run(prompt, **options)
        ctx.session.set(_HISTORY, result.all_messages())
        usage = result.usage() if callable(result.usage) else result.usage  # (a property since pydantic-ai 2)
        turn = turn_from_pydantic_ai(result.new_messages(), output=result.output, usage=usage, output_tools=answering,
                                     open_calls=waiting or ())
        if turn.status == "waiting":
            ctx.session.set(_WAITING, [event.request.id for event in turn.events if isinstance(event, InputRequested)])
        return turn

    return define_agent(name=name or getattr(agent, "name", None) or "pydantic-ai", send=send,
                        evidence_coverage=evidence_coverage)
