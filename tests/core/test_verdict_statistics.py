"""Every statistic behind the four-way verdict, pinned against scipy and statsmodels (test oracles only)
on generated data: exact values where they exist, Monte Carlo agreement where they do not."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy
import pytest

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is a test oracle (the test extra)")
statsmodels = pytest.importorskip("statsmodels", reason="statsmodels is a test oracle (the test extra)")

from statsmodels.stats.multitest import multipletests  # noqa: E402
from statsmodels.stats.power import TTestPower  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402
from statsmodels.stats.weightstats import ttost_paired  # noqa: E402

from assay.core.distributions import t_quantile, t_sf  # noqa: E402
from assay.core.history.model import Tally, estimate_failure_rates  # noqa: E402
from assay.core.stats import (  # noqa: E402
    PairedDifferences,
    cluster_bootstrap_interval,
    holm,
    mean_interval,
    paired_t_test,
    pass_at_k,
    pass_hat_k,
    poisson_binomial_upper_tail,
    sign_test,
    tost_paired,
    unchanged_units_needed,
    units_needed,
    wilson_interval,
)

RNG = numpy.random.default_rng(20261203)


@pytest.mark.parametrize("df", [1, 2, 3.5, 9, 29, 120, 999, 100_000])
def test_student_t_matches_scipy(df):
    for t in (-40, -6, -2.2, -0.4, -1e-7, 0, 1e-7, 0.3, 1.96, 4, 12):
        assert t_sf(t, df) == pytest.approx(scipy_stats.t.sf(t, df), rel=1e-9, abs=1e-15)
    for p in (1e-4, 0.025, 0.2, 0.5, 0.8, 0.975, 0.9999):
        assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), abs=1e-7)


@pytest.mark.parametrize("trials", [1, 2, 7, 40, 500, 12_345])
def test_wilson_interval_matches_statsmodels(trials):
    for successes in sorted({0, 1, trials // 3, trials // 2, trials - 1, trials}):
        for confidence in (0.9, 0.95, 0.99):
            low, high = proportion_confint(successes, trials, alpha=1 - confidence, method="wilson")
            assert wilson_interval(successes, trials, confidence=confidence) == pytest.approx((low, high), abs=1e-12)


def test_holm_matches_statsmodels():
    for size in (1, 2, 5, 40):
        p_values = list(RNG.uniform(0, 0.2, size=size) ** 2)
        assert holm(p_values) == pytest.approx(list(multipletests(p_values, method="holm")[1]), abs=1e-15)
    assert holm([0.01, 0.01, 0.5]) == pytest.approx(list(multipletests([0.01, 0.01, 0.5], method="holm")[1]))


def _paired_samples(units, trials, before_rate, after_rate):
    before = RNG.binomial(trials, before_rate, size=units) / trials
    after = RNG.binomial(trials, after_rate, size=units) / trials
    return before, after


@pytest.mark.parametrize("units,trials,rates", [(12, 1, (0.7, 0.6)), (80, 1, (0.8, 0.8)), (300, 3, (0.9, 0.85)),
                                                (2000, 5, (0.6, 0.62))])
def test_paired_tests_and_intervals_match_scipy_and_statsmodels(units, trials, rates):
    before, after = _paired_samples(units, trials, *rates)
    differences = PairedDifferences(tuple(after - before))
    assert paired_t_test(differences) == pytest.approx(scipy_stats.ttest_rel(after, before).pvalue, rel=1e-9)
    low, high = scipy_stats.t.interval(0.95, units - 1, loc=differences.mean, scale=scipy_stats.sem(after - before))
    assert mean_interval(differences) == pytest.approx((low, high), abs=1e-9)
    for margin in (0.02, 0.05, 0.1):
        p_value, lower, upper = tost_paired(differences, margin)
        expected = ttost_paired(after, before, -margin, margin)
        assert p_value == pytest.approx(expected[0], rel=1e-8)
        assert (lower, upper) == pytest.approx((expected[1][1], expected[2][1]), rel=1e-8)


def test_tost_of_a_suite_that_did_not_move_at_all_is_equivalence_only_with_enough_units():
    """Every difference 0 gave TOST p 0 for any number of units, so one unit that passed twice was `unchanged`
    within ±5 points. Had the true difference been ±margin each unit would change with chance ≥ margin: no unit
    changing is the exact one-sided binomial test of that, and 59 units are the fewest that show it at 0.05."""
    for units in (1, 2, 10, 50, 58, 59, 60, 1000, 100_000):
        for margin in (0.01, 0.05, 0.2):
            expected = scipy_stats.binomtest(0, units, margin, alternative="less").pvalue
            assert tost_paired(PairedDifferences((0.0,) * units), margin) == pytest.approx((expected,) * 3, rel=1e-9,
                                                                                           abs=1e-300)
    fewest = tost_paired(PairedDifferences((0.0,) * 59), 0.05)[0]
    assert tost_paired(PairedDifferences((0.0,) * 58), 0.05)[0] > 0.05 > fewest
    assert unchanged_units_needed(0.05, alpha=0.05) == 59 and unchanged_units_needed(0.0, alpha=0.05) is None
    assert tost_paired(PairedDifferences((0.0,)), 0.05, deterministic=True)[0] == 0.0  # nothing could change by chance
    assert tost_paired(PairedDifferences((-0.2,) * 50), 0.05)[0] == 1.0
    assert tost_paired(PairedDifferences((0.02,)), 0.05)[0] == 1.0  # one unit that moved: no spread to test with


def test_a_t_test_of_one_unit_that_moved_is_undefined_not_p_0():
    """One unit that flipped has no degrees of freedom: scipy's p is NaN; ours was 0 (`t_test_p_value: 0.0`)."""
    for values in ((-1.0,), (0.25,), (-1.0, -1.0, -1.0), (0.0, 0.0), (0.0,)):
        with warnings.catch_warnings(), numpy.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = float(scipy_stats.ttest_1samp(values, 0.0).pvalue)
        ours = paired_t_test(PairedDifferences(values))
        if math.isnan(expected):
            assert ours is None or (ours == 1.0 and not any(values)), values  # 0 of 0 units' change: p 1
        else:
            assert ours == expected, values


