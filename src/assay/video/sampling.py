"""Sample expansion: turns a validated case file's targets and sample blocks into `Target`s and `Sample`s.

Reproduces GlassKit's arithmetic exactly (repeated float addition, 1e-9 end epsilon, nine-decimal
rounding, the case-wide 10,000 cap) and its duplicate/overlap checks, `sample_defaults` precedence
and `workflow.targets` merge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from math import ceil
from typing import Any

from assay.errors import CaseError
from assay.video.casefile_schema import (
    RawCaseFile,
    RawCompare,
    RawSampleBlock,
    RawSampleDefaults,
    RawWorkflowTarget,
)
from assay.video.model import MAX_EXPANDED_SAMPLES_PER_CASE, CompareSpec, Sample, Target

__all__ = [
    "END_EPSILON_S",
    "ResolvedDefaults",
    "block_sample_count",
    "canonical_timestamp",
    "compare_spec_from_raw",
    "expand_block_timestamps",
    "expand_case_targets",
    "expand_range",
    "range_sample_count",
    "resolve_sample_defaults",
    "target_config",
    "target_label",
    "timestamp_tick",
]

END_EPSILON_S = 1e-9
_NANOSECONDS_PER_SECOND = 1_000_000_000
_NO_COMPARE = CompareSpec()


def canonical_timestamp(seconds: float) -> float:
    return round(seconds, 9)


def timestamp_tick(seconds: float) -> int:
    """The identity of a time: two timestamps are "the same" when their ticks are equal."""
    return int(Decimal(str(seconds)) * _NANOSECONDS_PER_SECOND)


def range_sample_count(start: float, end: float, every_s: float) -> int:
    """How many samples `[start, end)` yields, counted by the same float accumulation that expands it.

    When the accumulation would run past the cap (for example a step too small to move `start`), the
    exact rational count is used instead, floored at cap + 1, so the cap error fires without looping.
    """
    current = start
    threshold = end - END_EPSILON_S
    for count in range(MAX_EXPANDED_SAMPLES_PER_CASE + 1):
        if not current < threshold:
            return count
        current += every_s
    span = Fraction(threshold) - Fraction(start)
    exact = ceil(span / Fraction(every_s)) if span > 0 else 0
    return max(exact, MAX_EXPANDED_SAMPLES_PER_CASE + 1)


def expand_range(start: float, end: float, every_s: float) -> list[float]:
    """Canonical timestamps of the half-open range `[start, end)` (caller enforces the cap)."""
    timestamps = []
    current = start
    for _ in range(range_sample_count(start, end, every_s)):
        timestamps.append(round(current, 9))
        current += every_s
    return timestamps


def block_sample_count(block: RawSampleBlock, default_every_s: float) -> int:
    if block.range_ is None:
        return len(block.at) if isinstance(block.at, list) else 1
    start, end = block.range_
    return range_sample_count(start, end, block.every_s if block.every_s is not None else default_every_s)


def expand_block_timestamps(block: RawSampleBlock, default_every_s: float) -> list[float]:
    """A block's canonical timestamps: a range in accumulation order, an `at` list sorted."""
    if block.range_ is not None:
        start, end = block.range_
        return expand_range(start, end, block.every_s if block.every_s is not None else default_every_s)
    return sorted(round(value, 9) for value in block.at_values)


def compare_spec_from_raw(raw: RawCompare | None) -> CompareSpec:
    if raw is None:
        return _NO_COMPARE
    return CompareSpec(mode=raw.mode, tolerance=raw.tolerance)


@dataclass(frozen=True, slots=True)
class ResolvedDefaults:
    """A target's effective `sample_defaults`: what a block that declares neither key gets."""

    field: str | None = None
    compare: CompareSpec = _NO_COMPARE


def resolve_sample_defaults(*scopes: RawSampleDefaults) -> ResolvedDefaults:
    """Scopes from outermost to innermost; for each key the innermost scope that declares it wins."""
    field: str | None = None
    compare = _NO_COMPARE
    for scope in scopes:
        declared = scope.model_fields_set
        if "field" in declared:
            field = scope.field
        if "compare" in declared:
            compare = compare_spec_from_raw(scope.compare)
    return ResolvedDefaults(field=field, compare=compare)


def target_config(workflow_entry: RawWorkflowTarget | None, config: Mapping[str, Any]) -> dict[str, Any]:
    """Workflow metadata (all keys but `id`/`label`) overlaid shallowly by `targets.<id>.config`."""
    merged = dict(workflow_entry.extra_metadata) if workflow_entry is not None else {}
    merged.update(config)
    return merged


def target_label(own_label: str | None, workflow_entry: RawWorkflowTarget | None) -> str | None:
    if own_label:
        return own_label
    if workflow_entry is not None and isinstance(workflow_entry.label, str) and workflow_entry.label.strip():
        return workflow_entry.label.strip()
    return None


def _format_source(block: RawSampleBlock) -> str:
    if block.range_ is not None:
        start, end = block.range_
        return f"range [{start:g}, {end:g})"
    return "at"


def _cap_error(label: str, target_id: str, block_number: int, count: int) -> CaseError:
    return CaseError(
        f"{label}: target {target_id!r} sample {block_number} would expand the case to {count} samples; "
        f"limit is {MAX_EXPANDED_SAMPLES_PER_CASE}"
    )


