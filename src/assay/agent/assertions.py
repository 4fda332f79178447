"""The built-in assertions (`succeeded`, `called_tool`, `max_cost`, the sandbox's `file_changed`, …) as frozen values.

Each one's `evaluate(view)` reads only the `ScopeView` it is given and returns an `Outcome`; when incomplete
evidence made it unavailable, the outcome names that channel (no match is never read as "did not happen").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from assay.agent.control import AuthoringError
from assay.agent.evidence import ScopeView, ToolOccurrence, sum_usage
from assay.agent.matchers import (
    MATCHED, MATCHED_OUTCOME, MISMATCHED, UNAVAILABLE, CommandMatch, EventMatch, Matcher, Outcome, ToolMatch,
)
from assay.agent.pricing import estimate_cost, find_price


class Assertion:
    """Base of every built-in assertion: `kind` names it in the record, `describe()` is the call as the
    author wrote it (`kind()` for those without arguments), `evaluate(view)` decides it."""

    __slots__ = ()
    kind: ClassVar[str] = ""

    def evaluate(self, view: ScopeView) -> Outcome:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.kind}()"


def _unless_incomplete(view: ScopeView, channel: str, what: str) -> Outcome:
    """Matched, when nothing contradicted it and `channel` saw everything; unavailable otherwise."""
    if getattr(view.coverage, channel).complete:
        return MATCHED_OUTCOME
    return _incomplete(view, channel, what)


def _incomplete(view: ScopeView, channel: str, what: str) -> Outcome:
    coverage = getattr(view.coverage, channel)
    reason = f"{what}, but {channel} evidence is {coverage.state}: {coverage.reason}"
    return Outcome(UNAVAILABLE, reason, channel=channel)


def _tools(view: ScopeView) -> list[ToolOccurrence]:
    return [occurrence for occurrence in view.occurrences() if occurrence.kind == "tool"]


def _judge_candidates(items: Sequence[Any], matcher: Matcher) -> tuple[int, int, tuple[str, ...], Outcome | None]:
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
    return known, undecided, tuple(refs), last_unavailable


def _times(count: int) -> str:
    return "1 time" if count == 1 else f"{count} times"


def _counted(
    view: ScopeView, channel: str, items: Sequence[Any], matcher: Matcher, count: Any, what: str, seen: str,
) -> Outcome:
    """The shared rule of `called_tool` and `event`: found matches decide a minimum or exceed an exact
    count at once; anything else needs every candidate decided and the channel complete."""
    exact, minimum = parse_count(count)  # a bad count is the author's mistake, raised at the call site
    known, undecided, candidates, undecided_outcome = _judge_candidates(items, matcher)
    complete = getattr(view.coverage, channel).complete
    if exact is not None:
        if known > exact or (known < exact and undecided == 0 and complete):
            short = f"expected {what} exactly {_times(exact)}, found {known}{seen}"
            return Outcome(MISMATCHED, short, None, candidates)
        if undecided == 0 and complete:
            return Outcome(MATCHED, "", None, candidates) if candidates else MATCHED_OUTCOME
    else:
        if known >= minimum:
            return Outcome(MATCHED, "", None, candidates) if candidates else MATCHED_OUTCOME
        if undecided == 0 and complete:
            short = f"expected {what} at least {_times(minimum)}, found {known}{seen}"
            return Outcome(MISMATCHED, short, None, candidates)
    if undecided and undecided_outcome is not None:
        reason = f"{undecided} candidate(s) undecidable: {undecided_outcome.reason}"
        return Outcome(UNAVAILABLE, reason, None, candidates)
    coverage = getattr(view.coverage, channel)
    expected = f"exactly {_times(exact)}" if exact is not None else f"at least {_times(minimum)}"
    evidence = f"{channel} evidence is {coverage.state}: {coverage.reason}"
    reason = f"expected {what} {expected}, found {known}{seen}, but {evidence}"
    return Outcome(UNAVAILABLE, reason, None, candidates, channel)


def _absent(view: ScopeView, channel: str, items: Sequence[Any], matcher: Matcher, occurred: str) -> Outcome:
    """The shared rule of `not_called_tool` and `not_event`: a match found decides, silence only with evidence."""
    known, undecided, candidates, undecided_outcome = _judge_candidates(items, matcher)
    if known:
        return Outcome(MISMATCHED, f"{matcher.describe()} {occurred} {_times(known)}", None, candidates)
    if undecided and undecided_outcome is not None:
        reason = f"{undecided} candidate(s) undecidable: {undecided_outcome.reason}"
        return Outcome(UNAVAILABLE, reason, None, candidates)
    if not getattr(view.coverage, channel).complete:
        return _incomplete(view, channel, f"no {matcher.describe()} was seen")
    return MATCHED_OUTCOME


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


def _call_with_count(name: str, selection: Matcher, count: Any) -> str:
    suffix = "" if count is None else f", count={count}"
    return f"{name}({selection.describe()}{suffix})"


def _seen_names(tools: Sequence[ToolOccurrence]) -> str:
    if not tools:
        return " (no tools were called)"
    names = list(dict.fromkeys(occurrence.name for occurrence in tools))
    return f" (tools called: {', '.join(names)})"


def _near_miss(tools: Sequence[ToolOccurrence], matcher: ToolMatch) -> str:
    """Why a call of the wanted tool did not match: beside "tools called: get_weather", "found 0" alone hides
    that its `input=` or `output=` was what missed (a misspelt field, a wrong value)."""
    commands = isinstance(matcher, CommandMatch)
    if matcher.name is None and not commands:
        return ""
    if commands:
        from assay.agent.logical_command import read_command
    for occurrence in tools:
        if commands:
            if read_command(occurrence.command)[0] != "command":  # (a call that ran no readable command: no near miss)
                continue
        elif matcher.name not in (occurrence.name, occurrence.canonical):
            continue
        outcome = matcher.evaluate(occurrence)
        if outcome.status == MISMATCHED:
            return f"; {occurrence.name} #{occurrence.operation_id} did not match: {outcome.reason}"
    return ""


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


def _listed(name: str, matchers: Sequence[Matcher]) -> str:
    return f"{name}([" + ", ".join(matcher.describe() for matcher in matchers) + "])"


# ---------------------------------------------------------------------------------------------
# Turns and tools


@dataclass(frozen=True, slots=True)
class Succeeded(Assertion):
    """Every turn completed and no input request is left unanswered."""

    kind: ClassVar[str] = "succeeded"

    def evaluate(self, view: ScopeView) -> Outcome:
        turns = view.turns
        if not turns:
            return Outcome(MISMATCHED, "no turn was sent")
        last_by_session: dict[int, Any] = {}
        for turn in turns:
            last_by_session[turn.session] = turn
        for turn in turns:
            if turn.status == "failed":
                detail = f": {turn.output_error}" if turn.output_error else ""
                return Outcome(MISMATCHED, f"{turn.label} failed{detail}")
            if turn.status == "waiting" and last_by_session[turn.session] is turn:
                return Outcome(MISMATCHED, f"{turn.label} is waiting for input that was never given")
        return _unless_incomplete(view, "status", "every turn reported completed")


@dataclass(frozen=True, slots=True)
class CalledTool(Assertion):
    """At least once by default; `count=n` exactly n, `count=at_least(n)` n or more."""

    matcher: ToolMatch
    count: int | Mapping[str, int] | None = None
    kind: ClassVar[str] = "called_tool"

    def evaluate(self, view: ScopeView) -> Outcome:
        tools = _tools(view)
        what = f"a call to {self.matcher.describe()}"
        seen = _seen_names(tools) + _near_miss(tools, self.matcher)
        return _counted(view, "actions", tools, self.matcher, self.count, what, seen)

    def describe(self) -> str:
        return _call_with_count("called_tool", self.matcher, self.count)


@dataclass(frozen=True, slots=True)
class NotCalledTool(Assertion):
    """No matching call; seeing none proves it only when the actions channel is complete."""

    matcher: ToolMatch
    kind: ClassVar[str] = "not_called_tool"

    def evaluate(self, view: ScopeView) -> Outcome:
        return _absent(view, "actions", _tools(view), self.matcher, "was called")

    def describe(self) -> str:
        return f"not_called_tool({self.matcher.describe()})"


@dataclass(frozen=True, slots=True)
class ToolOrder(Assertion):
    """An ordered subsequence of distinct calls."""

    matchers: tuple[ToolMatch, ...]
    kind: ClassVar[str] = "tool_order"

    def evaluate(self, view: ScopeView) -> Outcome:
        outcome, blame = _ordered(_tools(view), self.matchers, view.coverage.actions.complete)
        return _incomplete(view, "actions", outcome.reason) if blame else outcome

    def describe(self) -> str:
        return _listed("tool_order", self.matchers)


@dataclass(frozen=True, slots=True)
class UsedNoTools(Assertion):
    """No tool call at all in the scope."""

    kind: ClassVar[str] = "used_no_tools"

    def evaluate(self, view: ScopeView) -> Outcome:
        tools = _tools(view)
        if tools:
            refs = tuple(occurrence.id for occurrence in tools)
            return Outcome(MISMATCHED, f"{len(tools)} tool call(s){_seen_names(tools)}", None, refs)
        return _unless_incomplete(view, "actions", "no tool call was seen")


@dataclass(frozen=True, slots=True)
class MaxToolCalls(Assertion):
    """At most `maximum` tool calls; too many decide at once, few enough need complete actions evidence."""

    maximum: int
    kind: ClassVar[str] = "max_tool_calls"

    def evaluate(self, view: ScopeView) -> Outcome:
        tools = _tools(view)
        if len(tools) > self.maximum:
            return Outcome(MISMATCHED, f"{len(tools)} tool calls, more than {self.maximum}{_seen_names(tools)}")
        if not view.coverage.actions.complete:
            return _incomplete(view, "actions", f"{len(tools)} tool call(s) seen")
        return MATCHED_OUTCOME

    def describe(self) -> str:
        return f"max_tool_calls({self.maximum})"


@dataclass(frozen=True, slots=True)
class NoFailedActions(Assertion):
    """No tool or subagent finished failed; a human rejection is not a failure."""

    kind: ClassVar[str] = "no_failed_actions"

    def evaluate(self, view: ScopeView) -> Outcome:
        failed = [occurrence for occurrence in view.occurrences() if occurrence.status == "failed"]
        if failed:
            names = ", ".join(f"{occurrence.kind} {occurrence.name!r}" for occurrence in failed)
            return Outcome(MISMATCHED, f"failed: {names}", None, tuple(occurrence.id for occurrence in failed))
        return _unless_incomplete(view, "actions", "no failed action was seen")


# ---------------------------------------------------------------------------------------------
# Events


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


@dataclass(frozen=True, slots=True)
class _EventSelector(Matcher):
    """An `EventMatch` over event candidates (the event with its paired tool occurrence)."""

    match: EventMatch

    def evaluate(self, candidate: Any) -> Outcome:
        return self.match.evaluate((candidate.event, candidate.occurrence))

    def describe(self) -> str:
        return self.match.describe()


def _event_channel(view: ScopeView, match: EventMatch) -> str:
    """Message selections also depend on the messages channel; blame whichever is incomplete."""
    if match.type == "message" and not view.coverage.messages.complete:
        return "messages"
    return "events"


@dataclass(frozen=True, slots=True)
class EventOccurred(Assertion):
    """`event(match, count=…)`: counted like `called_tool`."""

    match: EventMatch
    count: int | Mapping[str, int] | None = None
    kind: ClassVar[str] = "event"

    def evaluate(self, view: ScopeView) -> Outcome:
        selector = _EventSelector(self.match)
        channel = _event_channel(view, self.match)
        return _counted(view, channel, event_candidates(view), selector, self.count, self.match.describe(), "")

    def describe(self) -> str:
        return _call_with_count("event", self.match, self.count)


@dataclass(frozen=True, slots=True)
class NoEvent(Assertion):
    """`not_event(match)`: the rule of `not_called_tool` over events (and messages, for a message match)."""

    match: EventMatch
    kind: ClassVar[str] = "not_event"

    def evaluate(self, view: ScopeView) -> Outcome:
        selector = _EventSelector(self.match)
        channel = _event_channel(view, self.match)
        return _absent(view, channel, event_candidates(view), selector, "occurred")

    def describe(self) -> str:
        return f"not_event({self.match.describe()})"


@dataclass(frozen=True, slots=True)
class EventOrder(Assertion):
    """The matches occur in this order (other events may come between them)."""

    matches: tuple[EventMatch, ...]
    kind: ClassVar[str] = "event_order"

    def evaluate(self, view: ScopeView) -> Outcome:
        complete = view.coverage.events.complete and (
            view.coverage.messages.complete or all(match.type != "message" for match in self.matches)
        )
        selectors = [_EventSelector(match) for match in self.matches]
        outcome, blame = _ordered(event_candidates(view), selectors, complete)
        return _incomplete(view, "events", outcome.reason) if blame else outcome

    def describe(self) -> str:
        return _listed("event_order", self.matches)


# ---------------------------------------------------------------------------------------------
# Usage and cost


@dataclass(frozen=True, slots=True)
class MaxTokens(Assertion):
    """Summed total tokens at most `maximum`; a turn without usage leaves it unavailable."""

    maximum: int
    kind: ClassVar[str] = "max_tokens"

    def evaluate(self, view: ScopeView) -> Outcome:
        usage, every_turn = sum_usage(view.turns)
        total = usage.total_tokens
        if total is not None and total > self.maximum:
            return Outcome(MISMATCHED, f"{total} tokens, more than {self.maximum}")
        if not view.coverage.usage.complete:
            return _incomplete(view, "usage", f"{total or 0} tokens seen")
        if not every_turn or total is None:
            return Outcome(UNAVAILABLE, "a turn reported no usage", channel="usage")
        return MATCHED_OUTCOME

    def describe(self) -> str:
        return f"max_tokens({self.maximum})"


@dataclass(frozen=True, slots=True)
class MaxCost(Assertion):
    """Compared with the runner's estimate from the price table, never the provider-reported cost."""

    maximum: float  # as the author wrote it, so `max_cost(1)` stays `max_cost(1)` in the record
    model: str | None
    pricing: Mapping[str, Any] | None
    kind: ClassVar[str] = "max_cost"

    def evaluate(self, view: ScopeView) -> Outcome:
        known = 0.0
        missing = 0
        for turn in view.turns:
            cost = estimate_cost(self.model, turn.usage, self.pricing)
            if cost is None:
                missing += 1
            else:
                known += cost
        if known > self.maximum:
            return Outcome(MISMATCHED, f"estimated ${known:.6f}, more than ${self.maximum:.6f}")
        if not view.coverage.usage.complete:
            return _incomplete(view, "usage", f"estimated ${known:.6f} so far")
        if missing or not view.turns:
            if find_price(self.model, self.pricing or {}) is None:
                why = f"no price for model {self.model!r}"
            else:
                why = "a turn reported no token usage"
            return Outcome(UNAVAILABLE, f"no cost estimate can be formed: {why}")
        return MATCHED_OUTCOME

    def describe(self) -> str:
        return f"max_cost({self.maximum})"


