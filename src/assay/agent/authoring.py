"""The authoring surface an eval touches: `t`, session and turn handles, their drive verbs and assertions.

Handles hold no state of their own: a drive verb hands its `TurnInput` to the attempt's session line
(`assay.agent.attempt_state`), and an assertion method evaluates one assertion value over its scope's
view at the call site. This layer depends on the attempt engine, never the reverse: the engine is
handed `EvalContext` as the `EvalSurface` that makes `t` (`assay.agent.attempt.run_attempt`).
"""

from __future__ import annotations

import base64
import functools
import mimetypes
import os
import re
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from assay.agent.assertion_entry import AssertionEntry, AssertionHandle, evaluate_matcher
from assay.agent.context import CancelSignal
from assay.agent.control import AuthoringError, SkipEval
from assay.agent.evidence import ScopeView, ToolOccurrence, TurnRecord, last_assistant_text, sum_usage
from assay.agent.judging import Judge, JudgeRequest, grade_with_details, render_value
from assay.agent.model import (
    MISSING, EvidenceCoverage, InputFile, InputRequest, InputResponse, StreamEvent, TurnInput, Usage,
)
from assay.agent.outcome import MATCHED, UNAVAILABLE, Matcher, Outcome, Unavailable
from assay.agent.structured import lower_schema

if TYPE_CHECKING:
    from assay.agent import assertions
    from assay.agent.attempt_state import AttemptRuntime, SessionLine
    from assay.agent.eval_sandbox import EvalSandbox
    from assay.agent.matchers import EventMatch, ToolMatch
    from assay.agent.timing import Timeline


@dataclass(frozen=True, slots=True)
class Answer:
    """An explicit answer to one pending request: exactly one of `option_id` and `text`."""

    request: InputRequest | str
    option_id: str | None = None
    text: str | None = None


def at_least(count: int) -> dict[str, int]:
    """`count=at_least(2)` for `called_tool` and `event`."""
    return {"at_least": count}


# The assertion and matcher classes are imported with the first assertion an eval makes (an eval that only
# sends needs neither: ~25 ms of a one-eval run's start-up).
def _assertions() -> Any:
    from assay.agent import assertions

    return assertions


def _matchers() -> Any:
    from assay.agent import matchers

    return matchers


@functools.cache
def _shared_assertion(name: str) -> Any:
    """An assertion without arguments: one shared value each."""
    return getattr(_assertions(), name)()


# ---------------------------------------------------------------------------------------------
# Scoped assertion methods, shared by t, session handles and turn handles


