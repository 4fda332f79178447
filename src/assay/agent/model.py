"""The adapter-facing data model: what an agent receives (`TurnInput`) and returns (`Turn`, events).

Plain frozen dataclasses (the per-eval budget is a fraction of a millisecond); `turn_from_json`
and `event_from_json` validate JSON-shaped turns from services, `event_to_json` stores them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Union

from assay.errors import AssayError

TurnStatus = Literal["completed", "failed", "waiting"]
TURN_STATUSES = frozenset({"completed", "failed", "waiting"})
TOOL_FINISH_STATUSES = frozenset({"completed", "failed", "rejected"})
SUBAGENT_FINISH_STATUSES = frozenset({"completed", "failed"})
CHANNELS = ("events", "actions", "messages", "usage", "status", "data")
COVERAGE_STATES = ("unavailable", "partial", "complete")  # worst first


class _Missing:
    """Marks a field the agent did not report: never the same as JSON null or an empty value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


class TurnFormatError(AssayError):
    """An agent returned something that is not a valid Turn; the attempt is errored (`agent-send-failed`)."""


# ---------------------------------------------------------------------------------------------
# Input


@dataclass(frozen=True, slots=True)
class InputFile:
    mime_type: str
    data_base64: str
    filename: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire shape HTTP and process agents receive."""
        return {"filename": self.filename, "mimeType": self.mime_type, "dataBase64": self.data_base64}


@dataclass(frozen=True, slots=True)
class InputResponse:
    """One answer to one `input.requested` request: exactly one of `option_id` and `text`."""

    request_id: str
    option_id: str | None = None
    text: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire shape HTTP and process agents receive (absent fields left out)."""
        document: dict[str, Any] = {"requestId": self.request_id}
        if self.option_id is not None:
            document["optionId"] = self.option_id
        if self.text is not None:
            document["text"] = self.text
        return document


@dataclass(frozen=True, slots=True)
class TurnInput:
    text: str
    files: tuple[InputFile, ...] = ()
    responses: tuple[InputResponse, ...] = ()
    output_schema: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------------------
# Events


@dataclass(frozen=True, slots=True)
class ToolOperation:
    name: str
    input: Any = None
    tool: str | None = None  # canonical name (file_read, shell, …) when the adapter knows it
    command: Any = None  # what command it ran, when the agent knows: assay.agent.logical_command (command_match reads it)
    kind: ClassVar[str] = "tool"


@dataclass(frozen=True, slots=True)
class SubagentOperation:
    name: str
    remote_url: str | None = None
    kind: ClassVar[str] = "subagent"


@dataclass(frozen=True, slots=True)
class Message:
    text: str
    role: str = "assistant"
    type: ClassVar[str] = "message"


@dataclass(frozen=True, slots=True)
class OperationStarted:
    operation_id: str
    operation: ToolOperation | SubagentOperation
    type: ClassVar[str] = "operation.started"


@dataclass(frozen=True, slots=True)
class OperationFinished:
    """`output` is MISSING when the agent did not report it (then it is unavailable, never empty)."""

    operation_id: str
    status: str = "completed"
    output: Any = MISSING
    kind: str = "tool"
    type: ClassVar[str] = "operation.finished"


@dataclass(frozen=True, slots=True)
class SkillLoaded:
    skill: str
    operation_id: str | None = None
    type: ClassVar[str] = "skill.loaded"


@dataclass(frozen=True, slots=True)
class InputOption:
    id: str
    label: str | None = None


@dataclass(frozen=True, slots=True)
class InputRequest:
    id: str | None = None
    prompt: str | None = None
    display: str | None = None
    action: str | None = None
    input: Any = MISSING
    options: tuple[InputOption, ...] = ()

    @property
    def option_ids(self) -> tuple[str, ...]:
        return tuple(option.id for option in self.options)


@dataclass(frozen=True, slots=True)
class InputRequested:
    request: InputRequest
    type: ClassVar[str] = "input.requested"


