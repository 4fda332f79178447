from __future__ import annotations

import time
from typing import Any

import pytest

from assay.errors import CaseError
from assay.video.casefile_schema import parse_case_file
from assay.video.model import CompareSpec, Target
from assay.video.sampling import (
    canonical_timestamp,
    expand_case_targets,
    expand_range,
    range_sample_count,
    timestamp_tick,
)

LABEL = "/evals/cases/c.yaml"


def expand(raw: dict[str, Any], *, allow_empty: bool = False) -> tuple[Target, ...]:
    raw.setdefault("video", "clip.mp4")
    return expand_case_targets(parse_case_file(raw, label=LABEL), case_name="c", label=LABEL, allow_empty=allow_empty)


def one_target(*blocks: dict[str, Any], **case: Any) -> Target:
    return expand({"targets": {"t": {"samples": list(blocks)}}, **case})[0]


def times(target: Target) -> list[float]:
    return [sample.timestamp_s for sample in target.samples]


def expansion_error(raw: dict[str, Any]) -> str:
    with pytest.raises(CaseError) as caught:
        expand(raw)
    return str(caught.value)


def test_range_is_half_open() -> None:
    assert times(one_target({"range": [1.0, 2.0], "every_s": 0.5, "expect": 1})) == [1.0, 1.5]


def test_range_uses_case_every_s_then_the_default_half_second() -> None:
    assert times(one_target({"range": [0, 1], "expect": 1})) == [0.0, 0.5]
    assert times(one_target({"range": [0, 1], "expect": 1}, sampling={"every_s": 0.25})) == [0.0, 0.25, 0.5, 0.75]
    assert times(one_target({"range": [0, 1], "every_s": 0.4, "expect": 1}, sampling={"every_s": 0.25})) == [
        0.0, 0.4, 0.8,
    ]


def test_end_within_epsilon_of_a_step_is_excluded_upstream_example() -> None:
    target = one_target({"range": [0, 1000.000000001001], "every_s": 0.1, "expect": 1})
    assert len(target.samples) == 10_000
    assert target.samples[-1].timestamp_s == 999.9


def test_accumulated_drift_is_hidden_by_nine_decimal_rounding() -> None:
    assert 0.1 + 0.1 + 0.1 == 0.30000000000000004
    assert expand_range(0.0, 0.35, 0.1) == [0.0, 0.1, 0.2, 0.3]
    assert canonical_timestamp(0.30000000000000004) == 0.3


def test_range_timestamps_come_from_repeated_addition_not_multiplication() -> None:
    # 3 * 0.1 rounds the same, but long accumulations differ from start + i * step before rounding.
    accumulated = 0.0
    for _ in range(7):
        accumulated += 0.1
    assert expand_range(0.0, 0.75, 0.1)[-1] == round(accumulated, 9)
    assert range_sample_count(0.0, 0.3, 0.1) == 3


def test_tick_is_the_decimal_text_of_the_timestamp_in_nanoseconds() -> None:
    assert timestamp_tick(0.1) == 100_000_000
    assert timestamp_tick(2.000000001) == 2_000_000_001
    assert timestamp_tick(1e308) == int(10**317)


def test_at_values_are_rounded_and_sorted_within_the_block() -> None:
    target = one_target({"at": [3, 1.0000000001, 2], "expect": 1})
    assert times(target) == [1.0, 2.0, 3.0]
    assert [sample.source for sample in target.samples] == ["at", "at", "at"]


def test_blocks_keep_declaration_order_across_blocks() -> None:
    target = one_target({"at": 5, "expect": 1}, {"range": [0, 1], "expect": 2})
    assert times(target) == [5.0, 0.0, 0.5]
    assert [sample.block_index for sample in target.samples] == [1, 2, 2]


def test_sample_index_runs_case_wide_across_targets_in_declaration_order() -> None:
    first, second = expand({"targets": {
        "first": {"samples": [{"at": [4, 3], "expect": 1}, {"range": [0, 1], "expect": 1}]},
        "second": {"samples": [{"at": 0, "expect": 1}]},
    }})
    assert [(s.sample_index, s.timestamp_s) for s in first.samples] == [(0, 3.0), (1, 4.0), (2, 0.0), (3, 0.5)]
    assert [s.sample_index for s in second.samples] == [4]
    assert (first.index, second.index) == (0, 1)
    assert second.samples[0].target_index == 1


def test_source_names_the_range_with_g_formatting() -> None:
    target = one_target({"range": [0, 5.0], "every_s": 2.5, "expect": 1}, {"range": [7.25, 8], "expect": 1})
    assert [sample.source for sample in target.samples] == ["range [0, 5)"] * 2 + ["range [7.25, 8)"] * 2


