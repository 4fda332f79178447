from __future__ import annotations

from pathlib import Path

import pytest

from assay.video.gates import flaky_gate, stability_rows, summarize_run, summarize_trial, trial_gates
from assay.video.model import (
    Case,
    CompareSpec,
    EvalConfig,
    EvalDirectory,
    LocalVideo,
    Sample,
    SampleResult,
    Selection,
    Target,
    Thresholds,
)

# --- builders ---------------------------------------------------------------------------------


def make_sample(case: str, target: str, index: int, time: float = 0.0) -> Sample:
    return Sample(
        case_name=case,
        target_id=target,
        target_index=0,
        timestamp_s=time,
        tick=int(time * 1e9),
        sample_index=index,
        block_index=1,
        has_expectation=True,
        expected=True,
        field=None,
        compare=CompareSpec(),
        source="at",
    )


def make_target(case: str, target_id: str, sample_count: int = 1) -> Target:
    samples = tuple(make_sample(case, target_id, i, float(i)) for i in range(sample_count))
    return Target(id=target_id, index=0, label=None, config={}, samples=samples)


def make_case(
    name: str,
    targets: dict[str, int],
    thresholds: Thresholds = Thresholds(),
    declared: tuple[str, ...] | None = None,
) -> Case:
    return Case(
        name=name,
        path=Path(f"/evals/cases/{name}.yaml"),
        source_sha256="0" * 64,
        description=None,
        every_s=0.5,
        video=LocalVideo(path=Path("/evals/video.mp4"), display="video.mp4"),
        targets=tuple(make_target(name, target_id, count) for target_id, count in targets.items()),
        thresholds=thresholds,
        declared_target_ids=declared if declared is not None else tuple(targets),
        raw={},
    )


def make_eval(
    *cases: Case, thresholds: Thresholds = Thresholds(), selection: Selection = Selection()
) -> EvalDirectory:
    return EvalDirectory(
        path=Path("/evals"), config=EvalConfig(path=None, thresholds=thresholds), cases=cases, selection=selection
    )


def result(
    status: str,
    case: str = "c",
    target: str = "t",
    index: int = 0,
    duration: float | None = None,
    timing: str | None = None,
) -> SampleResult:
    return SampleResult(
        case=case,
        target=target,
        target_label=None,
        sample_index=index,
        timestamp_s=float(index),
        status=status,
        expected=True,
        observed=None,
        observed_value=None,
        compare_mode=None,
        effective_mode="exact",
        field=None,
        reason="",
        source="at",
        evaluation_duration_seconds=duration,
        evaluation_timing_mode=timing,
    )


def gates_of(results, eval_dir, *, min_pass_rate=None, max_failures=None, min_target_pass_rate=None):
    return trial_gates(
        results,
        eval_dir,
        min_pass_rate=min_pass_rate,
        max_failures=max_failures,
        min_target_pass_rate=min_target_pass_rate,
    )


def names(gates) -> list[str]:
    return [gate.name for gate in gates]


def by_name(gates, name):
    return next(gate for gate in gates if gate.name == name)


# --- trial gates ------------------------------------------------------------------------------


def test_adapter_errors_gate_is_always_first_and_alone_without_thresholds():
    eval_dir = make_eval(make_case("c", {"t": 2}))
    gates = gates_of([result("passed"), result("failed", index=1)], eval_dir)
    assert [gate.to_json() for gate in gates] == [
        {"name": "adapter_errors", "passed": True, "message": "no adapter/comparison errors"}
    ]


def test_adapter_errors_gate_counts_errors():
    eval_dir = make_eval(make_case("c", {"t": 2}))
    gate = gates_of([result("error"), result("error", index=1)], eval_dir)[0]
    assert (gate.passed, gate.message) == (False, "2 adapter/comparison errors")


def test_ignored_results_are_excluded_from_every_gate():
    eval_dir = make_eval(make_case("c", {"t": 2}), thresholds=Thresholds(min_pass_rate=1.0))
    gates = gates_of([result("passed"), result("ignored", index=1)], eval_dir)
    assert by_name(gates, "eval_min_pass_rate").message == "100.0% pass rate (gate: >= 100.0%)"


