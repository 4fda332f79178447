"""The regression gate of `assay runs compare`: hard regressions fail it outright, flaky units go to McNemar."""

from __future__ import annotations

import pytest

from assay.core.run_diff import compare_verdicts, trial_subject


def _trials(outcomes: dict[str, str]) -> dict[str, str]:
    """{"unit": "PPF"} -> {"unit#1": "passed", "unit#2": "passed", "unit#3": "failed"}."""
    verdicts = {"P": "passed", "F": "failed", "E": "errored", "S": "skipped"}
    return {f"{unit}#{trial}": verdicts[mark] for unit, marks in outcomes.items() for trial, mark in enumerate(marks, 1)}


def test_four_deterministic_regressions_in_a_small_suite_fail_the_gate() -> None:
    # The case from the issue: 16 single-trial units, 4 passing -> failing, no fixes.
    before = {f"case-{index:02d}": "passed" for index in range(15)} | {"case-15": "failed"}
    after = before | {f"case-{index:02d}": "failed" for index in range(4)}
    comparison = compare_verdicts("before", before, "after", after)
    assert round(comparison.before_pass_rate, 3) == 0.938 and round(comparison.after_pass_rate, 3) == 0.688
    assert comparison.test.p_value == pytest.approx(0.125)  # McNemar alone cannot reject at 0.05
    assert comparison.regression
    assert comparison.gate.hard_regressions == ("case-00", "case-01", "case-02", "case-03")
    assert comparison.gate.verdict() == "Regression: 4 units passed in every trial before and fail in every trial now."
    assert comparison.to_json()["verdict"] == comparison.gate.verdict()


def test_one_hard_regression_fails_the_gate_however_many_units_pass() -> None:
    before = _trials({f"unit{index}": "PPP" for index in range(500)})
    after = before | _trials({"unit7": "FEF"})  # errored counts as failing
    comparison = compare_verdicts("a", before, "b", after, alpha=0.001)
    assert comparison.gate.hard_regressions == ("unit7",)
    assert comparison.regression
    assert comparison.gate.verdict() == "Regression: 1 unit passed in every trial before and fails in every trial now."


def test_fixes_never_offset_a_hard_regression() -> None:
    before = _trials({"broken": "PP", **{f"fixed{index}": "FF" for index in range(10)}})
    after = _trials({"broken": "FF", **{f"fixed{index}": "PP" for index in range(10)}})
    comparison = compare_verdicts("a", before, "b", after)
    assert comparison.gate.hard_fixes == tuple(f"fixed{index}" for index in range(10))
    assert comparison.regression and comparison.gate.hard_regressions == ("broken",)
    assert len(compare_verdicts("b", after, "a", before).gate.hard_regressions) == 10  # the other way round


def test_a_unit_that_becomes_flaky_is_left_to_the_significance_test() -> None:
    before = _trials({"steady": "PPP", "wobbly": "PPP"})
    after = _trials({"steady": "PPP", "wobbly": "FFP"})  # still passes once: not a hard regression
    comparison = compare_verdicts("a", before, "b", after)
    gate = comparison.gate
    assert gate.hard_regressions == () and gate.flaky_units == 1
    assert (gate.flaky.regressions, gate.flaky.fixes) == (2, 0) and gate.p_value == pytest.approx(0.5)
    assert not comparison.regression
    assert gate.verdict() == (
        "No regression: no unit went from passing every trial to failing every trial, and the flaky units' "
        "changes are not significant (2 trials regressed, 0 fixed; McNemar exact p = 0.5 ≥ alpha 0.05)."
    )


def test_the_flaky_example_of_the_docs() -> None:
    before = _trials({"s@2.0s": "PPF", "t@4.0s": "PPP"})
    after = _trials({"s@2.0s": "FPP", "t@4.0s": "FFP"})
    assert compare_verdicts("a", before, "b", after).gate.verdict() == (
        "No regression: no unit went from passing every trial to failing every trial, and the flaky units' "
        "changes are not significant (3 trials regressed, 1 fixed; McNemar exact p = 0.625 ≥ alpha 0.05)."
    )
    assert compare_verdicts("a", before, "b", after | _trials({"t@4.0s": "FFF"})).gate.hard_regressions == ("t@4.0s",)


def test_many_flaky_units_regressing_together_fail_the_gate() -> None:
    before = _trials({f"flaky{index}": "PPF" for index in range(10)})
    after = _trials({f"flaky{index}": "FPF" for index in range(10)})  # trial 1 flips in all ten
    comparison = compare_verdicts("a", before, "b", after)
    gate = comparison.gate
    assert gate.hard_regressions == () and gate.flaky_units == 10
    assert (gate.flaky.regressions, gate.flaky.fixes) == (10, 0) and gate.p_value == pytest.approx(2 / 1024)
    assert comparison.regression
    assert gate.verdict().startswith("Regression: no unit went from passing every trial to failing every trial, but flaky units regressed")


def test_flaky_flips_both_ways_are_not_a_regression() -> None:
    before = _trials({"flaky": "PFP", "other": "PPF"})
    after = _trials({"flaky": "FPP", "other": "PFP"})
    comparison = compare_verdicts("a", before, "b", after)
    assert (comparison.gate.flaky.regressions, comparison.gate.flaky.fixes) == (2, 2)
    assert not comparison.regression


def test_unchanged_runs_say_nothing_changed() -> None:
    runs = _trials({"a": "PP", "b": "FF"})
    gate = compare_verdicts("a", runs, "b", runs).gate
    assert not gate.failed
    assert gate.verdict() == "No regression: no unit went from passing every trial to failing every trial, and no flaky unit changed."


def test_skipped_trials_and_one_sided_units_take_no_part() -> None:
    before = _trials({"partly_skipped": "PS", "only_before": "P", "all_skipped": "SS"})
    after = _trials({"partly_skipped": "FS", "only_after": "F", "all_skipped": "FF"})
    gate = compare_verdicts("a", before, "b", after).gate
    assert gate.hard_regressions == ("partly_skipped",)  # its judged trials: passed before, failed now
    assert gate.flaky_units == 0


def test_trial_subject_strips_only_a_numeric_trial_suffix() -> None:
    assert trial_subject("clip/number/3@0.3s#2") == "clip/number/3@0.3s"
    assert trial_subject("baseline/orders/status#1") == "baseline/orders/status"
    assert trial_subject("release-notes-v1/deterministic") == "release-notes-v1/deterministic"
    assert trial_subject("case#draft") == "case#draft"
    assert trial_subject("#3") == "#3"
