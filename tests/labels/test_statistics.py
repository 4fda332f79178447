"""κ, its bootstrap interval, Spearman's ρ and Krippendorff's α, pinned against their reference
implementations: scikit-learn's `cohen_kappa_score`, scipy's `spearmanr` and percentile `bootstrap`,
and the `krippendorff` package (test dependencies only)."""

from __future__ import annotations

import math

import krippendorff
import numpy
import pytest
from scipy import stats as scipy_stats
from sklearn.metrics import cohen_kappa_score

from assay.core.labels.statistics import (
    cohen_kappa,
    confusion_matrix,
    kappa_from_matrix,
    kappa_interval,
    krippendorff_alpha,
    spearman,
)

RNG = numpy.random.default_rng(20261203)


def _noisy_copy(values, flip, choices):
    return [value if RNG.random() > flip else choices[RNG.integers(len(choices))] for value in values]


@pytest.mark.parametrize("size,flip", [(12, 0.2), (60, 0.35), (400, 0.5), (37, 0.0)])
def test_kappa_equals_scikit_learns_cohen_kappa_score(size, flip):
    human = list(RNG.choice(["pass", "fail"], size=size, p=[0.6, 0.4]))
    judge = _noisy_copy(human, flip, ["pass", "fail"])
    assert cohen_kappa(human, judge) == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)


def test_kappa_over_three_categories_equals_scikit_learn():
    human = list(RNG.choice(["a", "b", "c"], size=200))
    judge = _noisy_copy(human, 0.4, ["a", "b", "c"])
    assert cohen_kappa(human, judge) == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_kappa_is_undefined_when_both_raters_use_one_category():
    assert cohen_kappa(["pass"] * 5, ["pass"] * 5) is None  # scikit-learn answers NaN
    assert math.isnan(cohen_kappa_score(["pass"] * 5, ["pass"] * 5))
    assert kappa_from_matrix([[0, 0], [0, 0]]) is None


def test_confusion_matrix_rows_are_the_first_rater():
    matrix = confusion_matrix(["pass", "pass", "fail"], ["pass", "fail", "fail"], ["pass", "fail"])
    assert matrix.tolist() == [[1, 1], [0, 1]]


def _binary_kappa(a, b, axis=-1):
    """κ of 0/1 ratings along `axis`, written out from the definition (scipy's vectorized statistic)."""
    observed = numpy.mean(a == b, axis=axis)
    first, second = numpy.mean(a, axis=axis), numpy.mean(b, axis=axis)
    expected = first * second + (1 - first) * (1 - second)
    return (observed - expected) / (1 - expected)


def test_binary_kappa_oracle_is_scikit_learns():
    human = RNG.integers(0, 2, size=90)
    judge = numpy.asarray(_noisy_copy(list(human), 0.3, [0, 1]))
    assert _binary_kappa(human, judge) == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)


def test_kappa_interval_agrees_with_scipys_percentile_bootstrap():
    """Both resample items with replacement; the endpoints agree within Monte Carlo error."""
    human = list(RNG.choice([1, 0], size=150, p=[0.55, 0.45]))
    judge = _noisy_copy(human, 0.3, [1, 0])
    matrix = confusion_matrix(human, judge, [1, 0])
    ours = kappa_interval(matrix, resamples=20_000, seed=5)
    theirs = scipy_stats.bootstrap(
        (numpy.asarray(human), numpy.asarray(judge)), _binary_kappa, paired=True, vectorized=True, n_resamples=20_000,
        method="percentile", random_state=numpy.random.default_rng(9),
    ).confidence_interval
    assert ours[0] == pytest.approx(theirs.low, abs=0.02)
    assert ours[1] == pytest.approx(theirs.high, abs=0.02)
    assert ours[0] < kappa_from_matrix(matrix) < ours[1]


def test_kappa_interval_is_reproducible_and_empty_without_items():
    matrix = [[20, 4], [6, 10]]
    assert kappa_interval(matrix, seed=1) == kappa_interval(matrix, seed=1)
    assert kappa_interval([[0, 0], [0, 0]]) is None
    assert kappa_interval([[9, 0], [0, 0]]) is None  # every resample has one category only


@pytest.mark.parametrize("ties", [False, True])
def test_spearman_equals_scipy(ties):
    human = RNG.integers(1, 6, size=80) if ties else RNG.permutation(80)
    judge = human + RNG.normal(0, 1.5, size=80)
    if ties:
        judge = numpy.round(judge / 2)
    assert spearman(list(human), list(judge)) == pytest.approx(scipy_stats.spearmanr(human, judge).statistic, abs=1e-12)


def test_spearman_is_undefined_for_a_constant_rater_or_one_item():
    assert spearman([1, 2, 3], [4, 4, 4]) is None
    assert spearman([1], [2]) is None


def _reliability(units):
    """The krippendorff package's layout: one row per rater, NaN where missing."""
    return numpy.array([[numpy.nan if value is None else value for value in unit] for unit in units], dtype=float).T


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_equals_the_krippendorff_package_with_missing_values(level):
    truth = RNG.integers(1, 6, size=60)
    units = []
    for value in truth:
        row = []
        for _ in range(4):  # four raters, each missing a fifth of the items
            if RNG.random() < 0.2:
                row.append(None)
            else:
                row.append(int(numpy.clip(value + RNG.integers(-1, 2) * (RNG.random() < 0.4), 1, 5)))
        units.append(row)
    domain = [1, 2, 3, 4, 5]
    expected = krippendorff.alpha(reliability_data=_reliability(units), level_of_measurement=level, value_domain=domain)
    assert krippendorff_alpha(units, level, domain) == pytest.approx(expected, abs=1e-12)


def test_interval_alpha_with_continuous_values_equals_the_package():
    human = RNG.integers(1, 6, size=40).astype(float)
    judge = numpy.clip(human + RNG.normal(0, 0.8, size=40), 1, 5)
    units = [[float(a), float(b)] for a, b in zip(human, judge)]
    expected = krippendorff.alpha(reliability_data=_reliability(units), level_of_measurement="interval")
    assert krippendorff_alpha(units, "interval") == pytest.approx(expected, abs=1e-12)


def test_nominal_alpha_of_pass_fail_text_equals_the_package():
    human = list(RNG.choice(["pass", "fail"], size=50))
    other = _noisy_copy(human, 0.3, ["pass", "fail"])
    units = [[a, b] for a, b in zip(human, other)]
    data = numpy.array([[1.0 if value == "pass" else 0.0 for value in unit] for unit in units]).T
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert krippendorff_alpha(units, "nominal") == pytest.approx(expected, abs=1e-12)


def test_alpha_needs_two_values_on_some_item_and_two_distinct_values():
    assert krippendorff_alpha([[1, None], [None, 2]], "nominal") is None
    assert krippendorff_alpha([[3, 3], [3, 3]], "ordinal") is None
