"""Run-to-run comparison: pair two runs' units by identity, say what changed, and decide the regression gate.

A unit counts as passing when `passed`, failing when `failed` or `errored`; skipped and ignored
units are listed but take no part in the pass rates, the tests or the gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.core.gates import pass_rate
from assay.core.record import FAILING_VERDICTS
from assay.core.stats import PairedCounts, PairedTest, mcnemar_exact, paired_test

__all__ = [
    "CHANGE_KINDS", "RegressionGate", "RunComparison", "compare_verdicts", "pass_rate_of", "regression_gate", "trial_subject",
]

CHANGE_KINDS = ("regressions", "fixes", "still_failing", "new", "removed", "changed_other")


def pass_rate_of(verdicts: Mapping[str, str]) -> float | None:
    passed = failing = 0
    for verdict in verdicts.values():
        if verdict == "passed":
            passed += 1
        elif verdict in FAILING_VERDICTS:
            failing += 1
    return pass_rate(passed, failing, when_empty=None)


def trial_subject(unit_id: str) -> str:
    """The unit a trial belongs to: its id without the trailing `#<n>` (video trial, agent attempt).

    Ids without such a suffix (doc units) are units with a single trial.
    """
    head, mark, tail = unit_id.rpartition("#")
    return head if mark and head and tail.isdigit() else unit_id


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


@dataclass(frozen=True)
class RegressionGate:
    """What `--fail-on-regression` decides, and the one sentence that says so (CLI and viewer alike).

    A unit whose judged trials all passed before and all fail now is a hard regression: it fails
    the gate on its own, however small the suite, since a unit that was reliable both times did
    not flip by chance. Units whose trials disagree within a run (flaky ones) can flip by chance,
    so for them McNemar's exact test on their paired trials decides. Fixes never offset a hard
    regression.
    """

    hard_regressions: tuple[str, ...]  # units, in run order
    hard_fixes: tuple[str, ...]
    flaky_units: int  # units judged in both runs whose trials disagree in either run
    flaky: PairedCounts  # the paired trials of those units
    p_value: float  # exact two-sided McNemar on flaky.regressions vs flaky.fixes
    alpha: float

    @property
    def flaky_regression(self) -> bool:
        return self.flaky.regressions > self.flaky.fixes and self.p_value < self.alpha

    @property
    def failed(self) -> bool:
        return bool(self.hard_regressions) or self.flaky_regression

    def verdict(self) -> str:
        hard = len(self.hard_regressions)
        figures = (
            f"{_plural(self.flaky.regressions, 'trial', 'trials')} regressed, {self.flaky.fixes} fixed; "
            f"McNemar exact p = {self.p_value:.3g} {'<' if self.p_value < self.alpha else '≥'} alpha {self.alpha:g}"
        )
        if hard:
            text = f"Regression: {_plural(hard, 'unit', 'units')} passed in every trial before and "
            text += "fails in every trial now" if hard == 1 else "fail in every trial now"
            return text + (f"; flaky units regressed too ({figures})." if self.flaky_regression else ".")
        if self.flaky_regression:
            return f"Regression: no unit went from passing every trial to failing every trial, but flaky units regressed ({figures})."
        if self.flaky.regressions or self.flaky.fixes:
            return (
                "No regression: no unit went from passing every trial to failing every trial, "
                f"and the flaky units' changes are not significant ({figures})."
            )
        return "No regression: no unit went from passing every trial to failing every trial, and no flaky unit changed."

    def to_json(self, *, unit_limit: int | None = None) -> dict[str, Any]:
        def listed(ids: tuple[str, ...]) -> list[str]:
            return list(ids if unit_limit is None else ids[:unit_limit])

        return {
            "failed": self.failed,
            "verdict": self.verdict(),
            "hard_regressions": listed(self.hard_regressions),
            "hard_regression_count": len(self.hard_regressions),
            "hard_fixes": listed(self.hard_fixes),
            "hard_fix_count": len(self.hard_fixes),
            "flaky_units": self.flaky_units,
            "flaky_regressions": self.flaky.regressions,
            "flaky_fixes": self.flaky.fixes,
            "flaky_p_value": self.p_value,
            "flaky_regression": self.flaky_regression,
            "alpha": self.alpha,
        }


def _trial_tallies(verdicts: Mapping[str, str]) -> dict[str, list[int]]:
    """unit -> [passing trials, failing trials], in first-seen order; skipped/ignored trials not counted."""
    tallies: dict[str, list[int]] = {}
    for unit_id, verdict in verdicts.items():
        if verdict == "passed":
            tallies.setdefault(trial_subject(unit_id), [0, 0])[0] += 1
        elif verdict in FAILING_VERDICTS:
            tallies.setdefault(trial_subject(unit_id), [0, 0])[1] += 1
    return tallies


def regression_gate(
    before: Mapping[str, str], after: Mapping[str, str], units: Mapping[str, list[str]], both_passed: list[str], *, alpha: float
) -> RegressionGate:
    """The gate over two runs, given their trial-level classification (`units` by change kind)."""
    before_tallies, after_tallies = _trial_tallies(before), _trial_tallies(after)
    hard_regressions: list[str] = []
    hard_fixes: list[str] = []
    flaky: set[str] = set()
    for subject, (passed_before, failed_before) in before_tallies.items():
        tally = after_tallies.get(subject)
        if tally is None:
            continue
        passed_after, failed_after = tally
        if (passed_before and failed_before) or (passed_after and failed_after):
            flaky.add(subject)
        elif passed_before and failed_after:
            hard_regressions.append(subject)
        elif failed_before and passed_after:
            hard_fixes.append(subject)

    def among_flaky(ids: list[str]) -> int:
        return sum(1 for unit_id in ids if trial_subject(unit_id) in flaky) if flaky else 0

    counts = PairedCounts(
        among_flaky(both_passed), among_flaky(units["regressions"]), among_flaky(units["fixes"]),
        among_flaky(units["still_failing"]),
    )
    p_value, _ = mcnemar_exact(counts.regressions, counts.fixes)
    return RegressionGate(tuple(hard_regressions), tuple(hard_fixes), len(flaky), counts, p_value, alpha)


@dataclass(frozen=True)
class RunComparison:
    before: str
    after: str
    counts: PairedCounts
    test: PairedTest
    before_pass_rate: float | None
    after_pass_rate: float | None
    alpha: float
    gate: RegressionGate
    units: dict[str, list[str]] = field(default_factory=dict)  # change kind -> unit ids, in run order
    unchanged_passing: int = 0

    @property
    def pass_rate_difference(self) -> float | None:
        if self.before_pass_rate is None or self.after_pass_rate is None:
            return None
        return self.after_pass_rate - self.before_pass_rate

    @property
    def regression(self) -> bool:
        """The verdict of `--fail-on-regression` (see `RegressionGate`)."""
        return self.gate.failed

    def to_json(self, *, unit_limit: int | None = None) -> dict[str, Any]:
        return {
            "before": self.before,
            "after": self.after,
            "before_pass_rate": self.before_pass_rate,
            "after_pass_rate": self.after_pass_rate,
            "pass_rate_difference": self.pass_rate_difference,
            "paired": {
                "units": self.counts.total,
                "both_passed": self.counts.both_passed,
                "regressions": self.counts.regressions,
                "fixes": self.counts.fixes,
                "both_failed": self.counts.both_failed,
                "difference": self.counts.difference,
            },
            "test": self.test.to_json(),
            "alpha": self.alpha,
            "regression": self.regression,
            "verdict": self.gate.verdict(),
            "gate": self.gate.to_json(unit_limit=unit_limit),
            "counts": {kind: len(self.units.get(kind, [])) for kind in CHANGE_KINDS},
            "units": {kind: ids[:unit_limit] if unit_limit is not None else ids for kind, ids in self.units.items()},
        }


def compare_verdicts(
    before_id: str,
    before: Mapping[str, str],
    after_id: str,
    after: Mapping[str, str],
    *,
    alpha: float = 0.05,
    confidence: float = 0.95,
    seed: int = 0,
) -> RunComparison:
    """Pair `before` and `after` (unit id -> verdict) and classify every unit."""
    units: dict[str, list[str]] = {kind: [] for kind in CHANGE_KINDS}
    regressions, fixes, still_failing, changed_other = (
        units["regressions"], units["fixes"], units["still_failing"], units["changed_other"],
    )
    both_passed: list[str] = []
    for unit_id, old in before.items():
        new = after.get(unit_id)
        if new is None:
            units["removed"].append(unit_id)
            continue
        old_passing, new_passing = old == "passed", new == "passed"
        old_failing, new_failing = old in FAILING_VERDICTS, new in FAILING_VERDICTS
        if old_passing and new_passing:
            both_passed.append(unit_id)
        elif old_passing and new_failing:
            regressions.append(unit_id)
        elif old_failing and new_passing:
            fixes.append(unit_id)
        elif old_failing and new_failing:
            still_failing.append(unit_id)
        elif old != new:  # to or from skipped/ignored: shown, not tested
            changed_other.append(unit_id)
    units["new"] = [unit_id for unit_id in after if unit_id not in before]
    counts = PairedCounts(len(both_passed), len(regressions), len(fixes), len(still_failing))
    return RunComparison(
        before=before_id,
        after=after_id,
        counts=counts,
        test=paired_test(counts, confidence=confidence, seed=seed),
        before_pass_rate=pass_rate_of(before),
        after_pass_rate=pass_rate_of(after),
        alpha=alpha,
        gate=regression_gate(before, after, units, both_passed, alpha=alpha),
        units=units,
        unchanged_passing=len(both_passed),
    )
