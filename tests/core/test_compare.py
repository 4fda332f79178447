from __future__ import annotations

import dataclasses

import pytest

from assay.core.compare import (
    COMPARE_MODES,
    Comparison,
    compare_values,
    evaluate_observation,
    extract_field,
    infer_mode,
)


def evaluate(expected, observation, field=None, mode=None, tolerance=None) -> Comparison:
    return evaluate_observation(
        expected=expected, observation=observation, field=field, mode=mode, tolerance=tolerance
    )


# --- field extraction -------------------------------------------------------------------------


def test_field_none_or_empty_returns_whole_observation():
    observation = {"a": 1}
    assert extract_field(observation, None) == (True, observation)
    assert extract_field(observation, "") == (True, observation)


def test_field_walks_mappings_and_decimal_list_indexes():
    observation = {"items": [{"name": "x"}, {"name": "y"}]}
    assert extract_field(observation, "items.1.name") == (True, "y")
    assert extract_field(observation, "items.01.name") == (True, "y")


def test_field_index_walks_tuples_too():
    assert extract_field({"pair": ("a", "b")}, "pair.1") == (True, "b")


def test_field_negative_index_is_missing():
    assert extract_field({"items": [1, 2]}, "items.-1") == (False, None)


def test_field_index_out_of_range_is_missing():
    assert extract_field({"items": [1, 2]}, "items.2") == (False, None)


def test_field_missing_key_is_missing():
    assert extract_field({"a": 1}, "b") == (False, None)


def test_field_key_match_is_exact_string():
    assert extract_field({"1": "str-key"}, "1") == (True, "str-key")
    assert extract_field({1: "int-key"}, "1") == (False, None)


def test_field_into_scalar_or_string_is_missing():
    assert extract_field({"a": 5}, "a.b") == (False, None)
    assert extract_field({"a": "text"}, "a.0") == (False, None)
    assert extract_field(None, "a") == (False, None)


def test_field_empty_part_looks_up_empty_key():
    assert extract_field({"a": {"": {"b": 3}}}, "a..b") == (True, 3)
    assert extract_field({"a": {"b": 3}}, "a..b") == (False, None)


def test_field_found_value_may_be_null():
    assert extract_field({"a": None}, "a") == (True, None)


def test_missing_field_reason_is_the_long_form():
    result = evaluate("red", {"colour": "red"}, field="color")
    assert result == Comparison(False, "adapter observation is missing configured field: color", None, "exact")


# --- null observation -------------------------------------------------------------------------


def test_null_observation_fails_a_non_null_expectation_in_any_mode():
    for mode, expected in [(None, {}), ("json_subset", {}), ("set_contains_all", []), ("numeric", 1)]:
        result = evaluate(expected, None, mode=mode)
        assert not result.passed
        assert result.reason == "adapter returned null but the sample expects a non-null value"
        assert result.observed_value is None


def test_null_observation_with_field_reports_missing_field_first():
    result = evaluate(True, None, field="ok")
    assert result.reason == "adapter observation is missing configured field: ok"


def test_null_expectation_and_null_observation_match_exactly():
    assert evaluate(None, None) == Comparison(True, "matched", None, "exact")


def test_null_field_value_of_a_real_observation_is_compared_normally():
    # The null rule looks at the whole observation, not the extracted value.
    result = evaluate("x", {"a": None}, field="a")
    assert result == Comparison(False, "expected exact match", None, "exact")


# --- mode inference ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "mode"),
    [(True, "exact"), ("s", "exact"), (None, "exact"), (1, "numeric"), (1.5, "numeric"), ([1], "exact"), ({}, "exact")],
)
def test_mode_is_inferred_from_the_expectation(expected, mode):
    assert infer_mode(expected) == mode


def test_declared_mode_wins_over_inference():
    result = evaluate(1, 1.0, mode="set_equals")
    assert result.effective_mode == "set_equals"
    assert result.reason == "observed value is not an array"


def test_inferred_numeric_for_number_expectation():
    result = evaluate(2, 2.4, tolerance=0.5)
    assert result == Comparison(True, "matched", 2.4, "numeric")


