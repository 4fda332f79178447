"""Each unit's history as the results store holds it: one narrow row per (run, unit), read in one query.

A run's `unit_history` rows (trials passed, trials failed) are written when the run is indexed; a
series is the runs of one kind and project, newest first (the project as `runs compare latest` finds it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["DEFAULT_HISTORY", "compared_evidence", "history_tallies", "run_tallies", "series_before", "series_rows"]

DEFAULT_HISTORY = 10  # runs of history a comparison reads (the earlier run included)


def _source(store: Any) -> str:
    """The history rows, or (a read-only store an earlier assay made) the same computed from units."""
    if store.has_history_rows:
        return "unit_history"
    from assay.core.results_store import _CARRIED, _SUBJECT

    return ("(SELECT run_id, subject, MIN(grp) AS grp, SUM(verdict = 'passed' AND NOT carried) AS passed, "
            "SUM(verdict IN ('failed', 'errored') AND NOT carried) AS failed FROM (SELECT run_id, " + _SUBJECT +
            " AS subject, grp, verdict, " + _CARRIED + " AS carried FROM units) GROUP BY run_id, subject)")


def series_before(store: Any, run: Any, last: int) -> list[str]:
    """The ids of the `last` runs of `run`'s kind and project up to and including it, newest first."""
    if last <= 0:
        return []
    ids = store.series(run.manifest)
    try:
        position = ids.index(run.run_id)
    except ValueError:
        return [run.run_id]
    return ids[position : position + last]


def run_tallies(store: Any, run_id: str) -> dict[str, tuple[str, int, int]]:
    """subject -> (its group, trials passed, trials failed or errored) in one run."""
    rows = store.read(f"SELECT subject, grp, passed, failed FROM {_source(store)} WHERE run_id = ?", (run_id,))
    return {subject: (group, passed, failed) for subject, group, passed, failed in rows}


def history_tallies(store: Any, run_ids: Sequence[str]) -> dict[str, tuple[int, int, int]]:
    """subject -> (its trials over these runs, how many failed, how many of the runs observed it anew):
    one query. A run that only carried the unit forward observed nothing new of it."""
    if not run_ids:
        return {}
    marks = ",".join("?" * len(run_ids))
    rows = store.read(
        f"SELECT subject, SUM(passed) + SUM(failed), SUM(failed), SUM(passed + failed > 0) FROM {_source(store)} "
        f"WHERE run_id IN ({marks}) GROUP BY subject", list(run_ids),
    )
    return {subject: (trials, failed, runs) for subject, trials, failed, runs in rows}


def compared_evidence(store: Any, before: str, after: str, history: Sequence[str], *,
                      new_subjects: bool = True) -> list[tuple[Any, ...]]:
    """Per subject of either run, as flat rows: (subject, its group (the later run's), passed and
    failed before (None, None when `before` lacks it), the same after, trials and failed over the
    `history` runs) — `before`'s subjects first, then the later run's new ones (`new_subjects`:
    whether to look for any), each in subject order. SQLite pairs the runs' rows by their key, and
    groups the history only when it is more than the earlier run (whose trials are then all of it)."""
    source = _source(store)
    parameters: list[Any] = [before, after]
    if list(history) == [before]:
        joined, past, new_past = "", "o.passed + o.failed, o.failed", "0, 0"
    else:
        marks = ",".join(f"?{number}" for number in range(3, 3 + len(history)))
        joined = (f" LEFT JOIN (SELECT subject, SUM(passed) + SUM(failed) AS trials, SUM(failed) AS failed FROM {source} "
                  f"WHERE run_id IN ({marks}) GROUP BY subject) h ON h.subject = {{0}}.subject")
        past = new_past = "COALESCE(h.trials, 0), COALESCE(h.failed, 0)"
        parameters += history
    rows = store.read(
        f"SELECT o.subject, COALESCE(n.grp, o.grp), o.passed, o.failed, n.passed, n.failed, {past} FROM {source} o "
        f"LEFT JOIN {source} n ON n.run_id = ?2 AND n.subject = o.subject{joined.format('o')} WHERE o.run_id = ?1 "
        "ORDER BY o.subject", parameters,
    ).fetchall()
    if new_subjects:
        rows += store.read(
            f"SELECT n.subject, n.grp, NULL, NULL, n.passed, n.failed, {new_past} FROM {source} n{joined.format('n')} "
            f"WHERE n.run_id = ?2 AND NOT EXISTS (SELECT 1 FROM {source} o WHERE o.run_id = ?1 AND o.subject = n.subject) "
            "ORDER BY n.subject", parameters,
        ).fetchall()
    return rows


def series_rows(store: Any, run_ids: Sequence[str], *, group: str | None = None) -> Iterable[tuple[str, str, str, int, int]]:
    """(run id, subject, group, passed, failed) for these runs, optionally one group (and its subgroups)."""
    if not run_ids:
        return []
    marks = ",".join("?" * len(run_ids))
    query = f"SELECT run_id, subject, grp, passed, failed FROM {_source(store)} WHERE run_id IN ({marks})"
    parameters: list[Any] = list(run_ids)
    if group:
        query += " AND (grp = ? OR substr(grp, 1, ?) = ?)"
        parameters += [group, len(group) + 1, group + "/"]
    return store.read(query, parameters)
