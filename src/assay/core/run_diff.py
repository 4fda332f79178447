"""Run-to-run comparison: pair two runs' units by identity, say what changed, and decide the regression gate.

A unit counts as passing when `passed`, failing when `failed` or `errored`; skipped and ignored
units are listed but take no part in the pass rates, the tests or the gate.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.core.gates import pass_rate
from assay.core.history.model import Tally
from assay.core.history.verdict import REGRESSED, Cohort, Judgement, VerdictSettings, judge_comparison
from assay.core.record import FAILING_VERDICTS
from assay.core.stats import PairedCounts, PairedTest, paired_test

__all__ = [
    "CHANGE_KINDS", "EVERY_SUBJECT", "RunComparison", "cohorts_of_rows", "compare_verdicts", "group_at", "judged_comparison",
    "pair_by_unit", "pair_changes", "pass_rate_of", "trial_subject", "unit_evidence",
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


def _trial_tallies(verdicts: Mapping[str, str]) -> dict[str, list[int]]:
    """unit -> [passing trials, failing trials], in first-seen order; skipped/ignored trials not counted."""
    tallies: dict[str, list[int]] = {}
    for unit_id, verdict in verdicts.items():
        if verdict == "passed":
            tallies.setdefault(trial_subject(unit_id), [0, 0])[0] += 1
        elif verdict in FAILING_VERDICTS:
            tallies.setdefault(trial_subject(unit_id), [0, 0])[1] += 1
    return tallies


def group_at(group: str, depth: int) -> str:
    """A group path cut to its first `depth` parts (0: the whole run is one group)."""
    if depth <= 0:
        return ""
    return "/".join(group.split("/", depth)[:depth])


Tallies = Mapping[str, tuple[str, int, int]]  # subject -> (group, trials passed, trials failed or errored)


def tallies_of(verdicts: Mapping[str, str], groups: Mapping[str, str] | None = None) -> dict[str, tuple[str, int, int]]:
    """Trial verdicts tallied per subject (its group from `groups`, else the subject itself)."""
    return {
        subject: ((groups or {}).get(subject, subject), passed, failed)
        for subject, (passed, failed) in _trial_tallies(verdicts).items()
    }


def unit_evidence(
    before: Tallies, after: Tallies, *, history: Mapping[str, tuple[int, int, int]] | None = None,
    group_depth: int = 1, deterministic: frozenset[str] = frozenset(),
) -> list[Cohort]:
    """What the verdict weighs for each unit of either run — its trials in both, and its history
    (subject -> (trials, failed, runs) over the earlier runs; the earlier run alone when there is none)
    — with units of the same evidence gathered into one cohort."""
    rows = []
    none, absent = (0, 0, 0), (None, None)
    for subject in dict.fromkeys([*before, *after]):
        old, new = before.get(subject), after.get(subject)
        past = history.get(subject, none)[:2] if history is not None else absent
        rows.append((subject, (new or old)[0], *(old[1:] if old else absent), *(new[1:] if new else absent), *past))  # type: ignore[index]
    return cohorts_of_rows(rows, group_depth=group_depth, deterministic=deterministic)


class _Everything:
    """A container of every subject: the runs of a kind whose verdicts cannot vary by chance."""

    def __contains__(self, _: object) -> bool:
        return True


EVERY_SUBJECT: Any = _Everything()

# subject, group, passed and failed before (None, None: not in the earlier run), the same after, trials
# and failed in its history (None, None: no history but the earlier run)
Evidence = tuple[Any, ...]


def cohorts_of_rows(rows: Iterable[Evidence], *, group_depth: int = 1, deterministic: Container[str] = frozenset()) -> list[Cohort]:
    """Cohorts from flat evidence rows (see `Evidence`), in the order given: units of the same
    evidence gathered into one."""
    cut: dict[str, str] = {}
    grouped: dict[tuple[Any, ...], list[str]] = {}
    for row in rows:
        subject, group = row[0], row[1]
        shown = cut.get(group)
        if shown is None:
            shown = cut[group] = group_at(group, group_depth)
        key = (shown, row[2:], subject in deterministic)
        members = grouped.get(key)
        if members is None:
            grouped[key] = [subject]
        else:
            members.append(subject)
    cohorts = []
    for (group, (old_passed, old_failed, new_passed, new_failed, trials, failed), fixed), members in grouped.items():
        old_tally = Tally(old_passed + old_failed, old_failed) if old_passed is not None else None
        new_tally = Tally(new_passed + new_failed, new_failed) if new_passed is not None else None
        history_tally = Tally(trials, failed) if trials is not None else (old_tally or Tally(0, 0))
        cohorts.append(Cohort(tuple(members), group, old_tally, new_tally, history_tally, fixed))
    return cohorts


@dataclass(frozen=True)
class RunComparison:
    before: str
    after: str
    counts: PairedCounts
    test: PairedTest
    before_pass_rate: float | None
    after_pass_rate: float | None
    alpha: float
    judgement: Judgement
    units: dict[str, list[str]] = field(default_factory=dict)  # change kind -> unit ids, in run order
    unchanged_passing: int = 0
    history_runs: int = 1  # runs of history the verdict weighed (the earlier run included)
    # (new, removed) units the verdict does not weigh: those (`trial_subject`) judged in one run only. A new trial
    # of a unit judged in both (`--attempts 2` after 1) is weighed. None: every new and removed id.
    unweighed: tuple[int, int] | None = None

    @property
    def pass_rate_difference(self) -> float | None:
        if self.before_pass_rate is None or self.after_pass_rate is None:
            return None
        return self.after_pass_rate - self.before_pass_rate

    @property
    def verdict(self) -> str:
        """regressed, improved, unchanged or inconclusive (see `core.history.verdict`)."""
        return self.judgement.run.verdict

    @property
    def regression(self) -> bool:
        """What `--fail-on-regression` fails on."""
        return self.verdict == REGRESSED

    def sentence(self) -> str:
        """The verdict's sentence; when units are new or removed, it says it covers the paired ones only (the
        pass rates above it count every unit, so the two differences may disagree)."""
        text = self.judgement.run.sentence()
        counts = self.unweighed or (len(self.units.get("new", [])), len(self.units.get("removed", [])))
        unpaired = [f"{count:,} {kind} unit{'' if count == 1 else 's'}"
                    for kind, count in zip(("new", "removed"), counts, strict=True) if count]
        if unpaired and not self.counts.total and not self.judgement.run.paired_units:
            # No unit is in both runs (two kinds, two projects, ids renamed, a run of none): "it covers the 0 paired
            # units only" would leave the reader with nothing to do.
            if not all(counts):
                empty, other = (self.after, self.before) if counts[1] else (self.before, self.after)
                return (f"Inconclusive: {empty} has no unit judged, so there is nothing to compare with {other}'s "
                        f"{sum(counts):,} unit{'' if sum(counts) == 1 else 's'}. `assay runs show {empty}` says what it "
                        "ran; compare a run that judged units.")
            return (f"Inconclusive: the runs share no unit ({' and '.join(unpaired)}), so there is no change to weigh. "
                    "Compare two runs of one suite (`assay runs compare latest` takes the run of the same kind and "
                    "project before the latest).")
        if unpaired:
            verb = "counts" if len(unpaired) == 1 and sum(counts) == 1 else "count"
            # The units the verdict weighs (a unit's trials are one), as its own sentence counts them.
            covered = self.judgement.run.paired_units
            text += (f" It covers the {covered:,} paired unit{'' if covered == 1 else 's'} only: {' and '.join(unpaired)} "
                     f"{verb} in the pass rates but not in it.")
        return text

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
            "verdict": self.verdict,
            "sentence": self.sentence(),
            "history_runs": self.history_runs,
            "judgement": self.judgement.to_json(group_limit=unit_limit),
            # What the text's "paired units" line counts, still passing included (it lists no units).
            "counts": {**{kind: len(self.units.get(kind, [])) for kind in CHANGE_KINDS[:3]},
                       "still_passing": self.counts.both_passed,
                       **{kind: len(self.units.get(kind, [])) for kind in CHANGE_KINDS[3:]}},
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
    settings: VerdictSettings | None = None,
    history: Mapping[str, tuple[int, int, int]] | None = None,
    history_runs: int = 1,
    groups: Mapping[str, str] | None = None,
    group_depth: int = 1,
    deterministic: frozenset[str] = frozenset(),
    tallies: tuple[Tallies, Tallies] | None = None,
    by_unit: bool = False,
) -> RunComparison:
    """Pair `before` and `after` (unit id -> verdict), classify every unit, and judge the change with
    whatever history there is (`history`: subject -> its trials over the earlier runs, the before run
    included: (trials, failed, runs); without it the before run is the only history). `tallies`, each
    run's per-subject (group, passed, failed) when the store has them, saves recounting the verdicts.
    `by_unit`: a unit one run names without trials pairs with each of the other run's trials of it
    (`pair_by_unit`); otherwise ids pair only with the same id."""
    if by_unit:
        units, counts = pair_changes(*pair_by_unit(before, after))
    else:
        units, counts = pair_changes(((unit_id, old, after.get(unit_id)) for unit_id, old in before.items()),
                                     [unit_id for unit_id in after if unit_id not in before])
    cohorts = unit_evidence(*(tallies or (tallies_of(before, groups), tallies_of(after, groups))), history=history,
                            group_depth=group_depth, deterministic=deterministic)
    return judged_comparison(
        before_id, after_id, units, counts, (pass_rate_of(before), pass_rate_of(after)), cohorts,
        settings or VerdictSettings(alpha=alpha, confidence=confidence, seed=seed),
        history_runs=history_runs if history is not None else 1,
    )


def pairs_trials_with_units(before: Mapping[str, str], after: Mapping[str, str]) -> bool:
    """Whether `pair_by_unit` pairs a trial of one run (`france#1`) with a unit the other names without trials
    (`france`), which equal ids do not pair."""
    return any(unit_id not in other and trial_subject(unit_id) != unit_id and trial_subject(unit_id) in other
               for run, other in ((before, after), (after, before)) for unit_id in run)


def pair_by_unit(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """The pairs of `before` and `after` as the verdict weighs them, in `pair_changes`' form (each of `before`'s
    ids with its verdicts before and after, or None after; then `after`'s ids with no partner).

    An id pairs with the same id. Failing that, a trial (`france#2`) pairs with the other run's unit of that
    name when that run names it without trials (`france`, as DeepEval does): each trial of it pairs with that
    one verdict, whichever run has the trials. A pair is listed under the trial's id."""
    trials: dict[str, list[str]] = {}  # `after`'s trials, by their unit
    for unit_id in after:
        subject = trial_subject(unit_id)
        if subject != unit_id:
            trials.setdefault(subject, []).append(unit_id)
    pairs: list[tuple[str, str, str | None]] = []
    taken: set[str] = set()
    for unit_id, old in before.items():
        subject = trial_subject(unit_id)
        if unit_id in after:
            partners = [unit_id]
        elif subject != unit_id and subject in after:  # a trial of a unit `after` names bare
            pairs.append((unit_id, old, after[subject]))
            taken.add(subject)
            continue
        else:  # a unit named bare, and `after`'s trials of it (those `before` does not name itself)
            partners = [trial for trial in trials.get(unit_id, ()) if trial not in before] if subject == unit_id else []
        pairs.extend((partner, old, after[partner]) for partner in partners)
        taken.update(partners)
        if not partners:
            pairs.append((unit_id, old, None))
    return pairs, [unit_id for unit_id in after if unit_id not in taken]


