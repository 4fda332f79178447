"""Rebuild a target's sample blocks from its individual samples (spec/video.md §22.4).

Pure functions shared by `review` (PUT) and `seed` (§18 step 7): samples in, plain block dicts out.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from itertools import groupby
from typing import Any, Iterable, Sequence

from assay.video.model import DEFAULT_EVERY_S, MAX_EXPANDED_SAMPLES_PER_CASE, CompareSpec

_NANOSECONDS = 1_000_000_000
_END_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class SampleOrigin:
    """Where a sample came from: its 1-based block, that block's kind and, for ranges, cadence and end."""

    block_index: int
    kind: str  # "at" | "range"
    every_s: float | None = None
    range_end: float | None = None


@dataclass(frozen=True, slots=True)
class EditableSample:
    """One sample as review or seed hands it to the reconstruction."""

    id: str
    timestamp_s: float
    has_expectation: bool
    expected: Any = None
    field: str | None = None
    compare_mode: str | None = None
    tolerance: float | None = None
    # True writes `compare` even when it equals the resolved default (`null` when both are None);
    # False follows GlassKit: compare is written only where it differs from the default.
    compare_declared: bool = False
    comment: str | None = None
    ignore: str | None = None
    origin: SampleOrigin | None = None


class SampleTimingError(ValueError):
    """Two samples of one target fall on the same nanosecond tick (or adjacent ticks)."""

    def __init__(self, first: EditableSample, second: EditableSample, first_s: float, second_s: float) -> None:
        self.sample_ids = (first.id, second.id)
        super().__init__(
            f"samples {first.id!r} and {second.id!r} at {first_s:.9f} and {second_s:.9f} "
            "are within 1e-9 seconds after nine-decimal normalization"
        )


def canonical_timestamp(timestamp_s: float) -> float:
    return round(float(timestamp_s), 9)


def timestamp_tick(timestamp_s: float) -> int:
    """The identity of a time: whole nanoseconds of its decimal text (§5.1)."""
    return int(Decimal(str(timestamp_s)) * _NANOSECONDS)


def _seconds_from_ticks(ticks: int) -> float:
    # int / int is correctly rounded, so 250_000_000 ticks is exactly float("0.25").
    return ticks / _NANOSECONDS


def _expanded_range_ticks(start: float, end: float, every_s: float) -> list[int] | None:
    """Ticks of `range [start, end)` expanded with `every_s`, by the loader's arithmetic (§5.1).

    A private copy of the expansion rule (repeated float addition, 1e-9 end epsilon, 9-decimal
    rounding) so that this pure module stays independent of `assay.video.sampling`. None when
    the expansion would pass the case cap: such a range can never reproduce a real run.
    """
    ticks: list[int] = []
    current = start
    while current < end - _END_EPSILON:
        if len(ticks) > MAX_EXPANDED_SAMPLES_PER_CASE:
            return None
        ticks.append(timestamp_tick(round(current, 9)))
        current += every_s
    return ticks


