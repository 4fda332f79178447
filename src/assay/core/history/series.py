"""A series of runs read back for people: the units that flip (flaky), and the pass rate over runs (trend)."""

from __future__ import annotations

from typing import Any

from assay.core.history.report import FlakyUnit, TrendPoint
from assay.core.history.store import series_rows

__all__ = ["flaky_units", "latest_series", "trend_points"]


def latest_series(store: Any, *, kind: str | None, last: int) -> list[tuple[str, list[str]]]:
    """(title, run ids newest first) for the newest run of each kind (or of `kind`): the series it belongs to."""
    from assay.core.run.kinds import kind_names

    series = []
    for name in ([kind] if kind else kind_names()):
        runs = store.list_runs(kind=name, limit=1)
        if runs:
            newest = runs[0]
            series.append((f"{name} ({newest.manifest.title or newest.run_id})", store.series(newest.manifest)[:last]))
    return series


def flaky_units(store: Any, run_ids: list[str], *, kind: str = "", group: str | None = None) -> list[FlakyUnit]:
    """Units whose verdicts disagree over these runs (within a run or between runs), flakiest first."""
    totals: dict[str, list[Any]] = {}
    for _, subject, grp, passed, failed in series_rows(store, run_ids, group=group):
        entry = totals.setdefault(subject, [grp, 0, 0, 0])
        entry[1] += passed
        entry[2] += failed
        entry[3] += 1 if passed + failed else 0  # a run that carried the unit forward judged nothing of it
    units = [FlakyUnit(subject, grp, passed, failed, runs, kind)
             for subject, (grp, passed, failed, runs) in totals.items() if passed and failed]
    return sorted(units, key=lambda unit: (abs(unit.rate - 0.5), unit.unit))


def trend_points(store: Any, run_ids: list[str], *, group: str | None = None) -> list[TrendPoint]:
    """One point per run, oldest first: its passed and failed trials (of `group`, when given)."""
    tallies = {run_id: [0, 0, 0] for run_id in run_ids}  # passed, failed, units (judged or not)
    for run_id, _, _, passed, failed in series_rows(store, run_ids, group=group):
        tallies[run_id][0] += passed
        tallies[run_id][1] += failed
        tallies[run_id][2] += 1
    created = {run.run_id: run.manifest.created_at for run in (store.get_run(run_id) for run_id in run_ids)}
    return [TrendPoint(run_id, created[run_id], passed, failed, units=units)
            for run_id in reversed(run_ids) for passed, failed, units in [tallies[run_id]]]
