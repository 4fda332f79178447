"""Scheduling experiments × evals × attempts: two concurrency gates, experiment hooks, interrupts, budgets, journal.

Admission is one async source over per-experiment lanes (round robin, each lane capped by its
experiment's concurrency) fed to the core `run_bounded` (the global cap); each attempt runs in the
attempt engine (`assay.agent.attempt`) and is journaled before reporters hear of it (as run events).
"""

from __future__ import annotations

import asyncio
import signal as signals
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from assay.agent.attempt import InFlight, attempt_error, run_attempt
from assay.agent.context import AttemptSettings, CancelSignal, Feedback, HookContext
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.evidence import sum_counts
from assay.agent.judging import Judge, LLMJudge
from assay.agent.report import shown_in_failure_lines
from assay.agent.units import agent_unit, agent_unit_text
from assay.core.run_events import RunEvents, RunStarted, RunWarning, UnitDurable
from assay.agent.record import (
    ATTEMPT_RECORD, EXECUTED, INTERRUPTED, NOT_DISPATCHED, AttemptResult, attempt_locator, slot_key,
)
from assay.core.asyncutil import call_user_code
from assay.core.record import UnitSpool
from assay.core.schedule import run_bounded

DEFAULT_CONCURRENCY = 10
# Results waiting for the journal before workers wait too: each holds its whole transcript.
JOURNAL_BACKLOG = 512


@dataclass(frozen=True, slots=True)
class PlannedAttempt:
    index: int  # position in discovery order: by eval, then experiment, then attempt
    experiment: ExperimentEntry
    eval: EvalEntry
    ordinal: int

    @property
    def key(self) -> str:
        return slot_key(self.experiment.id, self.eval.id, self.ordinal)

    def attempt_id(self, run_id: str) -> str:
        return f"{run_id}/{self.experiment.id}/{self.eval.id}/{self.ordinal + 1}"  # numbered from 1, as shown


def build_plan(
    experiments: Sequence[ExperimentEntry], selections: Mapping[str, Sequence[EvalEntry]], attempts: int | None = None,
    *, eval_order: Sequence[EvalEntry] = (),
) -> list[PlannedAttempt]:
    """Every slot in discovery order: evals in `eval_order` (default: as first selected), then
    experiments as given, then attempts. Results are shown in this order whatever finished first."""
    rank: dict[str, int] = {entry.id: position for position, entry in enumerate(eval_order)}
    slots: list[tuple[int, int, int, ExperimentEntry, EvalEntry]] = []
    for experiment_rank, experiment in enumerate(experiments):
        count = attempts or experiment.experiment.attempts
        for entry in selections[experiment.id]:
            eval_rank = rank.setdefault(entry.id, len(rank))
            for ordinal in range(count):
                slots.append((eval_rank, experiment_rank, ordinal, experiment, entry))
    slots.sort(key=lambda slot: slot[:3])
    return [
        PlannedAttempt(index, experiment, entry, ordinal)
        for index, (_, _, ordinal, experiment, entry) in enumerate(slots)
    ]


@dataclass(frozen=True)
class RunOptions:
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float | None = None  # --timeout: wins over experiment, eval and config
    config_timeout: float | None = None  # [tool.assay] timeout: the last resort
    budget: float | None = None  # --budget: replaces each experiment's budget
    pricing: Mapping[str, Any] = field(default_factory=dict)
    judge: Judge | None = None  # None: the built-in LLM judge, configured per project / experiment / eval
    project_judge: Mapping[str, Any] | None = None  # [tool.assay.judge]: the lowest judge layer
    judge_cache: Any = None  # an assay.judge CallCache; None: cached in memory for this run
    run_id: str = "run"
    handle_sigint: bool = False  # the CLI turns Ctrl-C into a clean interruption
    retry_base_seconds: float = 5.0  # backoff before resending a send the agent provably rejected


_NONE_SHOWN: tuple[dict[str, Any], ...] = ()