def _strict_value_key(value: Any) -> Any:
    """A hashable key under which 1, 1.0 and True differ, -0.0 differs from 0.0 and dict order is ignored."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, (list, tuple)):
        return ("list", tuple(_strict_value_key(item) for item in value))
    if isinstance(value, dict):
        return ("dict", frozenset((key, _strict_value_key(item)) for key, item in value.items()))
    return ("other", type(value).__name__, repr(value))


def strictly_equal(left: Any, right: Any) -> bool:
    """Type-strict structural equality of JSON-like values (the §22.4 payload comparison)."""
    return _strict_value_key(left) == _strict_value_key(right)


def _payload_key(sample: EditableSample) -> tuple[Any, ...]:
    return (
        sample.has_expectation,
        _strict_value_key(sample.expected) if sample.has_expectation else None,
        sample.field,
        sample.compare_mode,
        _strict_value_key(sample.tolerance),
        sample.compare_declared,
        sample.comment,
        sample.ignore,
    )


@dataclass(frozen=True, slots=True)
class _Timed:
    sample: EditableSample
    seconds: float
    tick: int


def _canonical_sorted(samples: Iterable[EditableSample]) -> list[_Timed]:
    timed = []
    for sample in samples:
        seconds = canonical_timestamp(sample.timestamp_s)
        timed.append(_Timed(sample, seconds, timestamp_tick(seconds)))
    timed.sort(key=lambda item: (item.tick, item.sample.id))
    for previous, current in zip(timed, timed[1:]):
        if current.tick - previous.tick <= 1:
            raise SampleTimingError(previous.sample, current.sample, previous.seconds, current.seconds)
    return timed


def _payload_fields(
    sample: EditableSample, default_field: str | None, default_compare: CompareSpec
) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if sample.field != default_field:
        payload["field"] = sample.field
    if sample.has_expectation:
        payload["expect"] = sample.expected
    compare_differs = sample.compare_mode != default_compare.mode or not strictly_equal(
        sample.tolerance, default_compare.tolerance
    )
    if compare_differs or sample.compare_declared:
        if sample.compare_mode is None and sample.tolerance is None:
            payload["compare"] = None
        else:
            compare: dict[str, Any] = {}
            if sample.compare_mode is not None:
                compare["mode"] = sample.compare_mode
            if sample.tolerance is not None:
                compare["tolerance"] = sample.tolerance
            payload["compare"] = compare
    if sample.comment is not None:
        payload["comment"] = sample.comment
    if sample.ignore is not None:
        payload["ignore"] = sample.ignore
    return payload


def _progression_length(run: Sequence[_Timed], start: int) -> int:
    if start + 1 >= len(run):
        return 1
    cadence = run[start + 1].tick - run[start].tick
    end = start + 1
    while end + 1 < len(run) and run[end + 1].tick - run[end].tick == cadence:
        end += 1
    return end - start + 1


def _from_one_range_block_at_its_cadence(first: EditableSample, second: EditableSample, cadence_ticks: int) -> bool:
    """Whether two samples came from the same original range block and lie one of its steps apart.

    Origins are compared by block and `every_s` only: review's origins carry no range end, seed's
    do. The step may miss `every_s` by one tick, as each expanded time is rounded to nine decimals;
    two samples whose neighbours in between were deleted are no longer that range.
    """
    one, other = first.origin, second.origin
    if one is None or other is None or one.kind != "range" or other.kind != "range" or one.every_s is None:
        return False
    if one.block_index != other.block_index or one.every_s != other.every_s:
        return False
    return abs(cadence_ticks - timestamp_tick(canonical_timestamp(one.every_s))) <= 1


def _range_block_for(
    progression: Sequence[_Timed],
    next_tick: int | None,
    case_every_s: float,
    range_end: float | None,
) -> dict[str, Any] | None:
    """The `range` head for a progression, or None when no range reproduces exactly its ticks."""
    ticks = [item.tick for item in progression]
    cadence_ticks = ticks[1] - ticks[0]
    cadence = _seconds_from_ticks(cadence_ticks)
    first = progression[0].seconds
    if len(progression) == 2:
        two_sample_end = _seconds_from_ticks(ticks[1] + cadence_ticks)
        fits_case_cadence = _expanded_range_ticks(first, two_sample_end, case_every_s) == ticks
        if not fits_case_cadence and not _from_one_range_block_at_its_cadence(
            progression[0].sample, progression[1].sample, cadence_ticks
        ):
            return None
    end_candidates = [_seconds_from_ticks(ticks[-1] + cadence_ticks)]
    if next_tick is not None:
        end_candidates.append(_seconds_from_ticks(next_tick))
    if range_end is not None:
        end_candidates.append(float(range_end))
    end = min(end_candidates)
    if _expanded_range_ticks(first, end, cadence) != ticks:
        return None
    block: dict[str, Any] = {"range": [first, end]}
    if _expanded_range_ticks(first, end, case_every_s) != ticks:
        block["every_s"] = cadence
    return block


def _at_block(points: Sequence[_Timed]) -> dict[str, Any]:
    if len(points) == 1:
        return {"at": points[0].seconds}
    return {"at": [point.seconds for point in points]}


def reconstruct_blocks(
    samples: Iterable[EditableSample],
    *,
    case_every_s: float = DEFAULT_EVERY_S,
    default_field: str | None = None,
    default_compare: CompareSpec = CompareSpec(),
    allow_ranges: bool = True,
    range_end: float | None = None,
    target_timestamps_s: Iterable[float] | None = None,
) -> list[dict[str, Any]]:
    """Regroup samples into the fewest blocks that expand back to exactly them (§22.4).

    `range_end` caps every range (seed: a rebuilt range never reaches past its original block);
    `allow_ranges=False` yields only `at` blocks (seed: rebuilding an original `at` block);
    `target_timestamps_s` are all of the target's times when `samples` is only part of them,
    so that no range swallows a time belonging to another block. Raises SampleTimingError when
    two samples are within one nanosecond of each other.
    """
    timed = _canonical_sorted(samples)
    if target_timestamps_s is None:
        all_ticks = [item.tick for item in timed]
    else:
        all_ticks = sorted({timestamp_tick(canonical_timestamp(t)) for t in target_timestamps_s})

    def next_target_tick(after: int) -> int | None:
        for tick in all_ticks:  # targets hold at most 10,000 samples; a scan is plenty
            if tick > after:
                return tick
        return None

    blocks: list[dict[str, Any]] = []
    for _, run_items in groupby(timed, key=lambda item: _payload_key(item.sample)):
        run = list(run_items)
        payload = _payload_fields(run[0].sample, default_field, default_compare)
        pending_points: list[_Timed] = []

        def flush_points() -> None:
            if pending_points:
                blocks.append({**_at_block(pending_points), **payload})
                pending_points.clear()

        position = 0
        while position < len(run):
            length = _progression_length(run, position) if allow_ranges else 1
            progression = run[position : position + length]
            head = None
            if length >= 2:
                head = _range_block_for(progression, next_target_tick(progression[-1].tick), case_every_s, range_end)
            if head is None:
                pending_points.extend(progression)
            else:
                flush_points()
                blocks.append({**head, **payload})
            position += length
        flush_points()
    return blocks


def rebuild_blocks_per_original_block(
    samples: Iterable[EditableSample],
    *,
    case_every_s: float = DEFAULT_EVERY_S,
    default_field: str | None = None,
    default_compare: CompareSpec = CompareSpec(),
) -> list[dict[str, Any]]:
    """Seed's rebuild (§18 step 7): each original block regrouped on its own, in block order.

    Every sample needs an `origin`. A range block only yields ranges and `at` points inside
    its original end; an `at` block only yields `at` blocks.
    """
    all_samples = list(samples)
    _canonical_sorted(all_samples)  # the whole target must be free of near-duplicates
    missing = [sample.id for sample in all_samples if sample.origin is None]
    if missing:
        raise ValueError(f"samples without an original block cannot be rebuilt per block: {', '.join(missing)}")
    target_times = [sample.timestamp_s for sample in all_samples]
    by_block: dict[int, list[EditableSample]] = {}
    for sample in all_samples:
        by_block.setdefault(sample.origin.block_index, []).append(sample)  # type: ignore[union-attr]
    blocks: list[dict[str, Any]] = []
    for block_index in sorted(by_block):
        members = by_block[block_index]
        origin = members[0].origin
        assert origin is not None
        is_range = origin.kind == "range"
        blocks.extend(
            reconstruct_blocks(
                members,
                case_every_s=case_every_s,
                default_field=default_field,
                default_compare=default_compare,
                allow_ranges=is_range,
                range_end=origin.range_end if is_range else None,
                target_timestamps_s=target_times,
            )
        )
    return blocks

