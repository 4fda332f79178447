"""How often each regression gate is wrong, on generated run pairs whose truth is known.

`python benchmarks/gate_error_rates.py [--pairs 1000] [--units 500] [--history 10]` prints one table per
scenario: for assay's four-way verdict (with the store's history, and without any), the rule assay used
before it (every pass→fail flip of a unit that passed all its trials is a hard regression; McNemar on the
flaky ones), an unpaired two-proportion z-test (lm-evaluation-harness's comparator) and "the two runs'
95% confidence intervals do not overlap" (what people do by hand with Inspect's intervals), the share of
pairs each calls regressed / improved / unchanged / inconclusive. Every method sees the same pairs.

Scenarios (one trial per unit unless said):
* noise — 20% of units flaky (pass with p = 0.5), the rest always pass; nothing changed.
* broken — the same suite, 10 stable units now always fail.
* diffuse — every unit's pass probability drops by 5 points (1 and 3 trials).
* spread — every unit flaky to its own degree (pass probabilities spread evenly over 0..1); nothing changed.
  With a short history (`--history 2`: three runs, the before run included) the suite's failure-rate
  distribution is known only loosely, which is where a gate that trusts it too much fails on noise.

`--scenarios noise,spread` runs only those (names as printed; `diffuse3`, `noise3` and `spread3` have 3 trials).
"""

from __future__ import annotations

import argparse
import math
import time
import zlib
from collections import Counter

import numpy

from assay.core.history.model import Tally
from assay.core.history.verdict import UnitEvidence, VerdictSettings, judge_comparison
from assay.core.run_diff import compare_verdicts
from assay.core.stats import wilson_interval

METHODS = ("assay, with history", "assay, no history", "assay before (hard flips)", "unpaired z-test", "CIs do not overlap")


def generate(rng, scenario: str, units: int, history: int, trials: int):
    """(history passes per unit and run, before passes, after passes) for one pair."""
    rates = rng.uniform(0.0, 1.0, units) if scenario == "spread" else numpy.where(numpy.arange(units) < units // 5, 0.5, 1.0)
    past = rng.binomial(trials, rates[:, None], size=(units, history + 1))
    before = past[:, -1]
    after_rates = rates.copy()
    if scenario == "broken":
        after_rates[units // 5: units // 5 + 10] = 0.0
    elif scenario == "diffuse":
        after_rates = after_rates - 0.05
    after = rng.binomial(trials, after_rates)
    return past, before, after


def assay_verdict(past, before, after, trials: int, with_history: bool) -> str:
    evidence = []
    for index in range(len(before)):
        passed = int(past[index].sum()) if with_history else int(before[index])
        judged = trials * (past.shape[1] if with_history else 1)
        evidence.append(UnitEvidence(
            f"u{index}", f"g{index % 10}", Tally(trials, trials - int(before[index])),
            Tally(trials, trials - int(after[index])), Tally(judged, judged - passed),
        ))
    return judge_comparison(evidence, VerdictSettings()).run.verdict


def previous_rule(before, after, trials: int) -> str:
    before_verdicts, after_verdicts = {}, {}
    for index in range(len(before)):
        for trial in range(trials):
            before_verdicts[f"u{index}#{trial + 1}"] = "passed" if trial < before[index] else "failed"
            after_verdicts[f"u{index}#{trial + 1}"] = "passed" if trial < after[index] else "failed"
    return "regressed" if compare_verdicts("a", before_verdicts, "b", after_verdicts).regression else "unchanged"


def z_test(before, after, trials: int) -> str:
    n = len(before) * trials
    p1, p2 = before.sum() / n, after.sum() / n
    pooled = (before.sum() + after.sum()) / (2 * n)
    spread = math.sqrt(max(pooled * (1 - pooled) * 2 / n, 1e-300))
    z = (p2 - p1) / spread
    p_value = math.erfc(abs(z) / math.sqrt(2))
    return ("regressed" if z < 0 else "improved") if p_value < 0.05 else "unchanged"


def intervals_overlap(before, after, trials: int) -> str:
    n = len(before) * trials
    low1, high1 = wilson_interval(int(before.sum()), n)
    low2, high2 = wilson_interval(int(after.sum()), n)
    if high2 < low1:
        return "regressed"
    if low2 > high1:
        return "improved"
    return "unchanged"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--units", type=int, default=500)
    parser.add_argument("--history", type=int, default=10, help="earlier runs before the 'before' run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scenarios", default="noise,broken,diffuse,diffuse3,spread")
    arguments = parser.parse_args()
    named = {"noise": ("noise", 1), "broken": ("broken", 1), "diffuse": ("diffuse", 1), "diffuse3": ("diffuse", 3),
             "spread": ("spread", 1), "noise3": ("noise", 3), "spread3": ("spread", 3)}
    scenarios = [named[name] for name in arguments.scenarios.split(",")]
    for scenario, trials in scenarios:
        # (crc32, not hash(): a str's hash differs from process to process, and the pairs must not)
        rng = numpy.random.default_rng([arguments.seed, zlib.crc32(scenario.encode()) % 1000, trials])
        tallies = {method: Counter() for method in METHODS}
        started = time.perf_counter()
        for _ in range(arguments.pairs):
            past, before, after = generate(rng, scenario, arguments.units, arguments.history, trials)
            tallies[METHODS[0]][assay_verdict(past, before, after, trials, True)] += 1
            tallies[METHODS[1]][assay_verdict(past, before, after, trials, False)] += 1
            tallies[METHODS[2]][previous_rule(before, after, trials)] += 1
            tallies[METHODS[3]][z_test(before, after, trials)] += 1
            tallies[METHODS[4]][intervals_overlap(before, after, trials)] += 1
        seconds = time.perf_counter() - started
        print(f"\n{scenario}, {trials} trial(s) per unit, {arguments.units} units, {arguments.history} earlier runs, "
              f"{arguments.pairs} pairs ({seconds:.0f} s)")
        print(f"| method | regressed | improved | unchanged | inconclusive |\n|---|---|---|---|---|")
        for method in METHODS:
            counts = tallies[method]
            shares = [f"{100 * counts[name] / arguments.pairs:.1f}%" for name in
                      ("regressed", "improved", "unchanged", "inconclusive")]
            print(f"| {method} | " + " | ".join(shares) + " |")


if __name__ == "__main__":
    main()
