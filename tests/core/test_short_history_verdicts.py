"""Verdicts with a short history keep their error rate: a stable unit's chance of flipping is predicted from the part
of its history the suite's tallies pin down (its history less one trial), and a flaky unit is tested against its own
history only once that history is long enough to say how flaky it is (`min_flaky_history`); before, with three runs
of history, the gate called about 9% of pure-noise pairs regressed at alpha 0.05 (docs/benchmarks.md)."""

from __future__ import annotations

from collections import Counter

import numpy
import pytest
from scipy.stats import binom

from assay.core.history.model import Tally, estimate_failure_rates_counted
from assay.core.history.verdict import UnitEvidence, VerdictSettings, judge_comparison


def _evidence(past: numpy.ndarray, after: numpy.ndarray) -> list[UnitEvidence]:
    """One unit per row of `past` (its runs' passes, the before run last) and its pass now, one trial a run."""
    runs = past.shape[1]
    return [UnitEvidence(f"u{index}", f"g{index % 10}", Tally(1, 1 - int(past[index, -1])), Tally(1, 1 - int(after[index])),
                         Tally(runs, runs - int(past[index].sum())), history_runs=runs) for index in range(len(after))]


def test_a_stable_units_chance_of_flipping_is_predicted_from_its_history_less_one_trial() -> None:
    clean = numpy.ones((150, 6), dtype=int)  # 150 units that passed all 6 runs
    flaky = numpy.tile([1, 0, 1, 0, 1, 0], (50, 1))
    past = numpy.vstack([clean, flaky])
    after = numpy.ones(200, dtype=int)
    after[:3] = 0  # three of the clean units fail now
    run = judge_comparison(_evidence(past, after), VerdictSettings()).run
    [stable] = [test for test in run.tests if test.family == "stable-pass"]
    prior = estimate_failure_rates_counted([(Tally(6, 0), 150), (Tally(6, 3), 50)])
    grid, weights = numpy.asarray(prior.grid), numpy.asarray(prior.weights)
    # The oracle: the posterior predictive after 5 clean trials (not 6), from scipy's binomial pmf.
    posterior = weights * binom.pmf(0, 5, grid)
    chance = float(posterior @ grid / posterior.sum())
    assert stable.units == 150 and stable.observed == 3
    assert stable.expected == pytest.approx(150 * chance, rel=1e-9)
    longer = float((weights * binom.pmf(0, 6, grid)) @ grid / (weights * binom.pmf(0, 6, grid)).sum())
    assert chance > longer  # (what the whole history predicted: smaller, and unpinned by 6-trial tallies)


def test_a_unit_with_a_short_history_is_judged_by_the_sign_test() -> None:
    """A clean history counts from 5 trials (3 before), a flaky one from 10 (any length before)."""
    settings = VerdictSettings()
    assert (settings.min_history, settings.min_flaky_history) == (5, 10)
    assert settings.to_json()["min_history"] == 5 and settings.to_json()["min_flaky_history"] == 10

    def family(failed: int, trials: int) -> str:
        unit = UnitEvidence("u", "g", Tally(1, 0), Tally(1, 1), Tally(trials, failed))
        return unit.family(settings.min_history, settings.min_flaky_history)

    assert [family(1, 3), family(3, 9), family(3, 10)] == ["short", "short", "flaky"]
    assert [family(0, 4), family(0, 5), family(4, 4), family(5, 5)] == ["short", "stable", "short", "stable"]


def test_pure_noise_with_three_runs_of_history_is_seldom_called_a_change() -> None:
    """Known truth: every unit flaky to its own degree (pass rates spread over 0..1), nothing changed, three runs of
    history. 150 seeded pairs of 200 units: the gate called 14 of them regressed and 12 improved before; at alpha
    0.05 a level-keeping gate calls about 7 or fewer either way."""
    rng = numpy.random.default_rng(2026)
    verdicts: Counter[str] = Counter()
    for _ in range(150):
        rates = rng.uniform(0.0, 1.0, 200)
        past = rng.binomial(1, rates[:, None], size=(200, 3))
        verdicts[judge_comparison(_evidence(past, rng.binomial(1, rates)), VerdictSettings()).run.verdict] += 1
    assert verdicts["regressed"] <= 7 and verdicts["improved"] <= 7, verdicts
