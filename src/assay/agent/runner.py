"""Scheduling a planned agent run: two concurrency gates, experiment hooks, interrupts, budgets, early exit,
the judge preflight, carried slots and the journal.

Admission is one async source over per-experiment lanes (round robin, each lane capped by its
experiment's concurrency) fed to the core `run_bounded` (the global cap); each attempt runs in the
attempt engine (`assay.agent.attempt`, given `t` by the authoring surface) here, or on a remote worker
(`assay.agent.remote_worker`), and is journaled before reporters hear of it (as run events). Carried
slots (`assay.agent.carry`) are journaled as references and never dispatched. What runs is the plan
(`assay.agent.plan`); how is `RunOptions` (`assay.agent.run_options`); what it comes to is a
`RunOutcome` (`assay.agent.run_outcome`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal as signals
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from assay.agent.attempt import InFlight, attempt_error, run_attempt
from assay.agent.authoring import EvalContext
from assay.agent.context import SAID_ONCE_A_RUN, AttemptSettings, CancelSignal, Feedback, HookContext, say_once_a_run
from assay.agent.discovery import ExperimentEntry
from assay.agent.evidence import sum_counts
from assay.agent.identity import effective_timeout
from assay.agent.judging import Judge, LLMJudge, judge_spend, merged_judge_config
from assay.agent.plan import AttemptRequest, PlannedAttempt, RunPlan, early_exit_enabled
from assay.agent.record import ATTEMPT_RECORD, EXECUTED, INTERRUPTED, NOT_DISPATCHED, AttemptResult
from assay.agent.run_options import RunOptions
from assay.agent.run_outcome import AttemptSummary, RunOutcome, SpooledAttempts
from assay.agent.sandbox.reuse import SandboxPool, pool_key
from assay.agent.silence import SilenceWatch
from assay.agent.slot_result import EARLY_EXIT, slot_result
from assay.agent.units import agent_unit, agent_unit_id, agent_unit_text, plain_text
from assay.core.asyncutil import call_on_own_thread, call_user_code, is_async_callable
from assay.core.format import format_usd
from assay.core.record import UnitSpool
from assay.core.run_events import RunEvents, RunStarted, RunWarning, UnitDurable
from assay.core.schedule import run_bounded

if TYPE_CHECKING:
    from assay.agent.carry import CarryPlan
    from assay.core.executor import Executor
    from assay.core.journal import JournalWriter

# Results waiting for the journal before workers wait too: each holds its whole transcript.
JOURNAL_BACKLOG = 512


async def _call_hook(hook: Any, context: HookContext, *, until: Any = None) -> bool:
    """An experiment's setup or teardown; False when the run stopped waiting for it. A synchronous one runs on
    a daemon thread of its own rather than the loop's pool, so Ctrl-C is not held up by it: the waiting stops
    when `until()` completes (the experiment's signal, which Ctrl-C sets) or the awaiting task is cancelled (a
    second Ctrl-C), and the thread runs on until it returns or the process ends."""
    if is_async_callable(hook):
        await hook(context)
        return True
    finished, _ = await call_on_own_thread(hook, context, until=until)
    return finished


# Attempt diagnostics said again once a run (`say_once_a_run`), with what each may mean: a teardown that failed (the
# agent's, a sandbox hook's), and a `respond` answer sent as free text that is nearly an option id. Adapters declare
# their own the same way.
for _code, _meaning in (
    ("agent-teardown-failed", "what it releases may be left behind"),
    ("sandbox-teardown-failed", "what it releases may be left behind"),
    ("respond-near-option", "the option may have been meant"),
    ("send-while-waiting", "an answer may have been meant"),
):
    say_once_a_run(_code, _meaning)


class _Lane:
    """One experiment's queue, its own cap, its hooks and its spending."""

    __slots__ = (
        "entry", "items", "cap", "in_flight", "budget", "spent", "exhausted", "stopped", "cost_unknown_warned",
        "setup_task", "setup_error", "setup_reached", "setup_left_running", "signal", "feedback", "held",
    )

    def __init__(self, entry: ExperimentEntry, budget: float | None) -> None:
        self.entry = entry
        self.items: deque[PlannedAttempt] = deque()
        self.cap = entry.experiment.concurrency or 1_000_000
        self.in_flight = 0
        self.budget = budget
        self.spent = 0.0
        self.exhausted = budget is not None and budget <= 0  # a zero budget is reached before anything runs
        self.stopped = False  # the budget left attempts undispatched (what makes the run incomplete)
        self.cost_unknown_warned = False
        self.setup_task: asyncio.Future[None] | None = None
        self.setup_error: BaseException | None = None
        self.setup_reached = False
        self.setup_left_running = False  # Ctrl-C stopped the waiting for a synchronous setup (`_call_hook`)
        self.signal = CancelSignal()
        self.feedback = Feedback()
        # Eval groups run one member at a time: a group's key is here while a member is queued or running,
        # with the members waiting behind it (each goes to the front of `items` when the one before ends).
        self.held: dict[str, deque[PlannedAttempt]] = {}

    def queue(self, planned: PlannedAttempt) -> None:
        group = planned.eval.group
        if group is None:
            self.items.append(planned)
        elif group.id in self.held:
            self.held[group.id].append(planned)
        else:
            self.held[group.id] = deque()
            self.items.append(planned)

    def release_next(self, planned: PlannedAttempt) -> None:
        """`planned` has ended: the next member of its eval group (if any) may be dispatched."""
        group = planned.eval.group
        if group is None:
            return
        waiting = self.held.get(group.id)
        if waiting:
            self.items.appendleft(waiting.popleft())
        else:
            self.held.pop(group.id, None)

    def pending(self) -> bool:
        return bool(self.items) or any(self.held.values())

    def queued(self) -> list[PlannedAttempt]:
        return [*self.items, *(planned for waiting in self.held.values() for planned in waiting)]