@dataclass(frozen=True, slots=True)
class Thinking:
    text: str
    type: ClassVar[str] = "thinking"


@dataclass(frozen=True, slots=True)
class ContextInjected:
    text: str
    source: str | None = None
    type: ClassVar[str] = "context.injected"


@dataclass(frozen=True, slots=True)
class Compaction:
    reason: str | None = None
    type: ClassVar[str] = "compaction"


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    message: str
    type: ClassVar[str] = "error"


StreamEvent = Union[
    Message, OperationStarted, OperationFinished, SkillLoaded, InputRequested, Thinking, ContextInjected,
    Compaction, ErrorEvent,
]
EVENT_TYPES: dict[type, str] = {
    cls: cls.type  # type: ignore[attr-defined]
    for cls in (
        Message, OperationStarted, OperationFinished, SkillLoaded, InputRequested, Thinking, ContextInjected,
        Compaction, ErrorEvent,
    )
}


def message(text: str) -> Message:
    """An assistant message (adapters never emit user messages; the runner records those)."""
    return Message(text)


def tool_call(operation_id: str, name: str, input: Any = None, *, tool: str | None = None,
              command: Any = None) -> OperationStarted:
    """A tool call started; `command` is its command projection when the tool ran one (`command_projection(…)`)."""
    return OperationStarted(operation_id, ToolOperation(name, input, tool, command))


def tool_result(operation_id: str, output: Any = MISSING, status: str = "completed") -> OperationFinished:
    return OperationFinished(operation_id, status, output, "tool")


# ---------------------------------------------------------------------------------------------
# Usage and evidence coverage


@dataclass(frozen=True, slots=True)
class Usage:
    """Token and cost counts as reported; None means not reported (never invent numbers)."""

    input_tokens: int | None = None  # uncached input, excluding both cache buckets
    output_tokens: int | None = None  # includes reasoning tokens
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    reasoning_tokens: int | None = None  # display only: already in output_tokens
    requests: int | None = None
    cost_usd: float | None = None  # observed from the provider; never derived

    @property
    def total_tokens(self) -> int | None:
        """Input (all buckets) plus output; None when neither input nor output was reported."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (
            (self.input_tokens or 0) + (self.output_tokens or 0)
            + (self.cache_read_tokens or 0) + (self.cache_creation_tokens or 0)
        )


USAGE_FIELDS = tuple(Usage.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class Coverage:
    """How complete one evidence channel is; anything short of complete carries a reason."""

    state: str = "complete"
    reason: str | None = None

    @property
    def complete(self) -> bool:
        return self.state == "complete"


COMPLETE = Coverage()


def _reason(state: str, reason: Any) -> Coverage:
    # The reason is text a reader of the evidence is told (an empty one is refused where coverage is declared).
    if not isinstance(reason, str):
        raise TypeError(f"{state}(reason) takes the reason the evidence is {state}, as text; got {reason!r}")
    return Coverage(state, reason)


def partial(reason: str) -> Coverage:
    return _reason("partial", reason)


def unavailable(reason: str) -> Coverage:
    return _reason("unavailable", reason)


def worst(first: Coverage, second: Coverage) -> Coverage:
    if first is second or first.state == second.state:
        return first
    return first if COVERAGE_STATES.index(first.state) < COVERAGE_STATES.index(second.state) else second


@dataclass(frozen=True, slots=True)
class EvidenceCoverage:
    """An agent's completeness proof, one value per channel; every channel must be declared."""

    events: Coverage
    actions: Coverage
    messages: Coverage
    usage: Coverage
    status: Coverage
    data: Coverage

    def __post_init__(self) -> None:
        for channel in CHANNELS:
            value = getattr(self, channel)
            if not isinstance(value, Coverage) or value.state not in COVERAGE_STATES:
                raise TypeError(f"evidence coverage channel {channel!r} must be a Coverage, got {value!r}")
            if not value.complete and not value.reason:
                raise ValueError(f"evidence coverage channel {channel!r} is {value.state} and needs a reason")

    def downgraded(self, changes: Mapping[str, Coverage] | None) -> EvidenceCoverage:
        """Apply a turn's per-channel downgrade; a turn can never upgrade a channel."""
        if not changes:
            return self
        values = {channel: getattr(self, channel) for channel in CHANNELS}
        for channel, value in changes.items():
            values[channel] = worst(values[channel], value)
        return EvidenceCoverage(**values)

    def combined(self, other: EvidenceCoverage) -> EvidenceCoverage:
        if other is self:
            return self
        return EvidenceCoverage(**{c: worst(getattr(self, c), getattr(other, c)) for c in CHANNELS})

    def to_json(self) -> dict[str, Any]:
        cached = _COVERAGE_JSON.get(self)
        if cached is None:
            cached = {}
            for channel in CHANNELS:
                value = getattr(self, channel)
                cached[channel] = "complete" if value.complete else {"state": value.state, "reason": value.reason}
            if len(_COVERAGE_JSON) < 1024:
                _COVERAGE_JSON[self] = cached
        return cached  # shared between results: treat as read-only


