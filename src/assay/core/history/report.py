"""How a comparison, the flaky units and a trend read as text (the CLI prints these lines)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.core.stats import wilson_interval

__all__ = ["FlakyUnit", "TrendPoint", "comparison_lines", "flaky_lines", "trend_lines"]


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _estimate(row: dict[str, Any]) -> str:
    """A pass@k or pass^k row as `83.3% [66.7, 100.0]` (its bootstrap interval, in percent)."""
    low, high = row["interval"]
    return f"{_percent(row['value'])} [{low * 100:.1f}, {high * 100:.1f}]"


def comparison_lines(comparison: Any, limit: int, *, why: str = "", carried: bool = False,
                     judges: Sequence[str] = ()) -> Iterator[str]:
    """The text of `assay runs compare`: what changed, the verdict with its evidence (and `why`, when the
    verdict needs a reason said; `judges`, the lines on the model judges behind the changes), the groups.
    `carried`: a run carried units from earlier runs."""
    test = comparison.test
    difference = comparison.pass_rate_difference
    yield f"Compare {comparison.before} → {comparison.after}"
    yield (f"pass rate {_percent(comparison.before_pass_rate)} → {_percent(comparison.after_pass_rate)}"
           + (f" ({difference * 100:+.1f} points)" if difference is not None else ""))
    counts = comparison.counts
    judgement = comparison.judgement
    families = judgement.families
    # With trials, what is paired (and counted as regressions and fixes) is each trial; the evidence line
    # below counts units (a unit's trials are one), so the head says both when they differ.
    units = sum(families.values())
    if carried and units != counts.total:  # a carried unit pairs, but repeats an earlier verdict: it is not weighed
        paired = f"paired units {counts.total:,} ({units:,} judged in both runs, the others carried, skipped or ignored)"
    elif units and units != counts.total:
        paired = f"paired trials {counts.total:,} ({units:,} units)"
    else:
        paired = f"paired units {counts.total:,}"
    yield (f"{paired}: regressions {counts.regressions:,}, fixes {counts.fixes:,}, "  # (100,000 as the rest writes it)
           f"still failing {counts.both_failed:,}, still passing {counts.both_passed:,}; "
           f"new {len(comparison.units['new']):,}, removed {len(comparison.units['removed']):,}")
    yield (f"all paired trials: McNemar exact p = {test.p_value:.4g} (mid-p {test.mid_p_value:.4g})")
    run = judgement.run
    evidence = (f"evidence: {comparison.history_runs} run(s) of history; paired units stable in it {families.get('stable', 0)}, "
                f"flaky {families.get('flaky', 0)}, with too little history {families.get('short', 0)}")
    # Units judged now whose baseline has no trial of them (carried or skipped there) are weighed against their
    # history too; without this the line read "stable in it 0" above a test of 3 stable units.
    weighed = sum(test.units for test in run.tests if test.family in ("stable-pass", "stable-fail", "flaky"))
    unpaired = weighed - families.get("stable", 0) - families.get("flaky", 0)
    if unpaired > 0:
        evidence += (f"; and {unpaired} unit{'' if unpaired == 1 else 's'} judged now but not in the baseline (carried or "
                     "skipped there), weighed against their history")
    yield evidence
    for family_test in run.tests:
        yield f"  {family_test.describe()}"
    if run.pass_k:
        k = run.pass_k["k"][-1]
        # With their intervals, as results.md says they are reported: pass@k of a dozen units moves by chance too.
        at_k, hat_k = (f"{_estimate(run.pass_k[f'before_{name}'][-1])} → {_estimate(run.pass_k[f'after_{name}'][-1])}"
                       for name in ("pass_at_k", "pass_hat_k"))
        yield f"  pass@{k} {at_k}; pass^{k} {hat_k}"
    yield comparison.sentence()
    if why:
        yield why
    yield from judges
    moved = {name: group for name, group in judgement.groups.items() if group.verdict in ("regressed", "improved")}
    if len(judgement.groups) > 1:
        tally = ", ".join(f"{count} {name}" for name, count in judgement.to_json(group_limit=0)["group_counts"].items() if count)
        yield f"groups: {tally}"
        for name, group in list(moved.items())[:limit]:
            yield f"  {group.verdict.upper()} {name or '(all)'}: {group.sentence()}"
        if limit and len(moved) > limit:  # (as the unit lists below say it)
            yield f"  … {len(moved) - limit} more (--limit, --json)"
    units = comparison.units
    lists = [("Regressions", units["regressions"]), ("Fixes", units["fixes"]), _decided_in_new_trials(comparison),
             ("Still failing", units["still_failing"]), ("New", units["new"]), ("Removed", units["removed"]),
             ("Changed (skipped/ignored)", units["changed_other"])]
    for title, ids in lists:
        if not ids or limit == 0:
            continue
        yield f"{title} ({len(ids)}):"
        for unit_id in ids[:limit]:
            yield f"  {unit_id}"
        if len(ids) > limit:
            yield f"  … {len(ids) - limit} more"


def _decided_in_new_trials(comparison: Any) -> tuple[str, list[str]]:
    """The units a regressed (improved) verdict rests on that no list above names: their failing (passing) trials
    are new in the candidate (`--attempts 3` after runs of one attempt), so they pair with nothing and were listed
    only among the new units. The verdict said "1 unit that passed every trial of its history fails now" and
    named it nowhere (only `--json`'s `decided_by.flips` did)."""
    from assay.core.run_diff import trial_subject

    deciding = comparison.judgement.run.deciding
    if deciding is None or comparison.verdict not in ("regressed", "improved"):
        return "", []
    listed = {trial_subject(unit_id) for kind in ("regressions", "fixes", "still_failing", "removed", "changed_other")
              for unit_id in comparison.units.get(kind, ())}
    title = "Regressions in new trials" if comparison.verdict == "regressed" else "Fixes in new trials"
    return title, [unit for unit in deciding.flips if unit not in listed]


@dataclass(frozen=True, slots=True)
class FlakyUnit:
    """A unit whose verdicts disagree over the runs read: its pass rate with a Wilson interval."""

    unit: str
    group: str
    passed: int
    failed: int
    runs: int
    kind: str = ""

    @property
    def rate(self) -> float:
        return self.passed / (self.passed + self.failed)

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.passed, self.passed + self.failed)

    def to_json(self) -> dict[str, Any]:
        low, high = self.interval
        return {"unit": self.unit, "group": self.group, "kind": self.kind, "passed": self.passed, "failed": self.failed,
                "runs": self.runs, "pass_rate": self.rate, "interval": [low, high], "confidence": 0.95}


