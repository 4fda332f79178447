"""Turn what the adapter said about a sample into its result: validate, compare, or record the error.

Pure per sample (no I/O); used by the local runner and by remote workers alike. Without
keep-going, an adapter or comparison error raises `SampleAbort` so the run stops.
"""

from __future__ import annotations

from typing import Any

from assay.core.compare import evaluate_observation
from assay.video.model import Sample, SampleResult, Target
from assay.video.observe import Observation, SampleAbort, error_text, invalid_observation


def make_result(
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


# An observation is kept with its result (journal, JSON report, record, viewer) up to this size;
# a larger one is compared in full and then kept as a summary. A run holds every result until its
# report is written, so an adapter answering 200 MB per frame would otherwise hold gigabytes.
MAX_KEPT_OBSERVATION_CHARACTERS = 1 << 20


def _size_over(value: Any, budget: int) -> int:
    """The characters `value` would take as JSON, counting only until `budget` is passed."""
    used = 0
    stack = [value]
    while stack and used <= budget:
        item = stack.pop()
        if isinstance(item, str):
            used += len(item) + 2
        elif isinstance(item, dict):
            used += 2 + 2 * len(item)
            for key, entry in item.items():
                used += len(str(key)) + 3
                stack.append(entry)
        elif isinstance(item, (list, tuple)):
            used += 2 + len(item)
            stack.extend(item)
        else:
            used += 8
    return used


def kept_observation(value: Any) -> Any:
    """`value` itself, or for one too large to keep, a summary that says so (never compared again)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if _size_over(value, MAX_KEPT_OBSERVATION_CHARACTERS) <= MAX_KEPT_OBSERVATION_CHARACTERS:
        return value
    summary: dict[str, Any] = {
        "reason": f"larger than {MAX_KEPT_OBSERVATION_CHARACTERS:,} characters as JSON; compared in full, kept as this summary",
        "type": type(value).__name__,
    }
    if isinstance(value, str):
        summary["preview"] = value[:200]
    return {"assay_observation_not_kept": summary}


class SampleResults:
    """Judges observations for one run; `keep_going` decides between error results and aborts."""

    def __init__(self, *, keep_going: bool) -> None:
        self.keep_going = keep_going

    def result_of(self, observation: Observation) -> SampleResult:
        sample, target = observation.sample, observation.target
        if observation.error is not None:
            return make_result(
                sample, target, status="error", reason=f"adapter_error: {observation.error}",
                duration=observation.duration_seconds, timing_mode=observation.timing_mode,
            )
        return self.compare(sample, target, observation.value, observation.duration_seconds, observation.timing_mode)

    def compare(
        self, sample: Sample, target: Target, observation: Any, duration: float, timing_mode: str
    ) -> SampleResult:
        """Validate and compare one observation; errors become results or abort the run."""
        message = invalid_observation(sample, target, observation)
        if message is not None:
            return self.adapter_error(sample, target, message, duration, timing_mode)
        try:
            comparison = evaluate_observation(
                expected=sample.expected,
                observation=observation,
                field=sample.field,
                mode=sample.compare.mode,
                tolerance=sample.compare.tolerance,
            )
        except Exception as error:  # noqa: BLE001 - a comparison bug must not lose the observation
            if not self.keep_going:
                raise SampleAbort(
                    sample,
                    f"comparison failed for {sample.case_name}/{target.id} sample {sample.sample_index} "
                    f"at {sample.timestamp_s:g}s: {error_text(error)}",
                ) from error
            return make_result(
                sample, target, status="error", reason=f"comparison_error: {error_text(error)}",
                observed=kept_observation(observation), duration=duration, timing_mode=timing_mode,
            )
        return make_result(
            sample,
            target,
            status="passed" if comparison.passed else "failed",
            reason=comparison.reason,
            observed=kept_observation(observation),
            observed_value=kept_observation(comparison.observed_value),
            effective_mode=comparison.effective_mode,
            duration=duration,
            timing_mode=timing_mode,
        )

    def adapter_error(
        self, sample: Sample, target: Target, message: str, duration: float | None, timing_mode: str | None
    ) -> SampleResult:
        if not self.keep_going:
            raise SampleAbort(sample, message)
        return make_result(
            sample, target, status="error", reason=f"adapter_error: {message}",
            duration=duration, timing_mode=timing_mode,
        )
