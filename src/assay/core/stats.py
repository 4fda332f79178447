"""Paired statistics for run-to-run comparison: McNemar's test and a bootstrap interval on the delta.

Pure functions over counts of paired outcomes, so they are cheap for any run size and easy to pin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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
    if counts.total == 0:
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