def test_cli_pass_rate_overrides_config_and_errors_lower_it():
    eval_dir = make_eval(make_case("c", {"t": 2}), thresholds=Thresholds(min_pass_rate=0.1))
    gates = gates_of([result("passed"), result("error", index=1)], eval_dir, min_pass_rate=0.75)
    gate = by_name(gates, "eval_min_pass_rate")
    assert (gate.passed, gate.message) == (False, "50.0% pass rate (gate: >= 75.0%)")


def test_config_pass_rate_used_when_cli_unset():
    eval_dir = make_eval(make_case("c", {"t": 2}), thresholds=Thresholds(min_pass_rate=0.5))
    gates = gates_of([result("passed"), result("failed", index=1)], eval_dir)
    assert by_name(gates, "eval_min_pass_rate").passed


def test_pass_rate_gate_fails_on_zero_results():
    eval_dir = make_eval(make_case("c", {"t": 1}), thresholds=Thresholds(min_pass_rate=0.0))
    gate = by_name(gates_of([result("ignored")], eval_dir), "eval_min_pass_rate")
    assert (gate.passed, gate.message) == (False, "0.0% pass rate (gate: >= 0.0%)")


def test_max_failures_counts_failures_not_errors():
    eval_dir = make_eval(make_case("c", {"t": 3}), thresholds=Thresholds(max_failures=3))
    results = [result("failed"), result("error", index=1), result("error", index=2)]
    gate = by_name(gates_of(results, eval_dir, max_failures=1), "eval_max_failures")
    assert (gate.passed, gate.message) == (True, "1 failures (gate: <= 1)")
    gate = by_name(gates_of([result("failed")] * 4, eval_dir), "eval_max_failures")
    assert (gate.passed, gate.message) == (False, "4 failures (gate: <= 3)")


def test_gate_order_follows_the_spec():
    case = make_case(
        "c", {"a": 1, "b": 1}, thresholds=Thresholds(min_pass_rate=0.5, max_failures=0, per_target={"b": 0.5})
    )
    eval_dir = make_eval(case, thresholds=Thresholds(min_pass_rate=0.5, max_failures=1, per_target={"a": 0.5}))
    gates = gates_of([result("passed", target="a"), result("passed", target="b", index=1)], eval_dir)
    assert names(gates) == [
        "adapter_errors",
        "eval_min_pass_rate",
        "eval_max_failures",
        "eval_a_min_pass_rate",
        "c_min_pass_rate",
        "c_max_failures",
        "c_b_min_pass_rate",
    ]


def test_min_target_pass_rate_replaces_config_per_target_gates_sorted_by_target():
    case = make_case("c", {"zeta": 1, "alpha": 1, "skipped": 1})
    eval_dir = make_eval(case, thresholds=Thresholds(per_target={"zeta": 0.1}))
    results = [
        result("passed", target="zeta"),
        result("failed", target="alpha", index=1),
        result("ignored", target="skipped", index=2),
    ]
    gates = gates_of(results, eval_dir, min_target_pass_rate=0.5)
    assert names(gates) == ["adapter_errors", "all_targets_alpha_min_pass_rate", "all_targets_zeta_min_pass_rate"]
    assert by_name(gates, "all_targets_alpha_min_pass_rate").message == "0.0% pass rate (gate: >= 50.0%)"


def test_all_targets_gate_merges_the_same_target_id_across_cases():
    eval_dir = make_eval(make_case("c1", {"t": 1}), make_case("c2", {"t": 1}))
    results = [result("passed", case="c1"), result("failed", case="c2")]
    gate = by_name(gates_of(results, eval_dir, min_target_pass_rate=0.5), "all_targets_t_min_pass_rate")
    assert gate.message == "50.0% pass rate (gate: >= 50.0%)"


def test_config_per_target_gate_fails_without_results_in_an_unfiltered_run():
    eval_dir = make_eval(make_case("c", {"t": 1}), thresholds=Thresholds(per_target={"ghost": 0.5, "none": None}))
    gates = gates_of([result("passed")], eval_dir)
    assert names(gates) == ["adapter_errors", "eval_ghost_min_pass_rate"]
    assert not by_name(gates, "eval_ghost_min_pass_rate").passed