# The decision of a slot a Ctrl-C left before it started: it is rerun on resume like an attempt cut short, but
# the summary and `show` say it never began (its planned decision would say "executed").
NOT_STARTED = {"action": "not-dispatched", "code": "interrupted", "message": "the run was interrupted before it started"}


class AgentRun:
    """One invocation's attempts; `run()` returns every slot's result in plan order.

    With a journal, each attempt's unit of the run record is spooled once the attempt is durable
    and the attempt is kept only as an `AttemptSummary`, so memory does not grow with its transcript;
    `spool=True` does the same without a journal (at once, as each attempt settles).
    """

    def __init__(
        self,
        plan: Sequence[PlannedAttempt],
        options: RunOptions,
        events: RunEvents | None = None,
        *,
        reused: Mapping[str, AttemptResult] | None = None,
        journal: JournalWriter | None = None,
        executor: Executor | None = None,  # running attempts elsewhere; None: here
        carry: CarryPlan | None = None,  # each slot's identity and decision
        spool: bool = False,  # keep summaries and spool units even without a journal (the Python API)
    ) -> None:
        self.plan = list(plan)
        self.options = options
        self.events = events if events is not None else RunEvents()
        self.reused = dict(reused or {})
        self.carry = carry
        self.journal = journal
        self.results: list[AttemptResult | AttemptSummary | None] = [None] * len(self.plan)
        self._spool: UnitSpool | None = None
        self._spooled = spool or journal is not None
        self._awaiting_journal = 0  # results handed to the journal, not yet durable
        self._published_decisions: dict[tuple[Any, ...], Any] = {}  # see `_carried_record`
        self._said_once: dict[str, list[Any]] = {}  # code -> [attempts, first unit id, first message]
        self._workers_judge_usage: list[dict[str, dict[str, int]]] = []  # what workers' judges spent (`_from_worker`)
        self._workers_judge_retries: list[dict[str, int]] = []
        self._in_flight = InFlight()
        self._lanes: dict[str, _Lane] = {}
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._judge: Judge | None = options.judge
        self._own_judge: LLMJudge | None = None
        self._unit_executor = executor
        self._passed: set[tuple[str, str]] = set()  # (experiment, eval) pairs with a passed attempt here
        self._early_exit: dict[tuple[str, str], bool] = {}
        self._preflight: tuple[dict[str, Any], dict[str, str]] | None = None  # (endpoints, unreachable)
        self._identity_documents: dict[int, dict[str, Any]] = {}
        self._resolved_settings: dict[tuple[str, float | None, int], tuple[Any, Any, Any]] = {}
        self._pools: dict[str, SandboxPool] = {}  # sandboxes shared serially, by pool name (reuse.pool_key)
        self._tearing_down = False  # every attempt has settled: the run's own teardowns are running
        self._teardowns_cut = False  # a second Ctrl-C cut the run's teardowns short
        silence = options.silence_warning_seconds
        self._silence = SilenceWatch(silence, self._warn) if silence else None

    # -- control --------------------------------------------------------------------------------
    @property
    def interrupted(self) -> bool:
        return self._in_flight.interrupted

    def interrupt(self) -> None:
        """Stop dispatching; attempts in flight get their signal and are sealed as interrupted."""
        if self.interrupted:
            return
        self._in_flight.interrupt(self._loop)
        for lane in self._lanes.values():
            lane.signal.cancel("interrupted")
        if self._wake is not None:
            self._wake.set()

    # -- admission ------------------------------------------------------------------------------
    async def _admit(self) -> AsyncIterator[PlannedAttempt]:
        lanes = list(self._lanes.values())
        cursor = 0
        count = len(lanes)
        wake = self._wake
        assert wake is not None
        in_flight = self._in_flight
        while not in_flight.interrupted:
            picked = None
            for step in range(count):
                lane = lanes[(cursor + step) % count]
                if lane.items and not lane.exhausted and lane.in_flight < lane.cap:
                    picked = lane
                    cursor = (cursor + step + 1) % count
                    break
            if picked is None:
                if not any(lane.pending() and not lane.exhausted for lane in lanes):
                    return
                wake.clear()
                await wake.wait()
                continue
            planned = picked.items.popleft()
            if self._stopped_early(planned):
                self._publish(self._early_exited(planned), planned.index, notify=False)
                picked.release_next(planned)
                continue
            picked.in_flight += 1
            yield planned

    # -- early exit -----------------------------------------------------------------------------
    def _stops_early(self, planned: PlannedAttempt) -> bool:
        pair = (planned.experiment.id, planned.eval.id)
        enabled = self._early_exit.get(pair)
        if enabled is None:
            enabled = self._early_exit[pair] = early_exit_enabled(self.options.early_exit, planned)
        return enabled

    def _stopped_early(self, planned: PlannedAttempt) -> bool:
        """An attempt of this slot's eval passed here and the eval exits early: do not dispatch it."""
        return (planned.experiment.id, planned.eval.id) in self._passed and self._stops_early(planned)

    def _note_verdict(self, planned: PlannedAttempt, result: AttemptResult) -> None:
        # Only an eval that exits early asks again (a 50,000-eval run would otherwise keep 50,000 pairs).
        if result.verdict == "passed" and early_exit_enabled(self.options.early_exit, planned):
            self._passed.add((planned.experiment.id, planned.eval.id))
        diagnostics = getattr(result, "diagnostics", None) or ()  # (a carried slot's decision has none: it did not run)
        for code in {diagnostic.get("code") for diagnostic in diagnostics} & SAID_ONCE_A_RUN.keys():
            seen = self._said_once.get(code)
            if seen is None:
                message = next(d.get("message") for d in diagnostics if d.get("code") == code)
                self._said_once[code] = [1, agent_unit_id(result.experiment_id, result.eval_id, result.ordinal), message]
            else:
                seen[0] += 1

    def _warn_once_a_run(self) -> None:
        """Attempt diagnostics that change no verdict but may mean something was missed, each said once a run with
        where to read the rest: a teardown that failed (what it was to release, a browser, a container, a row, may
        be left behind) was in `assay agent show` alone, so one failing in every attempt passed in silence."""
        for code, (attempts, unit_id, message) in self._said_once.items():
            self._warn(code, f"{message} (in {attempts} attempt(s); {SAID_ONCE_A_RUN[code]}; "
                             f"`assay agent show {unit_id}` has the first)", attempts=attempts)

    def _early_exited(self, planned: PlannedAttempt) -> AttemptResult:
        return self._unrun(planned, NOT_DISPATCHED, decision={
            "action": "not-dispatched", "code": EARLY_EXIT,
            "message": "early exit: another attempt of this eval passed",
        })

    # -- experiment hooks -----------------------------------------------------------------------
    async def _ensure_setup(self, lane: _Lane) -> None:
        if lane.setup_task is None:
            lane.setup_task = asyncio.ensure_future(self._setup(lane))
        await asyncio.shield(lane.setup_task)

    async def _setup(self, lane: _Lane) -> None:
        hook = lane.entry.experiment.setup
        if hook is not None and lane.signal.cancelled:
            return  # interrupted before it began: nothing was set up, so nothing is torn down
        lane.setup_reached = True  # from here on teardown runs, even if setup throws
        if hook is None:
            return
        try:
            finished = await _call_hook(hook, HookContext(lane.entry.id, lane.signal, lane.feedback), until=lane.signal.wait)
            lane.setup_left_running = not finished  # (the run is interrupted: no attempt starts after it)
        except Exception as error:  # noqa: BLE001 - every attempt of this experiment reports it
            lane.setup_error = error

    async def _teardown_all(self) -> None:
        for lane in self._lanes.values():
            hook = lane.entry.experiment.teardown
            if hook is None or not lane.setup_reached:
                continue
            if lane.setup_left_running:  # its teardown would race what it undoes
                self._warn(
                    "experiment-teardown-skipped",
                    f"experiment {lane.entry.id} teardown skipped: its setup was still running when the run was "
                    "interrupted (it ends with the process); clean up what the setup made by hand",
                    experiment_id=lane.entry.id,
                )
                continue
            try:
                await _call_hook(hook, HookContext(lane.entry.id, lane.signal, lane.feedback))
            except Exception as error:  # noqa: BLE001 - a teardown failure is a warning, never a verdict
                self._warn(
                    "experiment-teardown-failed", f"experiment {lane.entry.id} teardown failed: {error}",
                    experiment_id=lane.entry.id,
                )
            self._flush_lane_diagnostics(lane)

    async def _close_agents(self) -> None:
        closed: set[int] = set()
        for lane in self._lanes.values():
            agent = lane.entry.experiment.agent
            close = getattr(agent, "close", None)
            if close is None or id(agent) in closed or not callable(close):
                continue
            closed.add(id(agent))
            try:
                await call_user_code(close)
            except Exception as error:  # noqa: BLE001 - closing is housekeeping, never a verdict
                self._warn("agent-close-failed", f"agent {agent.name} close failed: {error}")

    def _flush_lane_diagnostics(self, lane: _Lane) -> None:
        for diagnostic in lane.feedback.diagnostics:
            self._warn(diagnostic.code, diagnostic.message, level=diagnostic.level, experiment_id=lane.entry.id)
        lane.feedback.diagnostics.clear()

    # -- one attempt ----------------------------------------------------------------------------
    def _settings(self, planned: PlannedAttempt) -> AttemptSettings:
        """The attempt's settings, resolved once: --timeout > experiment > eval > config, judge layers merged."""
        options = self.options
        experiment = planned.experiment.experiment
        definition = planned.eval.eval
        # Resolved once per experiment and distinct eval setting, not per attempt. The entry holds the
        # eval's judge table, so no other table can take its id while the entry is there; a remote
        # worker sees new tables with every request, hence the bound.
        key = (planned.experiment.id, definition.timeout, id(definition.judge))
        resolved = self._resolved_settings.get(key)
        if resolved is None:
            if len(self._resolved_settings) >= 1024:
                self._resolved_settings.clear()
            resolved = self._resolved_settings[key] = (
                effective_timeout(options.timeout, experiment.timeout, definition.timeout, options.config_timeout),
                merged_judge_config(options.project_judge, experiment.judge, definition.judge),
                definition.judge,
            )
        timeout, judge_config, _ = resolved
        # Positional: this runs once per attempt, and keywords cost a NamedTuple noticeably more.
        return AttemptSettings(
            CancelSignal(), Feedback(), experiment.model, experiment.reasoning_effort, experiment.flags,
            planned.experiment.id, planned.eval.id, planned.ordinal, None, experiment.agent, definition.kind,
            planned.eval.directory, planned.attempt_id(options.run_id), definition.tags, timeout,
            options.pricing or {}, self._judge, judge_config, bool(definition.judge), options.retry_base_seconds,
            self._silence, planned.eval.group,
        )

    def _unrun(self, planned: PlannedAttempt, outcome: str, error: dict[str, Any] | None = None,
               decision: dict[str, str] | None = None) -> AttemptResult:
        experiment = planned.experiment.experiment
        result = AttemptResult(
            experiment_id=planned.experiment.id, eval_id=planned.eval.id, ordinal=planned.ordinal,
            attempt_id=planned.attempt_id(self.options.run_id),
            outcome=outcome, verdict="errored" if error is not None else None, agent=experiment.agent.name,
            model=experiment.model, error=error, tags=list(planned.eval.eval.tags), position=planned.index,
            # a group's member that never ran (Ctrl-C, a budget) or failed before it started is still the group's
            eval_group=planned.eval.group.to_json() if planned.eval.group is not None else None,
        )
        return self._in_slot(planned, result, decision)

    def _in_slot(self, planned: PlannedAttempt, result: AttemptResult, decision: dict[str, str] | None = None
                 ) -> AttemptResult:
        """The result with its slot's identity and the plan's decision, when the run has a carry plan."""
        if self.carry is None and decision is None:
            return result
        if self.carry is None:
            return slot_result(result, decision=decision)
        planned_decision = self.carry.at(planned.index)
        return slot_result(result, identity=self._identity_json(planned_decision.identity),
                           decision=decision or planned_decision.document())

    def _identity_json(self, identity: Any) -> dict[str, Any]:
        """One document per identity (a pair's attempts share it), encoded once."""
        document = self._identity_documents.get(id(identity))
        if document is None:
            document = self._identity_documents[id(identity)] = identity.to_json()
        return document

    async def _settle(self, planned: PlannedAttempt, lane: _Lane) -> AttemptResult | None:
        """Run one attempt here (experiment setup first); None when interrupted before it started."""
        if lane.entry.experiment.setup is not None or lane.entry.experiment.teardown is not None:
            await self._ensure_setup(lane)
        if lane.setup_error is not None:
            cause = lane.setup_error
            return self._unrun(planned, EXECUTED, attempt_error(
                "experiment-setup-failed", f"experiment {lane.entry.id} setup failed: {type(cause).__name__}: {cause}",
                cause,
            ))
        if self._in_flight.interrupted:
            return None
        return await run_attempt(
            self._settings(planned), planned.eval.eval.test, self._in_flight, planned.index, surface=EvalContext,
            sandbox=planned.sandbox, pool=self._pool_for(planned),
        )

    def _pool_for(self, planned: PlannedAttempt) -> SandboxPool | None:
        """The pool of sandboxes the attempt shares (its eval group's, or its experiment's sandbox_reuse)."""
        found = pool_key(planned)
        if found is None:
            return None
        name, lifetime = found
        pool = self._pools.get(name)
        if pool is None:
            pool = self._pools[name] = SandboxPool(name, lifetime)
        return pool

    async def _retire_pools(self) -> None:
        """Every shared sandbox left idle is retired (teardowns, stop) before the experiments' teardowns."""
        pools, self._pools = self._pools, {}
        if not pools:
            return
        from assay.agent.sandbox.lifecycle import retire_sandbox  # a run that shares no sandbox never imports it

        for pool in pools.values():
            for warm in pool.drain():
                def report(code: str, level: str, message: str, *_: Any, pool: str = pool.name, **__: Any) -> None:
                    self._warn(code, f"{pool}: {message}", level=level)

                await retire_sandbox(warm, report)

    async def _work(self, planned: PlannedAttempt) -> None:
        lane = self._lanes[planned.experiment.id]
        try:
            if self._unit_executor is None:
                result = await self._settle(planned, lane)
            elif self.interrupted:
                result = None
            else:
                # Budgets, journal and reporters stay here; the worker only runs the attempt.
                reply = await self._unit_executor.call(
                    AttemptRequest(planned.experiment.id, planned.eval.id, planned.ordinal)
                )
                result = self._from_worker(reply)
        finally:
            lane.in_flight -= 1
            lane.release_next(planned)
            assert self._wake is not None
            self._wake.set()
        if result is None:
            result = self._unrun(planned, INTERRUPTED)
        elif self.carry is not None:
            result = self._in_slot(planned, result)
        result.position = planned.index  # a worker numbers its one attempt 0
        self._note_verdict(planned, result)
        if result.outcome == INTERRUPTED:
            # journaled so readback shows the slot; reporters hear only of attempts that finished
            self._publish(result, planned.index, notify=False)
            return
        self._spend(lane, result)
        durable = self._publish(result, planned.index)
        if durable is not None and self._awaiting_journal > JOURNAL_BACKLOG:
            # Attempts can finish faster than the journal writer (a thread sharing the GIL) commits
            # them; waiting here instead of admitting more keeps the backlog, and memory, bounded.
            await durable

    def _spend(self, lane: _Lane, result: AttemptResult) -> None:
        if lane.budget is None:
            return
        if result.estimated_cost_usd is None:
            if not lane.cost_unknown_warned and result.turns:
                lane.cost_unknown_warned = True
                from assay.agent.pricing import unpriced_reason

                reason = unpriced_reason(lane.entry.experiment.model, result.usage, self.options.pricing or {})
                self._warn(
                    "budget-unenforceable",
                    f"experiment {lane.entry.id}: the budget cannot be enforced: {reason}",
                    experiment_id=lane.entry.id,
                )
            return
        lane.spent += result.estimated_cost_usd
        self._check_budget(lane)

    def _check_budget(self, lane: _Lane) -> None:
        if lane.budget is not None and lane.spent >= lane.budget:
            lane.exhausted = True
        self._stop_for_budget(lane)

    def _stop_for_budget(self, lane: _Lane) -> None:
        """An exhausted budget stops the lane only if it still holds attempts to dispatch (once, with a warning)."""
        if not lane.exhausted or lane.stopped or not lane.pending():
            return
        lane.stopped = True
        self._warn(
            "budget_exhausted",
            f"experiment {lane.entry.id} spent an estimated {format_usd(lane.spent)} of its {format_usd(lane.budget)} "
            "budget; its remaining attempts were not dispatched",
            experiment_id=lane.entry.id, spent=round(lane.spent, 6), budget=lane.budget,
        )

    def _warn(self, code: str, message: str, **fields: Any) -> None:
        self.events.warning(RunWarning(code, message, fields))

    def _publish(self, result: AttemptResult, index: int, *, notify: bool = True) -> asyncio.Future[None] | None:
        """Journal a settled slot; once durable, reporters hear of it (`notify`) and it is kept
        slim. Returns the journal's future (None without a journal)."""
        self.results[index] = result
        if self.journal is None:
            if notify:
                self.events.unit_durable(UnitDurable(result, lambda: agent_unit(result)))
            if self._spool is not None:  # nothing to wait for: the unit is spooled at once
                self._keep(result, index, lambda: agent_unit_text(result, result.to_json()))
            return None
        payload = result.to_json()
        payload_text = plain_text(payload)  # encoded once: the journal line and the record line share it

        def durable() -> None:
            self._awaiting_journal -= 1
            if notify:
                self.events.unit_durable(UnitDurable(result, lambda: agent_unit(result)))
            # The journal has written `payload` by now, so the record's line may take it over.
            self._keep(result, index, lambda: agent_unit_text(result, payload, payload_text))

        self._awaiting_journal += 1
        return self.journal.submit(ATTEMPT_RECORD, result.key, payload, durable, payload_text=payload_text)

    def _carried_record(self, planned: PlannedAttempt) -> AttemptResult:
        """A carried slot's record, made from the plan's decision: once it is published the run keeps
        its summary, as for an executed slot, and the plan no longer holds what it was made of."""
        assert self.carry is not None
        index = planned.index
        decision = self.carry.decisions[index]
        assert decision.carried is not None
        record = decision.carried.record(planned)
        # Slots carried alike (one reason, one identity) share the decision left in their place.
        key = (decision.action, decision.reason, id(decision.identity), decision.reasons)
        slim = self._published_decisions.get(key)
        if slim is None:
            slim = self._published_decisions[key] = dataclasses.replace(decision, carried=None)
        self.carry.decisions[index] = slim
        return record

    def _keep(self, result: AttemptResult, index: int, unit: Any) -> None:
        """A durable slot's unit (or what encodes its line) goes to the spool; the run keeps its summary."""
        assert self._spool is not None
        self._spool.add(index, unit)
        self.results[index] = AttemptSummary(result, self.plan[index], self.options.run_id)

    # -- the run --------------------------------------------------------------------------------
    def _prepare(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        if self._judge is None:
            cache = self.options.judge_cache
            if cache is None:
                from assay.judge.cache import MemoryCallCache

                cache = MemoryCallCache()
            self._judge = self._own_judge = LLMJudge(cache=cache)

    def _from_worker(self, reply: Any) -> AttemptResult | None:
        """A worker's attempt; what its judge spent meanwhile is added to the run's (`WorkerReply`)."""
        if reply is None or isinstance(reply, AttemptResult):  # (an executor that answers with the attempt alone)
            return reply
        if reply.judge_usage:
            self._workers_judge_usage.append(reply.judge_usage)
        if reply.judge_retries:
            self._workers_judge_retries.append(reply.judge_retries)
        return reply.result

    def _judge_spent(self) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
        """The run's judge retries and spend: its own judge's and its workers' (`--executor ray`)."""
        own_usage = self._own_judge.usage if self._own_judge is not None else {}
        retries = self._own_judge.retries if self._own_judge is not None else {}
        if not (own_usage or self._workers_judge_usage or self._workers_judge_retries):
            return retries, {}
        from assay.judge.usage import merged_usage

        usage = merged_usage([own_usage, *self._workers_judge_usage])
        retries = sum_counts([retries, *self._workers_judge_retries])
        return retries, judge_spend(usage, self.options.pricing or {})

    async def run_one(self, planned: PlannedAttempt) -> AttemptResult | None:
        """One attempt for a remote worker: lanes (experiment setup, agents) stay warm between calls."""
        if self._loop is None:
            self._prepare()
        lane = self._lanes.get(planned.experiment.id)
        if lane is None:
            lane = self._lanes[planned.experiment.id] = _Lane(planned.experiment, None)
        return await self._settle(planned, lane)

    async def close(self) -> None:
        """A remote worker's end: experiment teardowns, agents closed, the judge's client closed."""
        try:
            await self._retire_pools()
            await self._teardown_all()
            await self._close_agents()
        finally:
            if self._own_judge is not None:
                await self._own_judge.aclose()

    async def run(self) -> RunOutcome:
        """The run's outcome. A cancellation of the awaiting task (`run_async` in a notebook) is taken as Ctrl-C is,
        then raised: the attempts in flight are stopped and torn down (a cancellation reaching them where they
        were would skip their agent's teardown, leaking what its setup made) and what finished is journaled.
        A second cancellation cuts the teardowns short, as a second Ctrl-C does."""
        running = asyncio.ensure_future(self._run())
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            self.interrupt()
            try:
                await running  # a second cancellation of this task cancels it
            except Exception:  # noqa: BLE001 - the caller cancelled the run: the cancellation is what it hears of
                pass
            raise

    async def _run(self) -> RunOutcome:
        started = time.perf_counter()
        if "assay.agent.adapters.endpoint" in sys.modules:
            # An endpoint agent was defined: its HTTP transport (aiohttp) loads now, before the first attempt's
            # clock starts, rather than during discovery (`assay agent list` never needs it) or inside an attempt.
            import assay.judge.openai_http  # noqa: F401
        self._prepare()
        if self._spooled:
            self._spool = UnitSpool(len(self.plan))
        carried: list[PlannedAttempt] = []  # their records are the plan's (`CarryPlan`) until published
        reused_verdicts: dict[str, int] = {}
        for planned in self.plan:
            lane = self._lanes.get(planned.experiment.id)
            if lane is None:
                budget = self.options.budget if self.options.budget is not None else planned.experiment.experiment.budget
                lane = self._lanes[planned.experiment.id] = _Lane(planned.experiment, budget)
            reused = self.reused.get(planned.key)
            decision = self.carry.at(planned.index) if self.carry is not None else None
            if reused is not None:
                reused.position = planned.index
                self._note_verdict(planned, reused)
                if reused.verdict:
                    reused_verdicts[reused.verdict] = reused_verdicts.get(reused.verdict, 0) + 1
                if reused.estimated_cost_usd is not None and getattr(reused, "carried_from", None) is None:
                    lane.spent += reused.estimated_cost_usd  # a resumed run's budget counts what it spent before
                if self._spool is not None:
                    self._keep(reused, planned.index, lambda result=reused: agent_unit_text(result, result.to_json()))
                else:
                    self.results[planned.index] = reused
            elif decision is not None and decision.carried is not None:
                self._note_verdict(planned, decision.carried)
                carried.append(planned)
            else:
                lane.queue(planned)
        for lane in self._lanes.values():
            self._check_budget(lane)
        reused_count = len(self.plan) - len(carried) - sum(len(lane.queued()) for lane in self._lanes.values())
        skipped = 0  # what `--dry` calls not dispatched: said in the plan line too, not counted as to run
        if self._passed or any(lane.stopped for lane in self._lanes.values()):
            skipped = sum(1 for lane in self._lanes.values() for planned in lane.queued()
                          if lane.stopped or self._stopped_early(planned))
        # Ctrl-C is the run's own from its plan line on (a reader leaving `| head -1` is one too): before, a
        # press in the moment after that line cancelled the run's task, and a sandbox being made then was
        # left behind.
        sigint_installed = self._install_sigint() if self.options.handle_sigint else False
        cancelled = False
        completed: list[Any] = []
        try:
            self.events.run_started(RunStarted(
                "agent", self.options.run_id, len(self.plan), reused_count,
                RunPlan(self.plan, len(carried), reused_count, skipped, self.options.shard), reused_verdicts,
            ))
            for planned in carried:  # never dispatched: journaled as references, reported as they are
                durable = self._publish(self._carried_record(planned), planned.index)
                if durable is not None and self._awaiting_journal > JOURNAL_BACKLOG:
                    # As `_work` does: a 50,000-slot carry never holds every line at once (a failed write
                    # is raised where it always was, by the journal's drain below).
                    await asyncio.wait((durable,))
            # More workers than slots to run would only wait, each costing memory: a huge --concurrency
            # or `[tool.assay] concurrency` costs no more than the work.
            pending = sum(len(lane.queued()) for lane in self._lanes.values())
            concurrency = max(1, min(self.options.concurrency, pending))
            await self._judge_preflight()
            completed = await run_bounded(
                self._admit(), self._work, concurrency=concurrency, keep_going=True, collect=False
            )
            # Slots never started are settled too, so a readback of the run counts every slot.
            for lane in self._lanes.values():
                for planned in lane.queued():
                    if self.interrupted:
                        result = self._unrun(planned, INTERRUPTED, decision=NOT_STARTED)
                    elif self._stopped_early(planned):
                        result = self._early_exited(planned)
                    else:
                        result = self._unrun(planned, NOT_DISPATCHED, decision={
                            "action": "not-dispatched", "code": "budget_exhausted",
                            "message": f"experiment {lane.entry.id} reached its budget",
                        } if lane.stopped else None)
                    self._publish(result, planned.index, notify=False)
                lane.items.clear()
                lane.held.clear()
            if self.journal is not None:
                await self.journal.drain()
            if not self.interrupted:
                from assay.core.stdout_guard import results_made

                # Every attempt is settled and durable: a reader leaving the console during the teardowns and
                # the warnings after them (`| head`) loses output, not the run (Ctrl-C still stops it).
                results_made()
        except (asyncio.CancelledError, KeyboardInterrupt):
            cancelled = True
            raise
        finally:
            # Ctrl-C stays the run's until its teardowns are done: the shared sandboxes retired here and the
            # experiments' teardowns (a shared-state fixture dropped) finish on a first press, as an attempt's do;
            # a second press cuts them short. Python's own handler here would end them all at once, unsaid.
            self._tearing_down = True
            try:
                await self._retire_pools()
                await self._teardown_all()
                await self._close_agents()
                if self._own_judge is not None:
                    await self._own_judge.aclose()
            finally:
                if sigint_installed:
                    self._loop.remove_signal_handler(signals.SIGINT)
                self._destroy_sandboxes_left(cancelled)
        for done in completed:
            if done.error is not None:
                raise done.error
        exhausted = [lane.entry.id for lane in self._lanes.values() if lane.stopped]
        for lane in self._lanes.values():
            self._flush_lane_diagnostics(lane)
        self._warn_once_a_run()
        results = [result for result in self.results if result is not None]
        self._warn_unreachable_judges(results)
        judge_retries, judge_usage = self._judge_spent()
        duration = time.perf_counter() - started
        if self._spool is None:
            return RunOutcome(results, self.interrupted, exhausted, duration, judge_retries, judge_usage)
        return RunOutcome(
            SpooledAttempts(self._spool, results), self.interrupted, exhausted, duration, judge_retries, judge_usage,
            summaries=results, spool=self._spool,
        )

    # -- judge preflight ------------------------------------------------------------------------
    async def _judge_preflight(self) -> None:
        """One probe per judge endpoint the attempts to run will call; a failed one makes its judge
        assertions unavailable at once. Only the built-in judge here (workers build their own)."""
        if self._own_judge is None or self._unit_executor is not None:
            return
        options = self.options
        configs = [
            merged_judge_config(options.project_judge, planned.experiment.experiment.judge, planned.eval.eval.judge)
            for lane in self._lanes.values() for planned in lane.queued()
        ]
        if not any(config is not None for config in configs):
            return  # no eval declares a judge
        from assay.agent.judge_preflight import PreflightedJudge, planned_endpoints, unreachable_endpoints

        endpoints = planned_endpoints(configs)
        if not endpoints:
            return
        unreachable = await unreachable_endpoints(endpoints, options.judge_preflight_timeout)
        if unreachable:
            self._judge = PreflightedJudge(self._own_judge, unreachable)
            self._preflight = (endpoints, unreachable)

    def _warn_unreachable_judges(self, results: Sequence[Any]) -> None:
        """One warning per endpoint that failed the preflight, once its attempts are over."""
        if self._preflight is None:
            return
        from assay.agent.judge_preflight import PRECHECK_FAILED, unreachable_warnings

        for message, fields in unreachable_warnings(results, *self._preflight):
            self._warn(PRECHECK_FAILED, message, **fields)

    def _destroy_sandboxes_left(self, cancelled: bool = False) -> None:
        """Sandboxes a second Ctrl-C left behind (it cancels their teardown), or a cancelled run's (its attempts
        stop wherever they are, a sandbox half made), are destroyed before the run returns, not left running
        for `assay agent sandbox prune`."""
        if not (self.interrupted or cancelled or self._teardowns_cut) or "assay.agent.sandbox.registry" not in sys.modules:
            return  # only Ctrl-C or a cancellation cuts teardowns short, and only a sandbox has one
        from assay.agent.sandbox.kept import sandbox_base
        from assay.agent.sandbox.retention import destroy_left_active

        try:
            destroy_left_active(sandbox_base(), self.options.run_id)
        except Exception as error:  # noqa: BLE001 - the run's outcome stands; `sandbox prune` is the way left
            print(f"Warning: sandboxes of this run may be left running ({type(error).__name__}: {error}); "
                  "`assay agent sandbox prune` removes them", file=sys.stderr)

    def _install_sigint(self) -> bool:
        loop = self._loop
        assert loop is not None
        presses = {"count": 0}

        def on_sigint() -> None:
            presses["count"] += 1
            if presses["count"] > 1:
                # A second Ctrl-C stops waiting for adapters that ignore cancellation.
                self._teardowns_cut = self._tearing_down
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                return
            if self._tearing_down and not self.interrupted:
                # Every attempt has finished: nothing is left to stop but the cleanup, which is let finish.
                with contextlib.suppress(OSError):  # stderr may be a closed pipe
                    print("Ctrl-C: every attempt has finished; the run ends once its teardowns (shared sandboxes, "
                          "experiment teardowns) are done. Ctrl-C again cuts them short, leaving what they clean up "
                          "behind", file=sys.stderr, flush=True)
                return
            self.interrupt()

        try:
            loop.add_signal_handler(signals.SIGINT, on_sigint)
        except (NotImplementedError, RuntimeError, ValueError):
            return False
        return True


__all__ = ["AgentRun", "JOURNAL_BACKLOG"]
