"""Two stored runs compared with their history: what `assay runs compare` and the viewer's diff show."""

from __future__ import annotations

from typing import Any

from assay.core.history.store import DEFAULT_HISTORY, history_tallies, run_tallies, series_before
from assay.core.history.verdict import VerdictSettings
from assay.core.run_diff import RunComparison, compare_verdicts

__all__ = ["compare_stored_runs"]


def compare_stored_runs(
    store: Any, first: Any, second: Any, *, settings: VerdictSettings = VerdictSettings(),
    history: int = DEFAULT_HISTORY, group_depth: int = 1,
) -> RunComparison:
    """`first` → `second`, judged with the `history` runs of `first`'s series up to and including it
    (1: the earlier run alone, as a plain paired comparison)."""
    history_ids = series_before(store, first, max(1, history))
    if first.run_id not in history_ids:
        history_ids = [first.run_id]
    past = history_tallies(store, history_ids)
    before, after = run_tallies(store, first.run_id), run_tallies(store, second.run_id)
    # A kind says when its verdicts cannot vary by chance (doc's deterministic grading of a given file).
    deterministic = frozenset(before) | frozenset(after) if all(
        (run.manifest.summary or {}).get("deterministic") is True for run in (first, second)
    ) else frozenset()
    return compare_verdicts(
        first.run_id, store.verdicts(first.run_id), second.run_id, store.verdicts(second.run_id),
        alpha=settings.alpha, confidence=settings.confidence, settings=settings, history=past,
        history_runs=len(history_ids), group_depth=group_depth, deterministic=deterministic, tallies=(before, after),
    )
