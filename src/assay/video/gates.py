"""Video quality gates, cross-trial stability and the report's summary numbers (GlassKit §12, §13, §16).

Pure functions over sample results and the loaded eval; the runner and reporters call them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from assay.core.gates import Gate, errors_gate, max_count_gate, min_pass_rate_gate, pass_rate
from assay.video.model import Case, EvalDirectory, SampleResult, Selection

__all__ = [
    "flaky_gate",
    "stability_rows",
    "summarize_run",
    "summarize_trial",
    "trial_gates",
]


@dataclass(slots=True)
class _Tally:
    passed: int = 0
    failed: int = 0
    errors: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errors

    def add(self, status: str) -> None:
        if status == "passed":
            self.passed += 1
        elif status == "failed":
            self.failed += 1
        elif status == "error":
            self.errors += 1


@dataclass(slots=True)
class _TrialTallies:
    """Counts of non-ignored results, overall and per case, target and (case, target)."""

    overall: _Tally
    by_case: dict[str, _Tally]
    by_target: dict[str, _Tally]
    by_case_target: dict[tuple[str, str], _Tally]

    @classmethod
    def of(cls, results: Iterable[SampleResult]) -> _TrialTallies:
        tallies = cls(_Tally(), {}, {}, {})
        for result in results:
            status = result.status
            if status == "ignored":
                continue
            tallies.overall.add(status)
            tallies.by_case.setdefault(result.case, _Tally()).add(status)
            tallies.by_target.setdefault(result.target, _Tally()).add(status)
            tallies.by_case_target.setdefault((result.case, result.target), _Tally()).add(status)
        return tallies


_EMPTY = _Tally()


def _rate_gate(name: str, tally: _Tally, threshold: float) -> Gate:
    return min_pass_rate_gate(name, tally.passed, tally.failed, tally.errors, threshold)


def trial_gates(
    results: Sequence[SampleResult],
    eval_dir: EvalDirectory,
    *,
    min_pass_rate: float | None,
    max_failures: int | None,
    min_target_pass_rate: float | None,
) -> list[Gate]:
    """The quality gates of one trial in GlassKit's order; the CLI options are passed as given (None = unset)."""
    tallies = _TrialTallies.of(results)
    thresholds = eval_dir.config.thresholds
    gates = [errors_gate("adapter_errors", tallies.overall.errors, "adapter/comparison errors")]
    if not eval_dir.cases:
        # Only a `--shard` can select no case (an eval without cases is refused before): a CI job whose shard
        # got nothing has nothing to gate, and a 0.0% pass rate of no sample would fail it.
        return gates

    eval_min_rate = min_pass_rate if min_pass_rate is not None else thresholds.min_pass_rate
    if eval_min_rate is not None:
        gates.append(_rate_gate("eval_min_pass_rate", tallies.overall, eval_min_rate))
    eval_max_failures = max_failures if max_failures is not None else thresholds.max_failures
    if eval_max_failures is not None:
        gates.append(max_count_gate("eval_max_failures", tallies.overall.failed, eval_max_failures))

    if min_target_pass_rate is not None:
        for target_id in sorted(tallies.by_target):
            name = f"all_targets_{target_id}_min_pass_rate"
            gates.append(_rate_gate(name, tallies.by_target[target_id], min_target_pass_rate))
    else:
        gates.extend(_eval_per_target_gates(eval_dir, tallies))

    # Only the CLI flags suppress case gates; config thresholds never do (GlassKit double-counts).
    if min_pass_rate is None and max_failures is None:
        for case in eval_dir.cases:
            gates.extend(_case_gates(case, eval_dir.selection, tallies))
    return gates


def _target_has_loaded_samples(eval_dir: EvalDirectory, target_id: str) -> bool:
    return any(target.id == target_id and target.samples for case in eval_dir.cases for target in case.targets)


