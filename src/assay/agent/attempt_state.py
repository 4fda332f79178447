"""One attempt's changing state over its fixed settings: its session lines (each send, with resends of
what provably never arrived, and the turns recorded), its assertion entries, a skip.

The attempt engine (`assay.agent.attempt`) makes one `AttemptRuntime` per attempt and seals it; the
authoring surface (`assay.agent.authoring`: `t`, session and turn handles) drives it. Nothing here
imports either.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from assay.agent.adapter import SendFailure, send_location
from assay.agent.assertion_entry import AssertionEntry
from assay.agent.context import AgentContext, AttemptSettings, SandboxAgentContext
from assay.agent.evidence import OccurrenceLedger, ScopeView, TurnRecord
from assay.agent.outcome import Outcome
from assay.agent.model import (
    MISSING, EvidenceCoverage, InputRequest, Message, Turn, TurnFormatError, TurnInput, check_turn,
)
from assay.agent.session import AgentSession
from assay.agent.structured import validate_against
from assay.agent.timing import Timeline
from assay.core.retry import Resend, RetriesExhausted, RetryPolicy, call_with_retries

SEND_MAX_ATTEMPTS = 4


class AgentCallError(Exception):
    """The agent's `send` raised or returned something that is not a Turn (`agent-send-failed`).

    `where` names the author's code when no traceback of theirs exists (a wrong return value); `explained`
    says the message is the whole story (a `SendFailure`), so assay's own frames are not worth keeping."""

    def __init__(self, message: str, code: str = "agent-send-failed", where: str | None = None, *,
                 explained: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.where = where
        self.explained = explained


class AttemptRuntime:
    """One attempt's changing state over its fixed settings: session lines, assertion entries, a skip."""

    __slots__ = (
        "settings", "score_eval", "default_coverage", "entries", "lines", "skip_reason", "sandbox_stage",
        "eval_sandbox", "timeline", "tracing", "drives",
    )

    def __init__(self, settings: AttemptSettings, timeline: Timeline | None = None, tracing: Any = None) -> None:
        self.settings = settings
        self.timeline = timeline if timeline is not None else Timeline(time.perf_counter())
        self.tracing = tracing  # an AttemptTracing when the run has a trace receiver
        self.score_eval = settings.kind == "score"
        self.default_coverage: EvidenceCoverage = settings.agent.evidence_coverage
        self.entries: list[AssertionEntry] = []
        self.lines: list[SessionLine] = []
        self.skip_reason: str | None = None
        self.sandbox_stage: Any = None  # a SandboxStage, for attempts whose pair was linked to a sandbox
        self.eval_sandbox: Any = None  # `t.sandbox`, made on first use
        # Each drive verb's coroutine and the call that made it, to find those never awaited (`dropped_drives`).
        self.drives: list[tuple[Any, str, int, str, int]] = []

    def release(self) -> None:
        """Once sealed: drop what points back at the runtime (its session lines do), so the attempt's
        objects are freed as soon as the result is all that is left, not by a garbage collection
        that must first find ~30 of them in cycles for every attempt. Each line's session ends first, so what an
        adapter holds open in it (a paused frame stream) is closed now, not whenever it is collected."""
        for line in self.lines:
            line.session.end()
        self.lines.clear()
        self.entries.clear()
        self.drives.clear()

    def forget_started_drives(self) -> None:
        """Keep only the drive verbs not started yet (a long eval awaits each send at once)."""
        self.drives[:] = [drive for drive in self.drives if inspect.getcoroutinestate(drive[0]) == inspect.CORO_CREATED]

    def dropped_drives(self) -> list[tuple[str, str]]:
        """Each drive verb the eval called without `await` (its coroutine never started), as (call, file:line).
        Each is closed, so its turn cannot run later and Python does not warn about it again. `drives` holds
        (coroutine, verb, session line, file, line) per call (`assay.agent.authoring._drive_verb`)."""
        dropped = []
        for coroutine, verb, index, filename, lineno in self.drives:
            if inspect.getcoroutinestate(coroutine) == inspect.CORO_CREATED:
                coroutine.close()
                dropped.append((f"{'t' if index == 0 else 'session'}.{verb}(...)", f"{filename}:{lineno}"))
        self.drives.clear()
        return dropped

    def new_line(self) -> SessionLine:
        line = SessionLine(self, len(self.lines))
        self.lines.append(line)
        return line

    def context(self, session: AgentSession, phase: str = "agent.run") -> AgentContext:
        stage = self.sandbox_stage
        if stage is not None:
            return SandboxAgentContext(  # the stage's settings: its telemetry may be a receiver in the sandbox
                stage.settings, session=session, phase=phase, sandbox=stage.handle, artifacts=stage.store_artifact,
            )
        return AgentContext(self.settings, session=session, phase=phase)

    def register(self, kind: str, scope: str, description: Any, outcome: Outcome) -> AssertionEntry:
        """Record an assertion decided at its call site; one decided unavailable for want of evidence warns."""
        entry = AssertionEntry(len(self.entries), kind, scope, description)
        entry.settle(outcome)
        entry.candidates = outcome.candidates
        blamed = outcome.channel
        if blamed is not None:
            self.settings.feedback.diagnostic(
                "evidence-incomplete", "warning",
                f"{kind} over {scope} is unavailable, not passed: {outcome.reason}",
                {"channel": blamed}, dedupe_key=f"{blamed}:{kind}:{scope}", phase="assertions.evaluate",
            )
        self.entries.append(entry)
        return entry

    def all_turns_view(self) -> ScopeView:
        if len(self.lines) == 1:
            line = self.lines[0]
            return ScopeView("t", line.turns, self.default_coverage, (line.ledger,))
        return ScopeView(
            "t", [turn for line in self.lines for turn in line.turns], self.default_coverage,
            [line.ledger for line in self.lines],
        )


class SessionLine:
    """One conversation thread: its agent session, its turns and the pairing of its operations."""

    __slots__ = ("runtime", "index", "session", "turns", "ledger", "_context")

    def __init__(self, runtime: AttemptRuntime, index: int) -> None:
        self.runtime = runtime
        self.index = index
        self.session = AgentSession()
        self.turns: list[TurnRecord] = []
        self.ledger = OccurrenceLedger(index)
        self._context: AgentContext | None = None

    @property
    def context(self) -> AgentContext:
        if self._context is None:
            self._context = self.runtime.context(self.session)
        return self._context

    def pending_requests(self) -> tuple[InputRequest, ...]:
        if not self.turns or self.turns[-1].status != "waiting":
            return ()
        return self.turns[-1].requests

    def view(self) -> ScopeView:
        name = "main session" if self.index == 0 else f"session {self.index}"
        return ScopeView(name, list(self.turns), self.runtime.default_coverage, (self.ledger,))

    async def send(self, turn_input: TurnInput, output: Any) -> tuple[TurnRecord, Any]:
        """Send one turn (resending only what provably never arrived) and record it; returns the
        record and the validated structured output (None without a declared output or when it failed)."""
        settings = self.runtime.settings
        agent = settings.agent

        async def once(attempt: int) -> Any:
            try:
                sent = agent.send(turn_input, self.context)
                if inspect.isawaitable(sent):
                    return await sent
            except SendFailure as failure:
                # Only a request that provably never reached the agent is safe to send again, and
                # one the adapter already resent has had its resends.
                if failure.acceptance == "rejected" and not failure.retried:
                    return Resend("resend", failure.code, cause=failure)
                raise AgentCallError(f"agent {agent.name!r} send failed: {failure}", failure.code,
                                     explained=True) from failure
            except SystemExit as error:  # `sys.exit()` in the agent's code: its attempt's error, not the run's end
                raise AgentCallError(f"agent {agent.name!r} send raised SystemExit: {error.code} (sys.exit() ends "
                                     "this attempt, not the run)") from error
            except Exception as error:
                from assay.agent.misspelt import keyword_meant

                raise AgentCallError(
                    f"agent {agent.name!r} send raised {type(error).__name__}: {error}{keyword_meant(error)}"
                ) from error
            # A plain `def send` returned its turn (or None) unawaited: awaiting it would only say "object Turn
            # can't be used in 'await' expression", naming neither the agent's code nor the fix.
            raise AgentCallError(
                f"agent {agent.name!r} send returned {type(sent).__name__}, not an awaitable: define it with "
                "`async def send(input, ctx)`", where=send_location(agent),
            )

        def report(attempt: int, resend: Resend, delay: float) -> None:
            settings.feedback.count_retry(resend.reason)
            settings.feedback.progress(
                f"turn retry {attempt + 1}/{SEND_MAX_ATTEMPTS} ({resend.detail}) — waiting {delay:g}s"
            )

        # No backoff cap: the base (RunOptions.retry_base_seconds) is the author's to choose.
        policy = RetryPolicy(SEND_MAX_ATTEMPTS, settings.retry_base_seconds, max_backoff=None)
        runtime = self.runtime
        stage = runtime.sandbox_stage
        ordinal = len(self.turns) + 1
        if stage is not None:
            # The send window: what changes in the workdir from here until the send settles (retries
            # included) is the agent's; what the eval writes between sends is not.
            await stage.open_window(f"turn{ordinal}" if self.index == 0 else f"session{self.index}/turn{ordinal}",
                                    self.index, ordinal)
        tracing = runtime.tracing
        serial = tracing.serializes() if tracing is not None else None
        if serial is not None:
            # Spans of this agent are placed by time window, which only one open turn keeps exact.
            await serial.acquire()
        label = f"turn {ordinal}" if self.index == 0 else f"session {self.index} turn {ordinal}"
        trace = None
        if tracing is not None:
            trace, self.context.turn_telemetry = tracing.open_turn(self.index, ordinal)
        silence = settings.silence.start(settings, label) if settings.silence is not None else None
        try:
            with runtime.timeline.phase("agent.send", label, settings.signal):
                raw = await call_with_retries(
                    policy, once, before_attempt=settings.signal.raise_if_cancelled, on_retry=report
                )
        except RetriesExhausted as exhausted:
            failure = exhausted.last.cause
            raise AgentCallError(
                f"agent {agent.name!r} send failed (retries exhausted): {failure}", exhausted.last.detail
            ) from failure
        finally:
            if silence is not None:
                silence.cancel()
            if trace is not None:
                tracing.close_turn(trace)
                self.context.turn_telemetry = None
            if serial is not None:
                serial.release()
            if stage is not None:
                await stage.close_window()
        try:
            turn = check_turn(raw)
        except TurnFormatError as error:
            raise AgentCallError(
                f"agent {agent.name!r} returned an invalid turn: {error}", where=send_location(agent)
            ) from None
        return self._record(turn_input, turn, output)

    def _record(self, turn_input: TurnInput, turn: Turn, output: Any) -> tuple[TurnRecord, Any]:
        runtime = self.runtime
        feedback = runtime.settings.feedback
        coverage = runtime.default_coverage.downgraded(turn.evidence_coverage) if turn.evidence_coverage else (
            runtime.default_coverage
        )
        status = turn.status
        data = turn.data
        typed: Any = None
        output_error = None
        if output is not None:
            if data is MISSING:
                output_error = "the turn declared an output schema but the agent returned no data"
            else:
                typed, problems = validate_against(output, data)
                if problems:
                    output_error = "turn data does not match the output schema: " + "; ".join(problems)
            if output_error is not None:
                # The turn fails and `turn.data` is None; the record keeps what the agent returned (if
                # anything), so `show` can set it beside the differences.
                status = "failed"
                feedback.diagnostic("output-schema-mismatch", "error", output_error, phase="agent.run")
        elif data is not MISSING:
            feedback.diagnostic(
                "unexpected-turn-data", "warning",
                "the agent returned data for a turn that declared no output; it was dropped",
                dedupe_key="unexpected-turn-data", phase="agent.run",
            )
            data = MISSING
        requests: tuple[InputRequest, ...] = ()
        if any(event.type == "input.requested" for event in turn.events):
            requests = tuple(
                event.request if event.request.id else InputRequest(
                    f"request-{position}", event.request.prompt, event.request.display, event.request.action,
                    event.request.input, event.request.options,
                )
                for position, event in enumerate(turn.events)
                if event.type == "input.requested"
            )
        record = TurnRecord(
            session=self.index,
            ordinal=len(self.turns) + 1,
            input_text=turn_input.text,
            events=turn.events,
            status=status,
            coverage=coverage,
            data=data,
            usage=turn.usage,
            output_error=output_error,
            requests=requests,
            user_message=Message(turn_input.text, "user") if turn_input.text else None,
        )
        self.turns.append(record)
        orphans_before = len(self.ledger.orphans)
        self.ledger.add_turn(record)
        if len(self.ledger.orphans) > orphans_before:
            for operation_id in self.ledger.orphans[orphans_before:]:
                feedback.diagnostic(
                    "orphan-operation-finished", "warning",
                    f"{record.label}: operation.finished {operation_id!r} has no matching operation.started",
                    phase="agent.run",
                )
        return record, typed if output_error is None and output is not None else None


__all__ = ["AgentCallError", "AttemptRuntime", "SEND_MAX_ATTEMPTS", "SessionLine"]