# ---------------------------------------------------------------------------------------------
# Sandbox: post-run, over the send windows' File Changes (a `FileChangesView`)


def _ledger_incomplete(view: Any, what: str) -> Outcome:
    return Outcome(UNAVAILABLE, f"{what}, but {view.reason}")


def _show_paths(paths: Any) -> str:
    return ", ".join(sorted(paths)) or "none"


@dataclass(frozen=True, slots=True)
class ChangedPaths(Assertion):
    """The set of paths the agent changed (in any send window) is exactly `paths`."""

    paths: tuple[str, ...]
    kind: ClassVar[str] = "changed_paths"

    def evaluate(self, view: Any) -> Outcome:
        changed = view.changed_paths()
        wanted = set(self.paths)
        unexpected, missing = changed - wanted, wanted - changed
        if unexpected:
            return Outcome(MISMATCHED, f"unexpected changes: {_show_paths(unexpected)}"
                           + (f"; unchanged: {_show_paths(missing)}" if missing else ""))
        if not view.complete:
            return _ledger_incomplete(view, f"changed so far: {_show_paths(changed)}")
        if missing:
            return Outcome(MISMATCHED, f"not changed: {_show_paths(missing)} (changed: {_show_paths(changed)})")
        return MATCHED_OUTCOME

    def describe(self) -> str:
        return f"changed_paths({list(self.paths)!r})"