# --- exact ------------------------------------------------------------------------------------


def test_exact_int_equals_float():
    assert compare_values(1, 1.0, "exact", None) == (True, "matched")
    assert compare_values({"n": [1]}, {"n": [1.0]}, "exact", None) == (True, "matched")


def test_exact_bool_never_equals_number_at_any_depth():
    assert compare_values(True, 1, "exact", None) == (False, "expected exact match")
    assert compare_values(1, True, "exact", None) == (False, "expected exact match")
    assert compare_values(0, False, "exact", None) == (False, "expected exact match")
    assert compare_values({"a": [True]}, {"a": [1]}, "exact", None) == (False, "expected exact match")
    assert compare_values({"a": [1]}, {"a": [True]}, "exact", None) == (False, "expected exact match")


def test_exact_mappings_need_identical_keys_in_any_order():
    assert compare_values({"a": 1, "b": 2}, {"b": 2, "a": 1}, "exact", None)[0]
    assert not compare_values({"a": 1}, {"a": 1, "b": 2}, "exact", None)[0]
    assert not compare_values({"a": 1, "b": 2}, {"a": 1}, "exact", None)[0]
    assert not compare_values({"a": 1}, {"b": 1}, "exact", None)[0]


def test_exact_lists_need_same_length_and_order():
    assert compare_values([1, 2], [1, 2], "exact", None)[0]
    assert compare_values([1, 2], (1, 2), "exact", None)[0]
    assert not compare_values([1, 2], [2, 1], "exact", None)[0]
    assert not compare_values([1, 2], [1, 2, 3], "exact", None)[0]


def test_exact_does_not_confuse_containers_with_scalars():
    assert not compare_values(["a"], "a", "exact", None)[0]
    assert not compare_values("ab", ["a", "b"], "exact", None)[0]
    assert not compare_values({}, [], "exact", None)[0]
    assert not compare_values(None, {}, "exact", None)[0]
    assert not compare_values("1", 1, "exact", None)[0]


# --- numeric ----------------------------------------------------------------------------------


def test_numeric_within_tolerance_passes_inclusive():
    assert compare_values(1, 1.5, "numeric", 0.5) == (True, "matched")
    assert compare_values(1.0, 1, "numeric", None) == (True, "matched")


def test_numeric_failure_reason_uses_g_format():
    assert compare_values(1, 2, "numeric", 0.5) == (False, "numeric difference 1 exceeds tolerance 0.5")
    assert compare_values(0, 0.1234567, "numeric", None) == (
        False,
        "numeric difference 0.123457 exceeds tolerance 0",
    )


def test_numeric_rejects_non_numeric_expected_before_observed():
    assert compare_values("1", "x", "numeric", None) == (False, "numeric comparison expected value is not numeric")
    assert compare_values(True, 1, "numeric", None) == (False, "numeric comparison expected value is not numeric")


def test_numeric_rejects_bool_observation():
    assert compare_values(1, True, "numeric", None) == (False, "observed value is not numeric")
    assert compare_values(1, "1", "numeric", None) == (False, "observed value is not numeric")
    assert compare_values(1, None, "numeric", None) == (False, "observed value is not numeric")


# --- json_subset ------------------------------------------------------------------------------


def test_json_subset_allows_extra_observed_keys():
    assert compare_values({"a": 1}, {"a": 1, "b": 2}, "json_subset", None) == (True, "matched")
    assert compare_values({}, {"anything": 1}, "json_subset", None) == (True, "matched")