class _Scoped:
    """The assertion methods shared by `t`, session handles and turn handles; each differs only in its view."""

    __slots__ = ()

    def _runtime(self) -> AttemptRuntime:
        raise NotImplementedError

    def _view(self) -> ScopeView:
        raise NotImplementedError

    def _view_name(self) -> str:
        raise NotImplementedError

    def _assert(self, assertion: assertions.Assertion) -> AssertionHandle:
        runtime = self._runtime()
        entry = runtime.register(
            assertion.kind, self._view_name(), assertion.describe(), assertion.evaluate(self._view())
        )
        return AssertionHandle(entry, runtime.score_eval)

    def succeeded(self) -> AssertionHandle:
        """Every turn completed and no input request is left unanswered."""
        return self._assert(_shared_assertion("Succeeded"))

    def called_tool(self, tool: str | ToolMatch, *, count: int | Mapping[str, int] | None = None) -> AssertionHandle:
        """At least once by default; `count=n` exactly n, `count=at_least(n)` n or more."""
        return self._assert(_assertions().CalledTool(_matchers().as_tool_match(tool), count))

    def not_called_tool(self, tool: str | ToolMatch) -> AssertionHandle:
        return self._assert(_assertions().NotCalledTool(_matchers().as_tool_match(tool)))

    def tool_order(self, tools: Sequence[str | ToolMatch]) -> AssertionHandle:
        if not isinstance(tools, (list, tuple)):
            raise AuthoringError(f"tool_order takes a list of tools, got {type(tools).__name__}: tool_order([a, b])")
        if len(tools) < 2:
            raise AuthoringError("tool_order needs at least two tools")
        return self._assert(_assertions().ToolOrder(tuple(_matchers().as_tool_match(tool) for tool in tools)))

    def used_no_tools(self) -> AssertionHandle:
        return self._assert(_shared_assertion("UsedNoTools"))

    def max_tool_calls(self, maximum: int) -> AssertionHandle:
        if isinstance(maximum, bool) or not isinstance(maximum, int) or maximum < 0:
            raise AuthoringError("max_tool_calls needs a non-negative integer")
        return self._assert(_assertions().MaxToolCalls(maximum))

    def no_failed_actions(self) -> AssertionHandle:
        """No tool or subagent finished failed; a human rejection is not a failure."""
        return self._assert(_shared_assertion("NoFailedActions"))

    def event(self, match: EventMatch, *, count: int | Mapping[str, int] | None = None) -> AssertionHandle:
        _require_event_match(match)
        return self._assert(_assertions().EventOccurred(match, count))

    def not_event(self, match: EventMatch) -> AssertionHandle:
        _require_event_match(match)
        return self._assert(_assertions().NoEvent(match))

    def event_order(self, matches: Sequence[EventMatch]) -> AssertionHandle:
        if not isinstance(matches, (list, tuple)):
            raise AuthoringError(
                f"event_order takes a list of event_match(...), got {type(matches).__name__}: event_order([a, b])"
            )
        if len(matches) < 2:
            raise AuthoringError("event_order needs at least two event matches")
        for match in matches:
            _require_event_match(match)
        return self._assert(_assertions().EventOrder(tuple(matches)))

    def max_tokens(self, maximum: int) -> AssertionHandle:
        if isinstance(maximum, bool) or not isinstance(maximum, int) or maximum < 0:
            raise AuthoringError("max_tokens needs a non-negative integer")
        return self._assert(_assertions().MaxTokens(maximum))

    def max_cost(self, usd: float) -> AssertionHandle:
        """Compared with the runner's estimate from the price table, never the provider-reported cost."""
        if isinstance(usd, bool) or not isinstance(usd, (int, float)) or usd < 0:
            raise AuthoringError("max_cost needs a non-negative number of USD")
        settings = self._runtime().settings
        return self._assert(_assertions().MaxCost(usd, settings.model, settings.pricing))




def _require_event_match(match: Any) -> None:
    if not isinstance(match, _matchers().EventMatch):
        raise AuthoringError(f"expected event_match(...), got {type(match).__name__}")


