"""McNemar's test and the paired bootstrap interval, pinned against hand-computed values."""

from __future__ import annotations

import math

import pytest

from assay.core.stats import (
    PairedCounts,
    binomial_cdf_half,
    bootstrap_difference_interval,
    mcnemar_chi_square,
    mcnemar_exact,
    paired_test,
)


def test_binomial_tail_matches_hand_sums() -> None:
    # P(X <= 1), X ~ Bin(6, 1/2) = (1 + 6) / 64
    assert binomial_cdf_half(1, 6) == pytest.approx(7 / 64, rel=1e-12)
    # P(X <= 2), X ~ Bin(10, 1/2) = (1 + 10 + 45) / 1024
    assert binomial_cdf_half(2, 10) == pytest.approx(56 / 1024, rel=1e-12)
    assert binomial_cdf_half(-1, 5) == 0.0
    assert binomial_cdf_half(5, 5) == 1.0


def test_exact_mcnemar_is_twice_the_smaller_tail() -> None:
    exact, mid = mcnemar_exact(1, 5)
    assert exact == pytest.approx(14 / 64, rel=1e-12)
    assert mid == pytest.approx((14 - 6) / 64, rel=1e-12)  # minus the point probability 6/64


def test_exact_mcnemar_with_all_discordance_one_way() -> None:
    exact, mid = mcnemar_exact(10, 0)
    assert exact == pytest.approx(2 / 1024, rel=1e-12)
    assert mid == pytest.approx(1 / 1024, rel=1e-12)


def test_exact_mcnemar_is_symmetric_and_capped_at_one() -> None:
    assert mcnemar_exact(3, 7) == mcnemar_exact(7, 3)
    assert mcnemar_exact(4, 4)[0] == 1.0
    assert mcnemar_exact(0, 0) == (1.0, 1.0)


def test_chi_square_uses_the_continuity_correction() -> None:
    statistic, p_value = mcnemar_chi_square(10, 2)
    assert statistic == pytest.approx(49 / 12)  # (|10 - 2| - 1)^2 / 12
    assert p_value == pytest.approx(math.erfc(math.sqrt(49 / 24)))
    assert p_value == pytest.approx(0.04331, abs=1e-5)


def test_exact_p_stays_accurate_for_large_runs() -> None:
    # 50,000 vs 50,000 discordant pairs: no difference at all.
    assert mcnemar_exact(50_000, 50_000)[0] == 1.0
    # A 1,000-pair imbalance in 100,000 discordant pairs is far past any alpha.
    assert mcnemar_exact(50_500, 49_500)[0] < 0.01


def test_bootstrap_interval_brackets_the_observed_difference() -> None:
    counts = PairedCounts(both_passed=80, regressions=5, fixes=15, both_failed=0)
    low, high = bootstrap_difference_interval(counts, seed=1)
    assert counts.difference == pytest.approx(0.10)
    assert low < 0.10 < high
    assert 0.0 < low and high < 0.25  # 10 more fixes than regressions in 100: clearly positive


def test_bootstrap_interval_is_reproducible_with_a_seed() -> None:
    counts = PairedCounts(40, 7, 3, 10)
    assert bootstrap_difference_interval(counts, seed=3) == bootstrap_difference_interval(counts, seed=3)


def test_bootstrap_interval_of_identical_runs_is_a_point() -> None:
    assert bootstrap_difference_interval(PairedCounts(10, 0, 0, 5)) == (0.0, 0.0)
    assert bootstrap_difference_interval(PairedCounts(0, 0, 0, 0)) == (0.0, 0.0)


def test_paired_test_reports_every_figure() -> None:
    result = paired_test(PairedCounts(90, 1, 5, 4))
    assert result.p_value == pytest.approx(14 / 64)
    assert result.difference == pytest.approx(0.04)
    assert result.to_json()["interval"] == [result.interval_low, result.interval_high]


def test_log_space_tail_agrees_with_exact_integers_past_the_exact_limit() -> None:
    n, k = 1201, 570
    exact = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    assert binomial_cdf_half(k, n) == pytest.approx(exact, rel=1e-9)
