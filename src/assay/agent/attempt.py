"""The attempt engine: one attempt's state, its session lines and sends, and the run of its test to a sealed result.

The eval's test drives `t` (assay.agent.authoring); every send and assertion lands here. `run_attempt` owns
the deadline, the agent's setup/teardown, how each failure becomes the attempt's error, and sealing.
"""

from __future__ import annotations

import asyncio
import time
import os
import traceback
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import Any

from assay.agent.adapter import SendFailure, send_location
from assay.agent.assertion_entry import AssertionEntry
from assay.agent.authoring import eval_context
from assay.agent.context import AgentContext, AttemptSettings, CancelSignal, SandboxAgentContext
from assay.agent.control import AuthoringError, SkipEval, StopEval
from assay.agent.evidence import OccurrenceLedger, ScopeView, TurnRecord
from assay.agent.matchers import Outcome
from assay.agent.model import (
    MISSING, EvidenceCoverage, InputRequest, Message, Turn, TurnFormatError, TurnInput, check_turn,
)
from assay.agent.record import AttemptResult
from assay.agent.sandbox.lifecycle import SandboxStage, SandboxStageError
from assay.agent.sealing import seal_attempt
from assay.agent.session import AgentSession
from assay.agent.structured import validate_against
from assay.agent.timing import Timeline
from assay.agent.traces.tracing import ACTIVE as ACTIVE_TRACING
from assay.agent.verdict import fold_verdict
from assay.core.asyncutil import call_user_code
from assay.core.retry import Resend, RetriesExhausted, RetryPolicy, call_with_retries

SEND_MAX_ATTEMPTS = 4
_TRACEBACK_LIMIT = 8000


