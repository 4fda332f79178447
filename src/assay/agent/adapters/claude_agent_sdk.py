"""The Claude Agent SDK (`claude-agent-sdk`) as an assay agent, and its messages as a turn (NiceEval's
`createClaudeSdkEventStream`, the Python converter its scope names).

`claude_agent_sdk_agent(options)` runs the SDK's `query()` once per turn with the eval's message, the way your app
calls it: the Claude Code CLI the SDK starts runs the model and the tool loop, and every tool call and result comes
back in its message stream. A session line is one Claude session: its first turn starts one, and each later turn
resumes it (`resume=` the session id the last result gave). `ClaudeSdkTranscript` folds the messages (the SDK's
objects, or the stream-json dicts the CLI prints) into a turn as they arrive; `turn_from_claude_agent_sdk(messages)`
is the converter alone, for a query you run yourself.

What the messages become:

- an assistant text block is an assistant message, a thinking block `Thinking`; an assistant message the CLI made
  up to report an API failure (its `error` set) is an `ErrorEvent`, never the reply;
- each `tool_use` block is `operation.started` (its input as input; the built-in tools get their canonical name:
  `Bash` is `shell` with the command it ran, `Read` `file_read`, `Edit` `file_edit`, `Task`/`Agent` `agent_task`, …)
  and the user message's `tool_result` with the same id `operation.finished`: `completed`, `failed` when
  `is_error`, `rejected` when the CLI denied it (a `permission_denied` system message, or the result's
  `permission_denials`) or a `can_use_tool` callback (or `mark_rejected`) did; a server tool (`server_tool_use`:
  web search, web fetch) is a call too, finished by its result block; a `Skill` call that completed is also
  `skill.loaded`;
- a subagent's messages (`parent_tool_use_id` set: the `Task` call that started it) add their tool calls and results
  to the turn, since they act on the same workspace, but not their text or thinking: the reply is the main
  conversation's, and the subagent's answer is its `Task` call's output;
- a `compact_boundary` system message is `Compaction` (its trigger as the reason);
- the result: its `usage` is the turn's (input without cache reads and writes, output, cache reads, cache writes,
  thinking) with the run's cost (`total_cost_usd` counts the whole session when it was resumed: the turn's cost is
  what it grew by); `structured_output` is the turn's data; a result with `is_error` or an error
  subtype (`error_max_turns`, `error_during_execution`, …) is a failed turn with an `ErrorEvent` saying why.

Partial-message `stream_event`s, rate-limit and hook notices and the other system messages (init, task
progress, status) are not events: the complete messages that follow them say the same.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from assay.agent.adapter import DefinedAgent, SendFailure, define_agent
from assay.agent.context import AgentContext, say_once_a_run
from assay.agent.model import (
    COMPLETE, MISSING, Compaction, Coverage, ErrorEvent, EvidenceCoverage, Message, OperationFinished,
    OperationStarted, SkillLoaded, StreamEvent, Thinking, ToolOperation, Turn, TurnInput, Usage, partial,
    unavailable,
)
from assay.agent.session import create_session_slot
from assay.core.jsonvalue import jsonable

__all__ = ["ClaudeSdkTranscript", "claude_agent_sdk_agent", "claude_agent_sdk_evidence_coverage",
           "turn_from_claude_agent_sdk"]

# The CLI runs the tool loop and reports every call it makes (a subagent's too, by `parent_tool_use_id`) as a
# `tool_use` block and its outcome as a `tool_result`, every denial as `permission_denied` and in the result, and
# the run's usage and cost in the result: nothing the agent does happens outside the stream. A turn whose stream
# holds a block or frame this converter does not know, or no result, says so (a per-turn downgrade).
claude_agent_sdk_evidence_coverage = EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE)
_RESUME = create_session_slot("claude-agent-sdk session to resume, and its cost so far")

# Claude Code's built-in tools and what they are; all but Bash run no command.
_CANONICAL_TOOLS = {
    "Bash": "shell", "Read": "file_read", "Write": "file_write", "Edit": "file_edit", "MultiEdit": "file_edit",
    "NotebookEdit": "file_edit", "Glob": "glob", "Grep": "grep", "LS": "list_dir", "WebFetch": "web_fetch",
    "WebSearch": "web_search", "Task": "agent_task", "Agent": "agent_task",
}
_NO_COMMAND_TOOLS = frozenset(set(_CANONICAL_TOOLS) - {"Bash"} | {"TodoWrite", "Skill", "ExitPlanMode"})
_SERVER_TOOLS = {"web_search": "web_search", "web_fetch": "web_fetch"}
# Frames that say nothing a complete message does not: partial deltas, notices, the control protocol.
_QUIET_FRAMES = frozenset({
    "stream_event", "rate_limit_event", "keep_alive", "control_request", "control_response", "control_cancel_request",
    "transcript_mirror", "tool_progress", "auth_status", "prompt_suggestion", "tool_use_summary", "conversation_reset",
})
_QUIET_BLOCKS = frozenset({"redacted_thinking", "image", "document"})
_EFFORTS = ("low", "medium", "high", "xhigh", "max")
# Said once a run too, not only in `assay agent show`: each means the run is not quite what the experiment says.
say_once_a_run("claude-agent-sdk-effort-ignored", "the experiment's reasoning effort was not used")
say_once_a_run("claude-agent-sdk-file-skipped", "the agent did not see the file")


# -- SDK objects as the frames the CLI prints -------------------------------------------------------------------

def _kinds(value: Any) -> set[str]:
    return {cls.__name__ for cls in type(value).__mro__}


def _block(block: Any) -> Any:
    """A content block (the SDK's dataclass, or the dict the CLI printed) as the CLI printed it."""
    if isinstance(block, Mapping):
        return block
    kinds = _kinds(block)
    if "TextBlock" in kinds:
        return {"type": "text", "text": block.text}
    if "ThinkingBlock" in kinds:
        return {"type": "thinking", "thinking": block.thinking}
    if "ToolUseBlock" in kinds:
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if "ServerToolUseBlock" in kinds:
        return {"type": "server_tool_use", "id": block.id, "name": block.name, "input": block.input}
    if "ToolResultBlock" in kinds:
        return {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": block.content,
                "is_error": block.is_error}
    if "ServerToolResultBlock" in kinds:
        return {"type": "server_tool_result", "tool_use_id": block.tool_use_id, "content": block.content}
    return {"type": type(block).__name__}


def _frame(message: Any) -> Mapping[str, Any]:
    """An SDK message as the stream-json frame the CLI printed for it (a dict is taken as that frame)."""
    if isinstance(message, Mapping):
        return message
    kinds = _kinds(message)
    if "AssistantMessage" in kinds:
        return {"type": "assistant", "parent_tool_use_id": message.parent_tool_use_id, "error": message.error,
                "session_id": message.session_id,
                "message": {"id": message.message_id, "model": message.model, "usage": message.usage,
                            "stop_reason": message.stop_reason, "content": [_block(part) for part in message.content]}}
    if "UserMessage" in kinds:
        content = message.content if isinstance(message.content, str) else [_block(part) for part in message.content]
        return {"type": "user", "parent_tool_use_id": message.parent_tool_use_id,
                "tool_use_result": message.tool_use_result, "message": {"role": "user", "content": content}}
    if "SystemMessage" in kinds:  # (its subclasses too: task, hook and mirror notices keep the raw frame as data)
        return {**dict(message.data or {}), "type": "system", "subtype": message.subtype}
    if "ResultMessage" in kinds:
        return {"type": "result", **{field.name: getattr(message, field.name) for field in dataclasses.fields(message)}}
    if "StreamEvent" in kinds:
        return {"type": "stream_event", "session_id": message.session_id}
    if "RateLimitEvent" in kinds:
        return {"type": "rate_limit_event"}
    if "ConversationResetMessage" in kinds:
        return {"type": "conversation_reset", "session_id": message.session_id}
    raise TypeError(f"ClaudeSdkTranscript.feed takes a Claude Agent SDK message (AssistantMessage, UserMessage, "
                    f"SystemMessage, ResultMessage, …) or the stream-json dict the CLI prints for one "
                    f"({{\"type\": \"assistant\", \"message\": {{…}}}}), got {type(message).__name__}")


# -- pieces of a turn ---------------------------------------------------------------------------------------

def _tool_operation(name: str, given: Any, *, server: bool = False) -> ToolOperation:
    from assay.agent.logical_command import (
        not_command_projection, opaque_command_projection, shell_command_projection,
    )

    arguments = jsonable(given)
    if server:
        canonical = _SERVER_TOOLS.get(name)
        return ToolOperation(name, arguments, tool=canonical, command=not_command_projection() if canonical else None)
    command: Any = None
    if name == "Bash":
        line = given.get("command") if isinstance(given, Mapping) else None
        command = shell_command_projection(line) if isinstance(line, str) else opaque_command_projection(
            "unsupported-protocol")
    elif name in _NO_COMMAND_TOOLS:
        command = not_command_projection()
    tool = _CANONICAL_TOOLS.get(name)
    if tool is None and name.startswith("mcp__"):
        tool = f"mcp:{name.split('__')[1]}"  # (a server's tool: mcp__<server>__<tool>)
    return ToolOperation(name, arguments, tool=tool, command=command)


def _output(content: Any) -> Any:
    """A tool result's content, as the model read it: text blocks joined, JSON text read as JSON."""
    if isinstance(content, list) and all(isinstance(part, Mapping) and part.get("type") == "text" for part in content):
        content = "".join(str(part.get("text", "")) for part in content)
    if isinstance(content, str):
        if content[:1] in ("{", "["):
            try:
                return json.loads(content)
            except ValueError:
                return content
        return content
    return MISSING if content is None else jsonable(content)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def _usage(usage: Any, cost: float | None = None) -> Usage | None:
    """Anthropic's usage: its `input_tokens` already leave out the cache reads and writes."""
    if not isinstance(usage, Mapping):
        return None
    given, output = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    if given is None and output is None:
        return None
    details = usage.get("output_tokens_details")
    reasoning = _count(details.get("thinking_tokens")) if isinstance(details, Mapping) else None
    return Usage(input_tokens=given, output_tokens=output,
                 cache_read_tokens=_count(usage.get("cache_read_input_tokens")),
                 cache_creation_tokens=_count(usage.get("cache_creation_input_tokens")),
                 reasoning_tokens=reasoning or None, cost_usd=cost)


def _failure_text(result: Mapping[str, Any]) -> str:
    """Why a result failed, in the CLI's words: its errors, else its text, else its subtype."""
    errors = [str(error) for error in result.get("errors") or () if str(error).strip()]
    if errors:
        return "; ".join(errors)
    text = result.get("result")
    if isinstance(text, str) and text.strip():
        return text.strip()
    subtype = result.get("subtype")
    if isinstance(subtype, str) and subtype not in ("", "success"):
        return subtype
    if result.get("api_error_status") is not None:
        return f"API error (HTTP {result['api_error_status']})"
    return "the run ended with an error"


class ClaudeSdkTranscript:
    """Folds a Claude Agent SDK query's messages, in order, into a Turn (and the session id to resume).

    A resumed session's result counts the cost of the whole session (`total_cost_usd`), its usage only this run's:
    `cost_before` is what the session's last result said, so the turn's cost is the difference."""

    def __init__(self, *, cost_before: float = 0.0) -> None:
        self.cost_before = cost_before
        self.events: list[StreamEvent] = []
        self.session_id: str | None = None
        self.result: Mapping[str, Any] | None = None
        self.unknown: set[str] = set()
        self.rejected: dict[str, str] = {}  # tool_use_id -> why it was denied
        self._started: dict[str, str] = {}  # tool_use_id -> tool name
        self._finished: set[str] = set()
        self._reply_usage: dict[str, Any] = {}  # assistant message id -> its usage (the CLI repeats it per block)

    # -- input --------------------------------------------------------------------------------------------
    def feed(self, message: Any) -> list[StreamEvent]:
        """One message (an SDK message object, or the CLI's stream-json dict); returns the events it added."""
        frame = _frame(message)
        before = len(self.events)
        kind = frame.get("type")
        if isinstance(frame.get("session_id"), str) and frame["session_id"]:
            self.session_id = frame["session_id"]
        if kind == "assistant":
            self._assistant(frame)
        elif kind == "user":
            self._user(frame)
        elif kind == "system":
            if frame.get("subtype") == "permission_denied" and frame.get("tool_use_id"):
                self.mark_rejected(str(frame["tool_use_id"]), str(frame.get("message") or "permission was denied"))
            elif frame.get("subtype") == "compact_boundary":
                metadata = frame.get("compact_metadata")
                trigger = metadata.get("trigger") if isinstance(metadata, Mapping) else None
                self.events.append(Compaction(str(trigger) if trigger else None))
        elif kind == "result":
            self._result(frame)
        elif kind not in _QUIET_FRAMES:
            self.unknown.add(f"message {kind}")
        return self.events[before:]

    def feed_line(self, line: str | bytes) -> list[StreamEvent]:
        """One line the CLI printed (`claude -p --output-format stream-json --verbose`); a blank one is skipped."""
        if isinstance(line, (bytes, bytearray)):  # (a file opened in binary)
            line = bytes(line).decode("utf-8", "replace")
        line = line.strip()
        if not line:
            return []
        try:
            frame = json.loads(line)
        except ValueError:
            frame = None
        if not isinstance(frame, Mapping):
            raise ValueError(f"ClaudeSdkTranscript.feed_line takes one line of the CLI's stream-json output (a JSON "
                             f"object), got {line[:80]!r}")
        return self.feed(frame)

    def mark_rejected(self, tool_use_id: str, reason: str = "the call was denied") -> None:
        """Say a call was denied (a `can_use_tool` callback's `PermissionResultDeny`, a hook's `deny`): it finishes
        `rejected` whatever its tool result says."""
        self.rejected[str(tool_use_id)] = reason

    def _assistant(self, frame: Mapping[str, Any]) -> None:
        body = frame.get("message") if isinstance(frame.get("message"), Mapping) else {}
        content = body.get("content")
        main = frame.get("parent_tool_use_id") is None
        failed_reply = frame.get("error")
        if main and body.get("id") and isinstance(body.get("usage"), Mapping):
            self._reply_usage[str(body["id"])] = body["usage"]
        if isinstance(content, str):  # (the Messages API's short form of one text block)
            content = [{"type": "text", "text": content}]
        for block in content if isinstance(content, list) else ():
            block = _block(block)
            kind = block.get("type")
            if kind == "text":
                if not main or not block.get("text"):
                    continue  # (a subagent's text is its own: its answer is its Task call's output)
                self.events.append(ErrorEvent(f"{failed_reply}: {block['text']}") if failed_reply
                                   else Message(str(block["text"])))
            elif kind == "thinking":
                if main and block.get("thinking"):
                    self.events.append(Thinking(str(block["thinking"])))
            elif kind in ("tool_use", "server_tool_use"):
                self._start(str(block.get("id")), str(block.get("name")), block.get("input"),
                            server=kind == "server_tool_use")
            elif isinstance(kind, str) and kind.endswith("tool_result") and block.get("tool_use_id"):
                content = block.get("content")  # a server tool's result, in the reply itself
                error = isinstance(content, Mapping) and str(content.get("type", "")).endswith("_error")
                self._finish(str(block["tool_use_id"]), "failed" if error else "completed", _output(content))
            elif kind not in _QUIET_BLOCKS:
                self.unknown.add(f"assistant {kind} block")

    def _user(self, frame: Mapping[str, Any]) -> None:
        body = frame.get("message") if isinstance(frame.get("message"), Mapping) else {}
        content = body.get("content")
        if not isinstance(content, list):
            return  # the prompt (ours, or one the CLI replays): the runner records what the eval sent
        for block in content:
            block = _block(block)
            if block.get("type") == "tool_result" and block.get("tool_use_id"):
                status = "failed" if block.get("is_error") else "completed"
                self._finish(str(block["tool_use_id"]), status, _output(block.get("content")))

    def _start(self, call_id: str, name: str, given: Any, *, server: bool = False) -> None:
        if call_id in self._started:
            return
        self._started[call_id] = name
        self.events.append(OperationStarted(call_id, _tool_operation(name, given, server=server)))

    def _finish(self, call_id: str, status: str, output: Any) -> None:
        if call_id not in self._started or call_id in self._finished:
            return  # (a result for a call this stream never started: not one this turn made)
        self._finished.add(call_id)
        self.events.append(OperationFinished(call_id, status, output, "tool"))
        if status == "completed" and self._started[call_id] == "Skill":
            started = next(event for event in self.events
                           if isinstance(event, OperationStarted) and event.operation_id == call_id)
            given = started.operation.input if isinstance(started.operation.input, Mapping) else {}
            skill = given.get("skill") or given.get("command")
            if isinstance(skill, str) and skill:
                self.events.append(SkillLoaded(skill, call_id))

    def _result(self, frame: Mapping[str, Any]) -> None:
        self.result = frame
        for denial in frame.get("permission_denials") or ():
            if not isinstance(denial, Mapping) or not denial.get("tool_use_id"):
                continue
            call_id = str(denial["tool_use_id"])
            self.rejected.setdefault(call_id, f"permission to use {denial.get('tool_name') or 'the tool'} was denied")
            if call_id not in self._started and denial.get("tool_name"):
                self._start(call_id, str(denial["tool_name"]), denial.get("tool_input"))
        if frame.get("is_error") or str(frame.get("subtype") or "success") != "success":
            self.events.append(ErrorEvent(_failure_text(frame)))

    # -- output -------------------------------------------------------------------------------------------
    @property
    def completed(self) -> bool:
        """Whether the stream held a result (a stream cut off before it says nothing about how the run ended)."""
        return self.result is not None

    @property
    def total_cost(self) -> float | None:
        """The session's cost so far, as the result said (the `cost_before` of the session's next turn)."""
        return _number((self.result or {}).get("total_cost_usd"))

    def _turn_cost(self) -> float | None:
        result = self.result or {}
        since = result.get("model_usage_since_last_result")  # (newer CLIs say this run's own, per model)
        if isinstance(since, Mapping) and since:
            costs = [_number(counted.get("costUSD")) for counted in since.values() if isinstance(counted, Mapping)]
            if costs and None not in costs:
                return round(sum(costs), 10)  # type: ignore[arg-type]
        total = self.total_cost
        return None if total is None else round(max(0.0, total - self.cost_before), 10)

    @property
    def failed(self) -> bool:
        result = self.result
        return result is not None and bool(result.get("is_error") or str(result.get("subtype") or "success") != "success")

    def turn(self) -> Turn:
        events: list[StreamEvent] = []
        for event in self.events:
            if isinstance(event, OperationFinished) and event.operation_id in self.rejected:
                event = dataclasses.replace(event, status="rejected")
            events.append(event)
        for call_id, reason in self.rejected.items():  # denied before it ran, with no tool result to say so
            if call_id in self._started and call_id not in self._finished:
                events.append(OperationFinished(call_id, "rejected", {"error": reason}, "tool"))
        coverage: dict[str, Coverage] = {}
        if self.unknown:
            why = f"skipped Claude Agent SDK {', '.join(sorted(self.unknown))} this converter does not know"
            coverage["events"] = partial(why)
            coverage["actions"] = partial(why)
        result = self.result or {}
        usage = _usage(result.get("usage"), self._turn_cost())
        if usage is None and self._reply_usage:  # no result: what the replies themselves counted
            replies = [_usage(counted) for counted in self._reply_usage.values()]
            usage = Usage(*(sum(getattr(reply, name) or 0 for reply in replies if reply is not None)
                            for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")))
            coverage["usage"] = partial("the stream ended without its result: usage is the replies' own count")
        elif usage is None:
            coverage["usage"] = unavailable("the Claude Agent SDK stream reported no usage for this turn")
        if self.result is None:
            coverage["status"] = partial("the stream ended without a result message")
        data = result.get("structured_output")
        return Turn(events, "failed" if self.failed else "completed", MISSING if data is None else jsonable(data),
                    usage, coverage or None)


def turn_from_claude_agent_sdk(messages: Iterable[Any], *, rejected: Mapping[str, str] | None = None,
                               cost_before: float = 0.0) -> Turn:
    """A Turn from a Claude Agent SDK query's messages (what `query()` or `receive_response()` yielded, or the
    stream-json lines/dicts the CLI printed, or its whole output as one str or bytes). `rejected` maps tool_use ids
    your own `can_use_tool` denied to why; `cost_before` is the `total_cost_usd` of the session's previous result,
    for a query that resumed it."""
    if rejected is not None and not isinstance(rejected, Mapping):
        raise TypeError(f"turn_from_claude_agent_sdk rejected maps each denied tool_use id to why "
                        f"({{\"toolu_1\": \"denied by can_use_tool\"}}), got {type(rejected).__name__}")
    if isinstance(messages, (str, bytes, bytearray)):  # the CLI's whole output, not one message per item
        text = messages.decode("utf-8", "replace") if isinstance(messages, (bytes, bytearray)) else messages
        messages = text.splitlines()
    transcript = ClaudeSdkTranscript(cost_before=cost_before)
    for call_id, reason in (rejected or {}).items():
        transcript.mark_rejected(call_id, reason)
    for message in messages:
        if isinstance(message, (str, bytes, bytearray)):
            transcript.feed_line(message)
        else:
            transcript.feed(message)
    return transcript.turn()


# -- the agent ------------------------------------------------------------------------------------------------

def content_blocks(turn_input: TurnInput, ctx: AgentContext, *, skipped: str, who: str) -> list[dict[str, Any]]:
    """The user message as Anthropic content blocks: images and PDFs as they are, text files as text, then the text;
    another kind of file is left out with a `skipped` warning saying `who` takes what (shared with Claude Code)."""
    import base64

    blocks: list[dict[str, Any]] = []
    for attached in turn_input.files:
        source = {"type": "base64", "media_type": attached.mime_type, "data": attached.data_base64}
        if attached.mime_type.startswith("image/"):
            blocks.append({"type": "image", "source": source})
        elif attached.mime_type == "application/pdf":
            blocks.append({"type": "document", "source": source})
        elif attached.mime_type.startswith("text/"):
            text = base64.b64decode(attached.data_base64).decode("utf-8", "replace")
            blocks.append({"type": "text", "text": f"{attached.filename or 'file'}:\n{text}"})
        else:
            ctx.diagnostic(skipped, "warning", f"{who} takes images, PDFs and text files; {attached.filename or 'a file'} "
                                               f"({attached.mime_type}) was not sent")
    if turn_input.text:
        blocks.append({"type": "text", "text": turn_input.text})
    return blocks


def _content(turn_input: TurnInput, ctx: AgentContext) -> Any:
    """The user message's content: its text alone, or with its files as content blocks."""
    if not turn_input.files:
        return turn_input.text
    return content_blocks(turn_input, ctx, skipped="claude-agent-sdk-file-skipped", who="Claude")


def _stderr_said(said: Any, error: Any = None) -> str:
    lines = list(said)
    if not lines and error is not None and getattr(error, "stderr", None) and "Check stderr" not in error.stderr:
        lines = str(error.stderr).strip().splitlines()[-20:]
    return f"; the CLI said: {' | '.join(lines)[-1500:]}" if lines else ""


async def _one_prompt(content: Any) -> AsyncIterator[dict[str, Any]]:
    # (a prompt stream, not a string: it can carry files, and it keeps stdin open for `can_use_tool`)
    yield {"type": "user", "session_id": "", "message": {"role": "user", "content": content}, "parent_tool_use_id": None}


def _checked_options(given: Any, where: str, folder: Path | None = None) -> Any:
    if given is None:
        from claude_agent_sdk import ClaudeAgentOptions

        given = ClaudeAgentOptions()
    if "ClaudeAgentOptions" not in _kinds(given):
        raise TypeError(f"{where} must be a claude_agent_sdk.ClaudeAgentOptions, got {type(given).__name__}")
    if given.resume or given.continue_conversation or given.session_id:
        set_ = [name for name in ("resume", "continue_conversation", "session_id") if getattr(given, name)]
        raise ValueError(f"{where} sets {', '.join(set_)}: claude_agent_sdk_agent starts a Claude session per session "
                         "line and resumes it itself; leave it out (a fixed one would make every line one conversation)")
    _check_fields(given, where)
    if folder is not None and given.cwd is None:
        return dataclasses.replace(given, cwd=str(folder))  # the project's folder, wherever assay was started
    if given.cwd is not None:
        cwd = Path(given.cwd).expanduser()
        if not cwd.is_absolute() and folder is not None:
            cwd = folder / cwd  # a relative cwd is the project's, as process_agent's command is
        if not cwd.is_dir():
            raise ValueError(f"{where} cwd={str(given.cwd)!r} is not a folder ({cwd} "
                             f"{'is a file' if cwd.exists() else 'does not exist'}): give the folder the Claude Code "
                             "CLI should work in, absolute or relative to the project folder (for a folder made per "
                             "attempt, options=lambda ctx: ClaudeAgentOptions(cwd=...))")
        if str(cwd) != str(given.cwd):
            return dataclasses.replace(given, cwd=str(cwd))
    return given


@functools.cache
def _field_rules() -> dict[str, tuple[bool, tuple[str, ...], tuple[str, ...]]]:
    """Per option that takes a list or a fixed word: (takes a list, the words it takes, the words its list takes),
    read from the SDK's own types."""
    import typing

    from claude_agent_sdk import ClaudeAgentOptions

    def words(kind: Any) -> list[str]:
        origin = typing.get_origin(kind)
        if origin is typing.Literal:
            return [word for word in typing.get_args(kind) if isinstance(word, str)]
        if origin is typing.Union or type(kind).__name__ == "UnionType":
            return [word for member in typing.get_args(kind) for word in words(member)]
        return []

    rules: dict[str, tuple[bool, tuple[str, ...], tuple[str, ...]]] = {}
    for name, hint in typing.get_type_hints(ClaudeAgentOptions).items():
        members = typing.get_args(hint) if typing.get_origin(hint) is typing.Union or type(hint).__name__ == \
            "UnionType" else (hint,)
        lists = [member for member in members if typing.get_origin(member) is list]
        own = words(hint)
        listed = [word for member in lists for argument in typing.get_args(member) for word in words(argument)]
        if lists or own:
            rules[name] = (bool(lists), tuple(own), tuple(listed))
    return rules


def _check_fields(options: Any, where: str) -> None:
    """A near miss of a word the CLI takes (`permission_mode="acceptEdit"`), or a string where a list goes
    (`allowed_tools="Read"`, which the SDK would send as `R,e,a,d`), refused with the field and the fix."""
    import difflib

    try:
        rules = _field_rules()
    except Exception:  # noqa: BLE001 - an SDK whose types cannot be read: the CLI checks them itself
        return
    for name, (takes_list, own, listed) in rules.items():
        value = getattr(options, name, None)
        if name == "betas":  # (new betas come out before the SDK lists them: any name may be meant)
            listed = ()
        if isinstance(value, str) and value not in own:
            if takes_list:
                raise TypeError(f"{where} {name}={value!r} is a string; {name} takes a list: {name}=[{value!r}]")
            given, allowed = [value], own
        elif takes_list and isinstance(value, (list, tuple)):
            given, allowed = [one for one in value if isinstance(one, str)], listed
        else:
            continue
        for one in given:  # (only a near miss: a newer CLI may take words the SDK's types do not list yet)
            near = difflib.get_close_matches(one, allowed, n=1, cutoff=0.75)
            if near and one not in allowed:
                raise ValueError(f"{where} {name}={one!r} is not one of {', '.join(allowed)}; did you mean {near[0]!r}?")


def _takes_one(function: Callable[..., Any]) -> bool:
    """Whether `function` can be called with one positional argument (False when its signature says not)."""
    try:
        inspect.signature(function).bind(None)
    except TypeError:
        return False
    except ValueError:  # (no signature to read: a builtin)
        return True
    return True


def claude_agent_sdk_agent(
    options: Any = None,
    *,
    name: str = "claude-agent-sdk",
    transport: Callable[[Any], Any] | None = None,
    evidence_coverage: EvidenceCoverage = claude_agent_sdk_evidence_coverage,
) -> DefinedAgent:
    """The Claude Agent SDK's `query()` with your `ClaudeAgentOptions` (or a function of the turn's context returning
    them), run once per turn; a session line is one Claude session, resumed turn by turn.

    The experiment's `model` and `reasoning_effort`, when it names them, are the query's `model` and `effort`;
    `t.send(..., output=Schema)` asks for `output_format` with that schema. `transport` is a function of the turn's
    options returning a new SDK `Transport` (the SDK closes it after each query), for a CLI run elsewhere or a
    scripted one in tests. A `can_use_tool` callback's denials are `rejected` calls."""
    from assay.agent.discovery import loading_project

    folder = loading_project()  # a relative cwd is the project's, wherever assay was started
    if options is None or not callable(options):
        options = _checked_options(options, "claude_agent_sdk_agent options", folder)
    elif not _takes_one(options):
        raise TypeError("claude_agent_sdk_agent options takes ClaudeAgentOptions, or a function of the turn's context "
                        "returning them (options=lambda ctx: ClaudeAgentOptions(...)); "
                        f"{getattr(options, '__qualname__', type(options).__name__)} cannot be called with the context")
    if transport is not None and (not callable(transport) or hasattr(transport, "read_messages")
                                  or isinstance(transport, type) and inspect.isabstract(transport)
                                  or not _takes_one(transport)):
        raise TypeError("claude_agent_sdk_agent transport takes a function of the turn's ClaudeAgentOptions returning "
                        "a new Transport (the SDK closes its transport after every query): "
                        f"transport=lambda options: MyTransport(options), got {type(transport).__name__}")

    # The SDK logs a failed CLI as "Fatal error in message reader" with no handler of its own, so Python would print it
    # on stderr; the send failure says it, with what the CLI said. (A handler you configure still gets its records.)
    sdk_logger = logging.getLogger("claude_agent_sdk")
    if not any(isinstance(handler, logging.NullHandler) for handler in sdk_logger.handlers):
        sdk_logger.addHandler(logging.NullHandler())

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        from claude_agent_sdk import PermissionResultDeny, query
        from claude_agent_sdk import CLIConnectionError, CLINotFoundError, ClaudeSDKError, ProcessError

        if callable(options):
            where = f"the claude_agent_sdk_agent options function {getattr(options, '__qualname__', '')}".rstrip()
            given = options(ctx)  # (an exception of its own is raised as it is: it names its file and line)
            if given is None:
                raise SendFailure(f"{where} returned None: it must return the turn's ClaudeAgentOptions "
                                  "(a missing return?)", acceptance="rejected", retried=True)
            try:
                chosen = _checked_options(given, f"{where}'s result", folder)
            except (TypeError, ValueError) as error:
                raise SendFailure(str(error), acceptance="rejected", retried=True) from None
        else:
            chosen = options  # (checked when the agent was made)
        resume, cost_before = ctx.session.get(_RESUME) or (None, 0.0)
        transcript = ClaudeSdkTranscript(cost_before=cost_before)
        changes: dict[str, Any] = {}
        if resume:
            changes["resume"] = resume
        if ctx.model:
            changes["model"] = ctx.model
        if ctx.reasoning_effort in _EFFORTS:
            changes["effort"] = ctx.reasoning_effort
        elif ctx.reasoning_effort:
            ctx.diagnostic("claude-agent-sdk-effort-ignored", "warning",
                           f"reasoning_effort={ctx.reasoning_effort!r} is not a Claude effort ({', '.join(_EFFORTS)}): "
                           "the query ran with the options' own", dedupe_key="claude-agent-sdk-effort")
        if turn_input.output_schema is not None:
            changes["output_format"] = {"type": "json_schema", "schema": dict(turn_input.output_schema)}
        asks = chosen.can_use_tool
        if asks is not None:
            async def can_use_tool(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
                decision = await asks(tool_name, tool_input, context)
                if isinstance(decision, PermissionResultDeny) and getattr(context, "tool_use_id", None):
                    transcript.mark_rejected(context.tool_use_id, decision.message or "denied by can_use_tool")
                return decision

            changes["can_use_tool"] = can_use_tool
        said: collections.deque[str] = collections.deque(maxlen=20)  # the CLI's stderr, for a failure's message
        own_stderr = chosen.stderr

        def stderr(line: str) -> None:
            if line.strip():
                said.append(line.rstrip())
            if own_stderr is not None:
                own_stderr(line)

        changes["stderr"] = stderr
        turn_options = dataclasses.replace(chosen, **changes)
        custom = transport(turn_options) if transport is not None else None
        if transport is not None and not hasattr(custom, "read_messages"):
            raise SendFailure(f"claude_agent_sdk_agent transport returned {type(custom).__name__}, not a "
                              "claude_agent_sdk Transport", acceptance="rejected", retried=True)
        try:
            async for message in query(prompt=_one_prompt(_content(turn_input, ctx)), options=turn_options,
                                       transport=custom):
                for event in transcript.feed(message):
                    if isinstance(event, OperationStarted):
                        ctx.progress(f"claude: {event.operation.name}")
        except CLINotFoundError as error:
            raise SendFailure(f"claude_agent_sdk_agent: {error} (install the claude-agent-sdk wheel that bundles it, "
                              "or give ClaudeAgentOptions(cli_path=…))", acceptance="rejected", retried=True) from None
        except ProcessError as error:
            if not transcript.completed:  # (after an error result the CLI exits non-zero on purpose: said above)
                raise SendFailure(f"the Claude Code CLI failed before the turn's result: exit code {error.exit_code}"
                                  f"{_stderr_said(said, error)}", acceptance="started") from None
        except CLIConnectionError as error:
            raise SendFailure(f"could not reach the Claude Code CLI: {error}{_stderr_said(said)}",
                              acceptance="rejected" if not transcript.events else "started") from None
        except ClaudeSDKError as error:
            raise SendFailure(f"the Claude Agent SDK failed: {type(error).__name__}: {error}{_stderr_said(said)}",
                              acceptance="started") from None
        if said and custom is None:
            ctx.diagnostic("claude-agent-sdk-cli-stderr", "warning", "the Claude Code CLI wrote to stderr: "
                           + " | ".join(said)[-500:], dedupe_key="claude-agent-sdk-cli-stderr")
        if transcript.session_id:
            ctx.session.capture(transcript.session_id)
            # (the latest id: a CLI that gives a resumed session a new one is resumed from that)
            ctx.session.set(_RESUME, (transcript.session_id, transcript.total_cost or cost_before))
        if not transcript.completed:
            raise SendFailure("the Claude Agent SDK stream ended without a result message, so how the turn ended is "
                              "unknown", acceptance="started")
        return transcript.turn()

    return define_agent(name=name, send=send, evidence_coverage=evidence_coverage)
