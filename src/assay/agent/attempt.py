"""The attempt engine: one attempt run within its deadline, between its agent's setup and teardown (and
its sandbox's lifecycle), each failure made the attempt's error, and the attempt sealed.

The engine never imports the authoring surface: `run_attempt` is handed the `EvalSurface` that makes
the eval's `t` from the attempt's main session line (`assay.agent.authoring.EvalContext`), and the
surface drives the attempt's state (`assay.agent.attempt_state`).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from assay.agent.attempt_state import AgentCallError, AttemptRuntime, SessionLine
from assay.agent.context import AttemptSettings, CancelSignal
from assay.agent.control import AuthoringError, SkipEval, StopEval
from assay.agent.record import AttemptResult
from assay.agent.sandbox.linking import SandboxBinding, SandboxStageError
from assay.agent.sealing import seal_attempt
from assay.agent.session import AgentSession
from assay.agent.timing import Timeline
from assay.agent.traces.tracing import ACTIVE as ACTIVE_TRACING
from assay.agent.verdict import fold_verdict
from assay.core.asyncutil import call_user_code

if TYPE_CHECKING:
    from assay.agent.sandbox.reuse import SandboxPool

_TRACEBACK_LIMIT = 8000


class EvalSurface(Protocol):
    """What the eval's test is given (`t`), made from the attempt's main session line."""

    def __call__(self, main: SessionLine) -> Any: ...


class InFlight:
    """The run's attempts inside their timeout scope, so an interrupt reaches each: its signal, then its scope."""

    __slots__ = ("interrupted", "_scopes", "_waiters")

    def __init__(self) -> None:
        self.interrupted = False
        self._scopes: dict[int, tuple[Any, CancelSignal]] = {}
        self._waiters: set[asyncio.Future[None]] = set()

    def interrupt(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.interrupted = True
        for waiter in list(self._waiters):
            if not waiter.done():
                waiter.set_result(None)
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

    async def unless_interrupted(self, work: Any) -> bool:
        """Await the coroutine `work` unless the run is interrupted first, which cancels it: True when it
        finished. (Out of its timeout scope, an attempt's judge calls would otherwise keep Ctrl-C waiting
        for every one of them, each up to the judge's timeout.)"""
        if self.interrupted:
            work.close()
            return False
        task = asyncio.ensure_future(work)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiters.discard(waiter)
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if task.cancelled():
            return False
        task.result()  # (its own failure, raised here)
        return True


def attempt_error(code: str, message: str, error: BaseException | None = None) -> dict[str, Any]:
    """An attempt's `error` document: code, message and, for an exception, its traceback and last frame."""
    document: dict[str, Any] = {"code": code, "message": message}
    if error is not None and error.__traceback__ is not None:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        document["traceback"] = text[-_TRACEBACK_LIMIT:]
        frames = traceback.extract_tb(error.__traceback__)
        # The author's line, not assay's: when an authoring call (`t.require_input_request`) raises,
        # the last frame is inside assay, and the useful one is the eval's call of it.
        # Nor is a frame of the standard library or an installed library (a thread pool's worker, a
        # JSON decoder, an SDK's client): the useful line is the author's call into it. With no frame
        # of theirs (a failure assay's own adapter explains, such as a refused connection), a line
        # elsewhere would only send them looking there: the message says it.
        theirs = [frame for frame in frames if not _is_not_the_authors(frame.filename)]
        if theirs:
            document["where"] = f"{theirs[-1].filename}:{theirs[-1].lineno}"
    return document


def _passes_through_authors_code(error: BaseException) -> bool:
    """Whether any frame of `error`'s traceback, or of what caused it, is the author's code."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(not _is_not_the_authors(frame.filename) for frame in traceback.extract_tb(current.__traceback__)):
            return True
        current = current.__cause__ or current.__context__
    return False


def _not_authors_folders() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    libraries = {str(Path(paths[name]).resolve()) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(folder + os.sep for folder in {str(Path(__file__).resolve().parents[1]), *libraries})


_NOT_AUTHORS = _not_authors_folders()  # assay's package, the standard library and site-packages


def _is_not_the_authors(filename: str) -> bool:
    return filename.startswith("<") or os.path.realpath(filename).startswith(_NOT_AUTHORS)


class _AgentSetupFailed(Exception):
    pass


class _NotLinked(Exception):
    pass


class _ReturnedValue(AuthoringError):
    """The eval returned a truth or a number: assay reads no return value (a test's verdict is its assertions), so
    a `return` meant as the check would pass whatever it came to. `where` is where the eval is defined (its first decorator line)."""

    def __init__(self, returned: Any, score_eval: bool, test: Any) -> None:
        fix = ("add its points with t.score(points) or `.score(points)` on an assertion" if score_eval else
               "register the check instead, t.check(value, is_true()) or another assertion")
        shown = repr(returned)
        super().__init__(f"the eval returned {shown[:80] + '…' if len(shown) > 80 else shown}, but an eval's return "
                         f"value is never read (only its assertions count): {fix}, and drop the `return`")
        code = getattr(inspect.unwrap(test), "__code__", None)
        self.where = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else ""


def _not_awaited(dropped: list[tuple[str, str]], where: bool = False) -> str:
    """What the eval wrote and the fix; `where`: with the line of each (the error's own `where` names another)."""
    first = dropped[0][0]
    lines = ", ".join(where for _, where in dropped)
    return (f"{first}{f' at {lines}' if where or len(dropped) > 1 else ''} was called without `await`, so its turn "
            f"was never sent: write `await {first}`")


def _data_was_refused(runtime: AttemptRuntime, failure: Exception) -> str:
    """`turn.data.total` after the data missed its output schema reads into None: say why it is None (the
    mismatch is otherwise only in `assay agent show`) and how to stop there instead."""
    if not isinstance(failure, (AttributeError, TypeError)) or "'NoneType'" not in str(failure):
        return ""
    refused = [turn for line in runtime.lines for turn in line.turns if turn.output_error is not None]
    if not refused:
        return ""
    turn = refused[-1]
    return (f"; {turn.label}'s data is None: {turn.output_error}. Stop there instead: "
            "`await t.check(turn.output_error, equals(None)).or_stop()`")


def _keep_sandbox(keep: str | None, verdict: str | None) -> bool:
    """--keep-sandbox: `all` keeps every sandbox, `failed` those of attempts that failed or errored."""
    return keep == "all" or (keep == "failed" and verdict in ("failed", "errored"))


async def run_attempt(
    settings: AttemptSettings, test: Callable[[Any], Awaitable[None]], in_flight: InFlight, position: int, *,
    surface: EvalSurface, sandbox: SandboxBinding | None = None, pool: SandboxPool | None = None,
) -> AttemptResult:
    """Run `test(t)` within the attempt's deadline, between the agent's setup and teardown (in the
    sandbox its pair is linked to, when it is; taken from and given back to `pool` when attempts share
    sandboxes), and seal it; `surface` makes `t`.

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
    stage = None
    if sandbox is not None:  # the sandbox lifecycle (its providers, ledger, registry) is imported by a sandbox's first attempt
        from assay.agent.sandbox.lifecycle import SandboxStage

        stage = SandboxStage(sandbox, settings, tracing, pool)
    runtime.sandbox_stage = stage
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
    main_line = runtime.new_line()
    t = surface(main_line)
    main_session = main_line.session
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
                    except (Exception, SystemExit) as setup_error:  # noqa: BLE001 - sys.exit() too: not the run's end
                        raise _AgentSetupFailed(setup_error) from setup_error
            if stage is not None:
                stage.enter("eval.run")
            with timeline.phase("eval.run", signal=signal) as phase:
                timeline.current = phase  # sends and awaited judge calls nest under the eval's run
                running = test(t)
                if not inspect.isawaitable(running):  # `def test(t)` where `async def` was meant
                    raise AuthoringError(f"the eval's test returned {type(running).__name__}, not an awaitable: define it "
                                         "with `async def` (async def test(t): await t.send(...))")
                returned = await running
                # `return "sunny" in t.reply` (or a score eval's `return 5`) read as the check: it would pass however it
                # came out. Only a truth or a number is taken for one: `return await t.send(…)` (a Turn) or
                # `return t.check(…)` is harmless, and stays allowed.
                if isinstance(returned, (bool, int, float)):
                    raise _ReturnedValue(returned, runtime.score_eval, test)
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
        cause = failure.__cause__
        if cause is not None and failure.explained and not _passes_through_authors_code(cause):
            cause = None  # an adapter's explained failure: its message is the whole story, its frames assay's
        elif cause is None and not failure.where:
            cause = failure  # no cause of the author's: what assay's frames show is all there is
        error = attempt_error(failure.code, str(failure), cause)
        if failure.where:
            error["where"] = failure.where
    except AuthoringError as failure:
        if isinstance(failure, _ReturnedValue):  # raised by assay after the eval ended: no frame of the author's
            error = attempt_error("authoring-error", str(failure))
            if failure.where:
                error["where"] = failure.where
        else:
            error = attempt_error("authoring-error", str(failure), failure)
    except SystemExit as failure:
        # `sys.exit()` in the eval or in its agent's code ended the whole run with that status, no result and no
        # word of why; like any other exception it is this attempt's error (pytest fails the test the same way).
        error = attempt_error(
            "eval-exception", f"SystemExit: {failure.code} (sys.exit() ends this attempt, not the run)", failure)
    except Exception as failure:  # noqa: BLE001 - the eval's bug is this attempt's error, not the run's
        from assay.agent.misspelt import arguments_meant, keyword_meant

        hint = keyword_meant(failure) or arguments_meant(failure) or _data_was_refused(runtime, failure)
        error = attempt_error("eval-exception", f"{type(failure).__name__}: {failure}{hint}", failure)
    finally:
        timeline.current = 0  # judge calls resolved from here on belong to the attempt, not the eval's run
        dropped = runtime.dropped_drives()  # each closed: Python warns of none of them again
        if signal_timer is not None:
            signal_timer.cancel()
        in_flight.leave(position)
    if dropped and not (interrupted or skipped):  # a drive verb the eval never awaited: its turn was never sent
        if error is None:  # however the eval ended (its last line, or a stop after it): it is the attempt's error
            error = attempt_error("authoring-error", _not_awaited(dropped))
            error["where"] = dropped[0][1]
        elif error["code"] in ("eval-exception", "authoring-error"):  # the eval failed after it: likely why
            error["message"] = f"{error['message']}; also, {_not_awaited(dropped, where=True)}"
    if error is not None and signal.cancelled:
        # An adapter that honoured the signal raised before the hard backstop fired: the cause
        # is still the deadline or the interrupt, not the adapter.
        if signal.reason == "interrupted":
            interrupted = True
        elif error["code"] != "timeout":
            error = attempt_error("timeout", f"attempt timed out after {timeout:g}s")
    if stage is not None:
        result = await _finish_sandbox_attempt(
            runtime, stage, started, error, skipped, interrupted, position, setup_reached, main_session, in_flight,
        )
    else:
        if setup_reached and teardown is not None:
            await _agent_teardown(runtime, main_session)
        if not interrupted and _any_pending(runtime) and not await in_flight.unless_interrupted(_resolve_pending(runtime)):
            interrupted = True  # Ctrl-C while its judge calls were answered: the attempt is interrupted
        if interrupted:
            _drop_pending(runtime)
            result = seal_attempt(runtime, time.perf_counter() - started, None, False, position, interrupted=True)
        else:
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
    except (Exception, SystemExit) as teardown_error:  # noqa: BLE001 - recorded, never a verdict change
        runtime.settings.feedback.diagnostic(
            "agent-teardown-failed", "warning", f"agent teardown failed: {teardown_error}", phase="agent.teardown"
        )
    finally:
        runtime.timeline.end(phase)


def _any_pending(runtime: AttemptRuntime) -> bool:
    """Whether an assertion is still to decide (most attempts have none: no task is made for them)."""
    return any(entry.pending is not None for entry in runtime.entries)


async def _resolve_pending(runtime: AttemptRuntime) -> None:
    """Each assertion still to decide: the judge calls the eval did not await all at once (each is a model call
    of its own, paced by the judge's limiter: five judged criteria take one call's time, not five), then the
    rest (sandbox checks, which run commands in the one sandbox) in the order they were made."""
    judged = [entry.resolve() for entry in runtime.entries if entry.pending is not None and entry.kind == "judge"]
    if len(judged) > 1:
        await asyncio.gather(*judged)
    elif judged:
        await judged[0]
    for entry in runtime.entries:
        if entry.pending is not None:
            await entry.resolve()


def _drop_pending(runtime: AttemptRuntime) -> None:
    for entry in runtime.entries:
        close = getattr(entry.pending, "close", None)  # a judge call or sandbox check never awaited now
        if callable(close):
            close()
        entry.pending = None


async def _finish_sandbox_attempt(
    runtime: AttemptRuntime, stage: Any, started: float, error: dict[str, Any] | None, skipped: bool,
    interrupted: bool, position: int, setup_reached: bool, session: AgentSession, in_flight: InFlight,
) -> AttemptResult:
    """Spec §5.3 steps 9 to 13: the workspace diff, every assertion decided, the agent's teardown, the
    sandbox's teardowns (LIFO) and its stop, unless --keep-sandbox keeps it."""
    settings = runtime.settings
    closed = False
    try:
        stage.finish()
        if not interrupted and _any_pending(runtime) and not await in_flight.unless_interrupted(_resolve_pending(runtime)):
            interrupted = True  # as in `run_attempt`
        if interrupted:
            _drop_pending(runtime)
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


__all__ = ["EvalSurface", "InFlight", "attempt_error", "run_attempt"]
