"""`agent` in the run pipeline: how an `assay agent run` opens (plan, carry, checkpoint), executes and
concludes, how `--dry` plans without running, and how shard records merge into the run the unsharded
invocation would have recorded.

The request is `request.py`; what runs is the plan (`plan.py`), scheduled by `runner.py`; which slots
carry published attempts is `carry.py`; the console and NDJSON receipt are NiceEval's (`report.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.agent.request import AgentRunRequest
from assay.core.run.kinds import KindOutput, Resumed, RunKind, ShardRecord, WorkerSpec
from assay.core.run.request import Outputs, from_invocation, to_invocation
from assay.core.run_events import RunEvents, RunFinished
from assay.errors import EXIT_INTERRUPTED, AssayError, UsageError

if TYPE_CHECKING:
    from assay.agent.carry import CarryPlan
    from assay.agent.checkpoint import AgentCheckpoint
    from assay.agent.plan import PlannedAttempt
    from assay.agent.project import ProjectConfig
    from assay.agent.record import AttemptResult
    from assay.agent.run_options import RunOptions
    from assay.agent.run_outcome import RunOutcome
    from assay.agent.shared_state import HeldLeases
    from assay.agent.traces.config import TelemetryConfig
    from assay.agent.traces.tracing import RunTracing
    from assay.core.executor import Executor
    from assay.core.record import RunManifest
    from assay.judge.cache import DirectoryCallCache

__all__ = ["AGENT", "AgentKind", "DryRun", "dry_run"]


def _carry_plan(
    request: AgentRunRequest, plan: list[PlannedAttempt], config: ProjectConfig,
    settled: Mapping[str, AttemptResult] | None = None,
) -> CarryPlan:
    """Each slot's execution identity and what it comes to: carried, executed (why) or not dispatched."""
    from assay.agent.carry import check_rerun, plan_carry
    from assay.agent.identity import IdentityBuilder
    from assay.agent.plan import early_exit_enabled

    identities = IdentityBuilder(
        request.project, project_judge=config.judge, timeout=request.timeout, config_timeout=config.timeout,
    )
    return plan_carry(
        plan, identities, request.project, rerun=check_rerun(request.rerun), keep_sandbox=request.keep_sandbox,
        settled=settled, early_exit=lambda planned: early_exit_enabled(request.early_exit, planned),
    )


def _warn_of_a_resumable_run(carry: CarryPlan, request: AgentRunRequest, plan: list[PlannedAttempt]) -> None:
    from assay.agent.checkpoint import resumable_warning

    if request.rerun == "all":
        return  # asked to run every attempt again: nothing to point at

    warning = resumable_warning(request.project, to_invocation(request), plan, carry)
    if warning is not None:
        carry.warnings.append(warning)


def _take_leases(
    request: AgentRunRequest, plan: list[PlannedAttempt], carry: CarryPlan, settled: Mapping[str, AttemptResult],
) -> HeldLeases:
    """The shared-state leases of the experiments with a slot to run (a carried or resumed slot touches
    nothing), taken before anything is created: held until the run is sealed, after every teardown."""
    import sys

    from assay.agent.shared_state import acquire_leases

    experiments: dict[str, set[str]] = {}
    for index, planned in enumerate(plan):
        key = planned.experiment.experiment.shared_state
        if key is not None and planned.key not in settled and carry.at(index).carried is None:
            experiments.setdefault(key, set()).add(planned.experiment.id)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return acquire_leases(
        request.project, {key: sorted(ids) for key, ids in experiments.items()}, wait_s=request.shared_state_wait, say=say,
    )


@dataclass(frozen=True)
class DryRun:
    """`--dry`: the plan and every slot's decision; nothing was run or written."""

    plan: list[PlannedAttempt]
    carry: CarryPlan
    shard: tuple[str, int] | None = None  # `--shard i/n` and the whole plan's slots

    def lines(self) -> list[str]:
        from assay.agent.report import dry_plan_lines

        return dry_plan_lines(self.plan, self.carry, self.shard)

    def document(self) -> dict[str, Any]:
        from assay.agent.report import dry_plan_document

        return dry_plan_document(self.plan, self.carry)

    def write(self, as_json: bool) -> None:
        """On stdout: the plan as one JSON line, or its lines for a person (never rewrapped)."""
        if as_json:
            import json

            print(json.dumps(self.document(), ensure_ascii=False, separators=(",", ":")))
            return
        from assay.core.console import stdout_lines

        console = stdout_lines()
        for line in self.lines():
            console.print(line)


