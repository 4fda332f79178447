"""What the results viewer shows, as JSON documents: run lists, run pages, unit pages (with what the unit's
kind adds: a video frame, an agent attempt's File Changes, waterfall and timing), units, traces, compares.

One function per API endpoint, over a `RunStore`; the live server and the static export both use
them, so an exported page shows exactly what the live page showed.
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.record import UnitResult, jsonable
from assay.core.history.compare import compare_stored_runs
from assay.core.run_diff import CHANGE_KINDS, RunComparison
from assay.core.results_store import SqliteRunStore, StoreError
from assay.core.run.kinds import kind_names, kind_view
from assay.errors import UsageError

__all__ = ["MAX_PAGE", "PAGE_SIZE", "ViewData", "api_key"]

PAGE_SIZE = 100
MAX_PAGE = 1000
GROUP_LIMIT = 500
TREND_GROUPS = 60  # charts on the trend page, the least reliable groups first
_PREVIEW_CHARACTERS = 160


def api_key(path: str, params: Mapping[str, Any]) -> str:
    """The canonical name of a request: the static export files answers under this key."""
    query = "&".join(f"{name}={params[name]}" for name in sorted(params) if params[name] not in (None, ""))
    return path + ("?" + query if query else "")


def _shown_verdict(unit: UnitResult, kind: str) -> str:
    """The verdict a page shows: a score eval's attempt is stored as `ignored` (kept out of pass rates), which read
    as if it had not run; it is `scored`, as `assay agent show` says."""
    if kind == "agent" and unit.verdict == "ignored" and isinstance(unit.observed, dict) and "score" in unit.observed:
        return "scored"
    return unit.verdict


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _PREVIEW_CHARACTERS else text[: _PREVIEW_CHARACTERS - 1] + "…"


def _shown_expected_and_observed(unit: UnitResult, kind: str) -> tuple[str, str]:
    """The expected / observed previews of a unit row: what the kind shows (an agent, its assertions), else
    the unit's own expected and observed."""
    previews = kind_view(kind).previews
    expected, observed = previews(unit) if previews is not None else (unit.expected, unit.observed)
    return _preview(expected), _preview(observed)


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _integer(params: Mapping[str, Any], name: str, default: int, maximum: int) -> int:
    value = params.get(name)
    if value in (None, ""):
        return default
    text = str(value)
    if not text.isdigit():
        raise UsageError(f"{name} must be a nonnegative integer, got {text!r}")
    return min(int(text), maximum)


def _verdicts(params: Mapping[str, Any]) -> str | None:
    """The `verdict` filter (comma-separated), each one a verdict: a hand-edited `?verdict=bogus` showed "no
    units" under a drop-down that read "all verdicts"."""
    value = params.get("verdict") or None
    if value is None:
        return None
    from assay.core.results_store import verdict_filter

    return ",".join(verdict_filter(str(value)))


def _kind(params: Mapping[str, Any]) -> str | None:
    """The runs list's `kind` filter, one of the kinds: a hand-edited `?kind=vidoe` listed no run under a
    drop-down that read "all kinds"."""
    value = params.get("kind") or None
    if value is None:
        return None
    from assay.core.format import did_you_mean

    if value not in kind_names():
        raise UsageError(f"kind must be one of {', '.join(kind_names())}, got {value!r}{did_you_mean(value, kind_names())}")
    return str(value)