@dataclass(frozen=True, slots=True)
class NoChanges(Assertion):
    """`changed_paths([])`: the agent changed nothing in the workdir."""

    kind: ClassVar[str] = "no_changes"

    def evaluate(self, view: Any) -> Outcome:
        return ChangedPaths(()).evaluate(view)


def _content_matches(matcher: Matcher | None, side: Any, name: str) -> Outcome:
    """A `before=` / `after=` condition on one side of a change (None: that side does not exist)."""
    if matcher is None:
        return MATCHED_OUTCOME
    if side is not None and side.text is None:
        return Outcome(UNAVAILABLE, f"{name} content is elided ({side.elided})")
    outcome = matcher.evaluate(None if side is None else side.text)
    if not isinstance(outcome, Outcome):
        raise AuthoringError("file_changed before=/after= take synchronous matchers")
    if outcome.status != MATCHED:
        return Outcome(outcome.status, f"{name}: {outcome.reason}")
    return outcome


@dataclass(frozen=True, slots=True)
class FileChanged(Assertion):
    """Some send window has a delta for `path` meeting every condition (status, before, after) at once."""

    path: str
    status: str | None = None
    before: Matcher | None = None
    after: Matcher | None = None
    kind: ClassVar[str] = "file_changed"

    def evaluate(self, view: Any) -> Outcome:
        reasons: list[str] = []
        undecided: Outcome | None = None
        for window, change in view.deltas(self.path):
            if self.status is not None and change.status != self.status:
                reasons.append(f"{window.label}: {change.status}, not {self.status}")
                continue
            outcomes = [_content_matches(self.before, change.before, "before"),
                        _content_matches(self.after, change.after, "after")]
            failed = [outcome for outcome in outcomes if outcome.status == MISMATCHED]
            if failed:
                reasons.append(f"{window.label}: {failed[0].reason}")
            elif any(outcome.status == UNAVAILABLE for outcome in outcomes):
                undecided = next(outcome for outcome in outcomes if outcome.status == UNAVAILABLE)
            else:
                return Outcome(MATCHED, "", None, (window.label,))
        if undecided is not None:
            return Outcome(UNAVAILABLE, f"{self.path}: {undecided.reason}")
        if not view.complete:
            return _ledger_incomplete(view, f"no matching change to {self.path} was seen")
        if not reasons:
            return Outcome(MISMATCHED, f"{self.path} was not changed by the agent")
        return Outcome(MISMATCHED, "; ".join(reasons))

    def describe(self) -> str:
        options = [f"{name}={value!r}" if isinstance(value, str) else f"{name}={value.describe()}"
                   for name, value in (("status", self.status), ("before", self.before), ("after", self.after))
                   if value is not None]
        return f"file_changed({self.path!r}" + "".join(f", {option}" for option in options) + ")"


