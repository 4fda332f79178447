"""Run a video eval: every selected sample through the adapter, compared, gated, per trial.

Each case's video is decoded once per trial and shared by all its targets (see `feed.py`);
results reach listeners in GlassKit's display order (case, target, completion) and the final
report in declaration order.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from assay.core.compare import evaluate_observation
from assay.core.gates import Gate
from assay.core.jsonvalue import check_json_like
from assay.errors import AdapterError, AssayError, JsonValueError, VideoError
from assay.video import artifacts
from assay.video.adapters import AdapterConfig, VideoEvaluator
from assay.video.model import Case, EvalDirectory, Sample, SampleResult, Target
from assay.video.observe import (
    EvalRunError,
    Observation,
    SampleAbort,
    create_evaluator,
    error_text,
    observe_case,
    video_path,
)

DURATION_SLACK_S = 0.05


@dataclass(frozen=True)
class RunOptions:
    eval_dir: Path
    adapter: str | None = None
    adapter_command: str | None = None
    adapter_config: Mapping[str, Any] = field(default_factory=dict)
    concurrency: int = 1
    repeat: int = 1
    min_pass_rate: float | None = None
    min_target_pass_rate: float | None = None
    max_failures: int | None = None
    max_flaky_samples: int | None = None
    keep_going: bool = False
    verbose: bool = False
    artifacts_dir: str | None = None
    save_failures: bool = False


class RunListener(Protocol):
    """What reporters hear while a run progresses, in display order."""

    def trial_started(self, trial: int, repeat: int) -> None: ...

    def case_started(self, trial: int, repeat: int, case: Case, sample_count: int) -> None: ...

    def target_started(self, trial: int, repeat: int, case: Case, target: Target, sample_count: int) -> None: ...

    def sample_finished(self, trial: int, repeat: int, result: SampleResult) -> None: ...

    def sample_completed(self, trial: int, done: int, total: int) -> None: ...


@dataclass
class TrialOutcome:
    trial: int
    results: list[SampleResult]
    gates: list[Gate]
    success: bool
    duration_seconds: float


@dataclass
class RunOutcome:
    eval_directory: EvalDirectory
    repeat: int
    trials: list[TrialOutcome]
    gates: list[Gate]  # report-level (stability)
    success: bool
    duration_seconds: float


def check_run_options(options: RunOptions) -> None:
    if options.adapter and options.adapter_command:
        raise EvalRunError("adapter and adapter command are mutually exclusive")
    if not options.adapter and not options.adapter_command:
        raise EvalRunError("assay video run requires --adapter or --adapter-command")
    if options.concurrency < 1:
        raise EvalRunError("concurrency must be greater than 0")
    if options.repeat < 1:
        raise EvalRunError("repeat must be greater than 0")
    if options.max_flaky_samples is not None:
        if options.max_flaky_samples < 0:
            raise EvalRunError("max flaky samples must be nonnegative")
        if options.repeat < 2:
            raise EvalRunError("--max-flaky-samples requires --repeat to be at least 2")


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
        raise VideoError("; ".join(problems))


class _DisplayOrder:
    """Releases a case's results target by target (declaration order), each in completion order."""

    def __init__(self, emit_target: Any, emit_result: Any, targets: Sequence[tuple[Target, int]]) -> None:
        self._emit_target = emit_target
        self._emit_result = emit_result
        self._targets = list(targets)
        self._position_of = {target.index: position for position, (target, _) in enumerate(self._targets)}
        self._buffers: list[list[SampleResult]] = [[] for _ in self._targets]
        self._done = [0] * len(self._targets)
        self._current = -1
        self._advance()

    def _advance(self) -> None:
        while True:
            if self._current >= 0 and self._done[self._current] < self._targets[self._current][1]:
                return
            self._current += 1
            if self._current >= len(self._targets):
                return
            target, count = self._targets[self._current]
            self._emit_target(target, count)
            for result in self._buffers[self._current]:
                self._emit_result(result)
            self._buffers[self._current].clear()

    def add(self, target_index: int, result: SampleResult) -> None:
        position = self._position_of[target_index]
        self._done[position] += 1
        if position == self._current:
            self._emit_result(result)
            self._advance()
        else:
            self._buffers[position].append(result)