class JudgeRecipes:
    """`t.judge(rubric, value=…, threshold=…)` (pass/fail) and the recipes `closed_qa`, `factuality`,
    `summarizes` (measurements in [0, 1], soft unless `.gate(n)`)."""

    __slots__ = ("_runtime", "_scope", "_material", "_reply")

    def __init__(
        self, runtime: AttemptRuntime, scope: str, material: tuple[str, str | Unavailable | None] | None,
        reply: Any = None,
    ) -> None:
        self._runtime = runtime
        self._scope = scope
        self._material = material  # a turn binds (user input, assistant reply: None without one, or Unavailable)
        self._reply = reply  # () -> (last user input, reply) for `t.judge(rubric)` without a value

    def _entry(self, description: str) -> AssertionEntry:
        if not self._runtime.settings.judge_declared:
            raise AuthoringError("declare judge=True (or a judge config) on the eval to use judge assertions")
        entry = AssertionEntry(len(self._runtime.entries), "judge", self._scope, description)
        entry.measurement = True
        return entry

    def _submit(self, entry: AssertionEntry, request: JudgeRequest | Outcome) -> AssertionHandle:
        runtime = self._runtime
        if isinstance(request, Outcome):
            entry.settle(request)
        else:
            entry.pending = _judged(entry, runtime.settings.judge, request, runtime.timeline)
        runtime.entries.append(entry)
        return AssertionHandle(entry, runtime.score_eval)

    def __call__(
        self, rubric: str, value: Any = MISSING, *, threshold: float = 0.5, input: str | None = None,
    ) -> AssertionHandle:
        """Grade `value` (default: the reply) against `rubric`; it passes when the score >= `threshold`."""
        if not isinstance(rubric, str) or not rubric.strip():
            raise AuthoringError("t.judge needs a rubric: a non-empty string saying what a good answer does")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise AuthoringError(f"t.judge threshold must be a number in [0, 1], got {threshold!r}")
        entry = self._entry(f"judge({rubric!r}, threshold={threshold:g})")
        entry.gated = True
        entry.threshold = float(threshold)
        asked = input
        if value is MISSING:
            if self._reply is not None:
                asked_default, value = self._reply()
            elif self._material is not None:
                asked_default, value = self._material
            else:
                raise AuthoringError("t.judge needs a value to grade here")
            asked = asked if asked is not None else asked_default
        if isinstance(value, Unavailable):
            return self._submit(entry, Outcome(UNAVAILABLE, f"the judged value is unavailable: {value.reason}"))
        if value is None:
            return self._submit(entry, Outcome(UNAVAILABLE, "there is no reply to judge"))
        request = JudgeRequest("rubric", rubric, asked or "", render_value(value), self._runtime.settings.judge_config)
        return self._submit(entry, request)

    def _register(self, recipe: str, criterion: str, input: str | None, output: str | None) -> AssertionHandle:
        if not isinstance(criterion, str) or not criterion.strip():
            what = {"closed_qa": "a question", "factuality": "a reference answer", "summarizes": "the source text"}[recipe]
            raise AuthoringError(f"judge.{recipe} needs {what}: a non-empty string, got {criterion!r}")
        entry = self._entry(f"judge.{recipe}({criterion!r})")
        if self._material is not None:
            input, output = self._material
            # A turn without a reply (a tool-only turn, or messages not seen) has nothing to grade: as `t.judge` says
            # so, the recipes do too, instead of paying for a call that grades the empty string.
            if isinstance(output, Unavailable):
                return self._submit(entry, Outcome(UNAVAILABLE, f"the judged value is unavailable: {output.reason}"))
            if output is None:
                return self._submit(entry, Outcome(UNAVAILABLE, "there is no reply to judge"))
        elif input is None or output is None:
            raise AuthoringError(f"t.judge.{recipe} needs explicit input= and output= text")
        return self._submit(entry, JudgeRequest(recipe, criterion, input, output, self._runtime.settings.judge_config))

    @property
    def autoevals(self) -> JudgeRecipes:
        """NiceEval's spelling, `turn.judge.autoevals.closed_qa(…)`: the same recipes as `turn.judge.closed_qa(…)`."""
        return self

    def closed_qa(self, question: str, *, input: str | None = None, output: str | None = None) -> AssertionHandle:
        return self._register("closed_qa", question, input, output)

    def factuality(self, reference: str, *, input: str | None = None, output: str | None = None) -> AssertionHandle:
        return self._register("factuality", reference, input, output)

    def summarizes(self, source: str, *, input: str | None = None, output: str | None = None) -> AssertionHandle:
        return self._register("summarizes", source, input, output)


async def _judged(entry: AssertionEntry, judge: Judge | None, request: JudgeRequest, timeline: Timeline) -> Outcome:
    # Timed from when it is awaited: that is when the judge is called (at `or_stop()` or after the test).
    with timeline.phase("judge", entry.text):  # a deadline that cancels it marks it unfinished
        outcome, details = await grade_with_details(judge, request)
    entry.details = details
    return outcome


# ---------------------------------------------------------------------------------------------
# Handles