@dataclass(slots=True)
class AttemptSummary:
    """What a run keeps of an attempt once it is journaled and its unit spooled: what the console
    summary, the receipt, the manifest and the checkpoint read (verdict, title, usage, the
    assertions a failure shows), never its transcript. Read by attribute, like an `AttemptResult`."""

    experiment_id: str
    eval_id: str
    ordinal: int
    attempt_id: str
    outcome: str
    verdict: str | None
    agent: str
    model: str | None
    duration_seconds: float
    score: float | None
    score_state: str | None
    error: dict[str, Any] | None
    assertions: Sequence[dict[str, Any]]  # only the ones `failure_lines` shows
    usage: dict[str, Any] | None
    estimated_cost_usd: float | None
    retries: dict[str, int] | None
    position: int | None

    @classmethod
    def of(cls, result: AttemptResult) -> AttemptSummary:
        shown = [assertion for assertion in result.assertions if shown_in_failure_lines(assertion)]
        return cls(
            result.experiment_id, result.eval_id, result.ordinal, result.attempt_id, result.outcome, result.verdict,
            result.agent, result.model, result.duration_seconds, result.score, result.score_state, result.error,
            shown or _NONE_SHOWN, result.usage or None, result.estimated_cost_usd, result.retries, result.position,
        )

    @property
    def locator(self) -> str:
        return attempt_locator(self.attempt_id)

    @property
    def key(self) -> str:
        return slot_key(self.experiment_id, self.eval_id, self.ordinal)


class SpooledAttempts(Sequence[AttemptResult]):
    """A journaled run's attempts in plan order, each read back whole from the run's unit spool
    when it is asked for, so the run never holds every transcript at once."""

    def __init__(self, spool: UnitSpool, summaries: Sequence[AttemptSummary]) -> None:
        self._spool = spool
        self._summaries = summaries

    def __len__(self) -> int:
        return len(self._summaries)

    @overload
    def __getitem__(self, index: int) -> AttemptResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[AttemptResult]: ...

    def __getitem__(self, index: int | slice) -> AttemptResult | list[AttemptResult]:
        if isinstance(index, slice):
            return [self[position] for position in range(len(self))[index]]
        return _read_back(self._spool[index], self._summaries[index])

    def __iter__(self) -> Iterator[AttemptResult]:
        for unit, summary in zip(self._spool, self._summaries):
            yield _read_back(unit, summary)


def _read_back(unit: Any, summary: AttemptSummary) -> AttemptResult:
    result = AttemptResult.from_json(unit.detail or {})
    result.duration_seconds = summary.duration_seconds  # the spooled copy is rounded to the microsecond
    return result


