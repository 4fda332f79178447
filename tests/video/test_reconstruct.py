"""Reconstruction of sample blocks from individual samples (spec/video.md §22.4, §18 step 7)."""

from __future__ import annotations

import pytest

from assay.video.model import CompareSpec
from assay.video.reconstruct import (
    EditableSample,
    SampleOrigin,
    SampleTimingError,
    rebuild_blocks_per_original_block,
    reconstruct_blocks,
    strictly_equal,
)


def sample(index: int, time: float, expected: object = "red", **extra: object) -> EditableSample:
    return EditableSample(id=f"s{index:03d}", timestamp_s=time, has_expectation=True, expected=expected, **extra)


def samples_at(times: list[float], expected: object = "red", **extra: object) -> list[EditableSample]:
    return [sample(index, time, expected, **extra) for index, time in enumerate(times)]


def expand(start: float, end: float, every: float) -> list[float]:
    times, current = [], start
    while current < end - 1e-9:
        times.append(round(current, 9))
        current += every
    return times


def expanded_times(blocks: list[dict], case_every_s: float = 0.5) -> list[float]:
    times: list[float] = []
    for block in blocks:
        if "range" in block:
            times.extend(expand(block["range"][0], block["range"][1], block.get("every_s", case_every_s)))
        else:
            times.extend(block["at"] if isinstance(block["at"], list) else [block["at"]])
    return times


def test_three_samples_at_the_default_cadence_become_a_range_without_every_s():
    assert reconstruct_blocks(samples_at([0.0, 0.5, 1.0])) == [{"range": [0.0, 1.5], "expect": "red"}]


def test_a_non_default_cadence_is_written_as_every_s():
    assert reconstruct_blocks(samples_at([5.0, 5.25, 5.5])) == [
        {"range": [5.0, 5.75], "every_s": 0.25, "expect": "red"}
    ]


def test_two_samples_far_apart_stay_points():
    assert reconstruct_blocks(samples_at([0.0, 4.0])) == [{"at": [0.0, 4.0], "expect": "red"}]


def test_two_samples_from_one_range_block_with_the_same_every_s_stay_a_range():
    origin = SampleOrigin(block_index=1, kind="range", every_s=4.0)
    assert reconstruct_blocks(samples_at([0.0, 4.0], origin=origin)) == [
        {"range": [0.0, 8.0], "every_s": 4.0, "expect": "red"}
    ]


def test_two_samples_of_a_range_block_keep_it_whether_or_not_the_origin_knows_its_end():
    # `range: [5.0, 10.0]` with `every_s: 2.5` holds 5.0 and 7.5; review sends no range end, seed does.
    from_review = SampleOrigin(block_index=1, kind="range", every_s=2.5)
    from_seed = SampleOrigin(block_index=1, kind="range", every_s=2.5, range_end=10.0)
    for origin in (from_review, from_seed):
        assert reconstruct_blocks(samples_at([5.0, 7.5], origin=origin)) == [
            {"range": [5.0, 10.0], "every_s": 2.5, "expect": "red"}
        ]


def test_two_samples_of_one_range_block_more_than_a_step_apart_become_points():
    # 0.0, 2.5, 5.0, 7.5 with the middle two deleted: no longer the block's cadence, so no range.
    origin = SampleOrigin(block_index=1, kind="range", every_s=2.5)
    assert reconstruct_blocks(samples_at([0.0, 7.5], origin=origin)) == [{"at": [0.0, 7.5], "expect": "red"}]


def test_two_samples_from_different_range_blocks_become_points():
    first = SampleOrigin(block_index=1, kind="range", every_s=2.5)
    second = SampleOrigin(block_index=2, kind="range", every_s=2.5)
    assert reconstruct_blocks([sample(0, 5.0, origin=first), sample(1, 7.5, origin=second)]) == [
        {"at": [5.0, 7.5], "expect": "red"}
    ]


def test_a_range_cadence_one_nanosecond_off_after_rounding_still_counts_as_the_block_step():
    # Expanding every 1/3 s rounds 0.333333333 and 0.666666667: the step between them is one tick longer.
    origin = SampleOrigin(block_index=1, kind="range", every_s=1 / 3)
    blocks = reconstruct_blocks(samples_at([0.333333333, 0.666666667], origin=origin))
    assert [list(block)[0] for block in blocks] == ["range"]
    assert expanded_times(blocks) == [0.333333333, 0.666666667]