class TurnHandle(_Scoped):
    """One settled turn (immutable); its assertions see this turn only."""

    __slots__ = ("record", "_attempt", "_data")

    def __init__(self, record: TurnRecord, runtime: AttemptRuntime, data: Any) -> None:
        self.record = record
        self._attempt = runtime
        self._data = data

    def _runtime(self) -> AttemptRuntime:
        return self._attempt

    def _view(self) -> ScopeView:
        return ScopeView(self.record.label, (self.record,), self._attempt.default_coverage)

    def _view_name(self) -> str:
        return self.record.label

    @property
    def events(self) -> Sequence[StreamEvent]:
        return self.record.events

    @property
    def tool_calls(self) -> list[ToolOccurrence]:
        return [occurrence for occurrence in self.record.occurrences() if occurrence.kind == "tool"]

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def message(self) -> str | Unavailable | None:
        """The last assistant message of this turn."""
        return _reply([self.record], self.record.coverage)

    @property
    def data(self) -> Any:
        """The validated structured output (a model instance for a pydantic schema); None without one."""
        return self._data

    @property
    def output_error(self) -> str | None:
        return self.record.output_error

    @property
    def usage(self) -> Usage | None:
        return self.record.usage

    @property
    def requests(self) -> tuple[InputRequest, ...]:
        return self.record.requests

    @property
    def judge(self) -> JudgeRecipes:
        message = self.message
        asked = self.record.input_text
        return JudgeRecipes(self._attempt, self.record.label, (asked, message), lambda: (asked, message))


def _reply(turns: Sequence[TurnRecord], coverage: EvidenceCoverage) -> str | Unavailable | None:
    text = last_assistant_text(turns)
    if text is None and not coverage.messages.complete:
        return Unavailable(f"no assistant message seen and messages evidence is {coverage.messages.state}: "
                           f"{coverage.messages.reason}")
    return text


_TEXT_FILTERS = ("id", "prompt", "display", "action")


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _drive_verb(
    verb: Callable[Concatenate[SessionHandle, _P], Coroutine[Any, Any, _R]],
) -> Callable[Concatenate[SessionHandle, _P], Coroutine[Any, Any, _R]]:
    """A drive verb whose coroutine the attempt watches: one never awaited (`t.send("hi")` without `await`)
    never sends its turn, and an eval ending on such a line would pass on turns it never took; the attempt
    names the call instead (`AttemptRuntime.dropped_drives`)."""

    @functools.wraps(verb)
    def call(self: SessionHandle, *args: _P.args, **kwargs: _P.kwargs) -> Coroutine[Any, Any, _R]:
        coroutine = verb(self, *args, **kwargs)
        caller = sys._getframe(1)
        line = self._line
        drives = line.runtime.drives
        if len(drives) >= 64:  # a long eval: forget the sends already started
            line.runtime.forget_started_drives()
        drives.append((coroutine, name, line.index, caller.f_code.co_filename, caller.f_lineno))
        return coroutine

    name = verb.__name__

    return call


