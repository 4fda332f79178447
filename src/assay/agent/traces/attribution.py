"""Which turn each received span belongs to: by trace id (exact), else by the turn's time window.

Every turn gets a fresh W3C trace context; spans that come back in that trace are the turn's, even
under concurrency. Spans in a trace assay never issued fall back to the window of the one turn that
was open when they started; to keep that exact, the agent's turns are serialized from the first such
span on (concurrency resumes once its spans carry the traceparent), and a span that more than one
open turn could own is left unattributed rather than guessed.
"""

from __future__ import annotations

import asyncio
import bisect
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_SPANS_PER_ATTEMPT", "TraceHub", "TurnTrace", "traceparent_for"]

MAX_SPANS_PER_ATTEMPT = 5000  # beyond this an attempt's spans are counted, not kept


def traceparent_for(trace_id: str, span_id: str) -> str:
    return f"00-{trace_id}-{span_id}-01"


class TurnTrace:
    """One send's trace: its ids, its window (Unix ns; `end` None while open) and the spans it got."""

    __slots__ = ("attempt", "agent", "session", "turn", "trace_id", "span_id", "start", "end", "spans", "windowed")

    def __init__(self, attempt: _AttemptTraces, agent: str, session: int, turn: int) -> None:
        self.attempt = attempt
        self.agent = agent
        self.session = session
        self.turn = turn
        self.trace_id = os.urandom(16).hex()
        self.span_id = os.urandom(8).hex()
        self.start = time.time_ns()
        self.end: int | None = None
        self.spans: list[dict[str, Any]] = []
        self.windowed = 0  # spans attributed by the time window rather than the trace id

    @property
    def traceparent(self) -> str:
        return traceparent_for(self.trace_id, self.span_id)

    def contains(self, moment: int) -> bool:
        return self.start <= moment and (self.end is None or moment <= self.end)

    def to_json(self, spans: list[dict[str, Any]]) -> dict[str, Any]:
        document: dict[str, Any] = {
            "session": self.session, "turn": self.turn, "trace_id": self.trace_id, "span_id": self.span_id,
            "start": self.start, "end": self.end if self.end is not None else time.time_ns(), "spans": spans,
        }
        if self.windowed:
            document["attributed_by_window"] = self.windowed
        return document


class _AttemptTraces:
    __slots__ = ("attempt_id", "token", "turns", "kept", "dropped", "collected")

    def __init__(self, attempt_id: str, token: str) -> None:
        self.attempt_id = attempt_id
        self.token = token
        self.turns: list[TurnTrace] = []
        self.kept = 0
        self.dropped = 0
        self.collected: dict[int, int] = {}  # id(turn) -> spans already handed to the attempt's record


class _AgentState:
    __slots__ = ("propagates", "windowed", "lock")

    def __init__(self) -> None:
        self.propagates = False  # a span came back in a trace assay issued
        self.windowed = False  # a span came back in a trace assay never issued
        self.lock: asyncio.Lock | None = None


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the run should say once (a warning line), raised on the receiver's thread."""

    code: str
    message: str