class AgentCallError(Exception):
    """The agent's `send` raised or returned something that is not a Turn (`agent-send-failed`).

    `where` names the author's code when no traceback of theirs exists (a wrong return value)."""

    def __init__(self, message: str, code: str = "agent-send-failed", where: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.where = where


class AttemptRuntime:
    """One attempt's changing state over its fixed settings: session lines, assertion entries, a skip."""

    __slots__ = (
        "settings", "score_eval", "default_coverage", "entries", "lines", "skip_reason", "sandbox_stage",
        "eval_sandbox", "timeline", "tracing",
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

    def release(self) -> None:
        """Once sealed: drop what points back at the runtime (its session lines do), so the attempt's
        objects are freed as soon as the result is all that is left, not by a garbage collection
        that must first find ~30 of them in cycles for every attempt."""
        self.lines.clear()
        self.entries.clear()

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
                return await agent.send(turn_input, self.context)
            except SendFailure as failure:
                # Only a request that provably never reached the agent is safe to send again, and
                # one the adapter already resent has had its resends.
                if failure.acceptance == "rejected" and not failure.retried:
                    return Resend("resend", failure.code, cause=failure)
                raise AgentCallError(f"agent {agent.name!r} send failed: {failure}", failure.code) from failure
            except Exception as error:
                raise AgentCallError(f"agent {agent.name!r} send raised {type(error).__name__}: {error}") from error

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
                status = "failed"
                data = MISSING
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


# ---------------------------------------------------------------------------------------------
# Running one attempt


class InFlight:
    """The run's attempts inside their timeout scope, so an interrupt reaches each: its signal, then its scope."""

    __slots__ = ("interrupted", "_scopes")

    def __init__(self) -> None:
        self.interrupted = False
        self._scopes: dict[int, tuple[Any, CancelSignal]] = {}

    def interrupt(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.interrupted = True
        for scope, signal in list(self._scopes.values()):
            signal.cancel("interrupted")
            if loop is not None:
                scope.reschedule(loop.time())

    def enter(self, index: int, scope: Any, signal: CancelSignal, loop: asyncio.AbstractEventLoop) -> None:
        self._scopes[index] = (scope, signal)
        if self.interrupted:
            scope.reschedule(loop.time())

    def leave(self, index: int) -> None:
        self._scopes.pop(index, None)


def attempt_error(code: str, message: str, error: BaseException | None = None) -> dict[str, Any]:
    """An attempt's `error` document: code, message and, for an exception, its traceback and last frame."""
    document: dict[str, Any] = {"code": code, "message": message}
    if error is not None and error.__traceback__ is not None:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        document["traceback"] = text[-_TRACEBACK_LIMIT:]
        frames = traceback.extract_tb(error.__traceback__)
        # The author's line, not assay's: when an authoring call (`t.require_input_request`) raises,
        # the last frame is inside assay, and the useful one is the eval's call of it.
        # With no frame of theirs (a failure assay's own adapter explains, such as a refused
        # connection), a line inside assay would only send them looking there: the message says it.
        theirs = [frame for frame in frames if not _is_assay_code(frame.filename)]
        if theirs:
            document["where"] = f"{theirs[-1].filename}:{theirs[-1].lineno}"
    return document


_ASSAY_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep


def _is_assay_code(filename: str) -> bool:
    return filename.startswith(_ASSAY_PACKAGE)


class _AgentSetupFailed(Exception):
    pass


class _NotLinked(Exception):
    pass


def _keep_sandbox(keep: str | None, verdict: str | None) -> bool:
    """--keep-sandbox: `all` keeps every sandbox, `failed` those of attempts that failed or errored."""
    return keep == "all" or (keep == "failed" and verdict in ("failed", "errored"))


async def run_attempt(
    settings: AttemptSettings, test: Callable[[Any], Awaitable[None]], in_flight: InFlight, position: int,
) -> AttemptResult:
    """Run `test(t)` within the attempt's deadline, between the agent's setup and teardown, and seal it.

    An interrupted attempt keeps what it did so far but gets no verdict; pending judge calls are dropped."""
    started = time.perf_counter()
    agent = settings.agent
    run_tracing = ACTIVE_TRACING.get()
    tracing = None
    if run_tracing is not None:
        tracing = run_tracing.for_attempt(settings.attempt_id, agent.name)
        if settings.telemetry is None:
            settings = settings._replace(telemetry=tracing.telemetry)
    timeline = Timeline(started)
    runtime = AttemptRuntime(settings, timeline, tracing)
    binding = getattr(test, "sandbox_binding", None)
    stage = runtime.sandbox_stage = SandboxStage(binding, settings, tracing) if binding is not None else None
    signal = settings.signal
    timeout = settings.timeout
    error: dict[str, Any] | None = None
    skipped = False
    interrupted = False
    setup = getattr(agent, "setup", None)
    teardown = getattr(agent, "teardown", None)
    setup_reached = False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout if timeout else None
    signal_timer = loop.call_at(deadline, signal.cancel, "timeout") if deadline is not None else None
    t = eval_context(runtime)
    main_session = runtime.lines[0].session
    try:
        async with asyncio.timeout_at(deadline) as scope:
            in_flight.enter(position, scope, signal, loop)
            if stage is not None:
                with timeline.phase("sandbox.open", signal=signal):
                    await stage.open(deadline)  # create, prepare, setups, the ledger's baseline, agent.ensure
            elif getattr(agent, "kind", "direct") == "sandbox":
                raise _NotLinked()
            setup_reached = True  # teardown runs from here on, even if setup throws
            if setup is not None:
                with timeline.phase("agent.setup", signal=signal):
                    try:
                        await call_user_code(setup, runtime.context(main_session, "agent.setup"))
                    except Exception as setup_error:  # noqa: BLE001
                        raise _AgentSetupFailed(setup_error) from setup_error
            if stage is not None:
                stage.enter("eval.run")
            with timeline.phase("eval.run", signal=signal) as phase:
                timeline.current = phase  # sends and awaited judge calls nest under the eval's run
                await test(t)
    except StopEval:
        pass
    except SkipEval:
        skipped = True
    except TimeoutError:
        if in_flight.interrupted:
            interrupted = True
        else:
            progress = settings.feedback.recent_progress
            where = f" (last progress: {' | '.join(progress)})" if progress else ""
            error = attempt_error("timeout", f"attempt timed out after {timeout:g}s{where}")
    except _AgentSetupFailed as failure:
        cause = failure.__cause__ or failure
        error = attempt_error("agent-setup-failed", f"agent setup failed: {type(cause).__name__}: {cause}", cause)
    except SandboxStageError as failure:
        error = attempt_error(failure.code, str(failure), failure.__cause__ or failure)
    except _NotLinked:
        error = attempt_error(
            "sandbox-not-linked",
            f"agent {agent.name!r} is a sandbox agent, but this attempt was not linked to a sandbox: run it with "
            "`assay agent run` or assay.agent.run(...), which link every (experiment, eval) pair to its sandbox",
        )
    except AgentCallError as failure:
        # Without a cause of the author's, the traceback would only show assay's own frames.
        error = attempt_error(failure.code, str(failure), failure.__cause__ or (None if failure.where else failure))
        if failure.where:
            error["where"] = failure.where
    except AuthoringError as failure:
        error = attempt_error("authoring-error", str(failure), failure)
    except Exception as failure:  # noqa: BLE001 - the eval's bug is this attempt's error, not the run's
        error = attempt_error("eval-exception", f"{type(failure).__name__}: {failure}", failure)
    finally:
        timeline.current = 0  # judge calls resolved from here on belong to the attempt, not the eval's run
        if signal_timer is not None:
            signal_timer.cancel()
        in_flight.leave(position)
    if error is not None and signal.cancelled:
        # An adapter that honoured the signal raised before the hard backstop fired: the cause
        # is still the deadline or the interrupt, not the adapter.
        if signal.reason == "interrupted":
            interrupted = True
        elif error["code"] != "timeout":
            error = attempt_error("timeout", f"attempt timed out after {timeout:g}s")
    if stage is not None:
        result = await _finish_sandbox_attempt(
            runtime, stage, started, error, skipped, interrupted, position, setup_reached, main_session,
        )
    else:
        if setup_reached and teardown is not None:
            await _agent_teardown(runtime, main_session)
        if interrupted:
            _drop_pending(runtime)
            result = seal_attempt(runtime, time.perf_counter() - started, None, False, position, interrupted=True)
        else:
            for entry in runtime.entries:
                if entry.pending is not None:
                    await entry.resolve()
            result = seal_attempt(runtime, time.perf_counter() - started, error, skipped, position)
    result.timing = timeline.to_json(started + result.duration_seconds)
    if tracing is not None:
        result.spans = tracing.collect()
    runtime.release()
    return result


async def _agent_teardown(runtime: AttemptRuntime, session: AgentSession) -> None:
    teardown = getattr(runtime.settings.agent, "teardown", None)
    if teardown is None:
        return
    phase = runtime.timeline.begin("agent.teardown")
    try:
        await call_user_code(teardown, runtime.context(session, "agent.teardown"))
    except Exception as teardown_error:  # noqa: BLE001 - recorded, never a verdict change
        runtime.settings.feedback.diagnostic(
            "agent-teardown-failed", "warning", f"agent teardown failed: {teardown_error}", phase="agent.teardown"
        )
    finally:
        runtime.timeline.end(phase)


def _drop_pending(runtime: AttemptRuntime) -> None:
    for entry in runtime.entries:
        close = getattr(entry.pending, "close", None)  # a judge call or sandbox check never awaited now
        if callable(close):
            close()
        entry.pending = None


async def _finish_sandbox_attempt(
    runtime: AttemptRuntime, stage: Any, started: float, error: dict[str, Any] | None, skipped: bool,
    interrupted: bool, position: int, setup_reached: bool, session: AgentSession,
) -> AttemptResult:
    """Spec §5.3 steps 9 to 13: the workspace diff, every assertion decided, the agent's teardown, the
    sandbox's teardowns (LIFO) and its stop, unless --keep-sandbox keeps it."""
    settings = runtime.settings
    closed = False
    try:
        stage.finish()
        if interrupted:
            _drop_pending(runtime)
        else:
            for entry in runtime.entries:
                if entry.pending is not None:
                    await entry.resolve()
        stage.begin_teardown()
        if setup_reached:
            stage.enter("agent.teardown")
            await _agent_teardown(runtime, session)
        verdict = None if interrupted else fold_verdict(
            settings.kind, runtime.entries, errored=error is not None, skipped=skipped,
        ).state
        phase = runtime.timeline.begin("sandbox.close")
        try:
            await stage.close(_keep_sandbox(stage.binding.keep, verdict), verdict)
        finally:
            runtime.timeline.end(phase)
        closed = True
    finally:
        if not closed:
            # A second Ctrl-C cancelled the teardown: still leave no process and no folder behind.
            await asyncio.shield(stage.abandon())
    result = seal_attempt(
        runtime, time.perf_counter() - started, None if interrupted else error, False if interrupted else skipped,
        position, interrupted=interrupted,
    )
    result.sandbox = stage.to_json()
    return result


__all__ = [
    "AgentCallError", "AttemptRuntime", "InFlight", "SEND_MAX_ATTEMPTS", "SessionLine", "attempt_error",
    "run_attempt",
]