@dataclass
class RunOutcome:
    results: Sequence[AttemptResult]  # plan order; a journaled run's are read back from its spool
    interrupted: bool
    budget_exhausted: list[str]
    duration_seconds: float
    judge_retries: dict[str, int] = field(default_factory=dict)
    # What the console, the receipt, the manifest and the checkpoint read, in plan order: the
    # run's `AttemptSummary`s when its results are spooled, else the results themselves.
    summaries: Sequence[Any] = None  # type: ignore[assignment]
    spool: UnitSpool | None = None  # the units of the run record, when they were spooled as they became durable

    def __post_init__(self) -> None:
        if self.summaries is None:
            self.summaries = self.results

    @property
    def usage(self) -> dict[str, Any]:
        """Token and provider-cost fields summed over every attempt that reported usage."""
        return sum_counts(result.usage for result in self.summaries)

    @property
    def estimated_cost_usd(self) -> float | None:
        """The price-table estimate summed over attempts that have one (never the provider's cost)."""
        costs = [result.estimated_cost_usd for result in self.summaries if result.estimated_cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def retries(self) -> dict[str, int]:
        return sum_counts(result.retries for result in self.summaries)

    def count(self, verdict: str) -> int:
        return sum(1 for result in self.summaries if result.verdict == verdict)

    @property
    def not_dispatched(self) -> int:
        return sum(1 for result in self.summaries if result.outcome == NOT_DISPATCHED)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        if self.budget_exhausted or self.not_dispatched:
            return 1
        if any(result.verdict in ("failed", "errored") for result in self.summaries):
            return 1
        return 0


class _Lane:
    """One experiment's queue, its own cap, its hooks and its spending."""

    __slots__ = (
        "entry", "items", "cap", "in_flight", "budget", "spent", "exhausted", "cost_unknown_warned",
        "setup_task", "setup_error", "setup_reached", "signal", "feedback",
    )

    def __init__(self, entry: ExperimentEntry, budget: float | None) -> None:
        self.entry = entry
        self.items: deque[PlannedAttempt] = deque()
        self.cap = entry.experiment.concurrency or 1_000_000
        self.in_flight = 0
        self.budget = budget
        self.spent = 0.0
        self.exhausted = False
        self.cost_unknown_warned = False
        self.setup_task: asyncio.Future[None] | None = None
        self.setup_error: BaseException | None = None
        self.setup_reached = False
        self.signal = CancelSignal()
        self.feedback = Feedback()


class AgentRun:
    """One invocation's attempts; `run()` returns every slot's result in plan order.

    With a journal, each attempt's unit of the run record is spooled once the attempt is durable
    and the attempt is kept only as an `AttemptSummary`, so memory does not grow with its transcript.
    """

    def __init__(
        self,
        plan: Sequence[PlannedAttempt],
        options: RunOptions,
        events: RunEvents | None = None,
        *,
        reused: Mapping[str, AttemptResult] | None = None,
        journal: Any = None,  # a core JournalWriter, or None
        executor: Any = None,  # an assay.core.executor.Executor running attempts elsewhere, or None (here)
    ) -> None:
        self.plan = list(plan)
        self.options = options
        self.events = events if events is not None else RunEvents()
        self.reused = dict(reused or {})
        self.journal = journal
        self.results: list[AttemptResult | AttemptSummary | None] = [None] * len(self.plan)
        self._spool: UnitSpool | None = None
        self._awaiting_journal = 0  # results handed to the journal, not yet durable
        self._in_flight = InFlight()
        self._lanes: dict[str, _Lane] = {}
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._judge: Judge | None = options.judge
        self._own_judge: LLMJudge | None = None
        self._unit_executor = executor

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
                if not any(lane.items and not lane.exhausted for lane in lanes):
                    return
                wake.clear()
                await wake.wait()
                continue
            picked.in_flight += 1
            yield picked.items.popleft()

    # -- experiment hooks -----------------------------------------------------------------------
    async def _ensure_setup(self, lane: _Lane) -> None:
        if lane.setup_task is None:
            lane.setup_task = asyncio.ensure_future(self._setup(lane))
        await asyncio.shield(lane.setup_task)

    async def _setup(self, lane: _Lane) -> None:
        lane.setup_reached = True  # from here on teardown runs, even if setup throws
        hook = lane.entry.experiment.setup
        if hook is None:
            return
        try:
            await call_user_code(hook, HookContext(lane.entry.id, lane.signal, lane.feedback))
        except Exception as error:  # noqa: BLE001 - every attempt of this experiment reports it
            lane.setup_error = error

    async def _teardown_all(self) -> None:
        for lane in self._lanes.values():
            hook = lane.entry.experiment.teardown
            if hook is None or not lane.setup_reached:
                continue
            try:
                await call_user_code(hook, HookContext(lane.entry.id, lane.signal, lane.feedback))
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
        timeout = options.timeout or experiment.timeout or definition.timeout or options.config_timeout
        judge_config = _judge_config(options.project_judge, experiment.judge, definition.judge)
        # Positional: this runs once per attempt, and keywords cost a NamedTuple noticeably more.
        return AttemptSettings(
            CancelSignal(), Feedback(), experiment.model, experiment.reasoning_effort, experiment.flags,
            planned.experiment.id, planned.eval.id, planned.ordinal, None, experiment.agent, definition.kind,
            planned.eval.directory, planned.attempt_id(options.run_id), definition.tags, timeout,
            options.pricing or {}, self._judge, judge_config, bool(definition.judge), options.retry_base_seconds,
        )

    def _unrun(self, planned: PlannedAttempt, outcome: str, error: dict[str, Any] | None = None) -> AttemptResult:
        experiment = planned.experiment.experiment
        return AttemptResult(
            experiment_id=planned.experiment.id, eval_id=planned.eval.id, ordinal=planned.ordinal,
            attempt_id=planned.attempt_id(self.options.run_id),
            outcome=outcome, verdict="errored" if error is not None else None, agent=experiment.agent.name,
            model=experiment.model, error=error, tags=list(planned.eval.eval.tags), position=planned.index,
        )

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
        return await run_attempt(self._settings(planned), planned.eval.eval.test, self._in_flight, planned.index)

    async def _work(self, planned: PlannedAttempt) -> None:
        lane = self._lanes[planned.experiment.id]
        try:
            if self._unit_executor is None:
                result = await self._settle(planned, lane)
            elif self.interrupted:
                result = None
            else:
                # Budgets, journal and reporters stay here; the worker only runs the attempt.
                result = await self._unit_executor.call(
                    AttemptRequest(planned.experiment.id, planned.eval.id, planned.ordinal)
                )
        finally:
            lane.in_flight -= 1
            assert self._wake is not None
            self._wake.set()
        if result is None:
            result = self._unrun(planned, INTERRUPTED)
        result.position = planned.index  # a worker numbers its one attempt 0
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
                self._warn(
                    "budget-unenforceable",
                    f"experiment {lane.entry.id}: the budget cannot be enforced (no model, usage or price)",
                    experiment_id=lane.entry.id,
                )
            return
        lane.spent += result.estimated_cost_usd
        if lane.spent >= lane.budget and not lane.exhausted:
            lane.exhausted = True
            self._warn(
                "budget_exhausted",
                f"experiment {lane.entry.id} spent an estimated ${lane.spent:.4f} of its ${lane.budget:.4f} budget; "
                "its remaining attempts were not dispatched",
                experiment_id=lane.entry.id,
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
            return None
        payload = result.to_json()

        def durable() -> None:
            self._awaiting_journal -= 1
            if notify:
                self.events.unit_durable(UnitDurable(result, lambda: agent_unit(result)))
            # The journal has written `payload` by now, so the record's line may take it over.
            self._keep(result, index, lambda: agent_unit_text(result, payload))

        self._awaiting_journal += 1
        return self.journal.submit(ATTEMPT_RECORD, result.key, payload, durable)

    def _keep(self, result: AttemptResult, index: int, unit: Any) -> None:
        """A durable slot's unit (or what encodes its line) goes to the spool; the run keeps its summary."""
        assert self._spool is not None
        self._spool.add(index, unit)
        self.results[index] = AttemptSummary.of(result)

    # -- the run --------------------------------------------------------------------------------
    def _prepare(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        if self._judge is None:
            from assay.judge.cache import MemoryCallCache

            cache = self.options.judge_cache if self.options.judge_cache is not None else MemoryCallCache()
            self._judge = self._own_judge = LLMJudge(cache=cache)

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
            await self._teardown_all()
            await self._close_agents()
        finally:
            if self._own_judge is not None:
                await self._own_judge.aclose()

    async def run(self) -> RunOutcome:
        started = time.perf_counter()
        self._prepare()
        if self.journal is not None:
            self._spool = UnitSpool(len(self.plan))
        for planned in self.plan:
            lane = self._lanes.get(planned.experiment.id)
            if lane is None:
                budget = self.options.budget if self.options.budget is not None else planned.experiment.experiment.budget
                lane = self._lanes[planned.experiment.id] = _Lane(planned.experiment, budget)
            reused = self.reused.get(planned.key)
            if reused is not None:
                reused.position = planned.index
                if self._spool is not None:
                    self._keep(reused, planned.index, lambda result=reused: agent_unit_text(result, result.to_json()))
                else:
                    self.results[planned.index] = reused
            else:
                lane.items.append(planned)
        reused = len(self.plan) - sum(len(lane.items) for lane in self._lanes.values())
        self.events.run_started(RunStarted("agent", self.options.run_id, len(self.plan), reused, self.plan))
        sigint_installed = False
        if self.options.handle_sigint:
            sigint_installed = self._install_sigint()
        # More workers than slots to run would only wait, each costing memory: a huge --concurrency
        # or `[tool.assay] concurrency` costs no more than the work.
        pending = sum(len(lane.items) for lane in self._lanes.values())
        concurrency = max(1, min(self.options.concurrency, pending))
        try:
            completed = await run_bounded(
                self._admit(), self._work, concurrency=concurrency, keep_going=True, collect=False
            )
            # Slots never started are settled too, so a readback of the run counts every slot.
            for lane in self._lanes.values():
                for planned in lane.items:
                    outcome = INTERRUPTED if self.interrupted else NOT_DISPATCHED
                    self._publish(self._unrun(planned, outcome), planned.index, notify=False)
                lane.items.clear()
            if self.journal is not None:
                await self.journal.drain()
        finally:
            if sigint_installed:
                self._loop.remove_signal_handler(signals.SIGINT)
            await self._teardown_all()
            await self._close_agents()
            if self._own_judge is not None:
                await self._own_judge.aclose()
        for done in completed:
            if done.error is not None:
                raise done.error
        exhausted = [lane.entry.id for lane in self._lanes.values() if lane.exhausted]
        for lane in self._lanes.values():
            self._flush_lane_diagnostics(lane)
        results = [result for result in self.results if result is not None]
        judge_retries = self._own_judge.retries if self._own_judge is not None else {}
        duration = time.perf_counter() - started
        if self._spool is None:
            return RunOutcome(results, self.interrupted, exhausted, duration, judge_retries)
        return RunOutcome(
            SpooledAttempts(self._spool, results), self.interrupted, exhausted, duration, judge_retries,
            summaries=results, spool=self._spool,
        )

    def _install_sigint(self) -> bool:
        loop = self._loop
        assert loop is not None
        presses = {"count": 0}

        def on_sigint() -> None:
            presses["count"] += 1
            if presses["count"] > 1:
                # A second Ctrl-C stops waiting for adapters that ignore cancellation.
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                return
            self.interrupt()

        try:
            loop.add_signal_handler(signals.SIGINT, on_sigint)
        except (NotImplementedError, RuntimeError, ValueError):
            return False
        return True


@dataclass(frozen=True, slots=True)
class AttemptRequest:
    """One attempt as shipped to a worker: names only, the worker discovers the project itself."""

    experiment_id: str
    eval_id: str
    ordinal: int


class AgentWorker:
    """A remote worker's side of an agent run: the project discovered once, agents and judge kept warm."""

    def __init__(self, root: Any, options: RunOptions, judge_cache_dir: Any = None, keep_sandbox: str | None = None) -> None:
        from pathlib import Path

        from assay.agent.discovery import discover_evals, discover_experiments
        from assay.agent.project import load_dotenv

        root = Path(root)
        load_dotenv(root)
        self._experiments = {entry.id: entry for entry in discover_experiments(root)}
        self._evals = {entry.id: entry for entry in discover_evals(root)}
        if judge_cache_dir is not None:
            from dataclasses import replace

            from assay.judge.cache import DirectoryCallCache

            options = replace(options, judge_cache=DirectoryCallCache(judge_cache_dir))
        self._run = AgentRun([], options)
        self._keep_sandbox = keep_sandbox
        self._linked: dict[tuple[str, str], PlannedAttempt] = {}  # each pair linked (its sandbox bound) once

    async def call(self, request: AttemptRequest) -> AttemptResult | None:
        from dataclasses import replace

        key = (request.experiment_id, request.eval_id)
        linked = self._linked.get(key)
        if linked is None:
            from assay.agent.sandbox.linking import link_plan

            [linked] = link_plan(
                [PlannedAttempt(0, self._experiments[request.experiment_id], self._evals[request.eval_id], 0)],
                self._keep_sandbox,
            )
            self._linked[key] = linked
        return await self._run.run_one(replace(linked, ordinal=request.ordinal))

    async def close(self) -> None:
        await self._run.close()


def _judge_config(
    project_judge: Mapping[str, Any] | None, experiment_judge: Mapping[str, Any] | None, eval_judge: Any
) -> dict[str, Any] | None:
    """eval > experiment > project, merged key by key; None when the eval did not declare a judge."""
    if not eval_judge:
        return None
    config = dict(project_judge or {})
    config.update(experiment_judge or {})
    if isinstance(eval_judge, Mapping):
        config.update(eval_judge)
    return config


__all__ = [
    "AgentRun", "AgentWorker", "AttemptRequest", "AttemptSummary", "DEFAULT_CONCURRENCY", "PlannedAttempt", "RunOptions",
    "RunOutcome", "SpooledAttempts", "build_plan",
]