# An agent declares one coverage for all its turns; its JSON is made once, not once per attempt.
_COVERAGE_JSON: dict[EvidenceCoverage, dict[str, Any]] = {}


complete_evidence_coverage = EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE)


# ---------------------------------------------------------------------------------------------
# Turn


@dataclass(frozen=True, slots=True)
class Turn:
    """The normalized result of one `send`; `data` only when the turn declared an output schema."""

    events: Sequence[StreamEvent] = ()
    status: str = "completed"
    data: Any = MISSING
    usage: Usage | None = None
    evidence_coverage: Mapping[str, Coverage] | None = None  # per-turn downgrade only


def check_turn(turn: Any) -> Turn:
    """The turn an agent returned, validated; a mapping is parsed as JSON (NiceEval field names work).

    The user's side of the conversation is the runner's to record (`t.send`'s text); an agent reports only
    what the assistant said, so a `role="user"` message in a turn is refused: it would read as the eval's."""
    checked = _checked_turn(turn)
    for position, event in enumerate(checked.events):
        if type(event) is Message and event.role == "user":
            raise TurnFormatError(
                f"events[{position}] is a user message ({event.text[:60]!r}): the runner records what the eval sent "
                "itself; an agent reports only the assistant's messages (message(text), role assistant)"
            )
    return checked