class VideoRun:
    """One `assay video run` over a loaded eval directory."""

    def __init__(
        self,
        eval_directory: EvalDirectory,
        options: RunOptions,
        listener: RunListener,
        *,
        checkpoint: Any = None,
    ) -> None:
        self.eval_directory = eval_directory
        self.options = options
        self.listener = listener
        # A RunCheckpoint (or None): every result is submitted to its journal and shown only once
        # durable; its `completed` results are reused instead of calling the adapter again.
        self._checkpoint = checkpoint
        self._completed = checkpoint.completed if checkpoint is not None else {}
        self._executor: ThreadPoolExecutor | None = None

    def _adapter_config(self) -> AdapterConfig:
        return AdapterConfig(
            eval_dir=self.eval_directory.path,
            config=dict(self.options.adapter_config),
            artifacts_dir=Path(self.options.artifacts_dir) if self.options.artifacts_dir is not None else None,
            verbose=self.options.verbose,
        )

    # -- results ----------------------------------------------------------------------------
    def _result(
        self,
        sample: Sample,
        target: Target,
        *,
        status: str,
        reason: str,
        observed: Any = None,
        observed_value: Any = None,
        effective_mode: str | None = None,
        duration: float | None = None,
        timing_mode: str | None = None,
    ) -> SampleResult:
        return SampleResult(
            case=sample.case_name,
            target=target.id,
            target_label=target.label,
            sample_index=sample.sample_index,
            timestamp_s=sample.timestamp_s,
            status=status,
            expected=sample.expected,
            observed=observed,
            observed_value=observed_value,
            compare_mode=sample.compare.mode,
            effective_mode=effective_mode if effective_mode is not None else sample.compare.mode,
            field=sample.field,
            reason=reason,
            source=sample.source,
            evaluation_duration_seconds=duration,
            evaluation_timing_mode=timing_mode,
        )

    def _judge(
        self, sample: Sample, target: Target, observation: Any, duration: float, timing_mode: str
    ) -> SampleResult:
        """Validate and compare one observation; errors become results or abort the run."""
        try:
            check_json_like(observation, "observation")
        except JsonValueError as error:
            message = (
                f"adapter returned non-JSON observation for {sample.case_name}/{target.id} "
                f"sample {sample.sample_index}: {error}"
            )
            return self._adapter_error(sample, target, message, duration, timing_mode)
        try:
            comparison = evaluate_observation(
                expected=sample.expected,
                observation=observation,
                field=sample.field,
                mode=sample.compare.mode,
                tolerance=sample.compare.tolerance,
            )
        except Exception as error:  # noqa: BLE001 - a comparison bug must not lose the observation
            if not self.options.keep_going:
                raise SampleAbort(
                    sample,
                    f"comparison failed for {sample.case_name}/{target.id} sample {sample.sample_index} "
                    f"at {sample.timestamp_s:g}s: {error_text(error)}",
                ) from error
            return self._result(
                sample, target, status="error", reason=f"comparison_error: {error_text(error)}",
                observed=observation, duration=duration, timing_mode=timing_mode,
            )
        return self._result(
            sample,
            target,
            status="passed" if comparison.passed else "failed",
            reason=comparison.reason,
            observed=observation,
            observed_value=comparison.observed_value,
            effective_mode=comparison.effective_mode,
            duration=duration,
            timing_mode=timing_mode,
        )

    def _adapter_error(
        self, sample: Sample, target: Target, message: str, duration: float | None, timing_mode: str | None
    ) -> SampleResult:
        if not self.options.keep_going:
            raise SampleAbort(sample, message)
        return self._result(
            sample, target, status="error", reason=f"adapter_error: {message}",
            duration=duration, timing_mode=timing_mode,
        )

    def _finish(self, trial: int, result: SampleResult, rgb: Any, order: _DisplayOrder, target_index: int) -> Any:
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
    async def _run_case(
        self, trial: int, case: Case, evaluator_box: list[VideoEvaluator | None]
    ) -> dict[tuple[int, int], SampleResult]:
        repeat = self.options.repeat
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
        if not pending:
            return results
        total = sum(len(todo) + len(ignored) for _, todo, ignored in pending)
        self.listener.case_started(trial, repeat, case, total)
        order = _DisplayOrder(
            lambda target, count: self.listener.target_started(trial, repeat, case, target, count),
            lambda result: self.listener.sample_finished(trial, repeat, result),
            [(target, len(todo) + len(ignored)) for target, todo, ignored in pending],
        )

        def store(target: Target, result: SampleResult, pixels: Any = None) -> Any:
            results[(target.index, result.sample_index)] = result
            return self._finish(trial, result, pixels, order, target.index)

        for target, _, ignored in pending:
            for sample in ignored:
                store(target, self._result(sample, target, status="ignored", reason=sample.ignore or ""))
        work = [(target, todo) for target, todo, _ in pending if todo]
        if not work:
            if self._checkpoint is not None:
                await self._checkpoint.drain()
            return results
        if evaluator_box[0] is None:
            evaluator_box[0] = await create_evaluator(
                adapter=self.options.adapter,
                adapter_command=self.options.adapter_command,
                config=self._adapter_config(),
                executor=self._executor,
            )

        def handle(observation: Observation) -> Any:
            sample, target = observation.sample, observation.target
            if observation.error is not None:
                result = self._result(
                    sample, target, status="error", reason=f"adapter_error: {observation.error}",
                    duration=observation.duration_seconds, timing_mode=observation.timing_mode,
                )
            else:
                result = self._judge(
                    sample, target, observation.value, observation.duration_seconds, observation.timing_mode
                )
            return store(target, result, observation.pixels)

        try:
            await observe_case(
                case, work, evaluator_box[0], concurrency=self.options.concurrency,
                keep_going=self.options.keep_going, handle=handle,
                progress=lambda done, total: self.listener.sample_completed(trial, done, total),
            )
        finally:
            if self._checkpoint is not None:
                await self._checkpoint.drain()
        return results

    # -- trials -------------------------------------------------------------------------------
    async def _run_trial(self, trial: int) -> TrialOutcome:
        from assay.video.gates import trial_gates

        started = time.perf_counter()
        self.listener.trial_started(trial, self.options.repeat)
        evaluator_box: list[VideoEvaluator | None] = [None]
        by_case: dict[str, dict[tuple[int, int], SampleResult]] = {}
        try:
            for case in self.eval_directory.cases:
                by_case[case.name] = await self._run_case(trial, case, evaluator_box)
        except BaseException as error:
            if evaluator_box[0] is not None:
                try:
                    await evaluator_box[0].close()
                except Exception as close_error:  # noqa: BLE001
                    error.add_note(f"adapter close failed while handling previous error: {error_text(close_error)}")
            raise
        if evaluator_box[0] is not None:
            try:
                await evaluator_box[0].close()
            except AssayError:
                raise
            except Exception as error:  # noqa: BLE001
                raise AdapterError(f"adapter close failed: {error_text(error)}") from error
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
        self._executor = ThreadPoolExecutor(max_workers=self.options.concurrency, thread_name_prefix="assay-adapter")
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
            self.eval_directory, self.options.repeat, trials, gates, success, time.perf_counter() - started
        )
