"""The four-way verdict of `assay runs compare`: which evidence decides, and what each case comes to."""

from __future__ import annotations

import pytest

from assay.core.run_diff import compare_verdicts, trial_subject


def _trials(outcomes: dict[str, str]) -> dict[str, str]:
    """{"unit": "PPF"} -> {"unit#1": "passed", "unit#2": "passed", "unit#3": "failed"}."""
    verdicts = {"P": "passed", "F": "failed", "E": "errored", "S": "skipped"}
    return {f"{unit}#{trial}": verdicts[mark] for unit, marks in outcomes.items() for trial, mark in enumerate(marks, 1)}


def _history(units: dict[str, str]) -> dict[str, tuple[int, int, int]]:
    """{"unit": "PPPPF"} -> (trials, failed, runs) over five one-trial runs."""
    return {unit: (len(marks), marks.count("F"), len(marks)) for unit, marks in units.items()}


def test_without_history_four_single_trial_flips_in_sixteen_units_are_inconclusive_and_say_what_would_decide() -> None:
    before = {f"case-{index:02d}": "passed" for index in range(15)} | {"case-15": "failed"}
    after = before | {f"case-{index:02d}": "failed" for index in range(4)}
    comparison = compare_verdicts("before", before, "after", after)
    assert round(comparison.before_pass_rate, 3) == 0.938 and round(comparison.after_pass_rate, 3) == 0.688
    assert comparison.test.p_value == pytest.approx(0.125)  # McNemar: not significant
    assert comparison.verdict == "inconclusive" and not comparison.regression
    run = comparison.judgement.run
    [short] = run.tests
    assert short.family == "short-history" and short.p_value == pytest.approx(0.125)
    assert run.units_needed is not None and run.units_needed > 16
    assert comparison.sentence().startswith("Inconclusive: the pass rate moved -25.0 points")
    assert f"about {run.units_needed:,} paired units" in comparison.sentence()
    document = comparison.to_json()
    assert document["verdict"] == "inconclusive" and document["sentence"] == comparison.sentence()
    assert document["regression"] is False


def test_in_a_deterministic_suite_one_flip_is_a_regression() -> None:
    before = {f"case-{index:02d}": "passed" for index in range(16)}
    after = before | {"case-03": "failed"}
    comparison = compare_verdicts("a", before, "b", after, deterministic=frozenset(before))
    assert comparison.verdict == "regressed"
    deciding = comparison.judgement.run.deciding
    assert deciding.family == "stable-pass" and deciding.flips == ("case-03",) and deciding.expected == 0.0
    assert comparison.sentence().startswith("Regressed: 1 unit that passed every trial of its history fails now")


def test_units_whose_repeated_trials_all_agreed_are_stable_so_one_flip_regresses() -> None:
    before = _trials({f"unit{index}": "PPPPP" for index in range(500)})  # (five trials make a clean unit stable)
    after = before | _trials({"unit7": "FEFPP"})  # errored counts as failing
    comparison = compare_verdicts("a", before, "b", after)
    assert comparison.verdict == "regressed"
    assert comparison.judgement.run.deciding.flips == ("unit7",)


def test_a_flip_of_a_unit_stable_in_its_history_regresses_a_suite_that_never_flakes() -> None:
    before = {f"u{index}": "passed" for index in range(200)}
    after = before | {"u5": "failed"}
    history = _history({f"u{index}": "P" * 10 for index in range(200)})
    comparison = compare_verdicts("a", before, "b", after, history=history, history_runs=10)
    assert comparison.verdict == "regressed" and comparison.history_runs == 10
    assert comparison.judgement.run.deciding.p_value < 0.01


def test_one_flip_in_a_suite_full_of_flaky_units_is_named_but_not_significant_alone() -> None:
    flaky = {f"f{index}": "PFPFFPPFP" + "PF"[index % 2] for index in range(100)}  # half of them passed last
    stable = {f"s{index}": "P" * 10 for index in range(400)}
    history = _history(flaky | stable)
    before = {unit: "passed" if marks[-1] == "P" else "failed" for unit, marks in (flaky | stable).items()}
    after = before | {f"f{index}": "PF"[(index + 1) % 2] == "P" and "passed" or "failed" for index in range(100)}
    after = after | {"s3": "failed"}
    comparison = compare_verdicts("a", before, "b", after, history=history, history_runs=10)
    stable_test = next(test for test in comparison.judgement.run.tests if test.family == "stable-pass")
    assert stable_test.flips == ("s3",) and 0.05 < stable_test.expected < 0.5
    assert stable_test.p_value > 0.05 and comparison.verdict != "regressed"
    two = compare_verdicts("a", before, "b", after | {"s4": "failed", "s5": "failed"}, history=history)
    assert two.verdict == "regressed"  # three stable units failing at once is not chance here


def test_flaky_units_regressing_together_regress_as_a_group() -> None:
    history = _history({f"f{index}": "PFPPFPFPPF" for index in range(80)})  # pass 60% of the time
    before = {f"f{index}": "passed" if index % 5 else "failed" for index in range(80)}
    after = {f"f{index}": "failed" if index % 5 else "passed" for index in range(80)}  # 64 of 80 fail now
    comparison = compare_verdicts("a", before, "b", after, history=history, history_runs=10)
    assert comparison.verdict == "regressed"
    assert comparison.judgement.run.deciding.family == "flaky"