def test_config_per_target_gate_skipped_when_target_filter_excludes_it():
    eval_dir = make_eval(
        make_case("c", {"a": 1}),
        thresholds=Thresholds(per_target={"a": 0.5, "b": 0.5}),
        selection=Selection(targets=("a",)),
    )
    assert names(gates_of([result("passed", target="a")], eval_dir)) == ["adapter_errors", "eval_a_min_pass_rate"]


def test_config_per_target_gate_kept_for_explicitly_selected_target_without_results():
    eval_dir = make_eval(
        make_case("c", {"a": 1}),
        thresholds=Thresholds(per_target={"a": 0.5}),
        selection=Selection(targets=("a",)),
    )
    gate = by_name(gates_of([result("ignored", target="a")], eval_dir), "eval_a_min_pass_rate")
    assert not gate.passed


def test_config_per_target_gate_skipped_without_results_when_case_filtered():
    eval_dir = make_eval(
        make_case("c", {"a": 1}),
        thresholds=Thresholds(per_target={"a": 0.5, "other": 0.5}),
        selection=Selection(case="c"),
    )
    assert names(gates_of([result("passed", target="a")], eval_dir)) == ["adapter_errors", "eval_a_min_pass_rate"]


def test_config_per_target_gate_skipped_when_time_filter_left_no_samples():
    case = make_case("c", {"a": 1, "b": 0})
    eval_dir = make_eval(
        case,
        thresholds=Thresholds(per_target={"a": 0.5, "b": 0.5}),
        selection=Selection(case="c", targets=("a", "b"), from_time_s=0.0, until_time_s=1.0),
    )
    assert names(gates_of([result("passed", target="a")], eval_dir)) == ["adapter_errors", "eval_a_min_pass_rate"]


def test_time_filter_does_not_skip_target_that_still_has_samples():
    eval_dir = make_eval(
        make_case("c", {"a": 1}),
        thresholds=Thresholds(per_target={"a": 0.5}),
        selection=Selection(case="c", targets=("a",), at_times_s=(0.0,)),
    )
    assert "eval_a_min_pass_rate" in names(gates_of([result("ignored", target="a")], eval_dir))


def test_cli_min_pass_rate_suppresses_case_gates():
    case = make_case("c", {"t": 1}, thresholds=Thresholds(min_pass_rate=1.0, max_failures=0, per_target={"t": 1.0}))
    eval_dir = make_eval(case)
    assert names(gates_of([result("failed")], eval_dir, min_pass_rate=0.0)) == ["adapter_errors", "eval_min_pass_rate"]
    assert names(gates_of([result("failed")], eval_dir, max_failures=5)) == ["adapter_errors", "eval_max_failures"]


def test_config_eval_thresholds_do_not_suppress_case_gates():
    case = make_case("c", {"t": 1}, thresholds=Thresholds(min_pass_rate=1.0))
    eval_dir = make_eval(case, thresholds=Thresholds(min_pass_rate=0.0, max_failures=5))
    gates = gates_of([result("failed")], eval_dir)
    assert names(gates) == ["adapter_errors", "eval_min_pass_rate", "eval_max_failures", "c_min_pass_rate"]
    assert not by_name(gates, "c_min_pass_rate").passed


def test_min_target_pass_rate_does_not_suppress_case_gates():
    case = make_case("c", {"t": 1}, thresholds=Thresholds(max_failures=0))
    gates = gates_of([result("failed")], make_eval(case), min_target_pass_rate=0.0)
    assert names(gates) == ["adapter_errors", "all_targets_t_min_pass_rate", "c_max_failures"]


def test_case_gates_count_only_their_case():
    case_one = make_case("one", {"t": 2}, thresholds=Thresholds(min_pass_rate=1.0, max_failures=0))
    case_two = make_case("two", {"t": 1})
    results = [result("passed", case="one"), result("error", case="one", index=1), result("failed", case="two")]
    gates = gates_of(results, make_eval(case_one, case_two))
    assert by_name(gates, "one_min_pass_rate").message == "50.0% pass rate (gate: >= 100.0%)"
    gate = by_name(gates, "one_max_failures")
    assert (gate.passed, gate.message) == (True, "one: 0 failures (gate: <= 0)")