def pair_changes(pairs: Iterable[tuple[str, str, str | None]], new_units: list[str], *,
                 paired_total: int | None = None) -> tuple[dict[str, list[str]], PairedCounts]:
    """Each unit of the earlier run by what happened to it — (unit id, verdict before, verdict after or
    None), in run order — with the later run's new units. `pairs` may leave out units that passed in
    both: `paired_total`, how many units both runs have, counts them."""
    units: dict[str, list[str]] = {kind: [] for kind in CHANGE_KINDS}
    regressions, fixes, still_failing, changed_other, removed = (
        units["regressions"], units["fixes"], units["still_failing"], units["changed_other"], units["removed"],
    )
    both_passed = paired = 0
    for unit_id, old, new in pairs:
        if new is None:
            removed.append(unit_id)
            continue
        paired += 1
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
    units["new"] = new_units
    if paired_total is not None:
        both_passed += paired_total - paired
    return units, PairedCounts(both_passed, len(regressions), len(fixes), len(still_failing))


def judged_comparison(
    before_id: str, after_id: str, units: dict[str, list[str]], counts: PairedCounts,
    pass_rates: tuple[float | None, float | None], cohorts: list[Cohort], settings: VerdictSettings, *,
    history_runs: int = 1,
) -> RunComparison:
    """The comparison of two paired runs: the paired test of their counts (at `settings`' confidence and
    seed) and the verdict on the cohorts."""
    return RunComparison(
        before=before_id,
        after=after_id,
        counts=counts,
        test=paired_test(counts, confidence=settings.confidence, seed=settings.seed),
        before_pass_rate=pass_rates[0],
        after_pass_rate=pass_rates[1],
        alpha=settings.alpha,
        judgement=judge_comparison(cohorts, settings),
        units=units,
        unchanged_passing=counts.both_passed,
        history_runs=history_runs,
        unweighed=_unweighed(units, cohorts),
    )


def _unweighed(units: Mapping[str, list[str]], cohorts: Iterable[Cohort]) -> tuple[int, int] | None:
    """How many new and removed units (`trial_subject`: a unit's trials are one, as the verdict counts them)
    the verdict does not weigh (one judged in both runs)."""
    if not units.get("new") and not units.get("removed"):
        return None
    weighed = {member for cohort in cohorts if cohort.paired for member in cohort.members}
    return tuple(len({trial_subject(unit_id) for unit_id in units.get(kind, [])} - weighed)  # type: ignore[return-value]
                 for kind in ("new", "removed"))
