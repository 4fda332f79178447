from __future__ import annotations

import dataclasses

import pytest

from assay.core.gates import (
    Gate,
    all_passed,
    errors_gate,
    max_count_gate,
    min_pass_rate_gate,
    pass_rate,
)


def test_pass_rate_counts_errors_in_the_denominator():
    assert pass_rate(6, 0, 1) == pytest.approx(6 / 7)
    assert pass_rate(3, 1, 0) == 0.75


def test_pass_rate_is_zero_when_nothing_ran():
    assert pass_rate(0, 0, 0) == 0.0


def test_min_pass_rate_gate_message_uses_one_decimal_percent():
    gate = min_pass_rate_gate("eval_min_pass_rate", 6, 0, 1, 0.99)
    assert gate == Gate("eval_min_pass_rate", False, "85.7% pass rate (gate: >= 99.0%)")


def test_min_pass_rate_gate_passes_at_the_threshold():
    assert min_pass_rate_gate("g", 3, 1, 0, 0.75).passed
    assert not min_pass_rate_gate("g", 3, 1, 0, 0.76).passed


def test_min_pass_rate_gate_fails_without_results_even_at_zero_threshold():
    gate = min_pass_rate_gate("g", 0, 0, 0, 0.0)
    assert gate == Gate("g", False, "0.0% pass rate (gate: >= 0.0%)")


def test_max_count_gate_messages():
    assert max_count_gate("eval_max_failures", 2, 1) == Gate("eval_max_failures", False, "2 failures (gate: <= 1)")
    assert max_count_gate("c_max_failures", 1, 1, prefix="c: ") == Gate(
        "c_max_failures", True, "c: 1 failures (gate: <= 1)"
    )
    assert max_count_gate("x", 0, 0, noun="flaky samples").message == "0 flaky samples (gate: <= 0)"


def test_errors_gate_messages():
    assert errors_gate("adapter_errors", 0, "adapter/comparison errors") == Gate(
        "adapter_errors", True, "no adapter/comparison errors"
    )
    assert errors_gate("adapter_errors", 1, "adapter/comparison errors") == Gate(
        "adapter_errors", False, "1 adapter/comparison errors"
    )


def test_gate_to_json_and_frozen():
    gate = Gate("n", True, "m")
    assert gate.to_json() == {"name": "n", "passed": True, "message": "m"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        gate.passed = False  # type: ignore[misc]


def test_all_passed():
    assert all_passed([])
    assert all_passed([Gate("a", True, "")])
    assert not all_passed([Gate("a", True, ""), Gate("b", False, "")])