def test_two_samples_at_the_case_default_cadence_become_a_range():
    assert reconstruct_blocks(samples_at([2.0, 2.5])) == [{"range": [2.0, 3.0], "expect": "red"}]


def test_a_range_ends_at_the_next_sample_of_the_target():
    blocks = reconstruct_blocks(
        [sample(0, 0.0, False), sample(1, 0.5, False), sample(2, 1.0, False), sample(3, 1.25, True)]
    )
    assert blocks == [{"range": [0.0, 1.25], "expect": False}, {"at": 1.25, "expect": True}]


def test_alternating_fields_become_separate_at_blocks():
    blocks = reconstruct_blocks(
        [sample(i, t, 1, field="a" if i % 2 == 0 else "b") for i, t in enumerate([0.0, 0.5, 1.0, 1.5])]
    )
    assert blocks == [
        {"at": 0.0, "field": "a", "expect": 1},
        {"at": 0.5, "field": "b", "expect": 1},
        {"at": 1.0, "field": "a", "expect": 1},
        {"at": 1.5, "field": "b", "expect": 1},
    ]


def test_payload_equality_is_type_strict():
    assert not strictly_equal(1, 1.0)
    assert not strictly_equal(1, True)
    assert not strictly_equal(-0.0, 0.0)
    assert strictly_equal({"a": 1, "b": [1.0]}, {"b": [1.0], "a": 1})
    blocks = reconstruct_blocks([sample(0, 0.0, 1), sample(1, 0.5, 1.0), sample(2, 1.0, True)])
    assert [block["expect"] for block in blocks] == [1, 1.0, True]
    assert [type(block["expect"]) for block in blocks] == [int, float, bool]


def test_negative_zero_splits_a_run():
    blocks = reconstruct_blocks([sample(0, 0.0, 0.0), sample(1, 0.5, 0.0), sample(2, 1.0, -0.0)])
    assert blocks == [{"range": [0.0, 1.0], "expect": 0.0}, {"at": 1.0, "expect": -0.0}]


def test_dict_key_order_does_not_split_a_run():
    blocks = reconstruct_blocks([sample(0, 0.0, {"a": 1, "b": 2}), sample(1, 0.5, {"b": 2, "a": 1})])
    assert blocks == [{"range": [0.0, 1.0], "expect": {"a": 1, "b": 2}}]


def test_samples_are_sorted_by_time_and_timestamps_rounded_to_nine_decimals():
    blocks = reconstruct_blocks([sample(0, 1.0000000001), sample(1, 0.0), sample(2, 0.30000000000000004)])
    assert blocks == [{"at": [0.0, 0.3, 1.0], "expect": "red"}]


def test_samples_within_one_nanosecond_are_rejected():
    with pytest.raises(SampleTimingError, match="within 1e-9 seconds") as raised:
        reconstruct_blocks([sample(0, 1.0), sample(1, 1.000000001)])
    assert raised.value.sample_ids == ("s000", "s001")
    with pytest.raises(ValueError):
        reconstruct_blocks([sample(0, 2.0), sample(1, 2.0)])


def test_payload_keys_follow_field_expect_compare_comment_ignore_order():
    drafted = EditableSample(
        id="a",
        timestamp_s=1.0,
        has_expectation=True,
        expected=3,
        field="count",
        compare_mode="numeric",
        tolerance=0.5,
        comment="note",
        ignore="flaky",
    )
    [block] = reconstruct_blocks([drafted])
    assert list(block) == ["at", "field", "expect", "compare", "comment", "ignore"]
    assert block["compare"] == {"mode": "numeric", "tolerance": 0.5}


def test_defaults_are_not_written_and_a_cleared_default_is_written_as_null():
    defaults = {"default_field": "label", "default_compare": CompareSpec(mode="numeric", tolerance=0.1)}
    inherited = EditableSample("a", 0.0, True, 1, field="label", compare_mode="numeric", tolerance=0.1)
    cleared = EditableSample("b", 1.0, True, 1, field=None, compare_mode=None, tolerance=None)
    assert reconstruct_blocks([inherited, cleared], **defaults) == [
        {"at": 0.0, "expect": 1},
        {"at": 1.0, "field": None, "expect": 1, "compare": None},
    ]


