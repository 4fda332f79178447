"""Run-to-run comparison: pair two runs' units by identity and say what changed, with paired statistics.

A unit counts as passing when `passed`, failing when `failed` or `errored`; skipped and ignored
units are listed but take no part in the pass rates or the test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.core.record import FAILING_VERDICTS
from assay.core.stats import PairedCounts, PairedTest, paired_test

__all__ = ["CHANGE_KINDS", "RunComparison", "compare_verdicts", "pass_rate_of"]

CHANGE_KINDS = ("regressions", "fixes", "still_failing", "new", "removed", "changed_other")


def pass_rate_of(verdicts: Mapping[str, str]) -> float | None:
    passed = failing = 0
    for verdict in verdicts.values():
        if verdict == "passed":
            passed += 1
        elif verdict in FAILING_VERDICTS:
            failing += 1
    return passed / (passed + failing) if passed + failing else None


@dataclass(frozen=True)
class RunComparison:
    before: str
    after: str
    counts: PairedCounts
    test: PairedTest
    before_pass_rate: float | None
    after_pass_rate: float | None
    alpha: float
    units: dict[str, list[str]] = field(default_factory=dict)  # change kind -> unit ids, in run order
    unchanged_passing: int = 0

    @property
    def pass_rate_difference(self) -> float | None:
        if self.before_pass_rate is None or self.after_pass_rate is None:
            return None
        return self.after_pass_rate - self.before_pass_rate

    @property
    def significant_regression(self) -> bool:
        """More regressions than fixes, and McNemar's exact test rejects "no change" at `alpha`."""
        return self.counts.regressions > self.counts.fixes and self.test.p_value < self.alpha

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
            "significant_regression": self.significant_regression,
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
    both_passed = 0
    for unit_id, old in before.items():
        new = after.get(unit_id)
        if new is None:
            units["removed"].append(unit_id)
            continue
        old_passing, new_passing = old == "passed", new == "passed"
        old_failing, new_failing = old in FAILING_VERDICTS, new in FAILING_VERDICTS
        if old_passing and new_passing:
            both_passed += 1
        elif old_passing and new_failing:
            regressions.append(unit_id)
        elif old_failing and new_passing:
            fixes.append(unit_id)
        elif old_failing and new_failing:
            still_failing.append(unit_id)
        elif old != new:  # to or from skipped/ignored: shown, not tested
            changed_other.append(unit_id)
    units["new"] = [unit_id for unit_id in after if unit_id not in before]
    counts = PairedCounts(both_passed, len(regressions), len(fixes), len(still_failing))
    return RunComparison(
        before=before_id,
        after=after_id,
        counts=counts,
        test=paired_test(counts, confidence=confidence, seed=seed),
        before_pass_rate=pass_rate_of(before),
        after_pass_rate=pass_rate_of(after),
        alpha=alpha,
        units=units,
        unchanged_passing=both_passed,
    )