class SessionHandle(_Scoped):
    """A session line: the drive verbs and assertions over that line's turns so far."""

    __slots__ = ("_line",)

    def __init__(self, line: SessionLine) -> None:
        self._line = line

    def _runtime(self) -> AttemptRuntime:
        return self._line.runtime

    def _view(self) -> ScopeView:
        return self._line.view()

    def _view_name(self) -> str:
        return "main session" if self._line.index == 0 else f"session {self._line.index}"

    # -- drive ---------------------------------------------------------------------------------
    @_drive_verb
    async def send(self, text: str, *, output: Any = None, files: Sequence[InputFile] = ()) -> TurnHandle:
        """One turn; `output=` (a pydantic model, TypeAdapter or JSON Schema) makes `turn.data` typed."""
        if not isinstance(text, str):
            raise AuthoringError(f"send takes text, got {type(text).__name__}")
        if not isinstance(files, (list, tuple)) or not all(isinstance(file, InputFile) for file in files):
            raise AuthoringError(
                "send: files takes a list of InputFile(mime_type, data_base64, filename); "
                "to send a file from disk, use send_file(path, text)"
            )
        schema = lower_schema(output) if output is not None else None
        turn_input = TurnInput(text, tuple(files), (), schema) if (files or schema is not None) else TurnInput(text)
        if pending := self._line.pending_requests():
            self._note_send_while_waiting(pending)
        record, data = await self._line.send(turn_input, output)
        return TurnHandle(record, self._line.runtime, data)

    def _note_send_while_waiting(self, pending: Sequence[InputRequest]) -> None:
        """A message sent while the last turn waits for input goes as a new turn, as NiceEval has it (an agent may read
        it as the answer, or drop the question); the request stays unanswered, which is seldom what the eval meant,
        so it is said (a warning of the attempt, and once in the run's output), never refused."""
        ids = ", ".join(repr(request.id) for request in pending)
        self._line.runtime.settings.feedback.diagnostic(
            "send-while-waiting", "warning",
            f"send: the {SessionHandle._view_name(self)}'s last turn waits for input (request {ids}); the message went as a new "
            f"turn and left the request unanswered (to answer it: respond(...) or respond_all(option_id))",
            None, phase="eval.run")

    @_drive_verb
    async def send_file(self, path: str | Path, text: str = "", *, output: Any = None) -> TurnHandle:
        """Send a file (relative to the eval file's folder) as base64 with a MIME type guessed from its name."""
        runtime = self._line.runtime
        if not isinstance(path, (str, os.PathLike)):
            several = " (one file per send_file; several files go in one turn as send(text, files=[InputFile(...)]))"
            raise AuthoringError(
                f"send_file takes one file's path (a str or Path, relative to the eval file), got "
                f"{type(path).__name__}: send_file(\"forecast.txt\", text)"
                + (several if isinstance(path, (list, tuple)) else "")
            )
        if not isinstance(text, str):
            raise AuthoringError(f"send_file: text takes a str, got {type(text).__name__}: send_file(path, \"Read this\")")
        file_path = Path(path)
        if not file_path.is_absolute() and runtime.settings.eval_dir is not None:
            file_path = runtime.settings.eval_dir / file_path
        try:
            data = file_path.read_bytes()
        except OSError as error:
            raise AuthoringError(f"send_file could not read {file_path}: {error.strerror or error}") from None
        mime_type = mimetypes.guess_type(file_path.name)[0] or "application/octet-stream"
        input_file = InputFile(mime_type, base64.b64encode(data).decode("ascii"), file_path.name)
        return await self.send(text, output=output, files=(input_file,))

    def require_input_request(
        self,
        *_positional: Any,
        id: str | re.Pattern[str] | None = None,
        prompt: str | re.Pattern[str] | None = None,
        display: str | re.Pattern[str] | None = None,
        action: str | re.Pattern[str] | None = None,
        input: Any = MISSING,
        option_ids: Sequence[str] | None = None,
    ) -> InputRequest:
        """The single pending request of the latest turn that matches; raises for zero or several."""
        if _positional:
            raise AuthoringError(
                f"require_input_request takes its filters by name, got {_positional[0]!r} by position: "
                f"require_input_request(id={_positional[0]!r}) or (action=..., option_ids=[...])"
            )
        if option_ids is not None and not (isinstance(option_ids, (list, tuple))
                                           and all(isinstance(option, str) for option in option_ids)):
            wanted = f"[{option_ids!r}]" if isinstance(option_ids, str) else "[\"approve\", \"deny\"]"
            raise AuthoringError(
                f"require_input_request: option_ids takes a list of option ids, got {type(option_ids).__name__}: "
                f"option_ids={wanted}"
            )
        filters = {"id": id, "prompt": prompt, "display": display, "action": action}
        found = []
        for request in self._line.pending_requests():
            ok = True
            for name, wanted in filters.items():
                if wanted is None:
                    continue
                value = getattr(request, name)
                if isinstance(wanted, re.Pattern):
                    ok = isinstance(value, str) and wanted.search(value) is not None
                else:
                    ok = value == wanted
                if not ok:
                    break
            if ok and input is not MISSING:
                ok = _matchers()._json_match(input, request.input, "$").status == MATCHED
            if ok and option_ids is not None:
                ok = set(option_ids) == set(request.option_ids) and len(option_ids) == len(request.option_ids)
            if ok:
                found.append(request)
        if len(found) != 1:
            pending = self._line.pending_requests()
            given = {**filters, "input": None if input is MISSING else input, "option_ids": option_ids}
            asked = ", ".join(f"{name}={value!r}" for name, value in given.items() if value is not None)
            seen = "; ".join(
                f"{request.id!r} (action {request.action!r}, options {list(request.option_ids)})" for request in pending
            )
            raise AuthoringError(
                f"require_input_request({asked}) matched {len(found)} of {len(pending)} pending request(s); "
                f"expected exactly one" + (f". Pending: {seen}" if seen else "")
            )
        return found[0]

    @_drive_verb
    async def respond(self, *answers: str | Answer | Mapping[str, Any], output: Any = None) -> TurnHandle:
        """Answer pending requests as the next turn: strings go to pending requests in order; a string
        equal to one of the request's option ids becomes `option_id`, anything else free `text`."""
        pending = self._line.pending_requests()
        if not pending:
            raise AuthoringError(f"respond: no input request is pending on this session line{self._pending_elsewhere()}")
        if not answers:
            raise AuthoringError("respond needs at least one answer")
        by_id = {request.id: request for request in pending}
        answered: dict[str, InputResponse] = {}
        plain: list[str] = []
        for answer in answers:
            if isinstance(answer, str):
                plain.append(answer)
                continue
            if isinstance(answer, Mapping):
                answer = _answer_from_mapping(answer)
            if not isinstance(answer, Answer):
                raise AuthoringError(f"respond takes strings or Answer(...), got {type(answer).__name__}")
            request_id = answer.request.id if isinstance(answer.request, InputRequest) else answer.request
            request = by_id.get(request_id)
            if request is None:
                raise AuthoringError(f"respond: request {request_id!r} is not pending")
            if (answer.option_id is None) == (answer.text is None):
                raise AuthoringError("an Answer needs exactly one of option_id and text")
            if answer.option_id is not None and answer.option_id not in request.option_ids:
                raise AuthoringError(
                    f"respond: {answer.option_id!r} is not an option of request {request_id!r} "
                    f"(options: {', '.join(request.option_ids) or 'none'})"
                )
            if request_id in answered:
                raise AuthoringError(f"respond: request {request_id!r} is answered twice")
            answered[request_id] = InputResponse(request_id, answer.option_id, answer.text)  # type: ignore[arg-type]
        remaining = [request for request in pending if request.id not in answered]
        if len(plain) > len(remaining):
            raise AuthoringError(f"respond: {len(plain)} answers for {len(remaining)} unanswered request(s)")
        for request, text in zip(remaining, plain):
            if text in request.option_ids:
                answered[request.id] = InputResponse(request.id, option_id=text)  # type: ignore[arg-type]
            else:
                self._note_near_option(request, text)
                answered[request.id] = InputResponse(request.id, text=text)  # type: ignore[arg-type]
        responses = tuple(answered[request.id] for request in pending if request.id in answered)
        return await self._respond_with(responses, output)

    def _note_near_option(self, request: InputRequest, text: str) -> None:
        """A plain answer that is not an option id goes as free text, as NiceEval has it; one that is nearly an option
        id (`"aprove"`) may be a typo the agent reads as a refusal while the eval passes, so it is said (a warning
        of the attempt, and once in the run's output), never refused: free text like that may be meant."""
        from assay.core.format import did_you_mean

        near = did_you_mean(text, request.option_ids, cutoff=0.8, form="{}")
        if near:
            self._line.runtime.settings.feedback.diagnostic(
                "respond-near-option", "warning",
                f"respond: {text!r} went to request {request.id!r} as free text, though it is nearly its option {near} "
                f"(for the option: respond({near}))", None, phase="eval.run")

    @_drive_verb
    async def respond_all(self, option_id: str, *, output: Any = None) -> TurnHandle:
        """Answer every pending request with the same option; raises if any request lacks it."""
        if not isinstance(option_id, str):
            raise AuthoringError(
                f"respond_all takes one option id (a str), got {type(option_id).__name__}: respond_all(\"approve\"); "
                "to answer requests differently, respond(Answer(request, option_id=...), ...)"
            )
        pending = self._line.pending_requests()
        if not pending:
            raise AuthoringError(f"respond_all: no input request is pending on this session line{self._pending_elsewhere()}")
        for request in pending:
            if option_id not in request.option_ids:
                raise AuthoringError(
                    f"respond_all: request {request.id!r} has no option {option_id!r} "
                    f"(options: {', '.join(request.option_ids) or 'none'})"
                )
        return await self._respond_with(tuple(InputResponse(r.id, option_id=option_id) for r in pending), output)  # type: ignore[arg-type]

    def _pending_elsewhere(self) -> str:
        """A hint naming the other session lines that do wait for an answer, if any."""
        waiting = [line for line in self._line.runtime.lines if line is not self._line and line.pending_requests()]
        if not waiting:
            return ""
        names = ", ".join("the main session" if line.index == 0 else f"session {line.index}" for line in waiting)
        return f" ({names} has one: call respond on that session's handle)"

    async def _respond_with(self, responses: tuple[InputResponse, ...], output: Any) -> TurnHandle:
        text = "\n".join(response.option_id or response.text or "" for response in responses)
        schema = lower_schema(output) if output is not None else None
        record, data = await self._line.send(TurnInput(text, (), responses, schema), output)
        return TurnHandle(record, self._line.runtime, data)

    def __await__(self) -> Any:
        # `other = await t.new_session()`: Python's own words would be "object SessionHandle can't be used in
        # 'await' expression".
        raise AuthoringError("t.new_session() opens a conversation at once and is not awaited: write "
                             "`other = t.new_session()`, then `await other.send(text)`")

    # -- views ---------------------------------------------------------------------------------
    @property
    def reply(self) -> str | Unavailable | None:
        """The last assistant message of this line (Unavailable when messages evidence is incomplete)."""
        view = self._line.view()
        return _reply(view.turns, view.coverage)

    @property
    def session_id(self) -> str | None:
        return self._line.session.id

    @property
    def events(self) -> list[StreamEvent]:
        """This line's events so far, with the user messages the runner recorded."""
        return [event for _, _, event in self._line.view().events()]

    @property
    def turns(self) -> list[TurnRecord]:
        return list(self._line.turns)

    @property
    def tool_calls(self) -> list[ToolOccurrence]:
        return [occurrence for occurrence in self._line.ledger.occurrences if occurrence.kind == "tool"]

    @property
    def usage(self) -> Usage:
        return sum_usage(self._line.turns)[0]