def dry_run(request: AgentRunRequest) -> DryRun:
    """The invocation planned as `assay agent run` would plan it, without a checkpoint, a record or
    a call to any agent: the results store is only read."""
    import sys

    from assay.agent.plan import plan_for, shard_plan
    from assay.agent.project import load_dotenv, load_project_config
    from assay.agent.sandbox.linking import check_keep

    check_keep(request.keep_sandbox)
    root = request.project
    load_dotenv(root)
    config = load_project_config(root)
    written = sys.dont_write_bytecode
    sys.dont_write_bytecode = True  # not even __pycache__ beside the project's files
    try:
        whole = plan_for(root, request)
        plan = shard_plan(whole, request.shard)
        carry = _carry_plan(request, plan, config)
        _warn_of_a_resumable_run(carry, request, plan)
        _mark_spent_budgets(request, plan, carry)
        if request.shard is not None and not plan:  # as the run says it
            from assay.agent.identity import Reason

            carry.warnings.append(Reason("empty-shard", _empty_shard_message(request.shard, len(whole))))
        return DryRun(plan, carry, (request.shard, len(whole)) if request.shard is not None else None)
    finally:
        sys.dont_write_bytecode = written


def _empty_shard_message(shard: str, whole: int) -> str:
    return (f"shard {shard} holds none of the plan's {whole} attempt(s) (an eval's attempts are never split between "
            "shards): nothing to run, no gate to fail")


def _mark_spent_budgets(request: AgentRunRequest, plan: list[PlannedAttempt], carry: CarryPlan) -> None:
    """`--dry`: a zero budget (`--budget 0`, or an experiment's `budget=0`) is spent before anything runs, so the run
    dispatches none of that experiment's attempts to run (carried ones cost nothing): the plan says so, as the run
    does, rather than counting them to run."""
    from assay.agent.carry import EXECUTE, NOT_DISPATCHED_ACTION, SlotDecision
    from assay.agent.identity import Reason

    for planned in plan:
        budget = request.budget if request.budget is not None else planned.experiment.experiment.budget
        decision = carry.at(planned.index)
        if budget is None or budget > 0 or decision.action != EXECUTE:
            continue
        reason = Reason("budget_exhausted", f"experiment {planned.experiment.id} has a budget of $0: not dispatched")
        carry.decisions[planned.index] = SlotDecision(NOT_DISPATCHED_ACTION, reason, decision.identity,
                                                      (reason, *(decision.reasons or (decision.reason,))))


def project_judge_cache(root: Path) -> JudgeCacheOnDemand:
    """The judge call cache of the project at `root` (`.assay/cache/judge`), as `assay agent run` and the pytest
    plugin both use it."""
    from assay.agent.project import checkpoints_base

    return JudgeCacheOnDemand(checkpoints_base(root) / "cache" / "judge")