def test_json_subset_nested_and_missing_key():
    assert compare_values({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, "json_subset", None)[0]
    assert compare_values({"a": 1, "z": 0}, {"a": 1}, "json_subset", None) == (False, "expected JSON subset")


def test_json_subset_scalars_use_exact_rule():
    assert compare_values({"n": 1}, {"n": 1.0}, "json_subset", None)[0]
    assert not compare_values({"n": 1}, {"n": True}, "json_subset", None)[0]
    assert not compare_values({"n": True}, {"n": 1}, "json_subset", None)[0]


def test_json_subset_list_items_match_in_any_order_but_each_once():
    assert compare_values([{"a": 1}], [{"b": 2}, {"a": 1, "c": 3}], "json_subset", None)[0]
    assert compare_values([2, 1], [1, 2, 3], "json_subset", None)[0]
    assert not compare_values([1, 1], [1, 2], "json_subset", None)[0]
    assert compare_values([1, 1], [1, 2, 1], "json_subset", None)[0]


def test_json_subset_list_matching_is_greedy_not_optimal():
    # {} grabs {a: 1} first, leaving nothing for {a: 1} although a perfect matching exists.
    assert compare_values([{}, {"a": 1}], [{"a": 1}, {"b": 2}], "json_subset", None) == (
        False,
        "expected JSON subset",
    )
    assert compare_values([{"a": 1}, {}], [{"a": 1}, {"b": 2}], "json_subset", None) == (True, "matched")


def test_json_subset_list_needs_list_and_mapping_needs_mapping():
    assert not compare_values([1], {"0": 1}, "json_subset", None)[0]
    assert not compare_values({"a": 1}, [{"a": 1}], "json_subset", None)[0]
    assert not compare_values(["a"], "a", "json_subset", None)[0]


# --- set modes --------------------------------------------------------------------------------


def test_set_equals_ignores_order_and_duplicates():
    assert compare_values(["a", "b"], ["b", "a", "a"], "set_equals", None) == (True, "matched")
    assert compare_values(["a"], ["a", "b"], "set_equals", None) == (False, "expected set equality")


def test_set_modes_treat_int_and_float_as_different_items():
    assert compare_values([1], [1.0], "set_equals", None) == (False, "expected set equality")
    assert compare_values([1], [1.0], "set_contains_any", None) == (False, "expected any matching set item")


def test_set_modes_treat_true_and_one_as_different_items():
    assert compare_values([True], [1], "set_contains_all", None) == (False, "expected all set items")


def test_set_items_compare_by_canonical_json_of_objects():
    assert compare_values([{"a": 1, "b": [2]}], [{"b": [2], "a": 1}], "set_equals", None)[0]
    assert compare_values(["é"], ["é"], "set_equals", None)[0]


def test_set_contains_any_with_empty_expected_always_fails():
    assert compare_values([], [], "set_contains_any", None) == (False, "expected any matching set item")
    assert compare_values([], ["a"], "set_contains_any", None) == (False, "expected any matching set item")


def test_set_contains_all_with_empty_expected_always_passes():
    assert compare_values([], [], "set_contains_all", None) == (True, "matched")
    assert compare_values([], ["a"], "set_contains_all", None) == (True, "matched")


def test_set_contains_any_and_all():
    assert compare_values(["x", "b"], ["a", "b"], "set_contains_any", None) == (True, "matched")
    assert compare_values(["a", "b"], ["a", "b", "c"], "set_contains_all", None) == (True, "matched")
    assert compare_values(["a", "z"], ["a", "b"], "set_contains_all", None) == (False, "expected all set items")


def test_set_modes_check_observed_array_before_expected():
    for mode in ("set_equals", "set_contains_any", "set_contains_all"):
        assert compare_values("a", "a", mode, None) == (False, "observed value is not an array")
        assert compare_values("a", ["a"], mode, None) == (False, "expected value is not an array")
        assert compare_values(["a"], {"a": 1}, mode, None) == (False, "observed value is not an array")


# --- entry point ------------------------------------------------------------------------------


def test_unknown_mode_raises_value_error():
    with pytest.raises(ValueError, match="unsupported compare mode 'fuzzy'"):
        evaluate("a", "a", mode="fuzzy")


def test_all_six_modes_are_supported():
    assert COMPARE_MODES == (
        "exact",
        "json_subset",
        "numeric",
        "set_contains_all",
        "set_contains_any",
        "set_equals",
    )
    for mode in COMPARE_MODES:
        compare_values([1], [1], mode, None)


def test_comparison_carries_extracted_value_and_is_frozen():
    result = evaluate(["b"], {"tags": ["a", "b"]}, field="tags", mode="set_contains_any")
    assert result == Comparison(True, "matched", ["a", "b"], "set_contains_any")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.passed = False  # type: ignore[misc]