_ANSWER_KEYS = {"request": "request", "option_id": "option_id", "optionId": "option_id", "text": "text"}


def _answer_from_mapping(answer: Mapping[str, Any]) -> Answer:
    """`{"request": …, "option_id": …}` (or NiceEval's `optionId`) or `{"request": …, "text": …}`; a misspelt
    key is named, not read as a missing option."""
    from assay.core.format import did_you_mean

    for key in answer:
        if key not in _ANSWER_KEYS:
            hint = did_you_mean(str(key), ("request", "option_id", "text"))
            raise AuthoringError(f"respond: an answer has no field {key!r}{hint} (fields: request, option_id, text)")
    fields = {_ANSWER_KEYS[key]: value for key, value in answer.items()}
    return Answer(fields.get("request"), fields.get("option_id"), fields.get("text"))  # type: ignore[arg-type]


class EvalContext(SessionHandle):
    """`t`: the main session line plus what only the eval as a whole can do.

    Its assertions see a cut across every session line started so far; `reply`, `events` and the
    drive verbs are the main line's."""

    __slots__ = ()

    def _view(self) -> ScopeView:
        return self._line.runtime.all_turns_view()

    def _view_name(self) -> str:
        return "t"

    def tool_order(self, tools: Sequence[str | ToolMatch]) -> AssertionHandle:
        """Order is only meaningful within one line: on `t` it reads the main line."""
        return SessionHandle(self._line).tool_order(tools)

    def event_order(self, matches: Sequence[EventMatch]) -> AssertionHandle:
        return SessionHandle(self._line).event_order(matches)

    def new_session(self, *_positional: Any) -> SessionHandle:
        """A parallel line with a fresh agent session (the agent decides whether it is isolated)."""
        if _positional:
            raise AuthoringError(
                f"new_session takes no arguments, got {_positional[0]!r}: `other = t.new_session()`, then "
                "`await other.send(text)`"
            )
        return SessionHandle(self._line.runtime.new_line())

    def check(self, value: Any, matcher: Matcher) -> AssertionHandle:
        if not isinstance(matcher, Matcher):
            from assay.agent.matchers import not_a_matcher

            raise AuthoringError(f"check(value, matcher) needs a matcher, got {type(matcher).__name__}"
                                 f"{not_a_matcher(matcher, 't.check(value, …)')}")
        runtime = self._line.runtime
        entry = AssertionEntry(len(runtime.entries), "check", "t", matcher)
        entry.subject = value
        evaluate_matcher(entry, matcher, value)
        runtime.entries.append(entry)
        return AssertionHandle(entry, runtime.score_eval)

    def score(self, points: float) -> AssertionHandle:
        """A direct contribution to a score eval (finite, >= 0)."""
        runtime = self._line.runtime
        if not runtime.score_eval:
            raise AuthoringError("t.score(n) is for score evals (define_score_eval)")
        if isinstance(points, bool) or not isinstance(points, (int, float)) or not (0 <= points < float("inf")):
            raise AuthoringError("t.score needs a finite number >= 0")
        entry = AssertionEntry(len(runtime.entries), "score", "t", f"score({points})")
        entry.settle(Outcome(MATCHED))
        entry.points = float(points)
        runtime.entries.append(entry)
        return AssertionHandle(entry, True)

    def skip(self, reason: str) -> None:
        self._line.runtime.skip_reason = reason
        raise SkipEval(reason)

    @property
    def judge(self) -> JudgeRecipes:
        line = self._line

        def reply() -> tuple[str, Any]:
            asked = line.turns[-1].input_text if line.turns else ""
            view = line.view()
            return asked, _reply(view.turns, view.coverage)

        return JudgeRecipes(line.runtime, "t", None, reply)

    @property
    def usage(self) -> Usage:
        """Summed over every session line."""
        return sum_usage(self._line.runtime.all_turns_view().turns)[0]

    @property
    def flags(self) -> Mapping[str, Any]:
        return self._line.runtime.settings.flags

    @property
    def model(self) -> str | None:
        return self._line.runtime.settings.model

    @property
    def reasoning_effort(self) -> str | None:
        return self._line.runtime.settings.reasoning_effort

    @property
    def signal(self) -> CancelSignal:
        return self._line.runtime.settings.signal

    @property
    def eval_id(self) -> str | None:
        return self._line.runtime.settings.eval_id

    @property
    def sandbox(self) -> EvalSandbox:
        """The attempt's sandbox (sandbox agents only): files, commands and the post-run file assertions."""
        runtime = self._line.runtime
        stage = runtime.sandbox_stage
        if stage is None:
            raise AuthoringError(
                f"t.sandbox exists only for sandbox agents; agent {runtime.settings.agent.name!r} is a direct agent "
                "(build a sandbox agent with define_sandbox_agent)"
            )
        if stage.core is None:
            raise AuthoringError("t.sandbox is not ready: the sandbox was not created")
        if runtime.eval_sandbox is None:
            from assay.agent.eval_sandbox import EvalSandbox

            runtime.eval_sandbox = EvalSandbox(stage.core, runtime)
        return runtime.eval_sandbox

    def progress(self, message: str, current: int | None = None, total: int | None = None) -> None:
        self._line.runtime.settings.feedback.progress(message, current, total)

    def log(self, message: str) -> None:
        self._line.runtime.settings.feedback.progress(message)

    def diagnostic(self, code: str, level: str, message: str, data: Mapping[str, Any] | None = None) -> None:
        self._line.runtime.settings.feedback.diagnostic(code, level, message, data, phase="eval.run")


__all__ = [
    "Answer", "AssertionHandle", "EvalContext", "JudgeRecipes", "SessionHandle", "TurnHandle", "at_least",
]