def _checked_turn(turn: Any) -> Turn:
    if isinstance(turn, Mapping):
        return turn_from_json(turn)
    if not isinstance(turn, Turn):
        raise TurnFormatError(f"agent send must return a Turn, got {type(turn).__name__}")
    if turn.status not in TURN_STATUSES:
        raise TurnFormatError(f"turn status must be completed, failed or waiting, got {turn.status!r}")
    events = turn.events
    if not isinstance(events, (list, tuple)):
        raise TurnFormatError(f"turn events must be a list, got {type(events).__name__}")
    usage = turn.usage
    needs_parsing = isinstance(usage, Mapping)
    for position, event in enumerate(events):
        kind = type(event)
        if kind not in EVENT_TYPES:
            if not isinstance(event, Mapping):
                hint = ""
                if isinstance(event, str):
                    hint = " (a text is not an event: write message(text))"
                elif kind is InputRequest:
                    hint = " (wrap a request in its event: InputRequested(InputRequest(...)))"
                raise TurnFormatError(f"events[{position}] is not a stream event: {kind.__name__}{hint}")
            needs_parsing = True
        elif kind is Message:
            if not isinstance(event.text, str) or event.role not in ("assistant", "user"):
                raise TurnFormatError(f"events[{position}] must be a message with text and role assistant or user, "
                                      f"got {event!r}")
        elif kind is OperationStarted and event.operation.kind == "tool":
            _check_json(event.operation.input, f"events[{position}].operation.input")
            if event.operation.command is not None:
                _check_command(event.operation.command, f"events[{position}].operation.command")
        elif kind is OperationFinished:
            # The same rule as a JSON turn's: a misspelt status would be neither completed nor failed.
            statuses = TOOL_FINISH_STATUSES if event.kind == "tool" else SUBAGENT_FINISH_STATUSES
            if event.kind not in ("tool", "subagent"):
                raise TurnFormatError(f"events[{position}].kind must be tool or subagent, got {event.kind!r}")
            if event.status not in statuses:
                raise TurnFormatError(
                    f"events[{position}].status must be one of {', '.join(sorted(statuses))}, got {event.status!r}"
                )
            _check_json(event.output, f"events[{position}].output")
        elif kind is InputRequested:
            _check_json(event.request.input, f"events[{position}].request.input")
            if not isinstance(event.request.options, (list, tuple)):
                # A lone option id would be read letter by letter ("approve" as options a, p, p, r, …).
                raise TurnFormatError(
                    f"events[{position}].request.options must be a list of InputOption(id, label) or option ids, "
                    f"got {type(event.request.options).__name__}: options=[InputOption(\"approve\"), "
                    "InputOption(\"deny\")] or options=[\"approve\", \"deny\"]"
                )
            if any(not isinstance(option, InputOption) for option in event.request.options):
                needs_parsing = True  # option ids given as plain strings, as a JSON turn may
    coverage = turn.evidence_coverage
    if isinstance(coverage, EvidenceCoverage):  # a whole declaration: it can still only lower channels
        coverage = {channel: getattr(coverage, channel) for channel in CHANNELS}
    if turn.data is not MISSING and not hasattr(turn.data, "model_dump"):
        _check_json(turn.data, "turn data")
    if usage is not None and not isinstance(usage, (Usage, Mapping)):
        raise TurnFormatError(f"turn usage must be a Usage, got {type(usage).__name__}")
    if isinstance(usage, Usage):
        _check_usage(usage)
    if coverage:
        if not isinstance(coverage, Mapping):
            raise TurnFormatError(
                f"turn evidence_coverage must map channels to coverage ({{'usage': partial(reason)}}) or be an "
                f"EvidenceCoverage, got {type(coverage).__name__}"
            )
        for channel, value in coverage.items():
            if channel not in CHANNELS or not isinstance(value, Coverage):
                raise TurnFormatError(f"turn evidence_coverage has an invalid entry {channel!r}: {value!r}")
    if not needs_parsing and coverage is turn.evidence_coverage:
        return turn
    return Turn(
        [_checked_event(e, f"events[{i}]") for i, e in enumerate(events)],
        turn.status, turn.data, usage_from_json(usage) if isinstance(usage, Mapping) else usage, coverage,
    )


def _checked_event(event: Any, where: str) -> StreamEvent:
    """A turn's event as a stream event: a JSON one parsed, an input request's plain-string options made options."""
    if type(event) not in EVENT_TYPES:
        return event_from_json(event, where)
    if type(event) is InputRequested and any(not isinstance(option, InputOption) for option in event.request.options):
        options = []
        for position, option in enumerate(event.request.options):
            if isinstance(option, str):
                option = InputOption(option)
            elif not isinstance(option, InputOption):
                raise TurnFormatError(
                    f"{where}.request.options[{position}] must be an InputOption or an option id, got {option!r}"
                )
            options.append(option)
        request = event.request
        return InputRequested(InputRequest(request.id, request.prompt, request.display, request.action, request.input,
                                           tuple(options)))
    return event


_PLAIN_SCALARS = (str, int, bool, type(None))  # floats still need the finiteness check


def _check_json(value: Any, where: str) -> None:
    """Tool inputs, outputs and data are JSON: they are journaled and compared as JSON."""
    if value is MISSING or type(value) in _PLAIN_SCALARS:
        return
    from assay.core.jsonvalue import check_json_like
    from assay.errors import JsonValueError

    try:
        check_json_like(value, where)
    except JsonValueError as error:
        raise TurnFormatError(str(error)) from None


