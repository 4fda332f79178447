"""Assertions: one registered entry per author call, its configuring handle, and the scoped checks.

Each scoped check is a pure function of a `ScopeView` returning an Outcome plus the evidence
channel to blame when incomplete evidence made it unavailable (never read as "did not happen").
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from assay.agent.control import AuthoringError, StopEval
from assay.agent.evidence import ScopeView, ToolOccurrence, sum_usage
from assay.agent.matchers import (
    MATCHED, MATCHED_OUTCOME, MISMATCHED, UNAVAILABLE, EventMatch, Matcher, Outcome, ToolMatch, show,
)
from assay.agent.pricing import estimate_cost, find_price

PENDING = "pending"
ERRORED = "errored"


class AssertionEntry:
    """One registered assertion; mutable only until the attempt is sealed."""

    __slots__ = (
        "index", "kind", "scope", "description", "status", "reason", "value", "measurement", "gated", "threshold",
        "optional", "at_least", "points", "key", "label", "group", "pending", "subject", "candidates", "stop",
        "details",
    )

    def __init__(self, index: int, kind: str, scope: str, description: str, *, measurement: bool = False) -> None:
        self.index = index
        self.kind = kind
        self.scope = scope
        self.description = description
        self.status = PENDING
        self.reason = ""
        self.value: float | None = None  # a measurement's score in [0, 1]
        self.measurement = measurement
        self.gated: bool | None = None  # None: the default for the eval kind
        self.threshold: float | None = None
        self.optional = False
        self.at_least: float | None = None
        self.points: float | None = None
        self.key: str | None = None
        self.label: str | None = None
        self.group: str | None = None
        self.pending: Awaitable[Outcome] | None = None
        self.subject: Any = None  # the checked value, returned by or_stop
        self.candidates: tuple[str, ...] = ()
        self.stop = False
        self.details: dict[str, Any] | None = None  # e.g. which judge model graded it, from cache or not

    def settle(self, outcome: Outcome) -> None:
        self.status = outcome.status
        self.reason = outcome.reason
        if outcome.score is not None:
            if not math.isfinite(outcome.score) or not 0.0 <= outcome.score <= 1.0:
                self.status = ERRORED
                self.reason = f"score {outcome.score!r} is outside [0, 1]"
            else:
                self.value = outcome.score
                self.measurement = True

    def fail_with(self, error: BaseException) -> None:
        self.status = ERRORED
        self.reason = f"{type(error).__name__}: {error}"

    async def resolve(self) -> None:
        pending, self.pending = self.pending, None
        if pending is None:
            return
        try:
            self.settle(await pending)
        except Exception as error:  # noqa: BLE001 - a broken predicate errors this entry, not the run
            self.fail_with(error)

    @property
    def below_threshold(self) -> bool:
        return self.threshold is not None and self.value is not None and self.value < self.threshold

    @property
    def text(self) -> str:
        """The call as written, e.g. `called_tool(tool_match('get_weather'))` (rendered lazily: it is only
        needed for reports)."""
        description = self.description
        if self.kind == "check":
            return f"check({description})"
        return description if isinstance(description, str) else str(description)

    @property
    def name(self) -> str:
        return self.label or self.key or self.text

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "kind": self.kind, "scope": self.scope, "description": self.text, "status": self.status,
        }
        if self.reason:
            document["reason"] = self.reason
        if self.value is not None:
            document["value"] = self.value
        for name in ("threshold", "at_least", "points", "key", "label", "group"):
            value = getattr(self, name)
            if value is not None:
                document[name] = value
        if self.optional:
            document["optional"] = True
        if self.gated is not None:
            document["gated"] = self.gated
        if self.candidates:
            document["candidates"] = list(self.candidates)
        if self.details:
            document["judge"] = self.details
        return document


class AssertionHandle:
    """Configures the one entry it was returned for; `await handle.or_stop()` is the only barrier."""

    __slots__ = ("_entry", "_score_eval")

    def __init__(self, entry: AssertionEntry, score_eval: bool) -> None:
        self._entry = entry
        self._score_eval = score_eval

    @property
    def status(self) -> str:
        return self._entry.status

    @property
    def reason(self) -> str:
        return self._entry.reason

    def key(self, key: str) -> AssertionHandle:
        if self._entry.key is not None:
            raise AuthoringError(f"key is already set on {self._entry.text}")
        self._entry.key = key
        return self

    def label(self, label: str) -> AssertionHandle:
        if self._entry.label is not None:
            raise AuthoringError(f"label is already set on {self._entry.text}")
        self._entry.label = label
        return self

    def group(self, title: str) -> AssertionHandle:
        self._entry.group = title
        return self

    def optional(self) -> AssertionHandle:
        """Unavailable stays visible but does not affect the verdict."""
        if self._score_eval:
            raise AuthoringError("optional() is for pass evals")
        self._entry.optional = True
        return self

    def gate(self, threshold: float | None = None) -> AssertionHandle:
        """A boolean enters the verdict; a measurement enters it with `threshold`."""
        entry = self._entry
        if threshold is None and entry.measurement:
            raise AuthoringError(f"gate() on the measurement {entry.text} needs a threshold")
        if threshold is not None and not (math.isfinite(threshold) and 0 <= threshold <= 1):
            raise AuthoringError("gate threshold must be a number in [0, 1]")
        entry.gated = True
        entry.threshold = threshold
        return self

    def at_least(self, threshold: float) -> AssertionHandle:
        """A local threshold shown as met or below; it never enters the verdict."""
        self._entry.at_least = threshold
        return self

    def score(self, points: float) -> AssertionHandle:
        if not self._score_eval:
            raise AuthoringError("score(points) is for score evals (define_score_eval)")
        if isinstance(points, bool) or not isinstance(points, (int, float)) or not math.isfinite(points) or points <= 0:
            raise AuthoringError("score points must be a finite number greater than 0")
        self._entry.points = float(points)
        return self

    async def or_stop(self) -> Any:
        """End the test here unless the assertion held; returns the checked value when it did."""
        entry = self._entry
        await entry.resolve()
        if entry.status != MATCHED or entry.below_threshold:
            entry.stop = True
            raise StopEval(entry.text)
        return entry.subject


# ---------------------------------------------------------------------------------------------
# Scoped checks: (view, …) -> (Outcome, candidates, blamed channel)

Checked = tuple[Outcome, tuple[str, ...], str | None]


def _incomplete(view: ScopeView, channel: str, what: str) -> Checked:
    coverage = getattr(view.coverage, channel)
    return Outcome(UNAVAILABLE, f"{what}, but {channel} evidence is {coverage.state}: {coverage.reason}"), (), channel


def check_succeeded(view: ScopeView) -> Checked:
    turns = view.turns
    if not turns:
        return Outcome(MISMATCHED, "no turn was sent"), (), None
    last_by_session: dict[int, Any] = {}
    for turn in turns:
        last_by_session[turn.session] = turn
    for turn in turns:
        if turn.status == "failed":
            detail = f": {turn.output_error}" if turn.output_error else ""
            return Outcome(MISMATCHED, f"{turn.label} failed{detail}"), (), None
        if turn.status == "waiting" and last_by_session[turn.session] is turn:
            return Outcome(MISMATCHED, f"{turn.label} is waiting for input that was never given"), (), None
    if not view.coverage.status.complete:
        return _incomplete(view, "status", "every turn reported completed")
    return MATCHED_OUTCOME, (), None


def _tools(view: ScopeView) -> list[ToolOccurrence]:
    return [occurrence for occurrence in view.occurrences() if occurrence.kind == "tool"]


def _judge_candidates(items: Sequence[Any], matcher: Matcher) -> tuple[int, int, list[str], Outcome | None]:
    known = undecided = 0
    refs: list[str] = []
    last_unavailable = None
    for item in items:
        outcome = matcher.evaluate(item)
        if outcome.status == MATCHED:
            known += 1
            refs.append(getattr(item, "id", ""))
        elif outcome.status == UNAVAILABLE:
            undecided += 1
            refs.append(getattr(item, "id", ""))
            last_unavailable = outcome
    return known, undecided, refs, last_unavailable


def _times(count: int) -> str:
    return "1 time" if count == 1 else f"{count} times"


def _count_check(
    view: ScopeView, channel: str, known: int, undecided: int, exact: int | None, minimum: int,
    what: str, seen: str, undecided_outcome: Outcome | None,
) -> tuple[Outcome, str | None]:
    complete = getattr(view.coverage, channel).complete
    if exact is not None:
        if known > exact:
            return Outcome(MISMATCHED, f"expected {what} exactly {_times(exact)}, found {known}{seen}"), None
        if undecided == 0 and complete:
            if known == exact:
                return MATCHED_OUTCOME, None
            return Outcome(MISMATCHED, f"expected {what} exactly {_times(exact)}, found {known}{seen}"), None
    else:
        if known >= minimum:
            return MATCHED_OUTCOME, None
        if undecided == 0 and complete:
            return Outcome(MISMATCHED, f"expected {what} at least {_times(minimum)}, found {known}{seen}"), None
    if undecided and undecided_outcome is not None:
        return Outcome(UNAVAILABLE, f"{undecided} candidate(s) undecidable: {undecided_outcome.reason}"), None
    coverage = getattr(view.coverage, channel)
    expected = f"exactly {_times(exact)}" if exact is not None else f"at least {_times(minimum)}"
    evidence = f"{channel} evidence is {coverage.state}: {coverage.reason}"
    return Outcome(UNAVAILABLE, f"expected {what} {expected}, found {known}{seen}, but {evidence}"), channel


def parse_count(count: Any) -> tuple[int | None, int]:
    """(exact, minimum): None -> at least 1; n -> exactly n; {"at_least": n} -> at least n."""
    if count is None:
        return None, 1
    if isinstance(count, dict) and set(count) == {"at_least"}:
        minimum = count["at_least"]
        if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
            raise AuthoringError("count at_least must be a positive integer")
        return None, minimum
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise AuthoringError("count must be a positive integer or at_least(n); use not_called_tool for zero")
    return count, count


def _seen_names(tools: Sequence[ToolOccurrence]) -> str:
    if not tools:
        return " (no tools were called)"
    names = list(dict.fromkeys(occurrence.name for occurrence in tools))
    return f" (tools called: {', '.join(names)})"


def check_called_tool(view: ScopeView, matcher: ToolMatch, count: Any) -> Checked:
    exact, minimum = parse_count(count)
    tools = _tools(view)
    known, undecided, refs, unavailable = _judge_candidates(tools, matcher)
    outcome, channel = _count_check(
        view, "actions", known, undecided, exact, minimum, f"a call to {matcher.describe()}", _seen_names(tools),
        unavailable,
    )
    return outcome, tuple(refs), channel


def check_not_called_tool(view: ScopeView, matcher: ToolMatch) -> Checked:
    tools = _tools(view)
    known, undecided, refs, unavailable = _judge_candidates(tools, matcher)
    if known:
        return Outcome(MISMATCHED, f"{matcher.describe()} was called {_times(known)}"), tuple(refs), None
    if undecided and unavailable is not None:
        return Outcome(UNAVAILABLE, f"{undecided} candidate(s) undecidable: {unavailable.reason}"), tuple(refs), None
    if not view.coverage.actions.complete:
        return _incomplete(view, "actions", f"no {matcher.describe()} was seen")
    return MATCHED_OUTCOME, (), None


def _ordered(items: Sequence[Any], matchers: Sequence[Matcher], channel_complete: bool) -> tuple[Outcome, bool]:
    cursor = 0
    undecided = False
    for step, matcher in enumerate(matchers):
        found = False
        while cursor < len(items):
            item = items[cursor]
            cursor += 1
            outcome = matcher.evaluate(item)
            if outcome.status == MATCHED:
                found = True
                break
            if outcome.status == UNAVAILABLE:
                undecided = True
        if not found:
            if undecided:
                return Outcome(UNAVAILABLE, f"step {step + 1} ({matcher.describe()}) has undecidable candidates"), False
            if not channel_complete:
                return Outcome(UNAVAILABLE, f"step {step + 1} ({matcher.describe()}) not found"), True
            where = "" if step == 0 else f" after step {step}"
            return Outcome(MISMATCHED, f"step {step + 1} ({matcher.describe()}) not found{where}"), False
    return MATCHED_OUTCOME, False


def check_tool_order(view: ScopeView, matchers: Sequence[ToolMatch]) -> Checked:
    complete = view.coverage.actions.complete
    outcome, blame = _ordered(_tools(view), matchers, complete)
    if blame:
        return _incomplete(view, "actions", outcome.reason)
    return outcome, (), None


def check_used_no_tools(view: ScopeView) -> Checked:
    tools = _tools(view)
    if tools:
        return Outcome(MISMATCHED, f"{len(tools)} tool call(s){_seen_names(tools)}"), tuple(o.id for o in tools), None
    if not view.coverage.actions.complete:
        return _incomplete(view, "actions", "no tool call was seen")
    return MATCHED_OUTCOME, (), None


def check_max_tool_calls(view: ScopeView, maximum: int) -> Checked:
    tools = _tools(view)
    if len(tools) > maximum:
        return Outcome(MISMATCHED, f"{len(tools)} tool calls, more than {maximum}{_seen_names(tools)}"), (), None
    if not view.coverage.actions.complete:
        return _incomplete(view, "actions", f"{len(tools)} tool call(s) seen")
    return MATCHED_OUTCOME, (), None


def check_no_failed_actions(view: ScopeView) -> Checked:
    failed = [occurrence for occurrence in view.occurrences() if occurrence.status == "failed"]
    if failed:
        names = ", ".join(f"{occurrence.kind} {occurrence.name!r}" for occurrence in failed)
        return Outcome(MISMATCHED, f"failed: {names}"), tuple(occurrence.id for occurrence in failed), None
    if not view.coverage.actions.complete:
        return _incomplete(view, "actions", "no failed action was seen")
    return MATCHED_OUTCOME, (), None


@dataclass(frozen=True, slots=True)
class EventCandidate:
    id: str
    event: Any
    occurrence: ToolOccurrence | None


def event_candidates(view: ScopeView) -> list[EventCandidate]:
    occurrences = {(o.session, o.turn, o.event): o for o in view.occurrences()}
    open_by_operation: dict[tuple[str, str], ToolOccurrence] = {}
    rows = []
    for turn, position, event in view.events():
        occurrence = None
        if event.type == "operation.started":
            occurrence = occurrences.get((turn.session, turn.ordinal, position))
            if occurrence is not None:
                open_by_operation[(event.operation.kind, event.operation_id)] = occurrence
        elif event.type == "operation.finished":
            occurrence = open_by_operation.get((event.kind, event.operation_id))
        rows.append(EventCandidate(f"{turn.session}.{turn.ordinal}.{position}", event, occurrence))
    return rows


class _EventSelector(Matcher):
    __slots__ = ("match",)

    def __init__(self, match: EventMatch) -> None:
        self.match = match

    def evaluate(self, candidate: Any) -> Outcome:
        return self.match.evaluate((candidate.event, candidate.occurrence))

    def describe(self) -> str:
        return self.match.describe()


def _event_channel(view: ScopeView, match: EventMatch) -> str:
    """Message selections also depend on the messages channel; blame whichever is incomplete."""
    if match.type == "message" and not view.coverage.messages.complete:
        return "messages"
    return "events"


def check_event(view: ScopeView, match: EventMatch, count: Any) -> Checked:
    exact, minimum = parse_count(count)
    selector = _EventSelector(match)
    known, undecided, refs, unavailable = _judge_candidates(event_candidates(view), selector)
    outcome, channel = _count_check(
        view, _event_channel(view, match), known, undecided, exact, minimum, match.describe(), "", unavailable
    )
    return outcome, tuple(refs), channel


def check_not_event(view: ScopeView, match: EventMatch) -> Checked:
    known, undecided, refs, unavailable = _judge_candidates(event_candidates(view), _EventSelector(match))
    if known:
        return Outcome(MISMATCHED, f"{match.describe()} occurred {_times(known)}"), tuple(refs), None
    if undecided and unavailable is not None:
        return Outcome(UNAVAILABLE, f"{undecided} candidate(s) undecidable: {unavailable.reason}"), tuple(refs), None
    channel = _event_channel(view, match)
    if not getattr(view.coverage, channel).complete:
        return _incomplete(view, channel, f"no {match.describe()} was seen")
    return MATCHED_OUTCOME, (), None


def check_event_order(view: ScopeView, matches: Sequence[EventMatch]) -> Checked:
    complete = view.coverage.events.complete and (
        view.coverage.messages.complete or all(match.type != "message" for match in matches)
    )
    outcome, blame = _ordered(event_candidates(view), [_EventSelector(match) for match in matches], complete)
    if blame:
        return _incomplete(view, "events", outcome.reason)
    return outcome, (), None


def check_max_tokens(view: ScopeView, maximum: int) -> Checked:
    usage, every_turn = sum_usage(view.turns)
    total = usage.total_tokens
    if total is not None and total > maximum:
        return Outcome(MISMATCHED, f"{total} tokens, more than {maximum}"), (), None
    if not view.coverage.usage.complete:
        return _incomplete(view, "usage", f"{total or 0} tokens seen")
    if not every_turn or total is None:
        return Outcome(UNAVAILABLE, "a turn reported no usage"), (), "usage"
    return MATCHED_OUTCOME, (), None


def check_max_cost(view: ScopeView, maximum: float, model: str | None, pricing: Any) -> Checked:
    known = 0.0
    missing = 0
    for turn in view.turns:
        cost = estimate_cost(model, turn.usage, pricing)
        if cost is None:
            missing += 1
        else:
            known += cost
    if known > maximum:
        return Outcome(MISMATCHED, f"estimated ${known:.6f}, more than ${maximum:.6f}"), (), None
    if not view.coverage.usage.complete:
        return _incomplete(view, "usage", f"estimated ${known:.6f} so far")
    if missing or not view.turns:
        if find_price(model, pricing or {}) is None:
            why = f"no price for model {model!r}"
        else:
            why = "a turn reported no token usage"
        return Outcome(UNAVAILABLE, f"no cost estimate can be formed: {why}"), (), None
    return MATCHED_OUTCOME, (), None


def evaluate_matcher(entry: AssertionEntry, matcher: Matcher, value: Any) -> None:
    """Settle `entry` now, or leave it pending when the matcher is asynchronous."""
    try:
        outcome = matcher.evaluate(value)
    except Exception as error:  # noqa: BLE001 - a broken matcher errors this entry only
        entry.fail_with(error)
        return
    if inspect.isawaitable(outcome):
        entry.pending = outcome
    else:
        entry.settle(outcome)


__all__ = [
    "AssertionEntry", "AssertionHandle", "ERRORED", "PENDING", "check_called_tool", "check_event", "check_event_order",
    "check_max_cost", "check_max_tokens", "check_max_tool_calls", "check_no_failed_actions", "check_not_called_tool",
    "check_not_event", "check_succeeded", "check_tool_order", "check_used_no_tools", "evaluate_matcher",
    "parse_count", "show",
]
