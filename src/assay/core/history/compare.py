"""Two stored runs compared with their history: what `assay runs compare` and the viewer's diff show."""

from __future__ import annotations

from typing import Any

from assay.core.history.store import DEFAULT_HISTORY, compared_evidence, series_before
from assay.core.history.verdict import VerdictSettings
from assay.core.run_diff import EVERY_SUBJECT, RunComparison, cohorts_of_rows, judged_comparison, pair_changes

__all__ = ["compare_stored_runs", "history_of"]


def history_of(store: Any, first: Any, second: Any, history: int) -> list[str]:
    """The ids of the runs whose verdicts are the units' history when `first` → `second` is judged: the last `history`
    runs of `first`'s series up to and including it, never `second` (the earlier run alone when it is not among them).
    A baseline recorded after the candidate (`compare latest latest~1`, a main-branch run compared with a pull request's
    earlier one) has the candidate in its series; its failures read as the units' past, so a unit that broke in it was
    called flaky and its regression noise."""
    history_ids = [run_id for run_id in series_before(store, first, max(1, history) + 1)
                   if run_id != second.run_id][:max(1, history)]
    return history_ids if first.run_id in history_ids else [first.run_id]


def compare_stored_runs(
    store: Any, first: Any, second: Any, *, settings: VerdictSettings = VerdictSettings(),
    history: int = DEFAULT_HISTORY, group_depth: int = 1,
) -> RunComparison:
    """`first` → `second`, judged with the `history` runs of `first`'s series up to and including it, `second`
    left out (1: the earlier run alone, as a plain paired comparison)."""
    history_ids = history_of(store, first, second, history)
    # A kind says when its verdicts cannot vary by chance (doc's deterministic grading of a given file).
    deterministic = EVERY_SUBJECT if all(
        (run.manifest.summary or {}).get("deterministic") is True for run in (first, second)
    ) else frozenset()
    # SQLite pairs the units; only those that did not pass in both come to Python.
    changed = store.changed_pairs(first.run_id, second.run_id)
    removed = sum(1 for _, _, new in changed if new is None)
    paired = first.unit_count - removed
    new_units = store.units_only_in(second.run_id, first.run_id) if second.unit_count > paired else []
    units, counts = pair_changes(changed, new_units, paired_total=paired)
    # A subject the earlier run lacks has a unit id it lacks.
    evidence = compared_evidence(store, first.run_id, second.run_id, history_ids, new_subjects=bool(new_units))
    return judged_comparison(
        first.run_id, second.run_id, units, counts, (first.pass_rate, second.pass_rate),
        cohorts_of_rows(evidence, group_depth=group_depth, deterministic=deterministic), settings,
        history_runs=len(history_ids),
    )