@dataclass(frozen=True, slots=True)
class FileDeleted(Assertion):
    """An agent-attributed deletion of `path` exists (in some send window)."""

    path: str
    kind: ClassVar[str] = "file_deleted"

    def evaluate(self, view: Any) -> Outcome:
        statuses = []
        for window, change in view.deltas(self.path):
            if change.status == "deleted":
                return Outcome(MATCHED, "", None, (window.label,))
            statuses.append(f"{window.label}: {change.status}")
        if not view.complete:
            return _ledger_incomplete(view, f"no deletion of {self.path} was seen")
        return Outcome(MISMATCHED, f"{self.path} was not deleted" + (f" ({'; '.join(statuses)})" if statuses else ""))

    def describe(self) -> str:
        return f"file_deleted({self.path!r})"


@dataclass(frozen=True, slots=True)
class NotInDiff(Assertion):
    """`pattern` appears in no changed path and no changed line (`content`: added, removed or both)."""

    pattern: Any  # a compiled regular expression
    content: str = "both"
    kind: ClassVar[str] = "not_in_diff"

    def evaluate(self, view: Any) -> Outcome:
        elided: list[str] = []
        for window, change in view.deltas():
            if self.pattern.search(change.path):
                return Outcome(MISMATCHED, f"{window.label}: the path {change.path} matches", None, (window.label,))
            lines = change.lines()
            if lines is None:
                elided.append(f"{change.path} ({change.elided})")
                continue
            added, removed = lines
            searched = (added if self.content in ("added", "both") else []) + (
                removed if self.content in ("removed", "both") else []
            )
            for line in searched:
                if self.pattern.search(line):
                    which = "added" if line in added else "removed"
                    return Outcome(MISMATCHED, f"{window.label}: {which} line in {change.path} matches",
                                   None, (window.label,))
        if elided:
            return Outcome(UNAVAILABLE, f"content of {', '.join(elided)} is elided, so the pattern cannot be ruled out")
        if not view.complete:
            return _ledger_incomplete(view, "no match in the changes seen")
        return MATCHED_OUTCOME

    def describe(self) -> str:
        return f"not_in_diff({self.pattern.pattern!r}, content={self.content!r})"