@dataclass
class ViewData:
    store: SqliteRunStore
    # (before, after) -> the comparison and the lines on the model judges behind its changes, the last few kept
    _comparisons: OrderedDict[tuple[str, str], tuple[RunComparison, list[str]]] = field(default_factory=OrderedDict)
    _trace_lists: OrderedDict[str, list[dict[str, Any]]] = field(default_factory=OrderedDict)
    _file: tuple[int, int] | None = None  # the store file opened (device, inode), to see it replaced

    def __post_init__(self) -> None:
        self._file = _file_identity(self.store.path)

    def follow_store(self) -> None:
        """Before a request of the live viewer: a store file replaced while the viewer runs (`assay runs reindex`
        rebuilding a damaged store, a deleted store made anew by the next eval) is opened anew, where the viewer went
        on showing the file it had opened first and said "no run X in the store <path>" of a run that `assay runs
        list` shows at that path; a store file that is gone is said to be gone rather than shown as it was. Label
        mode's writable store follows it too (its labels were written to the replaced file, which no one reads)."""
        now = _file_identity(self.store.path)
        if now == self._file:
            return
        if now is None:
            raise StoreError(f"the results store {self.store.path} is gone (deleted or moved while the viewer ran); "
                             "run an eval or `assay runs reindex` to make it again, then reload this page")
        store = SqliteRunStore(self.store.path, read_only=self.store.read_only)
        old, self.store, self._file = self.store, store, now
        old.close()
        self._comparisons.clear()
        self._trace_lists.clear()

    # -- runs ------------------------------------------------------------------------------

    def runs(self, params: Mapping[str, Any]) -> dict[str, Any]:
        kind = _kind(params)
        search = params.get("search") or None
        limit = _integer(params, "limit", 50, 500)
        offset = _integer(params, "offset", 0, 10**9)
        runs = self.store.list_runs(kind=kind, search=search, limit=limit, offset=offset)
        return {
            "runs": [run.to_json(with_groups=False) for run in runs],
            "kinds": list(kind_names()),  # the kind filter's choices: the registry's, not a list of the page's own
            "total": self.store.count_runs(kind=kind, search=search),
            "offset": offset,
            "limit": limit,
        }

    def run(self, params: Mapping[str, Any]) -> dict[str, Any]:
        stored = self.store.get_run(str(params.get("run") or "latest"))
        document = stored.to_json(with_groups=False)
        groups, total = self.store.group_page(stored.run_id, GROUP_LIMIT)  # a page of them: a run may have 100,000
        document["groups"] = [{"group": name, "counts": counts} for name, counts in groups.items()]
        document["groups_total"] = total
        document["has_traces"] = kind_view(stored.manifest.kind).trace_row is not None  # a Traces page
        return jsonable(document)

    def units(self, params: Mapping[str, Any]) -> dict[str, Any]:
        run_id = self.store.resolve(str(params.get("run") or "latest"))
        kind = self.store.get_run(run_id).manifest.kind
        page = self.store.unit_page(
            run_id,
            offset=_integer(params, "offset", 0, 10**9),
            limit=_integer(params, "limit", PAGE_SIZE, MAX_PAGE),
            verdict=_verdicts(params),
            group=params.get("group") if params.get("group") not in (None, "") else None,
            search=params.get("search") or None,
        )
        rows = []
        for unit in page.units:
            expected, observed = _shown_expected_and_observed(unit, kind)
            rows.append({
                "unit_id": unit.unit_id,
                "group": unit.group,
                "verdict": unit.verdict,
                "shown_verdict": _shown_verdict(unit, kind),
                "expected": expected,
                "observed": observed,
                "reason": _preview(unit.reason),
                "duration_seconds": unit.duration_seconds,
                "carried": bool(unit.carried_from),  # its verdict is an earlier run's (marked, as `agent show` marks it)
            })
        return {"run_id": run_id, "units": rows, "total": page.total, "offset": page.offset, "limit": page.limit}

    def unit(self, params: Mapping[str, Any]) -> dict[str, Any]:
        run_id = self.store.resolve(str(params.get("run") or "latest"))
        unit_id = str(params.get("unit") or "")
        unit = self.store.get_unit(run_id, unit_id)
        if unit is None:
            raise LookupError(f"run {run_id} has no unit {unit_id!r}")
        # The kind alone: reading the whole run would read its per-group counts (50,000 rows, some runs).
        kind = self.store.read("SELECT kind FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]
        document = jsonable(unit.to_json())
        document["run_id"] = run_id
        document["kind"] = kind
        document["shown_verdict"] = _shown_verdict(unit, kind)
        document["has_frame"] = False
        # A kind with its own previews (an agent: its assertions) shows them in its drill-down instead.
        document["plain_expected"] = kind_view(kind).previews is None
        extras = kind_view(kind).unit_extras
        if extras is not None:  # a video frame, an agent attempt's File Changes, waterfall and timing
            document.update(extras(unit))
        return document

    def traces(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The Traces page: a page of the agent run's attempts that received spans, one row each."""
        run_id = self.store.resolve(str(params.get("run") or "latest"))
        kind = self.store.get_run(run_id).manifest.kind
        offset = _integer(params, "offset", 0, 10**9)
        limit = _integer(params, "limit", PAGE_SIZE, MAX_PAGE)
        trace_row = kind_view(kind).trace_row
        rows = self._traced_attempts(run_id, trace_row) if trace_row is not None else []
        return {"run_id": run_id, "kind": kind, "has_traces": trace_row is not None, "traces": rows[offset : offset + limit], "total": len(rows),
                "offset": offset, "limit": limit}

    def _traced_attempts(self, run_id: str, trace_row: Callable[[UnitResult], Any]) -> list[dict[str, Any]]:
        """Every attempt of a run with spans, summarised (a published run never changes, so once per run)."""
        found = self._trace_lists.get(run_id)
        if found is not None:
            self._trace_lists.move_to_end(run_id)
            return found
        rows: list[dict[str, Any]] = []
        offset = 0
        while True:
            page = self.store.unit_page(run_id, offset=offset, limit=MAX_PAGE)
            for unit in page.units:
                row = trace_row(unit)
                if row is not None:
                    rows.append(row)
            offset += MAX_PAGE
            if offset >= page.total or not page.units:
                break
        self._trace_lists[run_id] = rows
        while len(self._trace_lists) > 8:
            self._trace_lists.popitem(last=False)
        return rows

    def frame_source(self, params: Mapping[str, Any]) -> tuple[str, float]:
        """The recorded video path and time of a video unit; requests never name a file themselves."""
        run_id = self.store.resolve(str(params.get("run") or "latest"))
        unit = self.store.get_unit(run_id, str(params.get("unit") or ""))
        artifacts = (unit.artifacts or {}) if unit is not None else {}
        video, time_s = artifacts.get("video"), artifacts.get("timestamp_s")
        if not isinstance(video, str) or not isinstance(time_s, (int, float)) or not math.isfinite(time_s):
            raise LookupError("this unit has no recorded video frame")
        return video, float(time_s)

    # -- trend -----------------------------------------------------------------------------

    def trend(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The pass rate of each group over the last runs of a run's series (oldest first, with its
        Wilson interval), flaky units marked: what `assay runs trend GROUP` prints, for every group."""
        from assay.core.history.report import TrendPoint
        from assay.core.history.series import flaky_units
        from assay.core.history.store import series_before, series_rows
        from assay.core.stats import wilson_interval

        stored = self.store.get_run(str(params.get("run") or "latest"))
        last = _integer(params, "last", 10, 100)
        ids = list(reversed(series_before(self.store, stored, last)))
        created = {run_id: self.store.get_run(run_id).manifest.created_at for run_id in ids}
        tallies: dict[str, dict[str, list[int]]] = {}
        for run_id, _, group, passed, failed in series_rows(self.store, ids):
            counts = tallies.setdefault(group, {}).setdefault(run_id, [0, 0])
            counts[0] += passed
            counts[1] += failed
        flaky: dict[str, list[str]] = {}
        every_flaky = flaky_units(self.store, ids)  # flakiest first
        for unit in every_flaky:
            flaky.setdefault(unit.group, []).append(unit.unit)
        whole = [TrendPoint(run_id, created[run_id], sum(by_run.get(run_id, [0, 0])[0] for by_run in tallies.values()),
                            sum(by_run.get(run_id, [0, 0])[1] for by_run in tallies.values())).to_json() for run_id in ids]
        # The least reliable groups first (lowest lower bound of the latest pass rate), as many as a page holds.
        def latest_low(item: tuple[str, dict[str, list[int]]]) -> float:
            passed, failed = item[1].get(ids[-1], [0, 0])
            return wilson_interval(passed, passed + failed)[0] if passed + failed else 2.0

        groups = sorted(tallies.items(), key=lambda item: (latest_low(item), item[0]))
        return {
            "run_id": stored.run_id, "kind": stored.manifest.kind, "runs": ids, "whole": whole,
            "flaky": [unit.unit for unit in every_flaky[:20]], "flaky_count": len(every_flaky),
            "groups": [
                {"group": group, "flaky": flaky.get(group, [])[:20], "flaky_count": len(flaky.get(group, [])),
                 "points": [TrendPoint(run_id, created[run_id], *by_run.get(run_id, [0, 0])).to_json() for run_id in ids]}
                for group, by_run in groups[:TREND_GROUPS]
            ],
            "groups_total": len(groups),
        }

    # -- compare ---------------------------------------------------------------------------

    def comparison(self, before: str, after: str) -> tuple[RunComparison, list[str]]:
        """The comparison of two runs, and the lines `assay runs compare` prints on the model judges behind its changes."""
        from assay.core.labels.trust import judges_behind, judges_lines

        key = (self.store.resolve(before), self.store.resolve(after))
        if key[0] == key[1]:  # as `assay runs compare` refuses it, rather than a verdict about no change
            raise UsageError(f"both references name the run {key[0]}; a run compared with itself has no changes: "
                             "give two different runs")
        found = self._comparisons.get(key)
        if found is None:
            runs = [self.store.get_run(run_id) for run_id in key]
            comparison = compare_stored_runs(self.store, *runs)
            found = comparison, judges_lines(judges_behind(self.store, *runs, comparison.units), 10)
            self._comparisons[key] = found
            while len(self._comparisons) > 8:
                self._comparisons.popitem(last=False)
        return found

    def compare(self, params: Mapping[str, Any]) -> dict[str, Any]:
        comparison, judges = self.comparison(str(params.get("a") or "latest~1"), str(params.get("b") or "latest"))
        change = str(params.get("change") or "regressions")
        if change not in CHANGE_KINDS:
            raise UsageError(f"change must be one of {', '.join(CHANGE_KINDS)}")
        offset = _integer(params, "offset", 0, 10**9)
        limit = _integer(params, "limit", PAGE_SIZE, MAX_PAGE)
        ids = comparison.units[change][offset : offset + limit]
        before = self.store.units_by_id(comparison.before, ids)
        after = self.store.units_by_id(comparison.after, ids)
        before_run = self.store.get_run(comparison.before)
        after_run = self.store.get_run(comparison.after)

        def side(unit: UnitResult | None, kind: str) -> dict[str, Any] | None:
            if unit is None:
                return None
            observed = _shown_expected_and_observed(unit, kind)[1]
            return {"verdict": unit.verdict, "observed": observed, "reason": _preview(unit.reason)}

        rows = []
        for unit_id in ids:
            if unit_id in after:
                expected = _shown_expected_and_observed(after[unit_id], after_run.manifest.kind)[0]
            else:
                expected = _shown_expected_and_observed(before[unit_id], before_run.manifest.kind)[0]
            rows.append({
                "unit_id": unit_id,
                "expected": expected,
                "before": side(before.get(unit_id), before_run.manifest.kind),
                "after": side(after.get(unit_id), after_run.manifest.kind),
            })
        document = comparison.to_json(unit_limit=0)
        document.pop("units")
        from assay.core.history.shown import nothing_judged_in_both

        # (the "Why: … carried …" line `assay runs compare` prints under an inconclusive verdict)
        why = nothing_judged_in_both(self.store, comparison, document, (comparison.before, comparison.after))
        if why:
            document["why"] = why
        if judges:
            document["judges_behind"] = judges
        kinds = (before_run.manifest.kind, after_run.manifest.kind)
        if kinds[0] != kinds[1] and "imported" not in kinds:  # the line `assay runs compare` adds for such a pair
            document["kinds_differ"] = (f"These are runs of two kinds ({kinds[0]}, then {kinds[1]}), whose units never pair: "
                                        "compare two runs of one kind.")
        document["runs"] = {"before": before_run.to_json(with_groups=False), "after": after_run.to_json(with_groups=False)}
        document.update({"change": change, "rows": rows, "total": len(comparison.units[change]), "offset": offset, "limit": limit})
        return jsonable(document)