def test_an_unmoved_suite_is_unchanged_by_equivalence_and_a_small_noisy_one_is_inconclusive() -> None:
    # 59 units are the fewest whose not changing at all shows ±5 points at 0.05 (fewer: see test_verdict_statistics)
    runs = _trials({f"u{index}": "PP" for index in range(58)} | {"b": "FF"})
    same = compare_verdicts("a", runs, "b", runs)
    assert same.verdict == "unchanged"
    assert same.judgement.run.equivalence_p < 0.05
    assert same.sentence().startswith("Unchanged: the pass rate moved +0.0 points")
    before = {"a": "passed", "b": "failed", "c": "passed", "d": "failed", "e": "passed"}
    after = {"a": "failed", "b": "passed", "c": "passed", "d": "failed", "e": "passed"}
    noisy = compare_verdicts("a", before, "b", after)
    assert noisy.verdict == "inconclusive" and noisy.judgement.run.units_needed > 5


@pytest.mark.parametrize("units", [1, 2, 10, 58])
def test_a_few_units_that_did_not_change_are_inconclusive_not_unchanged_unless_deterministic(units) -> None:
    """One unit that passed in both runs was `Unchanged: … within ±5 points (TOST p < 1e-12)`: no spread made the
    equivalence test's p 0. Had the pass rate moved 5 points, 58 units would all stay put with chance 0.051."""
    same = {f"u{index}": "passed" for index in range(units)}
    comparison = compare_verdicts("a", same, "b", same)
    assert comparison.verdict == "inconclusive"
    assert comparison.judgement.run.equivalence_p == pytest.approx(0.95**units)
    assert comparison.judgement.run.units_needed == 59
    assert "about 59 paired units" in comparison.sentence() and "p < 1e-12" not in comparison.sentence()
    failing = {unit: "failed" for unit in same}
    assert compare_verdicts("a", failing, "b", failing).verdict == "inconclusive"
    deterministic = compare_verdicts("a", same, "b", same, deterministic=frozenset(same))
    assert deterministic.verdict == "unchanged"  # a kind whose verdicts cannot vary by chance did not change


def test_fixes_of_units_that_always_failed_are_an_improvement_and_regressions_outweigh_them() -> None:
    history = _history({f"u{index}": "F" * 10 for index in range(10)} | {f"p{index}": "P" * 10 for index in range(90)})
    before = {f"u{index}": "failed" for index in range(10)} | {f"p{index}": "passed" for index in range(90)}
    fixed = before | {f"u{index}": "passed" for index in range(10)}
    improved = compare_verdicts("a", before, "b", fixed, history=history)
    assert improved.verdict == "improved" and improved.judgement.run.deciding.family == "stable-fail"
    both = compare_verdicts("a", before, "b", fixed | {"p1": "failed", "p2": "failed"}, history=history)
    assert both.verdict == "regressed"  # fixes never offset a regression


def test_groups_get_their_own_verdicts_corrected_together() -> None:
    history = _history({f"g{group}/u{index}": "P" * 10 for group in range(5) for index in range(60)})
    before = {unit: "passed" for unit in history}
    after = before | {f"g2/u{index}": "failed" for index in range(6)}
    comparison = compare_verdicts("a", before, "b", after, history=history, history_runs=10,
                                  groups={unit: unit.split("/")[0] for unit in history})
    verdicts = {name: group.verdict for name, group in comparison.judgement.groups.items()}
    assert verdicts["g2"] == "regressed" and list(verdicts) == ["g0", "g1", "g2", "g3", "g4"]
    assert all(verdict == "unchanged" for name, verdict in verdicts.items() if name != "g2")
    tests = [test for group in comparison.judgement.groups.values() for test in group.tests]
    assert all(test.adjusted_p >= test.p_value for test in tests)


def test_pass_at_k_and_pass_hat_k_are_reported_for_units_with_several_trials() -> None:
    before = _trials({"a": "PPF", "b": "PPP", "c": "FFF"})
    after = _trials({"a": "PFF", "b": "PPP", "c": "FFP"})
    pass_k = compare_verdicts("x", before, "y", after).judgement.run.pass_k
    assert pass_k["k"] == [1, 2, 3]
    assert pass_k["before_pass_at_k"][0]["value"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert pass_k["after_pass_hat_k"][2]["value"] == pytest.approx(1 / 3)  # only b passes all three


def test_skipped_trials_and_one_sided_units_take_no_part() -> None:
    before = _trials({"partly_skipped": "PS", "only_before": "P", "all_skipped": "SS"})
    after = _trials({"partly_skipped": "FS", "only_after": "F", "all_skipped": "FF"})
    comparison = compare_verdicts("a", before, "b", after)
    assert comparison.judgement.run.paired_units == 1  # partly_skipped: passed before, failed now
    assert comparison.units["new"] == ["only_after#1"] and comparison.units["removed"] == ["only_before#1"]


def test_trial_subject_strips_only_a_numeric_trial_suffix() -> None:
    assert trial_subject("clip/number/3@0.3s#2") == "clip/number/3@0.3s"
    assert trial_subject("baseline/orders/status#1") == "baseline/orders/status"
    assert trial_subject("release-notes-v1/deterministic") == "release-notes-v1/deterministic"
    assert trial_subject("case#draft") == "case#draft"
    assert trial_subject("#3") == "#3"