class JudgeCacheOnDemand:
    """The project's judge call cache, opened on the first judge call: a run without a judge never
    imports `assay.judge` (and its JSON Schema machinery), which a fully carried run would notice."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._cache: DirectoryCallCache | None = None

    def _opened(self) -> DirectoryCallCache:
        if self._cache is None:
            from assay.judge.cache import DirectoryCallCache

            self._cache = DirectoryCallCache(self.folder)
        return self._cache

    def get(self, key: str) -> bytes | None:
        return self._opened().get(key)

    def put(self, key: str, value: bytes) -> None:
        self._opened().put(key, value)

    def delete(self, key: str) -> None:
        self._opened().delete(key)


class _NoCheckpoint:
    """A run with its journal off: nothing is written, reused or left to resume."""

    checkpoint = None
    path = None

    def __init__(self) -> None:
        from assay.core.record import new_run_id

        self.id = new_run_id("agent")
        self.reused: dict[str, AttemptResult] = {}

    def would_remain(self, outcome: RunOutcome) -> bool:
        return False

    def finish(self, outcome: RunOutcome) -> bool:
        return False

    def release(self) -> None:
        pass

    def let_go_after_failure(self) -> bool:
        return False


class _OpenedAgentRun:
    """An `assay agent run` whose plan, carry decisions and checkpoint exist; its outcome is a `RunOutcome`."""

    def __init__(
        self, request: AgentRunRequest, plan: list[PlannedAttempt], checkpoint: AgentCheckpoint | _NoCheckpoint,
        options: RunOptions, carry: CarryPlan, telemetry: TelemetryConfig | None, leases: HeldLeases | None = None,
    ) -> None:
        self.request = request
        self.plan = plan
        self.checkpoint = checkpoint
        self.options = options
        self.carry = carry  # each slot's identity and decision
        self.telemetry = telemetry  # set when the run starts an OTLP receiver
        self.run_id = checkpoint.id
        self.leases = leases  # shared state, released once the run is sealed (every path ends there)
        self._outcome: RunOutcome | None = None

    def worker(self) -> WorkerSpec:
        from assay.agent.remote_worker import AgentWorker

        worker_options = dataclasses.replace(self.options, judge_cache=None, handle_sigint=False)
        judge_cache = str(project_judge_cache(self.request.project).folder)
        return WorkerSpec(
            AgentWorker, (str(self.request.project), worker_options, judge_cache, self.request.keep_sandbox,
                          self.request.sandbox),
            concurrency=self.options.concurrency,
        )

    async def execute(self, events: RunEvents, executor: Executor | None) -> RunOutcome:
        from assay.agent.runner import AgentRun
        from assay.core.journal import JournalWriter

        tracing = self._start_tracing(events, executor)
        journal = self.checkpoint.checkpoint.journal if self.checkpoint.checkpoint is not None else None
        writer = JournalWriter(journal) if journal is not None else None
        try:
            outcome = await AgentRun(
                self.plan, self.options, events, reused=self.checkpoint.reused, journal=writer, executor=executor,
                carry=self.carry,
            ).run()
            if tracing is not None:
                # Before the record is built: spans exported as the last attempts ended still count.
                if not outcome.interrupted:
                    await tracing.settle()
                tracing.finish(outcome.results, interrupted=outcome.interrupted)
            return outcome
        finally:
            if writer is not None:
                await writer.close()
            if tracing is not None:
                from assay.agent.traces.tracing import ACTIVE

                tracing.stop()
                ACTIVE.set(None)

    def _start_tracing(self, events: RunEvents, executor: Executor | None) -> RunTracing | None:
        """The run's OTLP receiver, made current for its attempts; None without `[tool.assay.telemetry]`
        or when every slot is carried (no attempt runs, so no span can come)."""
        if self.telemetry is None or not self.carry.count("execute"):
            return None
        from assay.core.run_events import RunWarning

        def warn(code: str, message: str) -> None:
            events.warning(RunWarning(code, message, {}))

        if executor is not None:
            warn("telemetry-not-forwarded", "attempts run on remote workers get no ctx.telemetry: "
                 "the OTLP receiver serves local runs only")
            return None
        from assay.agent.traces.tracing import ACTIVE, RunTracing

        tracing = RunTracing(self.telemetry, warn)
        tracing.start()
        ACTIVE.set(tracing)  # the run's tasks are created after this, so each attempt inherits it
        return tracing

    def _resume_lines(self) -> list[str]:
        from assay.agent.checkpoint import resume_lines

        if self.checkpoint.path is None:
            return []
        return resume_lines(self.checkpoint.path, self.request.project)

    def _concluded_resume_lines(self, outcome: RunOutcome) -> list[str]:
        """How to go on from a run that left attempts to run. One that only `--budget` stopped is not continued by
        `--resume`: the resume keeps that budget, and counts what the run spent, so it stops at once again; a new
        run with a larger --budget runs the rest, carrying what finished (an experiment's own `budget=` can be
        raised in its file before resuming, so its runs keep the resume line)."""
        from assay.agent.checkpoint import is_reusable

        lines = self._resume_lines()
        if outcome.interrupted or self.request.budget is None or not outcome.budget_exhausted:
            return lines
        if any(not is_reusable(result) and (getattr(result, "decision", None) or {}).get("code") != "budget_exhausted"
               for result in outcome.summaries):
            return lines  # errored attempts too: a resume runs those again
        return [line for line in lines if line.startswith("Checkpoint: ")] + [
            f"--budget {self.request.budget:g} stopped this run, and a --resume keeps it (it would stop at once "
            "again): run `assay agent run` again with a larger --budget, which carries the attempts that finished."
        ]

    def conclude(self, outcome: RunOutcome) -> RunFinished:
        from assay.agent.units import agent_run_manifest, agent_run_units
        from assay.core.record import checkpointed_run_id

        self._outcome = outcome
        record_id = checkpointed_run_id("agent", self.run_id)
        kept = self.checkpoint.would_remain(outcome)
        invocation = to_invocation(self.request)
        root, path = self.request.project, self.checkpoint.path
        return RunFinished(
            "agent", self.run_id, outcome.exit_code, outcome, interrupted=outcome.interrupted, checkpoint=path,
            checkpoint_kept=kept, resume_lines=self._concluded_resume_lines(outcome) if kept else (),
            build_units=lambda: agent_run_units(outcome),
            # An interrupted run is not recorded: its resume will be.
            build_manifest=None if outcome.interrupted or not self.request.record else (
                lambda code: agent_run_manifest(outcome, invocation, root, code, path, record_id)
            ),
            home=root,
        )

    def interrupted(self) -> RunFinished:
        self._outcome = None  # stopped after concluding (while being recorded): its checkpoint is not complete
        self.checkpoint.release()
        return RunFinished(
            "agent", self.run_id, EXIT_INTERRUPTED, interrupted=True, checkpoint=self.checkpoint.path,
            checkpoint_kept=self.checkpoint.path is not None, resume_lines=self._resume_lines(),
        )

    def failed(self, error: AssayError) -> RunFinished:
        kept = self.checkpoint.let_go_after_failure()
        return RunFinished("agent", self.run_id, error.exit_code, error=error, checkpoint=self.checkpoint.path if kept else None)

    def seal(self, finished: RunFinished) -> None:
        try:
            if self._outcome is not None:
                outcome, self._outcome = self._outcome, None
                self.checkpoint.finish(outcome)
        finally:
            if self.leases is not None:
                self.leases.release()


class AgentResume:
    """`assay agent run --resume`: the checkpoint stores the selection (NiceEval's words refuse the rest)."""

    @property
    def checkpoint_kind(self) -> str:
        from assay.agent.checkpoint import KIND

        return KIND

    def locate(self, ref: str, given: AgentRunRequest) -> Path:
        from assay.agent.project import checkpoints_base
        from assay.core.run.resume import locate_in

        path = locate_in(checkpoints_base(given.project), ref)
        if not path.exists():
            raise UsageError(_no_such_checkpoint(ref, given.project), "--resume")
        return path

    def invocation(self, request: AgentRunRequest, outputs: Outputs) -> dict[str, Any]:
        return to_invocation(request)

    def restored(
        self, invocation: object, manifest_path: Path, given: AgentRunRequest, outputs: Outputs
    ) -> tuple[AgentRunRequest, Outputs]:
        fresh = {field.name: getattr(given, field.name) for field in dataclasses.fields(given) if not field.metadata["stored"]}
        return from_invocation(AgentRunRequest, invocation, manifest_path, **fresh), outputs

    def refusal(self, flags: Sequence[str]) -> str:
        return ("--resume reruns the saved selection; do not give experiments, evals or selection options "
                f"(given: {', '.join(flags)})")


def _no_such_checkpoint(ref: str, root: Path) -> str:
    """`--resume` names no checkpoint: say where ids are looked up, and the id meant if one is close."""
    from assay.agent.checkpoint import list_checkpoints
    from assay.core.format import did_you_mean

    ids = [path.name for path, _ in list_checkpoints(root)]
    hint = did_you_mean(Path(ref).name, ids, cutoff=0.8, shown=str) or (
        f"; the latest is {ids[-1]}" if ids else "; this project has none")
    return f"--resume {ref}: no such checkpoint (ids are looked up in {root}/.assay/runs/checkpoints){hint}"


class AgentMerge:
    """`assay runs merge` of agent shard records: the unsharded run's record (plan order, the same
    gate) and its summary. The project must be at hand: the plan is rebuilt from it."""

    identity_keys = ("project",)
    # Empty: the options that only pace a run (--concurrency, --shared-state-wait) are not recorded (not
    # `stored`), so shards never differ in them; every recorded option can change what an attempt comes to.
    pace_options: tuple[str, ...] = ()

    def recorded_units(self, manifest: RunManifest) -> int | None:
        """One unit per attempt: the attempts the manifest counts (by verdict, or outcome)."""
        attempts = (manifest.summary or {}).get("attempts")
        if not isinstance(attempts, Mapping) or not all(type(count) is int and count >= 0 for count in attempts.values()):
            return None  # a record that does not say (written by hand, or by another version)
        return sum(attempts.values())

    def merged(self, records: Sequence[ShardRecord], outputs: Outputs) -> RunFinished:
        from assay.agent.judging import summed_spend
        from assay.agent.plan import plan_for
        from assay.agent.run_outcome import RunOutcome
        from assay.agent.slot_result import SlotResult
        from assay.agent.units import agent_run_manifest, agent_run_units, agent_unit_id
        from assay.core.record import merged_created_at, merged_run_id

        if outputs.output_json is not None:
            raise UsageError("--output-json is for video runs; agent runs print their summary", "--output-json")
        manifests = [manifest for manifest, _ in records]
        root = Path(manifests[0].identity["project"])
        invocation = {name: value for name, value in manifests[0].options.items() if name != "shard"}
        selection = from_invocation(AgentRunRequest, invocation, Path(manifests[0].run_id), project=root)
        units = {unit.unit_id: unit for _, shard_units in records for unit in shard_units}
        results = []
        for planned in plan_for(root, selection):
            key = agent_unit_id(planned.experiment.id, planned.eval.id, planned.ordinal)
            unit = units.pop(key, None)
            if unit is None:
                raise UsageError(f"the shard records have no result for {key}, which the project's plan holds now: was an "
                                 "eval added since the shards ran, or a shard incomplete or interrupted?")
            document = {name: value for name, value in dict(unit.detail or {}).items() if name != "locator"}
            result = SlotResult.from_json(document)  # identity and carry reference kept
            result.position = planned.index  # a shard numbered its own slots
            results.append(result)
        if units:
            raise UsageError(f"the shard records hold attempts outside the run's plan: {', '.join(sorted(units)[:5])} (an eval "
                             "removed or renamed since the shards ran?)")
        exhausted = sorted({
            str(gate["name"]).removeprefix("budget ")
            for manifest in manifests for gate in manifest.gates if str(gate.get("name", "")).startswith("budget ")
        })
        duration = max((manifest.duration_seconds or 0.0 for manifest in manifests), default=0.0)
        spent = summed_spend([(manifest.summary or {}).get("judge_usage") or {} for manifest in manifests])
        outcome = RunOutcome(results, False, exhausted, duration, judge_usage=spent)

        def manifest(exit_code: int) -> RunManifest:
            made = agent_run_manifest(outcome, invocation, root, exit_code, run_id=merged_run_id("agent", manifests))
            return dataclasses.replace(made, options={**made.options, "merged_from": [m.run_id for m in manifests]},
                                       created_at=merged_created_at(manifests))

        return RunFinished(
            "agent", "", outcome.exit_code, outcome, build_units=lambda: agent_run_units(outcome),
            build_manifest=manifest, home=root,
        )


def _check_sandbox_folder(plan: Sequence[Any], carry: Any) -> None:
    """The folders sandboxes are made and recorded in (ASSAY_SANDBOX_DIR, else a per-user one in the temporary
    folder, and each `local_sandbox(base_dir=…)` of an attempt to run), when an attempt to run needs one: one error
    before the run, not the same error for every attempt."""
    from assay.agent.carry import EXECUTE

    running = [planned.sandbox for planned in plan
               if planned.sandbox is not None and carry.at(planned.index).action == EXECUTE]
    if not running:
        return
    from assay.agent.sandbox.local import sandbox_base_dir, sandbox_dir_setting
    from assay.errors import ConfigError

    folders = {sandbox_base_dir(): ("made and recorded", sandbox_dir_setting())}
    for binding in running:
        own = getattr(binding.provider, "base_dir", None)
        if own is not None:
            folders.setdefault(own, ("made", f"local_sandbox(base_dir={str(own)!r}): give it a folder you can write"))
    for base, (what, setting) in folders.items():
        problem = _unusable_folder(base)
        if problem is not None:
            raise ConfigError(f"sandboxes are {what} in {base}, but {problem} ({setting})")


def _unusable_folder(base: Any) -> str | None:
    """Why sandboxes cannot be made in `base` (made when missing), or None when they can."""
    import os

    try:
        base.mkdir(parents=True, exist_ok=True)
        return None if os.access(base, os.W_OK | os.X_OK) else "it cannot be written"
    except OSError as error:
        from assay.core.fsutil import file_in_the_way

        blocker = file_in_the_way(base)
        if blocker is None:  # "it cannot be made: no such file or directory" (mid-sentence, as the rest reads)
            reason = error.strerror or str(error)
            return f"it cannot be made: {reason[:1].lower()}{reason[1:]}"
        return "it is a file, not a folder" if blocker == base else f"{blocker} is a file, not a folder"


class AgentKind:
    """The agent kind (`RunKind[AgentRunRequest]`): NiceEval's runs, resumable and mergeable."""

    name = "agent"
    resume = AgentResume()
    merge = AgentMerge()
    commands: Mapping[str, RunKind[Any]] = {}

    def output(self, outputs: Outputs) -> KindOutput:
        from assay.agent.report import ConsoleReporter, NdjsonReporter
        from assay.core.console import stdout_lines

        return KindOutput(ConsoleReporter(stdout_lines(), verbose=outputs.verbose), machine=NdjsonReporter())

    def open(
        self, request: AgentRunRequest, outputs: Outputs, resume: Resumed | None, events: RunEvents
    ) -> _OpenedAgentRun:
        from assay.agent.checkpoint import AgentCheckpoint
        from assay.agent.plan import plan_for, shard_plan
        from assay.agent.project import load_dotenv, load_project_config, telemetry_for
        from assay.agent.run_options import DEFAULT_CONCURRENCY, RunOptions

        root = request.project
        load_dotenv(root)
        config = load_project_config(root)
        telemetry = telemetry_for(config, root, request.telemetry_host)  # checked with the config: before the checkpoint
        whole = plan_for(root, request)
        plan = shard_plan(whole, request.shard)
        from assay.agent.carry import check_rerun

        check_rerun(request.rerun)
        if resume is not None:
            checkpoint: AgentCheckpoint | _NoCheckpoint = AgentCheckpoint.resume(resume.path, resume.manifest, plan)
            try:
                carry = _carry_plan(request, plan, config, checkpoint.reused)  # resume wins within its checkpoint
                _check_sandbox_folder(plan, carry)
                leases = _take_leases(request, plan, carry, checkpoint.reused)
            except BaseException:
                checkpoint.release()
                raise
        else:
            carry = _carry_plan(request, plan, config)  # before a checkpoint exists: a failure leaves none
            _check_sandbox_folder(plan, carry)
            _warn_of_a_resumable_run(carry, request, plan)
            leases = _take_leases(request, plan, carry, {})  # waited for before anything is created
            try:
                checkpoint = AgentCheckpoint.start(root, to_invocation(request), plan) if request.journal else _NoCheckpoint()
            except BaseException:
                leases.release()
                raise
        from assay.core.run_events import RunWarning

        for warning in carry.warnings:
            events.warning(RunWarning(warning.code, warning.message, {}))
        if request.shard is not None and not plan:  # a CI matrix wider than the plan: said, as video says it
            events.warning(RunWarning("empty-shard", _empty_shard_message(request.shard, len(whole)), {}))
        if request.sandbox is not None and not any(planned.sandbox is not None for planned in plan):
            events.warning(RunWarning("sandbox-override-unused", f"--sandbox {request.sandbox}: no selected eval runs in "
                                      "a sandbox, so it changes nothing", {}))
        options = RunOptions(
            concurrency=request.concurrency or config.concurrency or DEFAULT_CONCURRENCY,
            timeout=request.timeout,
            config_timeout=config.timeout,
            budget=request.budget,
            pricing=config.pricing,
            project_judge=config.judge,
            judge_cache=project_judge_cache(root),
            run_id=checkpoint.id,
            handle_sigint=request.sigint,
            early_exit=request.early_exit,
            shard=(request.shard, len(whole)) if request.shard is not None else None,
        )
        return _OpenedAgentRun(request, plan, checkpoint, options, carry, telemetry, leases)

    def open_failed(self, request: AgentRunRequest, error: AssayError) -> RunFinished:
        return RunFinished("agent", "", error.exit_code, error=error)


AGENT = AgentKind()