def _check_command(value: Any, where: str) -> Any:
    """A tool call's command projection, checked; one sent as JSON without its logical form gets it, so the record
    says what `command_match` read."""
    from assay.agent.logical_command import check_command_projection, completed_projection

    try:
        check_command_projection(value, where)
    except ValueError as error:
        raise TurnFormatError(str(error)) from None
    _check_json(value, where)
    return completed_projection(value)


# ---------------------------------------------------------------------------------------------
# JSON (services that answer in NiceEval's shape, and the journal)


def _get(document: Mapping[str, Any], snake: str, camel: str | None = None, default: Any = None) -> Any:
    if snake in document:
        return document[snake]
    if camel is not None and camel in document:
        return document[camel]
    return default


def _require_str(document: Mapping[str, Any], where: str, snake: str, camel: str | None = None) -> str:
    value = _get(document, snake, camel)
    if not isinstance(value, str):
        raise TurnFormatError(f"{where}.{camel or snake} must be a string")
    return value


def _optional_str(document: Mapping[str, Any], where: str, snake: str, camel: str | None = None) -> str | None:
    value = _get(document, snake, camel)
    if value is not None and not isinstance(value, str):
        raise TurnFormatError(f"{where}.{camel or snake} must be a string")
    return value


def _request_from_json(document: Any, where: str) -> InputRequest:
    if not isinstance(document, Mapping):
        raise TurnFormatError(f"{where} must be an object")
    options = []
    for position, option in enumerate(document.get("options") or ()):
        if isinstance(option, str):
            options.append(InputOption(option))
        elif isinstance(option, Mapping):
            options.append(InputOption(
                _require_str(option, f"{where}.options[{position}]", "id"),
                _optional_str(option, f"{where}.options[{position}]", "label"),
            ))
        else:
            raise TurnFormatError(f"{where}.options[{position}] must be an object")
    return InputRequest(
        id=_optional_str(document, where, "id"),
        prompt=_optional_str(document, where, "prompt"),
        display=_optional_str(document, where, "display"),
        action=_optional_str(document, where, "action"),
        input=document.get("input", MISSING),
        options=tuple(options),
    )


def event_from_json(document: Any, where: str = "event") -> StreamEvent:
    if not isinstance(document, Mapping):
        raise TurnFormatError(f"{where} must be an object")
    kind = document.get("type")
    if kind == "message":
        role = document.get("role", "assistant")
        if role not in ("assistant", "user"):
            raise TurnFormatError(f"{where}.role must be assistant or user")
        return Message(_require_str(document, where, "text"), role)
    if kind == "operation.started":
        operation = document.get("operation")
        if not isinstance(operation, Mapping):
            raise TurnFormatError(f"{where}.operation must be an object")
        name = _require_str(operation, f"{where}.operation", "name")
        if operation.get("kind", "tool") == "subagent":
            built: ToolOperation | SubagentOperation = SubagentOperation(
                name, _optional_str(operation, f"{where}.operation", "remote_url", "remoteUrl")
            )
        elif operation.get("kind", "tool") == "tool":
            command = operation.get("command")
            if command is not None:
                command = _check_command(command, f"{where}.operation.command")
            built = ToolOperation(name, operation.get("input"), operation.get("tool"), command)
        else:
            raise TurnFormatError(f"{where}.operation.kind must be tool or subagent")
        return OperationStarted(_require_str(document, where, "operation_id", "operationId"), built)
    if kind == "operation.finished":
        operation_kind = document.get("kind", "tool")
        statuses = TOOL_FINISH_STATUSES if operation_kind == "tool" else SUBAGENT_FINISH_STATUSES
        if operation_kind not in ("tool", "subagent"):
            raise TurnFormatError(f"{where}.kind must be tool or subagent")
        status = document.get("status")
        if status not in statuses:
            raise TurnFormatError(f"{where}.status must be one of {', '.join(sorted(statuses))}")
        return OperationFinished(
            _require_str(document, where, "operation_id", "operationId"), status,
            document.get("output", MISSING), operation_kind,
        )
    if kind == "skill.loaded":
        return SkillLoaded(
            _require_str(document, where, "skill"), _optional_str(document, where, "operation_id", "operationId")
        )
    if kind == "input.requested":
        return InputRequested(_request_from_json(document.get("request"), f"{where}.request"))
    if kind == "thinking":
        return Thinking(_require_str(document, where, "text"))
    if kind == "context.injected":
        return ContextInjected(_require_str(document, where, "text"), _optional_str(document, where, "source"))
    if kind == "compaction":
        return Compaction(_optional_str(document, where, "reason"))
    if kind == "error":
        return ErrorEvent(_require_str(document, where, "message"))
    raise TurnFormatError(f"{where}.type {kind!r} is not a stream event type")