@dataclass(frozen=True, slots=True)
class CommandSucceeded(Matcher):
    """For `t.check(await t.sandbox.run_command(...), command_succeeded())`: exit code 0, in time."""

    def evaluate(self, value: Any) -> Outcome:
        from assay.agent.sandbox.commands import CommandResult

        if not isinstance(value, CommandResult):
            return Outcome(MISMATCHED, f"expected the result of t.sandbox.run_command(...), got {type(value).__name__}")
        if value.timed_out:
            return Outcome(MISMATCHED, f"`{value.display}` timed out after {value.duration_seconds:.1f}s")
        if value.exit_code != 0:
            tail = value.tail(500)
            return Outcome(MISMATCHED, f"`{value.display}` exited with {value.exit_code}" + (f": {tail}" if tail else ""))
        return MATCHED_OUTCOME

    def describe(self) -> str:
        return "command_succeeded()"


def command_succeeded() -> CommandSucceeded:
    """Matches a sandbox `CommandResult` that exited 0 without timing out (the hidden-test pattern)."""
    return CommandSucceeded()


__all__ = [
    "Assertion", "CalledTool", "ChangedPaths", "CommandSucceeded", "FileChanged", "FileDeleted", "NoChanges",
    "NotInDiff", "command_succeeded", "EventCandidate", "EventOccurred", "EventOrder", "MaxCost", "MaxTokens",
    "MaxToolCalls", "NoEvent", "NoFailedActions", "NotCalledTool", "Succeeded", "ToolOrder", "UsedNoTools",
    "event_candidates", "parse_count",
]