def test_case_per_target_gate_counts_case_and_target():
    case = make_case("c", {"a": 2, "b": 1}, thresholds=Thresholds(per_target={"a": 0.5}))
    results = [
        result("passed", target="a"),
        result("failed", target="a", index=1),
        result("failed", target="b", index=2),
    ]
    gate = by_name(gates_of(results, make_eval(case)), "c_a_min_pass_rate")
    assert (gate.passed, gate.message) == (True, "50.0% pass rate (gate: >= 50.0%)")


def test_undeclared_case_target_yields_a_failing_empty_gate():
    case = make_case("case", {"t": 1}, thresholds=Thresholds(per_target={"typo": 0.5}))
    gate = by_name(gates_of([result("passed", case="case")], make_eval(case)), "case_typo_min_pass_rate")
    assert (gate.passed, gate.message) == (False, "0.0% pass rate (gate: >= 50.0%)")


def test_undeclared_case_target_gate_survives_a_time_filter():
    case = make_case("case", {"t": 1}, thresholds=Thresholds(per_target={"typo": 0.5}))
    eval_dir = make_eval(case, selection=Selection(case="case", at_times_s=(0.0,)))
    assert "case_typo_min_pass_rate" in names(gates_of([result("passed", case="case")], eval_dir))


def test_case_target_gate_skipped_when_time_filter_emptied_declared_target():
    case = make_case("c", {"a": 1, "b": 0}, thresholds=Thresholds(per_target={"a": 0.5, "b": 0.5}))
    eval_dir = make_eval(case, selection=Selection(case="c", from_time_s=0.0, until_time_s=0.5))
    assert names(gates_of([result("passed", target="a")], eval_dir)) == ["adapter_errors", "c_a_min_pass_rate"]


def test_case_target_gate_skipped_when_target_filter_excludes_it():
    case = make_case("c", {"a": 1}, thresholds=Thresholds(per_target={"a": 0.5, "b": 0.5}), declared=("a", "b"))
    eval_dir = make_eval(case, selection=Selection(targets=("a",)))
    assert names(gates_of([result("passed", target="a")], eval_dir)) == ["adapter_errors", "c_a_min_pass_rate"]


def test_case_gates_follow_loaded_case_order():
    first = make_case("b_case", {"t": 1}, thresholds=Thresholds(max_failures=0))
    second = make_case("a_case", {"t": 1}, thresholds=Thresholds(max_failures=0))
    gates = gates_of([result("passed", case="b_case"), result("passed", case="a_case")], make_eval(first, second))
    assert names(gates) == ["adapter_errors", "b_case_max_failures", "a_case_max_failures"]


# --- stability --------------------------------------------------------------------------------


def test_stability_rows_match_samples_by_position():
    trials = [
        [result("passed"), result("failed", index=1)],
        [result("failed"), result("failed", index=1)],
    ]
    rows = stability_rows(trials)
    assert rows[0] == {
        "case": "c",
        "target": "t",
        "target_label": None,
        "sample_index": 0,
        "timestamp_s": 0.0,
        "expected": True,
        "source": "at",
        "statuses": ["passed", "failed"],
        "evaluated": 2,
        "passed": 1,
        "failed": 1,
        "errors": 0,
        "pass_rate": 0.5,
        "ignored": False,
        "consistently_passed": False,
        "consistently_failed": False,
        "flaky": True,
    }
    assert rows[1]["consistently_failed"] and not rows[1]["flaky"]
    assert rows[1]["pass_rate"] == 0.0


def test_passed_then_error_is_flaky_but_error_twice_is_not():
    rows = stability_rows([[result("passed"), result("error", index=1)], [result("error"), result("error", index=1)]])
    assert [row["flaky"] for row in rows] == [True, False]
    assert rows[1]["errors"] == 2 and not rows[1]["consistently_failed"]