def test_case_cap_counts_ignored_samples_and_names_the_block_that_crosses_it() -> None:
    message = expansion_error({"targets": {
        "first": {"samples": [{"range": [0, 6000], "every_s": 1, "ignore": "not yet"}]},
        "second": {"samples": [{"at": 0, "expect": 1}, {"range": [0, 4000], "every_s": 1, "expect": 1}]},
    }})
    assert message == (
        f"{LABEL}: target 'second' sample 2 would expand the case to 10001 samples; limit is 10000"
    )


def test_case_cap_allows_exactly_ten_thousand_samples() -> None:
    targets = expand({"targets": {
        "a": {"samples": [{"range": [0, 6000], "every_s": 1, "expect": 1}]},
        "b": {"samples": [{"range": [0, 4000], "every_s": 1, "expect": 1}]},
    }})
    assert sum(len(target.samples) for target in targets) == 10_000


def test_single_block_over_the_cap_reports_its_own_count() -> None:
    message = expansion_error({"targets": {"t": {"samples": [{"range": [0, 10001], "every_s": 1, "expect": 1}]}}})
    assert message == f"{LABEL}: target 't' sample 1 would expand the case to 10001 samples; limit is 10000"


def test_pathological_cadence_hits_the_cap_without_materialising() -> None:
    started = time.perf_counter()
    message = expansion_error({"targets": {"t": {"samples": [{"range": [0, 0.00001], "every_s": 1e-10}]}}})
    assert message == f"{LABEL}: target 't' sample 1 would expand the case to 99990 samples; limit is 10000"
    # A step too small to move the start at all: the count comes from exact rationals of the floats.
    stuck = expansion_error({"targets": {"t": {"samples": [{"range": [1e6, 1e6 + 1], "every_s": 1e-12}]}}})
    assert stuck == f"{LABEL}: target 't' sample 1 would expand the case to 999999998953 samples; limit is 10000"
    assert time.perf_counter() - started < 1.0


def test_duplicate_times_inside_one_at_block() -> None:
    message = expansion_error({"targets": {"t": {"samples": [{"at": [2, 1.0, 1.0000000001], "expect": 1}]}}})
    assert message == (
        f"{LABEL}: target 't' sample 1 timestamp 1 duplicates timestamp 1 after nine-decimal normalization"
    )


def test_sub_nanosecond_range_duplicates_after_rounding() -> None:
    message = expansion_error({"targets": {"t": {"samples": [{"range": [1, 1.000000005], "every_s": 1e-10}]}}})
    assert message == (
        f"{LABEL}: target 't' sample 1 timestamp 1 duplicates timestamp 1 after nine-decimal normalization"
    )


def test_overlapping_ranges_are_rejected_but_touching_ranges_are_fine() -> None:
    assert times(one_target({"range": [0, 1], "expect": 1}, {"range": [1, 2], "expect": 1})) == [0, 0.5, 1, 1.5]
    message = expansion_error({"targets": {"t": {"samples": [
        {"range": [0, 2], "expect": 1}, {"at": 5, "expect": 1}, {"range": [1.5, 3], "expect": 1},
    ]}}})
    assert message == f"{LABEL}: target 't' sample 3 overlaps sample 1"


def test_range_over_an_earlier_point_overlaps_it() -> None:
    message = expansion_error({"targets": {"t": {"samples": [{"at": 1, "expect": 1}, {"range": [0, 2], "expect": 1}]}}})
    assert message == f"{LABEL}: target 't' sample 2 overlaps sample 1"
    # The range end is exclusive, so a point at the end is fine.
    assert times(one_target({"at": 2, "expect": 1}, {"range": [0, 2], "expect": 1})) == [2.0, 0.0, 0.5, 1.0, 1.5]


def test_point_repeating_an_earlier_point_duplicates_it() -> None:
    message = expansion_error({"targets": {"t": {"samples": [{"at": 1, "expect": 1}, {"at": [0, 1.0], "expect": 2}]}}})
    assert message == f"{LABEL}: target 't' sample 2 duplicates sample 1"


def test_point_inside_an_earlier_range_overlaps_it() -> None:
    message = expansion_error({"targets": {"t": {"samples": [{"range": [0, 2], "expect": 1}, {"at": 1.2, "expect": 1}]}}})
    assert message == f"{LABEL}: target 't' sample 2 overlaps sample 1"