def _eval_per_target_gates(eval_dir: EvalDirectory, tallies: _TrialTallies) -> list[Gate]:
    selection = eval_dir.selection
    run_is_filtered = selection.case is not None or bool(selection.targets)
    gates = []
    for target_id, threshold in eval_dir.config.thresholds.per_target.items():
        if threshold is None:
            continue
        explicitly_selected = target_id in selection.targets
        if selection.targets and not explicitly_selected:
            continue
        if selection.time_filtered and not _target_has_loaded_samples(eval_dir, target_id):
            continue
        tally = tallies.by_target.get(target_id, _EMPTY)
        if tally.total == 0 and run_is_filtered and not explicitly_selected:
            continue
        gates.append(_rate_gate(f"eval_{target_id}_min_pass_rate", tally, threshold))
    return gates


def _time_filter_emptied(case: Case, selection: Selection, target_id: str) -> bool:
    if not selection.time_filtered or target_id not in case.declared_target_ids:
        return False
    return not any(target.id == target_id and target.samples for target in case.targets)


def _case_gates(case: Case, selection: Selection, tallies: _TrialTallies) -> list[Gate]:
    thresholds = case.thresholds
    case_tally = tallies.by_case.get(case.name, _EMPTY)
    gates = []
    if thresholds.min_pass_rate is not None:
        gates.append(_rate_gate(f"{case.name}_min_pass_rate", case_tally, thresholds.min_pass_rate))
    if thresholds.max_failures is not None:
        gates.append(
            max_count_gate(
                f"{case.name}_max_failures", case_tally.failed, thresholds.max_failures, prefix=f"{case.name}: "
            )
        )
    for target_id, threshold in thresholds.per_target.items():
        if threshold is None:
            continue
        if selection.targets and target_id not in selection.targets:
            continue
        if _time_filter_emptied(case, selection, target_id):
            continue
        # An undeclared (misspelled) id still gets a gate; with no results it fails, which
        # is how GlassKit surfaces the typo.
        tally = tallies.by_case_target.get((case.name, target_id), _EMPTY)
        gates.append(_rate_gate(f"{case.name}_{target_id}_min_pass_rate", tally, threshold))
    return gates


def flaky_gate(flaky_count: int, maximum: int) -> Gate:
    noun = "flaky sample" if flaky_count == 1 else "flaky samples"
    return max_count_gate("max_flaky_samples", flaky_count, maximum, noun=noun)


def _aligned_samples(trials: Sequence[Sequence[SampleResult]]) -> list[tuple[SampleResult, ...]]:
    """The results of each logical sample across trials, matched by position."""
    if not trials:
        return []
    expected_length = len(trials[0])
    for number, trial in enumerate(trials, start=1):
        if len(trial) != expected_length:
            raise ValueError(f"trial {number} has {len(trial)} results; trial 1 has {expected_length}")
    return list(zip(*trials))


@dataclass(frozen=True, slots=True)
class _Stability:
    statuses: tuple[str, ...]

    @property
    def ignored(self) -> bool:
        return all(status == "ignored" for status in self.statuses)

    @property
    def flaky(self) -> bool:
        # Any two different statuses make a sample flaky, passed/error included.
        return not self.ignored and len(set(self.statuses)) > 1

    def consistently(self, status: str) -> bool:
        return bool(self.statuses) and all(each == status for each in self.statuses)


def stability_rows(trials: Sequence[Sequence[SampleResult]]) -> list[dict[str, Any]]:
    """The report's `stability` objects: one per logical sample, in result order."""
    rows = []
    for attempts in _aligned_samples(trials):
        first = attempts[0]
        stability = _Stability(tuple(attempt.status for attempt in attempts))
        statuses = stability.statuses
        passed = statuses.count("passed")
        failed = statuses.count("failed")
        errors = statuses.count("error")
        evaluated = passed + failed + errors
        rows.append(
            {
                "case": first.case,
                "target": first.target,
                "target_label": first.target_label,
                "sample_index": first.sample_index,
                "timestamp_s": first.timestamp_s,
                "expected": first.expected,
                "source": first.source,
                "statuses": list(statuses),
                "evaluated": evaluated,
                "passed": passed,
                "failed": failed,
                "errors": errors,
                "pass_rate": pass_rate(passed, failed, errors, when_empty=None),
                "ignored": stability.ignored,
                "consistently_passed": stability.consistently("passed"),
                "consistently_failed": stability.consistently("failed"),
                "flaky": stability.flaky,
            }
        )
    return rows