def event_to_json(event: StreamEvent) -> dict[str, Any]:
    kind = event.type
    if kind == "message":
        return {"type": kind, "role": event.role, "text": event.text}
    if kind == "operation.started":
        operation = event.operation
        if operation.kind == "tool":
            body: dict[str, Any] = {"kind": "tool", "name": operation.name, "input": operation.input}
            if operation.tool is not None:
                body["tool"] = operation.tool
            if operation.command is not None:
                body["command"] = operation.command
        else:
            body = {"kind": "subagent", "name": operation.name}
            if operation.remote_url is not None:
                body["remote_url"] = operation.remote_url
        return {"type": kind, "operation_id": event.operation_id, "operation": body}
    if kind == "operation.finished":
        document = {"type": kind, "operation_id": event.operation_id, "kind": event.kind, "status": event.status}
        if event.output is not MISSING:
            document["output"] = event.output
        return document
    if kind == "input.requested":
        request = event.request
        body = {
            key: value
            for key, value in (
                ("id", request.id), ("prompt", request.prompt), ("display", request.display),
                ("action", request.action),
            )
            if value is not None
        }
        if request.input is not MISSING:
            body["input"] = request.input
        if request.options:
            body["options"] = [
                {"id": option.id, **({"label": option.label} if option.label is not None else {})}
                for option in request.options
            ]
        return {"type": kind, "request": body}
    if kind == "skill.loaded":
        return {"type": kind, "skill": event.skill, **({"operation_id": event.operation_id} if event.operation_id else {})}
    if kind in ("thinking",):
        return {"type": kind, "text": event.text}
    if kind == "context.injected":
        return {"type": kind, "text": event.text, **({"source": event.source} if event.source is not None else {})}
    if kind == "compaction":
        return {"type": kind, **({"reason": event.reason} if event.reason is not None else {})}
    return {"type": kind, "message": event.message}


_USAGE_CAMEL = {
    "input_tokens": "inputTokens", "output_tokens": "outputTokens", "cache_read_tokens": "cacheReadTokens",
    "cache_creation_tokens": "cacheCreationTokens", "reasoning_tokens": "reasoningTokens",
    "requests": "requests", "cost_usd": "costUSD",
}


def _check_usage(usage: Usage) -> None:
    """A `Usage(...)` an agent built holds counts as `usage_from_json` takes them from a mapping: a
    `Usage(input_tokens="5")` was summed with the next turn's numbers and ended the whole run with an internal error."""
    for name in USAGE_FIELDS:
        value = getattr(usage, name)
        if value is None:
            continue
        if name == "cost_usd":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise TurnFormatError(f"turn usage cost_usd must be a non-negative number of USD, like cost_usd=0.0042; "
                                      f"got {value!r:.60}")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            unit, example = ("requests", 1) if name == "requests" else ("tokens", 512)
            raise TurnFormatError(f"turn usage {name} must be a whole number of {unit} (>= 0), like {name}={example}; "
                                  f"got {value!r:.60}")