def test_target_times_one_nanosecond_apart_are_rejected() -> None:
    message = expansion_error({"targets": {"t": {"samples": [{"at": 1, "expect": 1}, {"at": 1.000000001, "expect": 1}]}}})
    assert message == (
        f"{LABEL}: target 't' timestamps 1.000000000 and 1.000000001 are within 1e-9 seconds "
        "after nine-decimal normalization"
    )


def test_different_targets_may_overlap_freely() -> None:
    first, second = expand({"targets": {
        "a": {"samples": [{"range": [0, 1], "expect": 1}]},
        "b": {"samples": [{"at": 0.5, "expect": 1}, {"range": [0, 0.5], "expect": 1}]},
    }})
    assert times(first) == [0.0, 0.5] and times(second) == [0.5, 0.0]


def test_empty_target_and_empty_case_are_rejected_unless_allowed() -> None:
    assert expansion_error({"targets": {"a": {"samples": [{"at": 1, "expect": 1}]}, "b": {"samples": []}}}) == (
        f"{LABEL}: target 'b' has no samples"
    )
    targets = expand({"targets": {"a": {"samples": []}}}, allow_empty=True)
    assert targets[0].samples == ()


def test_expectation_presence_and_values_reach_the_samples() -> None:
    target = one_target({"at": 1, "expect": None}, {"at": 2}, {"at": 3, "ignore": " skip ", "comment": "c"})
    explicit, draft, ignored = target.samples
    assert explicit.has_expectation and explicit.expected is None
    assert not draft.has_expectation
    assert ignored.is_ignored and ignored.ignore == "skip" and ignored.comment == "c"


def test_sample_defaults_nearest_declaring_scope_wins() -> None:
    case_defaults = {"field": "case.field", "compare": {"mode": "numeric", "tolerance": 0.1}}
    (target,) = expand({
        "sample_defaults": case_defaults,
        "targets": {"t": {"sample_defaults": {"field": "target.field"}, "samples": [
            {"at": 1, "expect": 1},
            {"at": 2, "expect": 1, "field": "block.field"},
            {"at": 3, "expect": 1, "field": None},
            {"at": 4, "expect": 1, "compare": {"tolerance": 0.2}},
            {"at": 5, "expect": 1, "compare": None},
        ]}},
    })
    fields = [sample.field for sample in target.samples]
    compares = [sample.compare for sample in target.samples]
    assert fields == ["target.field", "block.field", None, "target.field", "target.field"]
    assert compares[0] == CompareSpec("numeric", 0.1)
    assert compares[3] == CompareSpec(None, 0.2)  # replaced as a whole, mode inferred later
    assert compares[4] == CompareSpec()
    assert target.sample_defaults_field == "target.field"
    assert target.sample_defaults_compare == CompareSpec("numeric", 0.1)


def test_target_null_default_clears_the_case_default() -> None:
    (target,) = expand({
        "sample_defaults": {"field": "a", "compare": {"mode": "exact"}},
        "targets": {"t": {"sample_defaults": {"field": None, "compare": None}, "samples": [{"at": 1, "expect": 1}]}},
    })
    assert target.samples[0].field is None and target.samples[0].compare == CompareSpec()
    assert target.sample_defaults_field is None and target.sample_defaults_compare == CompareSpec()


def test_workflow_metadata_merges_shallowly_under_target_config() -> None:
    a, b, c = expand({
        "workflow": {"targets": [
            {"id": "a", "label": "Old A", "prompt": "p", "options": {"x": 1, "y": 2}},
            {"id": "a", "label": "Workflow A", "prompt": "p2", "options": {"x": 1, "y": 2}},
            {"id": "b", "label": "Workflow B"},
            {"id": "unknown", "prompt": "ignored"},
        ]},
        "targets": {
            "a": {"config": {"options": {"x": 3}, "extra": True}, "samples": [{"at": 1, "expect": 1}]},
            "b": {"label": "Own B", "samples": [{"at": 1, "expect": 1}]},
            "c": {"samples": [{"at": 1, "expect": 1}]},
        },
    })
    assert a.config == {"prompt": "p2", "options": {"x": 3}, "extra": True}
    assert (a.label, b.label, c.label) == ("Workflow A", "Own B", None)
    assert b.config == {} and c.config == {}


@pytest.mark.parametrize("blank", ["", "   "])
def test_blank_workflow_label_is_no_label_not_an_error(blank: str) -> None:
    # spec §4.4: the workflow entry's label counts "stripped, if a non-empty string", else None.
    (target,) = expand({
        "workflow": {"targets": [{"id": "a", "label": blank, "prompt": "p"}]},
        "targets": {"a": {"samples": [{"at": 1, "expect": 1}]}},
    })
    assert target.label is None and target.config == {"prompt": "p"}
