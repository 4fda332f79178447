"""An AI SDK `useChat` backend as an agent (NiceEval's `uiMessageStreamAgent`): the eval talks to the chat
route the way the browser does, so the app needs no change.

Each turn POSTs `{id, messages, trigger: "submit-message", …body}`, the whole conversation as UI messages
(kept on the client, in a session slot, as `useChat` keeps it), and reads the UI message stream back: SSE
events of JSON chunks ending with `[DONE]`. The chunks become a turn: text parts are assistant messages,
reasoning is `Thinking`, tool chunks are paired `operation.started`/`operation.finished` events (an error
`failed`, a denial `rejected`), and a `tool-approval-request` makes the turn `waiting` with an
`input.requested` offering `approve` and `deny`. Answering it rewrites the tool part to
`approval-responded` and sends the conversation again; the server's continuation finishes the call.

A stream cut before `[DONE]`, or with chunks after it, is a send failure (`agent-stream-broken`); an HTTP
error status is one too (`agent-http-error`). The protocol carries no token counts, so usage is
unavailable; a turn whose stream held chunks that are not events (sources, files, `data-*` parts, a chunk
type this adapter does not know) says its events are partial.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from assay.agent.adapter import DefinedAgent, SendFailure, define_agent, partly_answered
from assay.agent.adapters.endpoint import BrokenReply, checked_base_url
from assay.agent.adapters.http_agent import ServiceCalls
from assay.agent.context import AgentContext
from assay.agent.model import (
    COMPLETE, ErrorEvent, EvidenceCoverage, InputOption, InputRequest, InputRequested, Message, OperationFinished,
    OperationStarted, StreamEvent, Thinking, ToolOperation, Turn, TurnInput, partial, unavailable,
)
from assay.agent.session import create_session_slot
from assay.core.ratelimit import DEFAULT_MAXIMUM
from assay.core.retry import Resend

__all__ = ["DENY_REASON", "ui_message_stream_agent", "ui_message_stream_evidence_coverage"]

ui_message_stream_evidence_coverage = EvidenceCoverage(
    events=COMPLETE, actions=COMPLETE, messages=COMPLETE,
    usage=unavailable("the UI message stream carries no token counts"),
    status=COMPLETE, data=unavailable("the UI message stream has no structured output"),
)
DENY_REASON = "The user denied this tool call. Do not retry it; continue without it."
_CHAT = create_session_slot("ui message stream chat")
_APPROVE, _DENY = InputOption("approve", "Approve"), InputOption("deny", "Deny")
_NOT_EVENTS = ("source-url", "source-document", "file")
_IGNORED = frozenset({"finish-step", "message-metadata"})
_FAILED_FINISH = frozenset({"length", "content-filter", "error"})


class _Chat:
    """One conversation as `useChat` holds it: its id and its UI messages."""

    __slots__ = ("id", "messages")

    def __init__(self) -> None:
        self.id = f"chat-{uuid.uuid4().hex[:16]}"
        self.messages: list[dict[str, Any]] = []


def _tool_name(part: Mapping[str, Any]) -> str:
    return str(part.get("toolName") or part.get("type", "tool-")[len("tool-"):])


class _Stream:
    """The chunks of one reply folded into the assistant's UI message and the turn's events, in order.

    `message` is the assistant message the reply continues (an approval answered) or a new one."""

    def __init__(self, message: dict[str, Any], project_command: Callable[[str, Any], Any] | None) -> None:
        self.message = message
        self.project_command = project_command
        self.items: list[Any] = []  # events, and the text/reasoning parts whose text is still growing
        self.tools: dict[str, dict[str, Any]] = {
            str(part["toolCallId"]): part for part in message["parts"] if "toolCallId" in part
        }
        self.texts: dict[tuple[str, str], dict[str, Any]] = {}
        self.announced: set[str] = set()  # calls whose operation.started is out (input-available may come twice)
        self.finished: set[str] = set()
        self.failed = False
        self.waiting = False
        self.done = False
        self.chunks = 0
        self.downgrades: dict[str, Any] = {}

    def add(self, data: bytes) -> None:
        if self.done:
            raise BrokenReply(f"the stream went on after [DONE]: {_shown(data)}")
        if data.strip() == b"[DONE]":
            self.done = True
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BrokenReply(f"the stream's event after {self.chunks} chunk(s) is not UTF-8 (byte "
                              f"0x{data[error.start]:02x} at {error.start}): {_shown(data)}; the route must send "
                              "UTF-8") from None
        try:
            chunk = json.loads(text)
        except ValueError:
            raise BrokenReply(f"the stream has a malformed event after {self.chunks} chunk(s): {_shown(data)}") from None
        if not isinstance(chunk, dict) or not isinstance(chunk.get("type"), str):
            raise BrokenReply(f"the stream has an event that is not a UI message chunk: {_shown(data)}")
        self.chunks += 1
        self._chunk(chunk["type"], chunk)

    def _chunk(self, kind: str, chunk: dict[str, Any]) -> None:
        if kind in ("text-start", "text-delta", "text-end", "reasoning-start", "reasoning-delta", "reasoning-end"):
            self._text(kind, chunk)
        elif kind.startswith("tool-"):
            self._tool(kind, chunk)
        elif kind == "start":
            if chunk.get("messageId") and not self.message["parts"]:
                self.message["id"] = str(chunk["messageId"])
        elif kind == "start-step":
            self.message["parts"].append({"type": "step-start"})
        elif kind == "finish":
            reason = chunk.get("finishReason")
            if reason in _FAILED_FINISH:
                self.failed = True
                self.items.append(ErrorEvent(f"the reply finished with reason {reason}"))
        elif kind == "error":
            self.failed = True
            self.items.append(ErrorEvent(str(chunk.get("errorText") or "the server reported an error")))
        elif kind == "abort":
            self.failed = True
            reason = chunk.get("reason")
            self.items.append(ErrorEvent(f"the reply was aborted{': ' + str(reason) if reason else ''}"))
        elif kind in _NOT_EVENTS or kind.startswith("data-"):
            if not (kind.startswith("data-") and chunk.get("transient")):
                self.message["parts"].append({key: value for key, value in chunk.items() if key != "transient"})
            self.downgrades["events"] = partial(f"the stream's {kind} parts are not events")
        elif kind not in _IGNORED:
            self.downgrades["events"] = partial(f"the stream has {kind} chunks, which this adapter does not read")

    def _text(self, kind: str, chunk: dict[str, Any]) -> None:
        family = "text" if kind.startswith("text") else "reasoning"
        key = (family, str(chunk.get("id", "")))
        part = self.texts.get(key)
        if part is None:
            part = self.texts[key] = {"type": family, "text": "", "state": "streaming"}
            self.message["parts"].append(part)
            self.items.append(part)
        if kind.endswith("-delta"):
            part["text"] += str(chunk.get("delta", ""))
        elif kind.endswith("-end"):
            part["state"] = "done"

    def _tool(self, kind: str, chunk: dict[str, Any]) -> None:
        if kind == "tool-input-delta":  # the input arrives whole in tool-input-available
            return
        call_id = str(chunk.get("toolCallId", ""))
        part = self.tools.get(call_id)
        if kind in ("tool-input-start", "tool-input-available", "tool-input-error"):
            if part is None:
                name = str(chunk.get("toolName", ""))
                part = {"type": "dynamic-tool", "toolName": name} if chunk.get("dynamic") else {"type": f"tool-{name}"}
                part.update(toolCallId=call_id, state="input-streaming")
                self.tools[call_id] = part
                self.message["parts"].append(part)
            if kind == "tool-input-start":
                return
            part["input"] = chunk.get("input")
            self._started(part, refused=kind == "tool-input-error")
            if kind == "tool-input-error":
                part.update(state="output-error", errorText=str(chunk.get("errorText", "")))
                self._finished(call_id, "failed", {"error": part["errorText"]})
            else:
                part["state"] = "input-available"
            return
        if part is None:
            self.downgrades["actions"] = partial(f"the stream has a {kind} chunk for a tool call it never started")
            return
        if kind == "tool-approval-request":
            part.update(state="approval-requested", approval={"id": str(chunk.get("approvalId", call_id))})
            self.waiting = True
            self.items.append(InputRequested(InputRequest(
                id=part["approval"]["id"], prompt=f"Allow the tool {_tool_name(part)} to run?", action=_tool_name(part),
                input=part.get("input"), options=(_APPROVE, _DENY),
            )))
        elif kind == "tool-output-available":
            if chunk.get("preliminary"):  # a tool still streaming its result: only the final output counts
                return
            part.update(state="output-available", output=chunk.get("output"))
            self._finished(call_id, "completed", chunk.get("output"))
        elif kind == "tool-output-error":
            part.update(state="output-error", errorText=str(chunk.get("errorText", "")))
            self._finished(call_id, "failed", {"error": part["errorText"]})
        elif kind == "tool-output-denied":
            part["state"] = "output-denied"
            self._finished(call_id, "rejected", (part.get("approval") or {}).get("reason"))
        else:
            self.downgrades["actions"] = partial(f"the stream has {kind} chunks, which this adapter does not read")

    def _started(self, part: dict[str, Any], *, refused: bool = False) -> None:
        if part["toolCallId"] in self.announced:
            return
        self.announced.add(part["toolCallId"])
        name, given = _tool_name(part), part.get("input")
        command = self._command(name, given, refused)
        self.items.append(OperationStarted(part["toolCallId"], ToolOperation(name, given, command=command)))

    def _command(self, name: str, given: Any, refused: bool) -> Any:
        """The call's command projection from `project_tool_command`: a call whose input the route refused
        (`tool-input-error`) never ran, so it ran no command, whatever its input (which may be any text)."""
        if self.project_command is None:
            return None
        if refused:
            from assay.agent.logical_command import not_command_projection

            return not_command_projection()
        from assay.agent.logical_command import check_command_projection

        where = f"ui_message_stream_agent project_tool_command({name!r}, {_short(given)})"
        try:
            command = self.project_command(name, given)
        except Exception as error:  # noqa: BLE001 - the experiment's function: said with the call it could not read
            raise SendFailure(f"{where} raised {type(error).__name__}: {error}; return None for a call it cannot "
                              "read", acceptance="started") from error
        try:
            check_command_projection(command, f"{where}'s result")
        except ValueError as error:
            raise SendFailure(f"{error}", acceptance="started") from None
        return command

    def _finished(self, call_id: str, status: str, output: Any) -> None:
        if call_id in self.finished:
            return
        self.finished.add(call_id)
        self.items.append(OperationFinished(call_id, status, output if output is not None else {}, "tool"))

    def turn(self, denied: Mapping[str, str]) -> Turn:
        if not self.done:
            said = "".join(part["text"] for part in self.texts.values() if part["type"] == "text")
            received = f"; the partial text was {said[:200]!r}" if said else ""
            raise BrokenReply(f"the stream ended after {self.chunks} chunk(s) without [DONE]{received}")
        for call_id, reason in denied.items():  # a denial the server's continuation did not report itself
            if call_id not in self.finished:
                self.tools[call_id]["state"] = "output-denied"
                self._finished(call_id, "rejected", reason)
        events: list[StreamEvent] = []
        for item in self.items:
            if isinstance(item, dict):
                item["state"] = "done"
                if item["text"]:
                    events.append(Message(item["text"]) if item["type"] == "text" else Thinking(item["text"]))
            else:
                events.append(item)
        status = "failed" if self.failed else "waiting" if self.waiting else "completed"
        return Turn(events, status, evidence_coverage=self.downgrades or None)


def _shown(data: bytes) -> str:
    return repr(data[:120].decode("utf-8", "replace"))


def _short(value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False, default=str)
    return shown if len(shown) <= 80 else shown[:80] + "…"


def _user_message(turn_input: TurnInput, number: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": turn_input.text}] if turn_input.text else []
    for attached in turn_input.files:
        part = {"type": "file", "mediaType": attached.mime_type, "url": f"data:{attached.mime_type};base64,{attached.data_base64}"}
        if attached.filename:
            part["filename"] = attached.filename
        parts.append(part)
    return {"id": f"user-{number}", "role": "user", "parts": parts}


def _answer_approvals(chat: _Chat, turn_input: TurnInput, deny_reason: str) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """Each answered approval written into its tool part (`approval-responded`): the assistant message they are
    in, which the reply continues, and the denied calls (call id -> reason)."""
    if not turn_input.responses or not chat.messages or chat.messages[-1].get("role") != "assistant":
        return None, {}
    last = chat.messages[-1]
    by_approval = {part["approval"]["id"]: part for part in last["parts"]
                   if part.get("state") == "approval-requested" and isinstance(part.get("approval"), dict)}
    answered = {response.request_id for response in turn_input.responses}
    unanswered = [f"{approval} ({_tool_name(part)})" for approval, part in by_approval.items() if approval not in answered]
    if unanswered and len(unanswered) < len(by_approval):
        # useChat sends a message back only once each of its approvals is answered; an AI SDK route given one
        # half answered would send the model a tool call without a result.
        raise partly_answered(len(by_approval), unanswered, "tool approvals the last turn waits for",
                              "the AI SDK continues a message only when each of its approvals is answered")
    denied: dict[str, str] = {}
    for response in turn_input.responses:
        part = by_approval.get(response.request_id)
        if part is None:
            continue
        approved = response.option_id == _APPROVE.id
        approval: dict[str, Any] = {"id": response.request_id, "approved": approved}
        if not approved:
            approval["reason"] = response.text or deny_reason
            denied[str(part["toolCallId"])] = approval["reason"]
        part.update(state="approval-responded", approval=approval)
    return last, denied


def ui_message_stream_agent(
    url: str,
    *,
    name: str = "ui-message-stream",
    headers: Mapping[str, str] | None = None,
    body: Mapping[str, Any] | Callable[[AgentContext], Mapping[str, Any]] | None = None,
    project_tool_command: Callable[[str, Any], Any] | None = None,
    deny_reason: str = DENY_REASON,
    evidence_coverage: EvidenceCoverage = ui_message_stream_evidence_coverage,
    timeout: float = 300.0,
    max_attempts: int = 4,
    backoff: float = 0.5,
    max_concurrency: int = DEFAULT_MAXIMUM,
) -> DefinedAgent:
    """The chat route at `url` (`http://127.0.0.1:3000/api/chat`), as `useChat` calls it.

    `body` adds fields to every request (or is a function of the turn's context returning them: the model to
    use, say); `project_tool_command(tool_name, input)` returns each tool call's command projection (see
    `assay.agent.logical_command`), so that `command_match` can read it; `deny_reason` is what a denied
    approval tells the model. The turn's `traceparent` is sent when the project has telemetry."""
    checked_base_url(url, "ui_message_stream_agent url")
    parts = urlsplit(url)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path + (f"?{parts.query}" if parts.query else "")
    if project_tool_command is not None and not callable(project_tool_command):
        raise TypeError("ui_message_stream_agent project_tool_command takes a function (tool name, input) -> command "
                        f"projection, got {type(project_tool_command).__name__}")
    if headers is not None and not isinstance(headers, Mapping):
        raise TypeError("ui_message_stream_agent headers takes a dict of header names to values, like "
                        f"headers={{'Cookie': 'session=…'}}, got {type(headers).__name__}")
    if body is not None and not callable(body) and not isinstance(body, Mapping):
        raise TypeError(f"ui_message_stream_agent body takes a dict or a function of the context, got {type(body).__name__}")

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    if timeout is not None and not (number(timeout) and timeout > 0):
        raise TypeError(f"ui_message_stream_agent timeout takes seconds (a number above 0), like timeout=120, got {timeout!r}")
    if not (isinstance(max_attempts, int) and not isinstance(max_attempts, bool) and max_attempts >= 1):
        raise TypeError(f"ui_message_stream_agent max_attempts takes a whole number of at least 1, like max_attempts=4, "
                        f"got {max_attempts!r}")
    if not (number(backoff) and backoff >= 0):
        raise TypeError(f"ui_message_stream_agent backoff takes seconds (a number, 0 or more), like backoff=0.5, got {backoff!r}")
    calls = ServiceCalls(url, origin, accept="text/event-stream", timeout=timeout, max_attempts=max_attempts,
                         backoff=backoff, max_concurrency=max_concurrency)

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        chat = ctx.session.get(_CHAT)
        if chat is None:
            chat = _Chat()
            ctx.session.set(_CHAT, chat)
            ctx.session.capture(chat.id)
        continued, denied = _answer_approvals(chat, turn_input, deny_reason)
        if continued is None:  # (a turn answering approvals sends the conversation again, with no new message)
            chat.messages.append(_user_message(turn_input, len(chat.messages) + 1))
        extra = body(ctx) if callable(body) else body
        if extra is not None and not isinstance(extra, Mapping):
            raise SendFailure(f"ui_message_stream_agent body returned {type(extra).__name__} {str(extra)[:60]!r}, not the "
                              "dict of fields to add to the request: body=lambda ctx: {\"model\": ctx.model}",
                              acceptance="rejected", retried=True)
        request = {**dict(extra or {}), "id": chat.id, "messages": chat.messages, "trigger": "submit-message"}
        request_headers = {"content-type": "application/json", **dict(headers or {})}
        if ctx.telemetry is not None:
            request_headers.update(ctx.telemetry.headers)

        async def once(attempt: int) -> Turn | Resend:
            from assay.judge.openai_http import HTTPStatusError

            message = copy.deepcopy(continued) if continued is not None else {
                "id": f"assistant-{len(chat.messages) + 1}", "role": "assistant", "parts": []}
            stream = _Stream(message, project_tool_command)
            try:
                await calls.client().post_stream(path, request, stream.add, headers=request_headers)
                turn = stream.turn(denied)
            except HTTPStatusError as error:
                if error.status == 429:
                    return calls.rate_limited(error)
                raise SendFailure(f"{url} answered {error.detail}", acceptance="started", code="agent-http-error") from None
            except BrokenReply as error:
                raise SendFailure(f"{url}: {error}", acceptance="started", code="agent-stream-broken") from None
            except Exception as error:
                resend = calls.unsent(error)
                if resend is None:
                    raise
                return resend
            if continued is not None:
                chat.messages[-1] = message
            else:
                chat.messages.append(message)
            return turn

        ctx.progress(f"waiting for {name}")
        return await calls.send(once, ctx)

    return define_agent(name=name, send=send, evidence_coverage=evidence_coverage, close=calls.aclose)