def test_declared_compare_is_written_even_when_it_matches_the_default():
    declared = EditableSample("a", 0.0, True, 1, compare_mode="exact", compare_declared=True)
    assert reconstruct_blocks([declared], default_compare=CompareSpec(mode="exact")) == [
        {"at": 0.0, "expect": 1, "compare": {"mode": "exact"}}
    ]


def test_drafts_omit_expect():
    drafts = [EditableSample(f"d{i}", t, False, ignore="blurry") for i, t in enumerate([0.0, 0.5, 1.0])]
    assert reconstruct_blocks(drafts) == [{"range": [0.0, 1.5], "ignore": "blurry"}]


def test_a_progression_that_does_not_reexpand_exactly_becomes_points():
    # 0.1 steps from 0.7 accumulate float error; whatever is emitted must expand back to the input.
    times = [0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3]
    blocks = reconstruct_blocks(samples_at(times))
    assert expanded_times(blocks) == times


def test_every_emitted_block_set_expands_back_to_the_input():
    times = [0.0, 0.5, 1.0, 2.0, 2.1, 2.2, 2.3, 7.0, 9.0, 9.25]
    labels = ["a", "a", "a", "b", "b", "b", "b", "b", "c", "c"]
    samples = [sample(i, t, label) for i, (t, label) in enumerate(zip(times, labels))]
    blocks = reconstruct_blocks(samples)
    assert expanded_times(blocks) == times


def test_seed_keeps_the_original_range_end():
    origin = SampleOrigin(block_index=1, kind="range", every_s=0.5, range_end=0.7)
    assert rebuild_blocks_per_original_block(samples_at([0.0, 0.5], origin=origin)) == [
        {"range": [0.0, 0.7], "expect": "red"}
    ]


def test_seed_splits_a_range_whose_values_change_and_keeps_its_comment():
    origin = SampleOrigin(block_index=1, kind="range", every_s=1.0, range_end=7.0)
    samples = [
        sample(i, t, colour, origin=origin, comment="door")
        for i, (t, colour) in enumerate([(3.0, "red"), (4.0, "red"), (5.0, "green"), (6.0, "green")])
    ]
    assert rebuild_blocks_per_original_block(samples, case_every_s=1.0) == [
        {"range": [3.0, 5.0], "expect": "red", "comment": "door"},
        {"range": [5.0, 7.0], "expect": "green", "comment": "door"},
    ]


def test_seed_keeps_a_non_default_every_s():
    origin = SampleOrigin(block_index=1, kind="range", every_s=1.0, range_end=7.0)
    samples = [sample(i, t, origin=origin) for i, t in enumerate([3.0, 4.0, 5.0, 6.0])]
    assert rebuild_blocks_per_original_block(samples) == [{"range": [3.0, 7.0], "every_s": 1.0, "expect": "red"}]


def test_seed_turns_an_at_list_into_at_blocks_only():
    origin = SampleOrigin(block_index=2, kind="at")
    samples = [sample(i, t, colour, origin=origin) for i, (t, colour) in enumerate([(0.0, "a"), (0.5, "a"), (1.0, "a"), (1.5, "b")])]
    assert rebuild_blocks_per_original_block(samples) == [
        {"at": [0.0, 0.5, 1.0], "expect": "a"},
        {"at": 1.5, "expect": "b"},
    ]


def test_seed_rebuilds_block_by_block_in_block_order():
    late_range = SampleOrigin(block_index=1, kind="range", every_s=0.5, range_end=6.0)
    early_points = SampleOrigin(block_index=2, kind="at")
    samples = [
        sample(0, 5.0, origin=late_range),
        sample(1, 5.5, origin=late_range),
        sample(2, 0.0, origin=early_points),
        sample(3, 0.5, origin=early_points),
    ]
    assert rebuild_blocks_per_original_block(samples) == [
        {"range": [5.0, 6.0], "expect": "red"},
        {"at": [0.0, 0.5], "expect": "red"},
    ]


def test_seed_range_stops_before_a_sample_of_another_block():
    first = SampleOrigin(block_index=1, kind="range", every_s=0.5, range_end=1.5)
    second = SampleOrigin(block_index=2, kind="at")
    samples = [sample(0, 0.0, origin=first), sample(1, 0.5, origin=first), sample(2, 0.75, origin=second)]
    blocks = rebuild_blocks_per_original_block(samples)
    assert blocks == [{"range": [0.0, 0.75], "expect": "red"}, {"at": 0.75, "expect": "red"}]
