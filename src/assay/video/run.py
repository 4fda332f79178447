"""Run a video eval: every selected sample through the adapter, compared, gated, per trial.

Each case's video is decoded once per trial and shared by all its targets (see `feed.py`);
results reach reporters (as run events) in GlassKit's display order (case, target, completion) and the final
report in declaration order.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.gates import Gate
from assay.core.run_events import RunEvents, RunStarted, RunWarning, SectionStarted, UnitDurable, UnitProgress
from assay.errors import AssayError, VideoError
from assay.video import artifacts
from assay.video.adapters import AdapterConfig
from assay.video.model import (
    VERDICT_OF_STATUS,
    Case,
    EvalDirectory,
    RunOutcome,
    Sample,
    SampleResult,
    Target,
    TrialOutcome,
)
from assay.video.request import VideoRunRequest
from assay.video.sample_results import SampleResults, make_result
from assay.video.observe import (
    Observation,
    TrialEvaluator,
    observe_case,
    video_path,
)

DURATION_SLACK_S = 0.05


def _nothing() -> None:
    pass


@dataclass(frozen=True, slots=True)
class VideoSection:
    """A heading of the run's display: a trial (no case), a case (no target) or a target."""

    trial: int
    repeat: int
    case: Case | None = None
    target: Target | None = None


@dataclass(frozen=True, slots=True)
class VideoUnit:
    trial: int
    repeat: int
    result: SampleResult

    @property
    def verdict(self) -> str:
        return VERDICT_OF_STATUS[self.result.status]


def usable_concurrency(requested: int, units: int) -> int:
    """The calls in flight `units` pending calls can use: each worker beyond them would only wait,
    and cost memory meanwhile, so a huge --concurrency costs no more than the work it is given."""
    return max(1, min(requested, units))


def adapter_config(options: VideoRunRequest, eval_dir: Path, verbose: bool) -> AdapterConfig:
    """The factory config a run hands its adapter (GlassKit's `AdapterConfig`; `--verbose` is passed on)."""
    return AdapterConfig(
        eval_dir=eval_dir,
        config=dict(options.adapter_config),
        artifacts_dir=Path(options.artifacts_dir) if options.artifacts_dir is not None else None,
        verbose=verbose,
    )


def late_samples(case: Case, duration_s: float) -> list[str]:
    """Samples (ignored ones too) later than the video's end plus GlassKit's 0.05 s of slack."""
    return [
        f"{case.name}/{target.id} sample {sample.sample_index} at {sample.timestamp_s:g}s "
        f"exceeds video duration {duration_s:g}s"
        for target in case.targets
        for sample in target.samples
        if sample.timestamp_s > duration_s + DURATION_SLACK_S
    ]


def check_sample_times(eval_directory: EvalDirectory) -> None:
    """Probe every case's video and reject samples past its end, all problems in one error."""
    from assay.video.decode import probe_video

    problems: list[str] = []
    for case in eval_directory.cases:
        problems += late_samples(case, probe_video(video_path(case)).duration_s)
    if problems:
        from assay.core.format import join_first

        raise VideoError(join_first(problems))


@dataclass(frozen=True)
class CaseWork:
    """One case of one trial as shipped to a worker: its targets with the samples still to evaluate."""

    trial: int
    case: Case
    work: list[tuple[Target, list[Sample]]]

    def without(self, finished: set[tuple[str, int]]) -> CaseWork | None:
        """The same work minus samples whose results arrived (None when nothing is left)."""
        left = [
            (target, [sample for sample in samples if (target.id, sample.sample_index) not in finished])
            for target, samples in self.work
        ]
        left = [(target, samples) for target, samples in left if samples]
        return CaseWork(self.trial, self.case, left) if left else None


def remaining_case_work(group: CaseWork, received: list[Any]) -> CaseWork | None:
    """What a worker that died had not yet sent back of `group`."""
    finished = {(item[0].target, item[0].sample_index) for item in received if not isinstance(item, BaseException)}
    return group.without(finished)