def _check_case_cap(raw_case: RawCaseFile, label: str) -> None:
    # Counted from the raw blocks before anything is materialised, ignored samples included.
    total = 0
    default_every_s = raw_case.sampling.every_s
    for target_id, raw_target in raw_case.targets.items():
        for block_number, block in enumerate(raw_target.samples, start=1):
            total += block_sample_count(block, default_every_s)
            if total > MAX_EXPANDED_SAMPLES_PER_CASE:
                raise _cap_error(label, target_id, block_number, total)


class _TargetTimeline:
    """Earlier blocks of one target, to reject overlapping ranges and duplicate points."""

    def __init__(self, label: str, target_id: str) -> None:
        self._prefix = f"{label}: target {target_id!r}"
        self._order: list[tuple[bool, float, float, int]] = []  # (is_point, start, end, block)

    def add_range(self, start: float, end: float, block_number: int) -> None:
        for is_point, other_start, other_end, other_block in self._order:
            overlaps = start <= other_start < end if is_point else start < other_end and other_start < end
            if overlaps:
                raise CaseError(f"{self._prefix} sample {block_number} overlaps sample {other_block}")
        self._order.append((False, start, end, block_number))

    def add_point(self, timestamp: float, block_number: int) -> None:
        for is_point, other_start, other_end, other_block in self._order:
            if is_point:
                if abs(timestamp - other_start) <= END_EPSILON_S:
                    raise CaseError(f"{self._prefix} sample {block_number} duplicates sample {other_block}")
            elif other_start <= timestamp < other_end:
                raise CaseError(f"{self._prefix} sample {block_number} overlaps sample {other_block}")
        self._order.append((True, timestamp, timestamp, block_number))


def _check_block_duplicates(
    timestamps: list[float], ticks: list[int], label: str, target_id: str, block_number: int
) -> None:
    for position in range(1, len(ticks)):
        if ticks[position] - ticks[position - 1] <= 1:
            raise CaseError(
                f"{label}: target {target_id!r} sample {block_number} timestamp {timestamps[position]:g} "
                f"duplicates timestamp {timestamps[position - 1]:g} after nine-decimal normalization"
            )


def _check_target_spacing(ticked: list[tuple[int, float]], label: str, target_id: str) -> None:
    ticked.sort()
    for position in range(1, len(ticked)):
        previous_tick, previous = ticked[position - 1]
        tick, timestamp = ticked[position]
        if tick - previous_tick <= 1:
            raise CaseError(
                f"{label}: target {target_id!r} timestamps {previous:.9f} and {timestamp:.9f} "
                "are within 1e-9 seconds after nine-decimal normalization"
            )


def expand_case_targets(
    raw_case: RawCaseFile, *, case_name: str, label: str, allow_empty: bool
) -> tuple[Target, ...]:
    """All targets of a validated case with their samples; `label` (the case path) prefixes errors.

    `sample_index` runs case-wide over targets and blocks in declaration order; only the times inside
    one `at` list are sorted. Each target carries its resolved `sample_defaults`.
    """
    _check_case_cap(raw_case, label)
    workflow_entries = {entry.id: entry for entry in raw_case.workflow.targets}  # duplicate ids: last wins
    default_every_s = raw_case.sampling.every_s
    targets: list[Target] = []
    next_sample_index = 0

    for target_index, (target_id, raw_target) in enumerate(raw_case.targets.items()):
        workflow_entry = workflow_entries.get(target_id)
        defaults = resolve_sample_defaults(raw_case.sample_defaults, raw_target.sample_defaults)
        timeline = _TargetTimeline(label, target_id)
        samples: list[Sample] = []
        ticked: list[tuple[int, float]] = []

        for block_number, block in enumerate(raw_target.samples, start=1):
            count = block_sample_count(block, default_every_s)
            if count > MAX_EXPANDED_SAMPLES_PER_CASE:
                raise _cap_error(label, target_id, block_number, count)
            timestamps = expand_block_timestamps(block, default_every_s)
            ticks = [timestamp_tick(timestamp) for timestamp in timestamps]
            _check_block_duplicates(timestamps, ticks, label, target_id, block_number)
            if block.range_ is not None:
                timeline.add_range(block.range_[0], block.range_[1], block_number)
            else:
                for timestamp in timestamps:
                    timeline.add_point(timestamp, block_number)

            declared = block.model_fields_set
            field = block.field if "field" in declared else defaults.field
            compare = compare_spec_from_raw(block.compare) if "compare" in declared else defaults.compare
            has_expectation = "expect" in declared
            source = _format_source(block)
            for offset, (timestamp, tick) in enumerate(zip(timestamps, ticks)):
                samples.append(
                    Sample(
                        case_name=case_name,
                        target_id=target_id,
                        target_index=target_index,
                        timestamp_s=timestamp,
                        tick=tick,
                        sample_index=next_sample_index + offset,
                        block_index=block_number,
                        has_expectation=has_expectation,
                        expected=block.expect,
                        field=field,
                        compare=compare,
                        source=source,
                        comment=block.comment,
                        ignore=block.ignore,
                    )
                )
                ticked.append((tick, timestamp))
            next_sample_index += len(timestamps)

        _check_target_spacing(ticked, label, target_id)
        if not allow_empty and not samples:
            raise CaseError(f"{label}: target {target_id!r} has no samples")
        targets.append(
            Target(
                id=target_id,
                index=target_index,
                label=target_label(raw_target.label, workflow_entry),
                config=target_config(workflow_entry, raw_target.config),
                samples=tuple(samples),
                sample_defaults_field=defaults.field,
                sample_defaults_compare=defaults.compare,
            )
        )

    if not allow_empty and not any(target.samples for target in targets):
        raise CaseError(f"{label}: case has no samples")
    return tuple(targets)