def _timing(results: Iterable[SampleResult]) -> tuple[str | None, float | None]:
    """(timing mode, mean duration) over non-ignored results that recorded them."""
    modes: set[str] = set()
    durations: list[float] = []
    for result in results:
        if result.status == "ignored":
            continue
        if result.evaluation_timing_mode is not None:
            modes.add(result.evaluation_timing_mode)
        if result.evaluation_duration_seconds is not None:
            durations.append(result.evaluation_duration_seconds)
    if not modes:
        mode = None
    elif len(modes) == 1:
        mode = next(iter(modes))
    else:
        mode = "mixed"
    average = sum(durations) / len(durations) if durations else None
    return mode, average


def _throughput(count: int, duration_seconds: float) -> float:
    return count / duration_seconds if count and duration_seconds > 0 else 0.0


def summarize_trial(results: Sequence[SampleResult], duration_seconds: float) -> dict[str, Any]:
    """A trial's `summary` object of the JSON report."""
    tally = _TrialTallies.of(results).overall
    timing_mode, average = _timing(results)
    return {
        "evaluated": tally.total,
        "passed": tally.passed,
        "failed": tally.failed,
        "errors": tally.errors,
        "ignored": sum(1 for result in results if result.status == "ignored"),
        "pass_rate": pass_rate(tally.passed, tally.failed, tally.errors),
        "duration_seconds": duration_seconds,
        "evaluation_timing_mode": timing_mode,
        "average_evaluation_seconds_per_sample": average,
        "throughput_samples_per_second": _throughput(tally.total, duration_seconds),
    }


def summarize_run(
    trials: Sequence[Sequence[SampleResult]], trial_successes: Sequence[bool], duration_seconds: float
) -> dict[str, Any]:
    """The report-level `summary` object: attempts summed over trials, samples counted once."""
    trial_tallies = [_TrialTallies.of(trial).overall for trial in trials]
    passed = sum(tally.passed for tally in trial_tallies)
    failed = sum(tally.failed for tally in trial_tallies)
    errors = sum(tally.errors for tally in trial_tallies)
    evaluated = passed + failed + errors
    trial_rates = [pass_rate(tally.passed, tally.failed, tally.errors) for tally in trial_tallies]

    samples = [_Stability(tuple(attempt.status for attempt in attempts)) for attempts in _aligned_samples(trials)]
    timing_mode, average = _timing(result for trial in trials for result in trial)
    return {
        "trials": len(trials),
        "successful_trials": sum(1 for success in trial_successes if success),
        "evaluated_samples": sum(1 for sample in samples if not sample.ignored),
        "ignored_samples": sum(1 for sample in samples if sample.ignored),
        "evaluated_attempts": evaluated,
        "passed_attempts": passed,
        "failed_attempts": failed,
        "error_attempts": errors,
        "attempt_pass_rate": pass_rate(passed, failed, errors),
        "minimum_trial_pass_rate": min(trial_rates, default=0.0),
        "mean_trial_pass_rate": sum(trial_rates) / len(trial_rates) if trial_rates else 0.0,
        "maximum_trial_pass_rate": max(trial_rates, default=0.0),
        "consistently_passed_samples": sum(1 for sample in samples if sample.consistently("passed")),
        "consistently_failed_samples": sum(1 for sample in samples if sample.consistently("failed")),
        "flaky_samples": sum(1 for sample in samples if sample.flaky),
        "error_samples": sum(1 for sample in samples if "error" in sample.statuses),
        "duration_seconds": duration_seconds,
        "evaluation_timing_mode": timing_mode,
        "average_evaluation_seconds_per_attempt": average,
        "throughput_attempts_per_second": _throughput(evaluated, duration_seconds),
    }
