"""How often a unit fails by chance, learned from the whole suite's history (empirical Bayes).

Every unit's history is a tally: trials judged, trials failed. Most suites mix units that never fail
with a few that fail often, which no single Beta prior describes (it would smear the flaky units'
failures over the stable ones and hide real regressions). So the prior is estimated without a shape:
the maximum-likelihood mixing distribution over a grid of failure rates (Kiefer and Wolfowitz's NPMLE,
by EM), mixed with a little of a flat prior so no rate is ever ruled out. A unit's chance of failing
next is then its posterior under that prior: a unit that passed ten times in a suite where flaky units
fail half the time is very unlikely to be one of them, and its flip is evidence.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["FailureRates", "Tally", "estimate_failure_rates", "estimate_failure_rates_counted"]

# Rates from 0 to 1, finer near both ends where stable units live.
_GRID = sorted({0.0, 1.0, *(i / 100 for i in range(1, 100)), 0.001, 0.002, 0.005, 0.999, 0.998, 0.995})
_ITERATIONS = 500


@dataclass(frozen=True, slots=True)
class Tally:
    """A unit's judged trials and how many of them failed (over its history, or in one run)."""

    trials: int
    failed: int

    @property
    def passed(self) -> int:
        return self.trials - self.failed


def _binomial_pmf(successes: int, trials: int, rates):  # vectorised over `rates`
    import numpy

    rates = numpy.asarray(rates, dtype=float)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        log = (
            math.lgamma(trials + 1) - math.lgamma(successes + 1) - math.lgamma(trials - successes + 1)
            + numpy.where(successes > 0, successes * numpy.log(rates), 0.0)
            + numpy.where(trials - successes > 0, (trials - successes) * numpy.log1p(-rates), 0.0)
        )
    return numpy.exp(log)


@dataclass(frozen=True)
class FailureRates:
    """The suite's distribution of per-unit failure rates: weights over `grid`."""

    grid: tuple[float, ...]
    weights: tuple[float, ...]
    _predictions: dict[tuple[int, int, int], list[float]] = field(default_factory=dict, compare=False, repr=False)

    def posterior(self, history: Tally):
        import numpy

        weights = numpy.asarray(self.weights) * _binomial_pmf(history.failed, history.trials, self.grid)
        total = weights.sum()
        return weights / total if total > 0 else numpy.asarray(self.weights)

    def chance_of_failing(self, history: Tally) -> float:
        """The posterior mean failure rate: the chance its next trial fails if nothing changed."""
        import numpy

        return float(self.posterior(history) @ numpy.asarray(self.grid))

    def next_failures(self, history: Tally, trials: int) -> list[float]:
        """P(0, 1, …, `trials` of its next trials fail | its history), if nothing changed (histories
        repeat across a suite, so each distinct one is computed once)."""
        key = (history.trials, history.failed, trials)
        found = self._predictions.get(key)
        if found is None:
            posterior = self.posterior(history)
            found = self._predictions[key] = [
                float(posterior @ _binomial_pmf(failed, trials, self.grid)) for failed in range(trials + 1)
            ]
        return found

    @property
    def flaky_share(self) -> float:
        """The share of units whose failure rate is neither ~0 nor ~1."""
        return float(sum(weight for rate, weight in zip(self.grid, self.weights) if 0.01 <= rate <= 0.99))


def estimate_failure_rates(histories: Iterable[Tally]) -> FailureRates:
    """The NPMLE of the failure-rate distribution behind these tallies, smoothed with a flat prior
    weighing as one more unit."""
    return estimate_failure_rates_counted((tally, 1) for tally in histories)


def estimate_failure_rates_counted(histories: Iterable[tuple[Tally, int]]) -> FailureRates:
    """`estimate_failure_rates` of tallies given with how many units have each (a cohort's), so
    100,000 units cost as much as their few hundred distinct histories."""
    import numpy

    counts: dict[tuple[int, int], int] = {}
    for tally, units_with_it in histories:
        if tally.trials > 0:
            key = (tally.trials, tally.failed)
            counts[key] = counts.get(key, 0) + units_with_it
    grid = numpy.asarray(_GRID)
    flat = numpy.full(len(grid), 1.0 / len(grid))
    units = sum(counts.values())
    if not units:
        return FailureRates(tuple(_GRID), tuple(flat))
    keys = list(counts)
    multiplicity = numpy.asarray([counts[key] for key in keys], dtype=float)
    likelihood = numpy.vstack([_binomial_pmf(failed, trials, grid) for trials, failed in keys])
    weights = flat.copy()
    for _ in range(_ITERATIONS):
        mixture = likelihood @ weights
        updated = weights * ((multiplicity / numpy.maximum(mixture, 1e-300)) @ likelihood) / units
        if numpy.abs(updated - weights).max() < 1e-10:
            weights = updated
            break
        weights = updated
    smoothing = 1.0 / (units + 1)
    weights = (1.0 - smoothing) * weights + smoothing * flat
    return FailureRates(tuple(_GRID), tuple(float(weight) for weight in weights / weights.sum()))


def tallies_by_unit(rows: Iterable[tuple[str, int, int]]) -> dict[str, Tally]:
    """(unit, trials, failed) rows summed per unit."""
    totals: dict[str, list[int]] = {}
    for unit, trials, failed in rows:
        entry = totals.setdefault(unit, [0, 0])
        entry[0] += trials
        entry[1] += failed
    return {unit: Tally(trials, failed) for unit, (trials, failed) in totals.items()}


def as_tallies(mapping: Mapping[str, tuple[int, int]]) -> dict[str, Tally]:
    return {unit: Tally(trials, failed) for unit, (trials, failed) in mapping.items()}