class VideoWorker:
    """A remote worker's side of a video run: one warm evaluator for every case it is sent."""

    def __init__(self, options: VideoRunRequest, eval_dir: Path, verbose: bool = False) -> None:
        self._options = options
        self._results = SampleResults(keep_going=options.keep_going)
        self._threads = ThreadPoolExecutor(max_workers=options.concurrency, thread_name_prefix="assay-adapter")
        self._evaluators = TrialEvaluator(
            adapter=options.adapter, adapter_command=options.adapter_command,
            config=adapter_config(options, eval_dir, verbose), executor=self._threads,
            adapter_timeout=options.adapter_timeout,
        )

    async def stream(self, group: CaseWork) -> Any:
        """Yield `(result, pixels)` per sample as judged (pixels only for failures to save); an
        abort is yielded as the exception after the results that preceded it."""
        import asyncio

        options = self._options
        evaluator = await self._evaluators.get()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        finished = object()

        def handle(observation: Observation) -> None:
            result = self._results.result_of(observation)
            keep = options.save_failures and result.status in ("failed", "error")
            queue.put_nowait((result, observation.pixels if keep else None))

        async def observe() -> None:
            try:
                await observe_case(
                    group.case, group.work, evaluator,
                    concurrency=usable_concurrency(options.concurrency, sum(len(samples) for _, samples in group.work)),
                    keep_going=options.keep_going, handle=handle,
                )
            except AssayError as error:
                queue.put_nowait(error)
            finally:
                queue.put_nowait(finished)

        task = asyncio.ensure_future(observe())
        try:
            while (item := await queue.get()) is not finished:
                yield item
        finally:
            task.cancel()

    async def close(self) -> None:
        try:
            await self._evaluators.__aexit__(None, None, None)
        finally:
            self._threads.shutdown(wait=False, cancel_futures=True)


class DisplayOrder:
    """Releases a case's results target by target (declaration order), each in completion order (run's
    result lines, seed's SEEDED/ERROR lines). Results that `last` picks (a run's ignored samples) are held
    until the rest of their target is shown: GlassKit records those after the target's evaluations."""

    def __init__(
        self, emit_target: Any, emit_result: Any, targets: Sequence[tuple[Target, int]], last: Any = None
    ) -> None:
        self._emit_target = emit_target
        self._emit_result = emit_result
        self._last = last or (lambda _result: False)
        self._targets = list(targets)
        self._position_of = {target.index: position for position, (target, _) in enumerate(self._targets)}
        self._buffers: list[list[Any]] = [[] for _ in self._targets]
        self._held: list[list[Any]] = [[] for _ in self._targets]
        self._done = [0] * len(self._targets)
        self._current = -1
        self._advance()

    def _advance(self) -> None:
        while True:
            if self._current >= 0:
                if self._done[self._current] < self._targets[self._current][1]:
                    return
                for result in self._held[self._current]:
                    self._emit_result(result)
                self._held[self._current].clear()
            self._current += 1
            if self._current >= len(self._targets):
                return
            target, count = self._targets[self._current]
            self._emit_target(target, count)
            for result in self._buffers[self._current]:
                self._emit_result(result)
            self._buffers[self._current].clear()

    def add(self, target_index: int, result: Any) -> None:
        position = self._position_of[target_index]
        self._done[position] += 1
        if self._last(result):
            self._held[position].append(result)
            if position == self._current:
                self._advance()
        elif position == self._current:
            self._emit_result(result)
            self._advance()
        else:
            self._buffers[position].append(result)