def usage_from_json(document: Mapping[str, Any]) -> Usage:
    values: dict[str, Any] = {}
    for name, camel in _USAGE_CAMEL.items():
        value = _get(document, name, camel)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise TurnFormatError(f"usage.{camel} must be a non-negative number")
        if name != "cost_usd" and not isinstance(value, int):
            raise TurnFormatError(f"usage.{camel} must be an integer")
        values[name] = value
    return Usage(**values)


def usage_to_json(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {name: getattr(usage, name) for name in USAGE_FIELDS if getattr(usage, name) is not None}


def _coverage_from_json(value: Any, where: str) -> Coverage:
    if value == "complete":
        return COMPLETE
    if isinstance(value, Mapping) and value.get("state") in COVERAGE_STATES and (
        value.get("state") == "complete" or isinstance(value.get("reason"), str)
    ):
        return Coverage(value["state"], value.get("reason"))
    raise TurnFormatError(f"{where} must be 'complete' or {{state, reason}}")


_TURN_FIELDS = ("events", "status", "data", "usage", "evidence_coverage", "evidenceCoverage")  # what decides verdicts
_OTHER_FIELDS = ("session_id", "sessionId")


def turn_from_json(document: Mapping[str, Any]) -> Turn:
    from assay.core.format import did_you_mean

    for key in document:
        # Other fields a service adds are its own; one a letter away from a turn's field is a typo
        # that would otherwise be read as absent (`satus` as a completed turn).
        known = key in _TURN_FIELDS or key in _OTHER_FIELDS
        hint = did_you_mean(key, _TURN_FIELDS, cutoff=0.8) if isinstance(key, str) and not known else ""
        if hint:
            raise TurnFormatError(f"turn has no field {key!r}{hint}")
    if document and not any(key in _TURN_FIELDS for key in document):
        # Not a turn at all (the service's own body, `{"answer": …}`): read as one, it would be an empty
        # completed turn, and every check would fail on "no reply" instead of naming the agent's mistake.
        keys = ", ".join(repr(key) for key in list(document)[:6])
        raise TurnFormatError(
            f"a turn given as a dict needs 'events' (and optionally status, data, usage); got keys: {keys}. "
            "Return Turn([message(text), ...]) or NiceEval's turn JSON"
        )
    status = document.get("status", "completed")
    if status not in TURN_STATUSES:
        raise TurnFormatError(f"turn status must be completed, failed or waiting, got {status!r}")
    raw_events = document.get("events") or []
    if not isinstance(raw_events, list):
        raise TurnFormatError("turn events must be a list")
    events = [event_from_json(event, f"events[{position}]") for position, event in enumerate(raw_events)]
    usage = document.get("usage")
    coverage = _get(document, "evidence_coverage", "evidenceCoverage")
    changes = None
    if coverage:
        if not isinstance(coverage, Mapping):
            raise TurnFormatError("turn evidenceCoverage must be an object")
        changes = {}
        for channel, value in coverage.items():
            if channel not in CHANNELS:
                raise TurnFormatError(f"turn evidenceCoverage has an unknown channel {channel!r}")
            changes[channel] = _coverage_from_json(value, f"evidenceCoverage.{channel}")
    return Turn(
        events=events,
        status=status,
        data=document.get("data", MISSING),
        usage=usage_from_json(usage) if isinstance(usage, Mapping) else None,
        evidence_coverage=changes,
    )


__all__ = [
    "CHANNELS", "COMPLETE", "MISSING", "Compaction", "ContextInjected", "Coverage", "ErrorEvent", "EvidenceCoverage",
    "InputFile", "InputOption", "InputRequest", "InputRequested", "InputResponse", "Message", "OperationFinished",
    "OperationStarted", "SkillLoaded", "StreamEvent", "SubagentOperation", "Thinking", "ToolOperation", "Turn",
    "TurnFormatError", "TurnInput", "Usage", "check_turn", "complete_evidence_coverage", "event_from_json",
    "event_to_json", "message", "partial", "tool_call", "tool_result", "turn_from_json", "unavailable",
    "usage_from_json", "usage_to_json", "worst",
]
