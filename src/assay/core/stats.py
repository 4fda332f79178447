"""Paired statistics for run-to-run comparison: McNemar's test and a bootstrap interval on the delta.

Pure functions over counts of paired outcomes, so they are cheap for any run size and easy to pin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PairedCounts",
    "PairedTest",
    "binomial_cdf_half",
    "bootstrap_difference_interval",
    "mcnemar_chi_square",
    "mcnemar_exact",
    "paired_test",
]


@dataclass(frozen=True, slots=True)
class PairedCounts:
    """Units judged in both runs, by (before, after): pass→pass, pass→fail, fail→pass, fail→fail."""

    both_passed: int
    regressions: int  # passed before, fails after
    fixes: int  # failed before, passes after
    both_failed: int

    @property
    def total(self) -> int:
        return self.both_passed + self.regressions + self.fixes + self.both_failed

    @property
    def difference(self) -> float:
        """Pass rate after minus pass rate before, over the paired units."""
        return (self.fixes - self.regressions) / self.total if self.total else 0.0


@dataclass(frozen=True, slots=True)
class PairedTest:
    p_value: float  # exact two-sided McNemar (binomial on the discordant pairs)
    mid_p_value: float
    chi_square: float  # with continuity correction
    chi_square_p_value: float
    difference: float
    interval_low: float
    interval_high: float
    confidence: float

    def to_json(self) -> dict[str, float]:
        return {
            "p_value": self.p_value,
            "mid_p_value": self.mid_p_value,
            "chi_square": self.chi_square,
            "chi_square_p_value": self.chi_square_p_value,
            "difference": self.difference,
            "interval": [self.interval_low, self.interval_high],
            "confidence": self.confidence,
        }


_EXACT_LIMIT = 1000


def _log_binomial_half(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0)


def binomial_cdf_half(k: int, n: int) -> float:
    """P(X ≤ k) for X ~ Binomial(n, 1/2), summed in log space so n in the hundreds of thousands is fine."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= _EXACT_LIMIT:  # integers: exact to the last bit for the run sizes CI usually compares
        return sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    logs = [_log_binomial_half(n, i) for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(value - top) for value in logs))


def mcnemar_exact(regressions: int, fixes: int) -> tuple[float, float]:
    """(two-sided exact p, two-sided mid-p) for the discordant counts; (1, 1) without discordance."""
    discordant = regressions + fixes
    if discordant == 0:
        return 1.0, 1.0
    smaller = min(regressions, fixes)
    tail = binomial_cdf_half(smaller, discordant)
    exact = min(1.0, 2.0 * tail)
    point = (
        math.comb(discordant, smaller) / 2**discordant
        if discordant <= _EXACT_LIMIT
        else math.exp(_log_binomial_half(discordant, smaller))
    )
    mid = min(1.0, 2.0 * (tail - 0.5 * point))
    return exact, mid


def mcnemar_chi_square(regressions: int, fixes: int) -> tuple[float, float]:
    """(statistic, p) with Edwards' continuity correction, one degree of freedom."""
    discordant = regressions + fixes
    if discordant == 0:
        return 0.0, 1.0
    statistic = max(0.0, abs(regressions - fixes) - 1.0) ** 2 / discordant
    return statistic, math.erfc(math.sqrt(statistic / 2.0))