@pytest.mark.parametrize("up,down", [(0, 0), (0, 7), (3, 9), (40, 61), (700, 650)])
def test_sign_test_is_the_exact_binomial_test(up, down):
    expected = 1.0 if up + down == 0 else scipy_stats.binomtest(up, up + down, 0.5).pvalue
    assert sign_test(up, down) == pytest.approx(expected, rel=1e-9)


def test_the_cluster_bootstrap_agrees_with_scipys_percentile_bootstrap():
    values = numpy.concatenate([numpy.zeros(400), -numpy.ones(30), numpy.ones(18), numpy.full(52, -1 / 3)])
    ours = cluster_bootstrap_interval(PairedDifferences(tuple(values)), resamples=20_000, seed=3)
    theirs = scipy_stats.bootstrap((values,), numpy.mean, n_resamples=20_000, method="percentile",
                                   random_state=numpy.random.default_rng(4)).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.003)


def test_units_needed_agrees_with_statsmodels_power_solver():
    for effect, spread in ((0.05, 0.3), (0.02, 0.2), (0.1, 0.45), (0.3, 0.5), (0.01, 0.1)):
        theirs = TTestPower().solve_power(effect_size=effect / spread, alpha=0.05, power=0.8, alternative="two-sided")
        ours = units_needed(spread, effect, alpha=0.05, power=0.8)
        assert math.ceil(theirs) <= ours <= math.ceil(theirs) + 1  # a corrected normal approximation


def test_equivalence_units_needed_reaches_the_stated_power_by_simulation():
    spread, margin, effect = 0.3, 0.05, 0.0
    needed = units_needed(spread, effect, alpha=0.05, power=0.8, equivalence_margin=margin)
    shown = 0
    for _ in range(400):
        sample = RNG.normal(effect, spread, size=needed)
        shown += ttost_paired(sample, numpy.zeros(needed), -margin, margin)[0] < 0.05
    assert 0.74 <= shown / 400 <= 0.9


def test_pass_at_k_and_pass_hat_k_match_enumerating_every_draw():
    for trials, passes in ((5, 0), (5, 2), (6, 6), (10, 7)):
        outcomes = [True] * passes + [False] * (trials - passes)
        for k in range(1, trials + 1):
            draws = list(itertools.combinations(outcomes, k))
            assert pass_at_k(trials, passes, k) == pytest.approx(sum(any(d) for d in draws) / len(draws))
            assert pass_hat_k(trials, passes, k) == pytest.approx(sum(all(d) for d in draws) / len(draws))