class TraceHub:
    """The run's traces. Turns are opened and closed on the run's event loop; spans are ingested on the
    receiver's thread; one lock guards what both touch (held per export batch, not per span)."""

    def __init__(self, notify: Callable[[Notice], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._by_trace: dict[str, TurnTrace] = {}
        self._windows: list[TurnTrace] = []  # in opening order
        self._starts: list[int] = []  # their start times, for bisect
        self._open: set[TurnTrace] = set()
        self._longest = 0  # the longest closed window, bounding how far back a span's owner can be
        self._attempts: dict[str, _AttemptTraces] = {}
        self._by_token: dict[str, _AttemptTraces] = {}
        self._agents: dict[str, _AgentState] = {}
        self._notify = notify or (lambda notice: None)
        self.received = 0
        self.unattributed = 0
        self.ambiguous = 0  # of the unattributed: spans several open turns could own (the rest started in none)
        # Of the unattributed: spans that started inside a turn of an agent whose spans carry assay's traceparent, but in
        # a trace of their own (a root span started outside the turn's context): no window can hold them.
        self.foreign = 0
        self.last_closed = 0.0  # time.monotonic() when the latest turn closed (0: none yet)

    # -- the run's side ---------------------------------------------------------------------------
    def attempt(self, attempt_id: str) -> str:
        """Register an attempt; returns its token (the path of its attempt-scoped endpoint)."""
        with self._lock:
            found = self._attempts.get(attempt_id)
            if found is None:
                found = _AttemptTraces(attempt_id, os.urandom(6).hex())
                self._attempts[attempt_id] = found
                self._by_token[found.token] = found
            return found.token

    def open_turn(self, attempt_id: str, agent: str, session: int, turn: int) -> TurnTrace:
        with self._lock:
            attempt = self._attempts.get(attempt_id)
            if attempt is None:
                attempt = _AttemptTraces(attempt_id, os.urandom(6).hex())
                self._attempts[attempt_id] = attempt
                self._by_token[attempt.token] = attempt
            trace = TurnTrace(attempt, agent, session, turn)
            attempt.turns.append(trace)
            self._by_trace[trace.trace_id] = trace
            self._windows.append(trace)
            self._starts.append(trace.start)
            self._open.add(trace)
            return trace

    @property
    def turns_opened(self) -> int:
        return len(self._windows)

    def close_turn(self, trace: TurnTrace) -> None:
        with self._lock:
            trace.end = time.time_ns()
            self.last_closed = time.monotonic()
            self._open.discard(trace)
            self._longest = max(self._longest, trace.end - trace.start)

    def serializes(self, agent: str) -> asyncio.Lock | None:
        """The lock an agent's sends take while its spans can only be attributed by time window."""
        state = self._agents.get(agent)
        if state is None or not state.windowed or state.propagates:
            return None
        if state.lock is None:
            state.lock = asyncio.Lock()
        return state.lock

    def collect(self, attempt_id: str) -> dict[str, Any] | None:
        """The attempt's spans per turn, as its record keeps them (None when it received none).
        Spans arriving later are kept for `late`."""
        with self._lock:
            attempt = self._attempts.get(attempt_id)
            if attempt is None or not any(turn.spans for turn in attempt.turns):
                if attempt is not None:
                    attempt.collected = {id(turn): 0 for turn in attempt.turns}
                return None
            attempt.collected = {id(turn): len(turn.spans) for turn in attempt.turns}
            return self._document(attempt)

    def late_attempts(self) -> set[str]:
        """The attempts that received spans after their `collect`."""
        with self._lock:
            return {
                attempt.attempt_id for attempt in self._attempts.values()
                if any(len(turn.spans) != attempt.collected.get(id(turn), 0) for turn in attempt.turns)
            }

    def late(self, attempt_id: str) -> dict[str, Any] | None:
        """The attempt's whole spans document again if spans arrived after `collect`; else None."""
        with self._lock:
            attempt = self._attempts.get(attempt_id)
            if attempt is None or all(len(turn.spans) == attempt.collected.get(id(turn), 0) for turn in attempt.turns):
                return None
            return self._document(attempt)

    def _document(self, attempt: _AttemptTraces) -> dict[str, Any]:
        document: dict[str, Any] = {"turns": [turn.to_json(list(turn.spans)) for turn in attempt.turns]}
        if attempt.dropped:
            document["dropped"] = attempt.dropped
        return document

    # -- the receiver's side ----------------------------------------------------------------------
    def ingest(self, spans: Iterable[dict[str, Any]], token: str | None = None) -> int:
        """Attribute a batch of spans (from one export); returns how many found a turn."""
        notices: list[Notice] = []
        attributed = 0
        with self._lock:
            scoped = self._by_token.get(token) if token else None
            for span in spans:
                self.received += 1
                trace_id = span["trace_id"]
                trace = self._by_trace.get(trace_id)
                if trace is None:
                    trace = self._by_window(span, scoped, notices)
                    if trace is None:
                        self.unattributed += 1
                        continue
                    # The rest of this trace follows the span that was placed, whenever it arrives. A span with no
                    # trace id (none, or W3C's invalid all-zero one) is in no trace: every such span is placed by its
                    # own time (the first one pinned all later ones, other attempts' included, to its turn).
                    if trace_id.strip("0"):
                        self._by_trace[trace_id] = trace
                if trace.trace_id == trace_id:  # the turn's own trace: the app forwards the traceparent
                    self._saw_traceparent(trace, notices)
                else:
                    trace.windowed += 1
                attempt = trace.attempt
                if attempt.kept >= MAX_SPANS_PER_ATTEMPT:
                    attempt.dropped += 1
                    continue
                attempt.kept += 1
                trace.spans.append(span)
                attributed += 1
        for notice in notices:
            self._notify(notice)
        return attributed

    def _state(self, agent: str) -> _AgentState:
        state = self._agents.get(agent)
        if state is None:
            state = self._agents[agent] = _AgentState()
        return state

    def _saw_traceparent(self, trace: TurnTrace, notices: list[Notice]) -> None:
        state = self._state(trace.agent)
        if state.propagates:
            return
        state.propagates = True
        if state.windowed:
            notices.append(Notice(
                "telemetry-concurrency-resumed",
                f"agent {trace.agent!r}: its spans now carry assay's traceparent; its turns run concurrently again",
            ))

    def _by_window(self, span: dict[str, Any], scoped: _AttemptTraces | None, notices: list[Notice]) -> TurnTrace | None:
        moment = span.get("start") or 0
        if scoped is not None:
            # An attempt-scoped endpoint names the attempt: only its own (serial) turns compete.
            owners = [turn for turn in scoped.turns if turn.contains(moment)]
            return self._only(owners)
        owners = [turn for turn in self._open if turn.contains(moment)]
        position = bisect.bisect_right(self._starts, moment)
        earliest = moment - self._longest
        while position > 0:
            position -= 1
            turn = self._windows[position]
            if turn.start < earliest:
                break
            if turn.end is not None and turn.contains(moment):
                owners.append(turn)
        # An agent known to propagate does not emit spans outside its traces: its windows are not candidates.
        candidates = len(owners)
        owners = [turn for turn in owners if not self._state(turn.agent).propagates]
        if candidates and not owners:
            self.foreign += 1
        for turn in owners:
            state = self._state(turn.agent)
            if not state.windowed:
                state.windowed = True
                notices.append(Notice(
                    "telemetry-turns-serialized",
                    f"agent {turn.agent!r}: spans arrive in traces assay did not start (the app does not forward "
                    "ctx.telemetry.headers' traceparent), so they are attributed by each turn's time window; "
                    "this agent's turns are serialized from now on",
                ))
        return self._only(owners)

    def _only(self, owners: list[TurnTrace]) -> TurnTrace | None:
        """The one turn that owns a span, else None, counting a span that several could own apart from one
        that started in no turn's window (the end-of-run warning says why each was left out)."""
        if len(owners) > 1:
            self.ambiguous += 1
        return owners[0] if len(owners) == 1 else None