def bootstrap_difference_interval(
    counts: PairedCounts, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval of the paired pass-rate difference, resampling units with replacement.

    Resampling units is a multinomial draw over the four paired outcomes, so the cost does not
    grow with the run; the seed makes the figure reproducible.
    """
    if counts.regressions == 0 and counts.fixes == 0:  # every resample's difference is 0: nothing to draw
        return 0.0, 0.0
    import numpy

    generator = numpy.random.default_rng(seed)
    probabilities = numpy.array(
        [counts.both_passed, counts.regressions, counts.fixes, counts.both_failed], dtype=float
    ) / counts.total
    draws = generator.multinomial(counts.total, probabilities, size=resamples)
    differences = (draws[:, 2] - draws[:, 1]) / counts.total
    tail = (1.0 - confidence) / 2.0
    low, high = numpy.quantile(differences, [tail, 1.0 - tail])
    return float(low), float(high)


def paired_test(counts: PairedCounts, *, confidence: float = 0.95, seed: int = 0) -> PairedTest:
    exact, mid = mcnemar_exact(counts.regressions, counts.fixes)
    statistic, chi_p = mcnemar_chi_square(counts.regressions, counts.fixes)
    low, high = bootstrap_difference_interval(counts, confidence=confidence, seed=seed)
    return PairedTest(exact, mid, statistic, chi_p, counts.difference, low, high, confidence)


# ---------------------------------------------------------------------------------------------
# Intervals, equivalence, multiplicity and sample size (the four-way verdict's building blocks)


def wilson_interval(successes: int, trials: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a proportion: sensible at 0 and n successes and for small n."""
    if trials <= 0:
        return 0.0, 1.0
    from assay.core.distributions import normal_quantile

    z = normal_quantile(1.0 - (1.0 - confidence) / 2.0)
    rate = successes / trials
    denominator = 1.0 + z * z / trials
    centre = (rate + z * z / (2.0 * trials)) / denominator
    half = z * math.sqrt(rate * (1.0 - rate) / trials + z * z / (4.0 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (family-wise error at most alpha)."""
    order = sorted(range(len(p_values)), key=lambda index: p_values[index])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def sign_test(increases: int, decreases: int) -> float:
    """Two-sided exact sign test on paired changes (McNemar's exact test when each unit has one trial)."""
    return mcnemar_exact(decreases, increases)[0]


@dataclass(frozen=True, slots=True)
class PairedDifferences:
    """Per-unit differences `after − before` of pass fractions (a unit's trials are one cluster)."""

    values: tuple[float, ...]

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return math.fsum(self.values) / len(self.values) if self.values else 0.0

    @property
    def standard_deviation(self) -> float:
        n = len(self.values)
        if n < 2:
            return 0.0
        mean = self.mean
        return math.sqrt(math.fsum((value - mean) ** 2 for value in self.values) / (n - 1))

    @property
    def standard_error(self) -> float:
        return self.standard_deviation / math.sqrt(len(self.values)) if self.values else 0.0


def paired_t_test(differences: PairedDifferences) -> float | None:
    """Two-sided p of a paired t-test that the mean difference is 0: 1 when every difference is 0, 0 when
    several units all moved by the same amount (t is infinite), None for one unit that moved (no degrees
    of freedom: undefined, scipy's NaN)."""
    from assay.core.distributions import t_sf

    n, error = differences.count, differences.standard_error
    if differences.mean == 0.0 and error == 0.0:
        return 1.0
    if n < 2:
        return None
    if error == 0.0:
        return 0.0
    return min(1.0, 2.0 * t_sf(abs(differences.mean) / error, n - 1))


def tost_paired(
    differences: PairedDifferences, margin: float, *, deterministic: bool = False
) -> tuple[float, float, float]:
    """Two one-sided paired t-tests for equivalence within ±margin: (p, p below, p above).

    Equivalence is shown when p < alpha: the mean difference is significantly above −margin and
    significantly below +margin. Without spread the t statistics are 0/0, so:

    * every difference 0, of units whose verdicts cannot vary by chance (`deterministic`): nothing
      changed, and nothing could have by chance — equivalent (p 0);
    * every difference 0 otherwise: a difference lies in [−1, 1], so had the true mean difference
      been ±margin each unit would have changed with chance at least margin, and none changing has
      chance at most (1 − margin)^n — that exact bound is the p-value (at ±5 points and alpha 0.05,
      59 unchanged units show equivalence; one unit, or ten, does not);
    * one unit that changed, or several that all changed by the same amount: no test (p 1) for one,
      the t-tests' limit for several."""
    from assay.core.distributions import t_sf

    n, mean, error = differences.count, differences.mean, differences.standard_error
    if n == 0:
        return 1.0, 1.0, 1.0
    if error == 0.0 and mean == 0.0:
        bound = 0.0 if deterministic else max(0.0, 1.0 - margin) ** n
        return bound, bound, bound
    if n < 2:
        return 1.0, 1.0, 1.0
    if error == 0.0:
        inside = -margin < mean < margin
        return (0.0, 0.0, 0.0) if inside else (1.0, 1.0, 1.0)
    lower = t_sf((mean + margin) / error, n - 1)  # H0: mean ≤ −margin
    upper = t_sf((margin - mean) / error, n - 1)  # H0: mean ≥ +margin
    return max(lower, upper), lower, upper


def mean_interval(differences: PairedDifferences, *, confidence: float = 0.95) -> tuple[float, float]:
    """The t interval of the mean difference."""
    from assay.core.distributions import t_quantile

    n, mean, error = differences.count, differences.mean, differences.standard_error
    if n < 2 or error == 0.0:
        return mean, mean
    half = t_quantile(1.0 - (1.0 - confidence) / 2.0, n - 1) * error
    return mean - half, mean + half


def cluster_bootstrap_interval(
    differences: PairedDifferences, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval of the mean difference, resampling units (each with all its trials).

    Resampling units with replacement is a multinomial draw over the distinct per-unit values, so
    the cost follows how many values differ (a few, for pass fractions), not the run's size."""
    if not differences.values:
        return 0.0, 0.0
    first = differences.values[0]
    if all(value == first for value in differences.values):  # one value (as when nothing changed): no draws
        return float(first), float(first)
    import numpy

    values, counts = numpy.unique(numpy.asarray(differences.values, dtype=float), return_counts=True)
    if len(values) == 1:
        return float(values[0]), float(values[0])
    generator = numpy.random.default_rng(seed)
    draws = generator.multinomial(differences.count, counts / differences.count, size=resamples)
    means = draws @ values / differences.count
    tail = (1.0 - confidence) / 2.0
    low, high = numpy.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def unchanged_units_needed(margin: float, *, alpha: float) -> int | None:
    """Units that, none of them changing, would show equivalence within ±margin (the bound in
    `tost_paired`): the fewest n with (1 − margin)^n < alpha. None at margin 0 (no number could)."""
    if margin <= 0.0:
        return None
    if margin >= 1.0:
        return 1
    return math.floor(math.log(alpha) / math.log1p(-margin)) + 1


def units_needed(standard_deviation: float, effect: float, *, alpha: float, power: float, equivalence_margin: float | None = None) -> int | None:
    """Units (paired) that would decide the comparison at `power`: to detect `effect` as a change
    (two-sided, level alpha) or, with `equivalence_margin`, to show equivalence when the true
    difference is `effect` (TOST). None when no number of units could (an effect at the margin)."""
    from assay.core.distributions import normal_quantile

    if standard_deviation <= 0.0:
        return None
    if equivalence_margin is None:
        if effect == 0.0:
            return None
        critical = normal_quantile(1.0 - alpha / 2.0)
        distance = abs(effect)
    else:
        distance = equivalence_margin - abs(effect)
        if distance <= 0.0:
            return None
        critical = normal_quantile(1.0 - alpha)
    beta = 1.0 - power
    tail = beta / 2.0 if equivalence_margin is not None and effect == 0.0 else beta
    z = critical + normal_quantile(1.0 - tail)
    # Guenther's correction (+ z²/2) brings the normal approximation to the t-test's own n.
    return max(2, math.ceil((z * standard_deviation / distance) ** 2 + critical**2 / 2.0))


def pass_at_k(trials: int, passes: int, k: int) -> float:
    """The chance that at least one of k trials drawn without replacement passed (the unbiased estimator)."""
    if k > trials:
        raise ValueError("k cannot exceed the unit's trials")
    if trials - passes < k:
        return 1.0
    return 1.0 - math.comb(trials - passes, k) / math.comb(trials, k)


def pass_hat_k(trials: int, passes: int, k: int) -> float:
    """pass^k: the chance that all of k trials drawn without replacement passed (reliability)."""
    if k > trials:
        raise ValueError("k cannot exceed the unit's trials")
    return math.comb(passes, k) / math.comb(trials, k)


def poisson_binomial_upper_tail(distributions: list[list[float]], at_least: int) -> float:
    """P(S ≥ at_least) where S is the sum of independent integer variables, each given as its
    probabilities over 0, 1, 2, …. Exact by convolution (a suite's units share a few distinct
    distributions, each raised to its multiplicity by squaring): kept below `at_least` up to
    `_EXACT_TAIL_LIMIT`; past that over the window where the sum has any mass (probabilities below
    1e-40 of the largest are dropped at each step, so the window is some tens of standard deviations
    wide and 100,000 units cost milliseconds)."""
    if at_least <= 0:
        return 1.0
    multiplicity: dict[tuple[float, ...], int] = {}
    for probabilities in distributions:
        key = tuple(probabilities)
        if len(key) > 1 and key[0] != 1.0:
            multiplicity[key] = multiplicity.get(key, 0) + 1
    maximum = sum((len(key) - 1) * count for key, count in multiplicity.items())
    if at_least > maximum:
        return 0.0
    if at_least > _EXACT_TAIL_LIMIT:
        return _windowed_upper_tail(multiplicity, at_least)
    import numpy

    def times(left, right):  # the distribution of a sum, kept below `at_least`
        return numpy.convolve(left, right)[:at_least]

    below = _summed(multiplicity, numpy.ones(1), lambda key: numpy.asarray(key[:at_least], dtype=float), times)
    return float(min(1.0, max(0.0, 1.0 - below.sum())))  # below: P(S = s) for s < at_least


def _summed(multiplicity: dict[tuple[float, ...], int], one: Any, lift: Any, times: Any) -> Any:
    """The distribution of the sum: each distinct distribution (`lift`ed) raised to its multiplicity by
    squaring, the powers multiplied together by `times` (`one` is the sum of nothing)."""
    total = one
    for key, count in multiplicity.items():
        power, base = one, lift(key)
        while count:
            if count & 1:
                power = times(power, base)
            count >>= 1
            if count:
                base = times(base, base)
        total = times(total, power)
    return total


def _windowed_upper_tail(multiplicity: dict[tuple[float, ...], int], at_least: int) -> float:
    """`poisson_binomial_upper_tail` for large sums: each distribution is (first value, probabilities),
    trimmed to where its mass is after every convolution."""
    import numpy

    def trimmed(start: int, probabilities):
        kept = numpy.nonzero(probabilities >= probabilities.max() * 1e-40)[0]
        return start + int(kept[0]), probabilities[kept[0] : kept[-1] + 1]

    def times(left, right):
        return trimmed(left[0] + right[0], numpy.convolve(left[1], right[1]))

    start, probabilities = _summed(
        multiplicity, (0, numpy.ones(1)), lambda key: trimmed(0, numpy.asarray(key, dtype=float)), times
    )
    if at_least <= start:
        return 1.0
    tail = math.fsum(probabilities[at_least - start :]) / math.fsum(probabilities)
    return float(min(1.0, max(0.0, tail)))


_EXACT_TAIL_LIMIT = 5000