def test_all_ignored_sample_is_never_flaky_and_has_no_pass_rate():
    rows = stability_rows([[result("ignored")], [result("ignored")]])
    assert rows[0]["ignored"] is True
    assert rows[0]["flaky"] is False
    assert rows[0]["pass_rate"] is None
    assert rows[0]["evaluated"] == 0


def test_consistently_passed_requires_every_trial():
    rows = stability_rows([[result("passed")], [result("passed")], [result("passed")]])
    assert rows[0]["consistently_passed"] and rows[0]["pass_rate"] == 1.0


def test_stability_rejects_trials_of_different_length():
    with pytest.raises(ValueError):
        stability_rows([[result("passed")], []])


def test_flaky_gate_message_is_singular_only_for_one():
    assert flaky_gate(0, 1).to_json() == {
        "name": "max_flaky_samples",
        "passed": True,
        "message": "0 flaky samples (gate: <= 1)",
    }
    assert flaky_gate(1, 1).message == "1 flaky sample (gate: <= 1)"
    gate = flaky_gate(2, 1)
    assert (gate.passed, gate.message) == (False, "2 flaky samples (gate: <= 1)")


# --- summaries --------------------------------------------------------------------------------


def test_trial_summary_excludes_ignored_results():
    results = [
        result("passed", duration=0.2, timing="individual"),
        result("failed", index=1, duration=0.4, timing="individual"),
        result("error", index=2),
        result("ignored", index=3, duration=9.0, timing="batch_amortized"),
    ]
    summary = summarize_trial(results, 1.5)
    assert summary == {
        "evaluated": 3,
        "passed": 1,
        "failed": 1,
        "errors": 1,
        "ignored": 1,
        "pass_rate": pytest.approx(1 / 3),
        "duration_seconds": 1.5,
        "evaluation_timing_mode": "individual",
        "average_evaluation_seconds_per_sample": pytest.approx(0.3),
        "throughput_samples_per_second": 2.0,
    }


def test_trial_summary_timing_mode_mixed_and_empty():
    mixed = summarize_trial([result("passed", timing="individual"), result("passed", timing="batch_amortized")], 0.0)
    assert mixed["evaluation_timing_mode"] == "mixed"
    assert mixed["throughput_samples_per_second"] == 0.0
    empty = summarize_trial([result("ignored")], 1.0)
    assert empty["evaluation_timing_mode"] is None
    assert empty["average_evaluation_seconds_per_sample"] is None
    assert empty["pass_rate"] == 0.0


def test_run_summary_counts_samples_once_and_attempts_per_trial():
    first = result("passed", duration=0.1, timing="individual")
    second = result("failed", duration=0.3, timing="batch_amortized")
    trials = [
        [first, result("failed", index=1), result("ignored", index=2)],
        [second, result("failed", index=1), result("ignored", index=2)],
        [result("error"), result("failed", index=1), result("ignored", index=2)],
    ]
    summary = summarize_run(trials, [True, False, True], 3.0)
    assert summary == {
        "trials": 3,
        "successful_trials": 2,
        "evaluated_samples": 2,
        "ignored_samples": 1,
        "evaluated_attempts": 6,
        "passed_attempts": 1,
        "failed_attempts": 4,
        "error_attempts": 1,
        "attempt_pass_rate": pytest.approx(1 / 6),
        "minimum_trial_pass_rate": 0.0,
        "mean_trial_pass_rate": pytest.approx(1 / 6),
        "maximum_trial_pass_rate": 0.5,
        "consistently_passed_samples": 0,
        "consistently_failed_samples": 1,
        "flaky_samples": 1,
        "error_samples": 1,
        "duration_seconds": 3.0,
        "evaluation_timing_mode": "mixed",
        "average_evaluation_seconds_per_attempt": pytest.approx(0.2),
        "throughput_attempts_per_second": 2.0,
    }


def test_run_summary_of_no_trials_is_all_zero():
    summary = summarize_run([], [], 0.0)
    assert summary["minimum_trial_pass_rate"] == 0.0
    assert summary["mean_trial_pass_rate"] == 0.0
    assert summary["throughput_attempts_per_second"] == 0.0
    assert summary["evaluated_samples"] == 0