def flaky_lines(series: Sequence[tuple[str, Sequence[str], Sequence[FlakyUnit]]], limit: int) -> Iterator[str]:
    for title, run_ids, units in series:
        yield f"{title}: {len(units)} flaky unit(s) over the last {len(run_ids)} run(s)"
        for unit in units[:limit]:
            low, high = unit.interval
            yield (f"  {unit.unit}  pass rate {unit.rate * 100:.0f}% [{low * 100:.0f}, {high * 100:.0f}] "
                   f"({unit.passed} passed, {unit.failed} failed over {unit.runs} run(s))")
        if len(units) > limit:
            yield f"  … {len(units) - limit} more (--limit, --json)"


@dataclass(frozen=True)
class TrendPoint:
    run_id: str
    created_at: str
    passed: int
    failed: int
    flaky_units: Sequence[str] = field(default_factory=tuple)
    units: int | None = None  # the run's units (of the group), judged or not; None: not counted

    @property
    def rate(self) -> float | None:
        judged = self.passed + self.failed
        return self.passed / judged if judged else None

    def to_json(self) -> dict[str, Any]:
        low, high = wilson_interval(self.passed, self.passed + self.failed)
        document = {"run_id": self.run_id, "created_at": self.created_at, "passed": self.passed, "failed": self.failed,
                    "pass_rate": self.rate, "interval": [low, high] if self.passed + self.failed else None}
        if self.units is not None:
            document["units"] = self.units
        return document


def trend_lines(title: str, points: Sequence[TrendPoint], flaky: Mapping[str, FlakyUnit], *,
                group: str | None = None) -> Iterator[str]:
    yield f"{title}: pass rate over {len(points)} run(s), oldest first (95% Wilson interval)"
    for point in points:
        judged = point.passed + point.failed
        if not judged and point.units == 0:  # a group the run did not have (an eval added since), or an empty run
            yield f"  {point.run_id}     n/a  {'no unit of the group' if group else 'no unit'} in this run"
            continue
        if not judged:  # no interval to show: it would be [0, 100] over 0/0
            yield f"  {point.run_id}     n/a  no unit judged (each was carried from an earlier run, skipped or ignored)"
            continue
        low, high = wilson_interval(point.passed, judged)
        bar = "█" * round((point.rate or 0) * 20)
        yield (f"  {point.run_id}  {_percent(point.rate):>6} [{low * 100:5.1f}, {high * 100:5.1f}]  {bar:<20} "
               f"{point.passed}/{judged}")
    if flaky:
        yield f"flaky units ({len(flaky)}): " + ", ".join(list(flaky)[:10]) + (" …" if len(flaky) > 10 else "")