def test_poisson_binomial_tail_matches_full_convolution_and_the_binomial():
    distributions = [[1 - p, p] for p in RNG.uniform(0, 0.3, size=60)]
    distributions += [list(scipy_stats.binom.pmf(range(4), 3, q)) for q in RNG.uniform(0, 0.5, size=20)]
    full = numpy.array([1.0])
    for distribution in distributions:
        full = numpy.convolve(full, distribution)
    for at_least in (0, 1, 3, 8, 15, 40, 200):
        assert poisson_binomial_upper_tail(distributions, at_least) == pytest.approx(full[at_least:].sum(), abs=1e-12)
    same = [[0.9, 0.1]] * 500
    for at_least in (30, 50, 70):
        assert poisson_binomial_upper_tail(same, at_least) == pytest.approx(scipy_stats.binom.sf(at_least - 1, 500, 0.1),
                                                                             rel=1e-9)


def test_poisson_binomial_tail_of_a_big_suite_is_exact_not_a_normal_approximation():
    """Past 5,000 expected failures the tail was a normal approximation: 0.5021 for 0.5015 at the mean of
    100,000 units, 0.0235 for 0.0237 two deviations up, a quarter low six up — enough to move a p-value
    across alpha."""
    for units, rate in ((100_000, 0.1), (100_000, 0.5), (20_000, 0.3), (100_000, 0.94)):
        mean, spread = units * rate, math.sqrt(units * rate * (1 - rate))
        for deviations in (-3, 0, 1, 2, 3, 6):
            at_least = int(mean + deviations * spread)
            expected = scipy_stats.binom.sf(at_least - 1, units, rate)
            tail = poisson_binomial_upper_tail([[1 - rate, rate]] * units, at_least)
            assert tail == pytest.approx(expected, rel=1e-9)
    # two kinds of unit, one trial and three: the sum's distribution is the convolution of two binomials
    ones = scipy_stats.binom.pmf(numpy.arange(60_001), 60_000, 0.2)
    threes = scipy_stats.binom.pmf(numpy.arange(4), 3, 0.7)
    distribution = ones
    for _ in range(4_000):
        distribution = numpy.convolve(distribution, threes)
    units = [[0.8, 0.2]] * 60_000 + [list(threes)] * 4_000
    for at_least in (20_500, 20_400, 20_600, 20_800):
        assert poisson_binomial_upper_tail(units, at_least) == pytest.approx(distribution[at_least:].sum(), rel=1e-9)


def test_the_failure_rate_prior_is_a_maximum_of_the_likelihood():
    """EM's answer against scipy's optimiser on the same grid: no mixing distribution explains the
    histories better (up to the smoothing that keeps every rate possible)."""
    from scipy.optimize import minimize

    histories = [Tally(10, 0)] * 300 + [Tally(10, int(f)) for f in RNG.binomial(10, 0.4, size=60)] + [Tally(10, 10)] * 20
    prior = estimate_failure_rates(histories)
    grid = numpy.asarray(prior.grid)
    likelihood = numpy.vstack([scipy_stats.binom.pmf(h.failed, h.trials, grid) for h in histories])

    def negative_log_likelihood(weights):
        return -numpy.log(likelihood @ numpy.abs(weights) / numpy.abs(weights).sum() + 1e-300).sum()

    ours = negative_log_likelihood(numpy.asarray(prior.weights))
    start = numpy.full(len(grid), 1 / len(grid))
    theirs = minimize(negative_log_likelihood, start, method="L-BFGS-B", options={"maxiter": 5000}).fun
    assert ours <= theirs + 1.0  # the smoothing costs at most a unit of log likelihood here
    assert prior.chance_of_failing(Tally(10, 0)) < 0.01 < prior.chance_of_failing(Tally(10, 4))
    assert prior.flaky_share == pytest.approx(60 / 380, abs=0.03)


def test_a_units_chance_of_failing_next_is_its_posterior_predictive():
    prior = estimate_failure_rates([Tally(8, 0)] * 50 + [Tally(8, 4)] * 50)
    history = Tally(8, 2)
    posterior = prior.posterior(history)
    expected = [float(posterior @ scipy_stats.binom.pmf(k, 3, numpy.asarray(prior.grid))) for k in range(4)]
    assert prior.next_failures(history, 3) == pytest.approx(expected, abs=1e-12)
    assert math.fsum(prior.next_failures(history, 3)) == pytest.approx(1.0)