class VideoRun:
    """One `assay video run` over a loaded eval directory."""

    def __init__(
        self,
        eval_directory: EvalDirectory,
        options: VideoRunRequest,
        events: RunEvents,
        *,
        checkpoint: Any = None,
        executor: Any = None,
        verbose: bool = False,
    ) -> None:
        self.eval_directory = eval_directory
        self.options = options
        self.verbose = verbose  # passed to the adapter
        self.events = events
        self._video_paths: dict[str, str] | None = None
        # A RunCheckpoint (or None): every result is submitted to its journal and shown only once
        # durable; its `completed` results are reused instead of calling the adapter again.
        self._checkpoint = checkpoint
        self._completed = checkpoint.completed if checkpoint is not None else {}
        self._results = SampleResults(keep_going=options.keep_going)
        self._executor: ThreadPoolExecutor | None = None
        # None: cases run here. Otherwise an `assay.core.executor.Executor` whose `stream(group)`
        # runs a `CaseWork` elsewhere (Ray actors) and yields `(SampleResult, pixels)` as they finish;
        # this process alone journals, shows and gates them, exactly as for local work.
        self._unit_executor = executor
        from assay.core.silence import SilenceTimer, silence_warning_seconds

        # One line per run when the adapter sends nothing back for long (ASSAY_SILENCE_WARNING_SECONDS),
        # unless --adapter-timeout already bounds every call.
        bounded = bool(options.adapter_command and options.adapter_timeout)
        self._silence = SilenceTimer(None if bounded else silence_warning_seconds())

    def _unit_builder(self, trial: int, result: SampleResult) -> Any:
        def build() -> Any:
            from assay.video.record import video_paths, video_unit

            if self._video_paths is None:
                self._video_paths = video_paths(self.eval_directory)
            return video_unit(result, trial, self._video_paths, self.options.repeat)

        return build

    def _adapter_config(self) -> AdapterConfig:
        return adapter_config(self.options, self.eval_directory.path, self.verbose)

    def _finish(self, trial: int, result: SampleResult, rgb: Any, order: DisplayOrder, target_index: int) -> Any:
        """Journal (then show) one result; returns what to await for it to be durable, or None."""
        if self.options.save_failures and result.status in ("failed", "error"):
            self._save_failure(trial, result, rgb)
        if self._checkpoint is not None:
            return self._checkpoint.submit(trial, result, lambda: order.add(target_index, result))
        order.add(target_index, result)
        return None

    def _save_failure(self, trial: int, result: SampleResult, rgb: Any) -> None:
        directory = artifacts.failure_directory(self.options.artifacts_dir, self.eval_directory.path, trial)
        stem = artifacts.artifact_stem(result.case, result.target, result.sample_index, result.timestamp_s)
        record = {"trial": trial, **result.to_report(), "compare_mode": result.effective_mode}
        image_path, json_path = artifacts.save_failure(directory, stem, rgb, record)
        result.artifact_image, result.artifact_json = image_path, json_path

    # -- one case ----------------------------------------------------------------------------
    def _pending(
        self, trial: int, case: Case
    ) -> tuple[dict[tuple[int, int], SampleResult], list[tuple[Target, list[Sample], list[Sample]]]]:
        """Results reused from the journal, and per target the samples still to evaluate / record as ignored."""
        results: dict[tuple[int, int], SampleResult] = {}
        pending: list[tuple[Target, list[Sample], list[Sample]]] = []
        for target in case.targets:
            todo: list[Sample] = []
            ignored: list[Sample] = []
            for sample in target.samples:
                reused = self._completed.get((trial, case.name, target.id, sample.sample_index))
                if reused is not None:
                    results[(target.index, sample.sample_index)] = reused
                elif sample.is_ignored:
                    ignored.append(sample)
                else:
                    todo.append(sample)
            if todo or ignored:
                pending.append((target, todo, ignored))
        return results, pending

    async def _run_case(
        self, trial: int, case: Case, evaluators: TrialEvaluator, remote: Any = None
    ) -> dict[tuple[int, int], SampleResult]:
        repeat = self.options.repeat
        results, pending = self._pending(trial, case)
        if not pending:
            return results
        work = [(target, todo) for target, todo, _ in pending if todo]
        # Started before the case's heading is shown: an adapter that cannot start is a failed
        # start, not a case that seemed to begin.
        evaluator = await evaluators.get() if work and remote is None else None
        total = sum(len(todo) + len(ignored) for _, todo, ignored in pending)
        events = self.events
        events.section_started(SectionStarted(1, total, VideoSection(trial, repeat, case)))
        order = DisplayOrder(
            lambda target, count: events.section_started(SectionStarted(2, count, VideoSection(trial, repeat, case, target))),
            lambda result: events.unit_durable(UnitDurable(VideoUnit(trial, repeat, result), self._unit_builder(trial, result))),
            [(target, len(todo) + len(ignored)) for target, todo, ignored in pending],
            last=lambda result: result.status == "ignored",
        )

        def store(target: Target, result: SampleResult, pixels: Any = None) -> Any:
            results[(target.index, result.sample_index)] = result
            return self._finish(trial, result, pixels, order, target.index)

        for target, _, ignored in pending:
            for sample in ignored:
                store(target, make_result(sample, target, status="ignored", reason=sample.ignore or ""))
        if not work:
            if self._checkpoint is not None:
                await self._checkpoint.drain()
            return results
        if remote is not None:
            await self._store_remote(trial, remote, work, order, results)
            return results
        assert evaluator is not None
        silence = self._silence

        def handle(observation: Observation) -> Any:
            silence.heard()
            return store(observation.target, self.result_of(observation), observation.pixels)

        # Calls have no time limit by default (as in GlassKit): an adapter silent for long is only named.
        silence.start(lambda: self._say_adapter_is_silent(case))
        try:
            await observe_case(
                case, work, evaluator,
                concurrency=usable_concurrency(self.options.concurrency, sum(len(samples) for _, samples in work)),
                keep_going=self.options.keep_going, handle=handle,
                progress=lambda done, total: self.events.unit_progress(UnitProgress(done, total, trial)),
            )
        finally:
            silence.stop()
            if self._checkpoint is not None:
                await self._checkpoint.drain()
        return results

    def _say_adapter_is_silent(self, case: Case) -> None:
        seconds = self._silence.seconds
        self.events.warning(RunWarning(
            "adapter_silent", self._silence_message(case, seconds), {"case": case.name, "seconds": seconds}
        ))

    def _silence_message(self, case: Case, seconds: float) -> str:
        options = self.options
        if options.adapter_command:
            return (
                f"adapter command {options.adapter_command!r} has sent nothing back for {seconds:g}s (case {case.name}) "
                "and its calls have no time limit, so the run keeps waiting: set --adapter-timeout SECONDS to fail "
                "a call that takes longer, or press Ctrl-C (finished results are kept for --resume)"
            )
        return (
            f"adapter {options.adapter!r} has returned nothing for {seconds:g}s (case {case.name}); a Python "
            "adapter's calls have no time limit, so the run keeps waiting: press Ctrl-C to stop (finished results "
            "are kept for --resume) and bound the slow call in the adapter"
        )

    def result_of(self, observation: Observation) -> SampleResult:
        """The result of one observation (raises SampleAbort to stop a fail-fast run)."""
        return self._results.result_of(observation)

    async def _store_remote(self, trial: int, remote: Any, work: Sequence[tuple[Target, list[Sample]]], order: Any, results: Any) -> None:
        """Show a remotely run case's results, each once durable (they were journaled on arrival,
        see `_journaled_on_arrival`); re-raise its abort."""
        targets = {target.id: target for target, _ in work}
        total = sum(len(samples) for _, samples in work)
        done = 0
        try:
            async for item in remote:
                if isinstance(item, BaseException):
                    raise item
                result, durable = item
                if durable is not None:
                    await durable
                target = targets[result.target]
                results[(target.index, result.sample_index)] = result
                order.add(target.index, result)
                done += 1
                self.events.unit_progress(UnitProgress(done, total, trial))
        finally:
            if self._checkpoint is not None:
                await self._checkpoint.drain()

    async def _journaled_on_arrival(self, trial: int, stream: Any) -> Any:
        """A remote case's results, each journaled (and its failure saved) the moment it reaches this
        process, then handed on with the future of its durability.

        Cases run side by side on the workers but are shown one after another, so a later case's
        results may wait here a long time; journaling them only when shown would lose them all to a
        Ctrl-C or a kill in that wait."""
        try:
            async for item in stream:
                if isinstance(item, BaseException):
                    yield item
                    continue
                result, pixels = item
                if self.options.save_failures and result.status in ("failed", "error"):
                    self._save_failure(trial, result, pixels)
                durable = self._checkpoint.submit(trial, result, _nothing) if self._checkpoint is not None else None
                yield result, durable
        finally:
            await stream.aclose()  # stops the workers' calls for this case when the run stops early

    def _start_remote_cases(self, trial: int) -> dict[str, Any]:
        """Ship every case with work to the executor at once, so cases spread over its workers;
        their results are journaled as they arrive and shown when the case's turn comes."""
        from assay.core.executor import StartedStream

        streams: dict[str, Any] = {}
        for case in self.eval_directory.cases:
            _, pending = self._pending(trial, case)
            work = [(target, todo) for target, todo, _ in pending if todo]
            if work:
                remote = self._unit_executor.stream(CaseWork(trial, case, work))
                streams[case.name] = StartedStream(self._journaled_on_arrival(trial, remote))
        return streams

    # -- trials -------------------------------------------------------------------------------
    async def _run_trial(self, trial: int) -> TrialOutcome:
        from assay.video.gates import trial_gates

        started = time.perf_counter()
        self.events.section_started(SectionStarted(0, 0, VideoSection(trial, self.options.repeat)))
        by_case: dict[str, dict[tuple[int, int], SampleResult]] = {}
        streams = self._start_remote_cases(trial) if self._unit_executor is not None else {}
        try:
            async with TrialEvaluator(
                adapter=self.options.adapter, adapter_command=self.options.adapter_command,
                config=self._adapter_config(), executor=self._executor,
                adapter_timeout=self.options.adapter_timeout,
            ) as evaluators:
                for case in self.eval_directory.cases:
                    by_case[case.name] = await self._run_case(trial, case, evaluators, streams.get(case.name))
        except BaseException:
            for stream in streams.values():
                await stream.aclose()
            raise
        ordered = [
            by_case[case.name][(target.index, sample.sample_index)]
            for case in self.eval_directory.cases
            for target in case.targets
            for sample in target.samples
        ]
        gates = trial_gates(
            ordered,
            self.eval_directory,
            min_pass_rate=self.options.min_pass_rate,
            max_failures=self.options.max_failures,
            min_target_pass_rate=self.options.min_target_pass_rate,
        )
        success = all(gate.passed for gate in gates)
        return TrialOutcome(trial, ordered, gates, success, time.perf_counter() - started)

    async def run(self) -> RunOutcome:
        from assay.video.gates import flaky_gate, stability_rows

        started = time.perf_counter()
        trials: list[TrialOutcome] = []
        total = self.eval_directory.sample_count * self.options.repeat
        run_id = self._checkpoint.path.name if self._checkpoint is not None else ""
        reused = Counter("errored" if result.status == "error" else result.status for result in self._completed.values())
        self.events.run_started(RunStarted("video", run_id, total, len(self._completed), self.eval_directory, reused))
        self._executor = ThreadPoolExecutor(
            max_workers=usable_concurrency(self.options.concurrency, self.eval_directory.sample_count),
            thread_name_prefix="assay-adapter",
        )
        try:
            for trial in range(1, self.options.repeat + 1):
                trials.append(await self._run_trial(trial))
        finally:
            # Already-started sync calls finish; queued ones are dropped (Ctrl-C semantics).
            self._executor.shutdown(wait=True, cancel_futures=True)
        gates: list[Gate] = []
        if self.options.max_flaky_samples is not None:
            rows = stability_rows([trial.results for trial in trials])
            flaky = sum(1 for row in rows if row["flaky"])
            gates.append(flaky_gate(flaky, self.options.max_flaky_samples))
        success = all(trial.success for trial in trials) and all(gate.passed for gate in gates)
        return RunOutcome(
            self.eval_directory, self.options.repeat, trials, gates, success, time.perf_counter() - started,
            reused_attempts=sum(1 for result in self._completed.values() if result.status != "ignored"),
        )
