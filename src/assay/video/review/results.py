"""Results of an earlier run for the review timeline: from a JSON report or a run checkpoint.

Without an explicit source, the newest one under `<eval>/runs` is used: a checkpoint in
`runs/checkpoints/run-*` or a JSON report (`report_type: eval_run`) saved as `runs/*.json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.journal import iter_journal_events
from assay.core.jsonvalue import jsonable
from assay.errors import AssayError
from assay.video.checkpoint import RUN_RESULT, result_from_payload
from assay.video.model import SampleResult
from assay.video.reconstruct import strictly_equal
from assay.video.sampling import timestamp_tick

__all__ = ["PriorRun", "find_prior_run", "load_prior_run", "sample_outcomes"]

_REPORT_TYPE = "eval_run"


@dataclass(frozen=True)
class PriorRun:
    """Every result of one earlier run, tagged with its trial number."""

    kind: str  # "report" | "checkpoint"
    path: Path
    modified_ns: int
    results: tuple[tuple[int, SampleResult], ...]

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": str(self.path)}


def _checkpoint_results(directory: Path) -> list[tuple[int, SampleResult]]:
    latest: dict[str, tuple[int, SampleResult]] = {}
    try:
        for record in iter_journal_events(directory / "events.jsonl"):
            if record.type != RUN_RESULT:
                continue
            trial_text = record.key.split("\0", 1)[0]
            trial = int(trial_text) if trial_text.isdigit() else 1
            latest[record.key] = (trial, result_from_payload(record.payload))  # the last event of a key wins
    except (AssayError, OSError, TypeError, ValueError):
        pass  # a torn or broken journal still shows what could be read
    return list(latest.values())


def _report_results(document: Mapping[str, Any]) -> list[tuple[int, SampleResult]]:
    results = []
    for position, trial in enumerate(document.get("trials") or [], start=1):
        if not isinstance(trial, Mapping):
            continue
        number = trial.get("trial") if isinstance(trial.get("trial"), int) else position
        for payload in trial.get("results") or []:
            if isinstance(payload, Mapping):
                try:
                    results.append((number, result_from_payload(payload)))
                except (TypeError, ValueError):
                    continue
    return results


def _read_report(path: Path) -> Mapping[str, Any] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(document, Mapping) or document.get("report_type") != _REPORT_TYPE:
        return None
    return document


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


def load_prior_run(path: Path) -> PriorRun | None:
    """A run checkpoint directory or a JSON report file; None when it is neither."""
    if path.is_dir():
        events = path / "events.jsonl"
        if not events.is_file():
            return None
        return PriorRun("checkpoint", path, _mtime_ns(events), tuple(_checkpoint_results(path)))
    document = _read_report(path)
    if document is None:
        return None
    return PriorRun("report", path, _mtime_ns(path), tuple(_report_results(document)))


def _candidates(eval_dir: Path) -> Iterable[tuple[int, Path]]:
    runs = eval_dir / "runs"
    checkpoints = runs / "checkpoints"
    if checkpoints.is_dir():
        for directory in checkpoints.iterdir():
            if directory.name.startswith("run-") and directory.is_dir():
                yield _mtime_ns(directory / "events.jsonl"), directory
    if runs.is_dir():
        for path in runs.glob("*.json"):
            if path.is_file():
                yield _mtime_ns(path), path


def find_prior_run(eval_dir: Path) -> Path | None:
    """The newest earlier run under `<eval>/runs` (checkpoint or report for this eval), or None."""
    for _, path in sorted(_candidates(eval_dir), key=lambda item: item[0], reverse=True):
        if path.is_dir():
            return path
        document = _read_report(path)
        if document is not None and str(document.get("eval_dir")) == str(eval_dir):
            return path
    return None


def sample_outcomes(run: PriorRun, case_name: str, current_expectations: Mapping[str, Mapping[int, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per target, one outcome per sample time: the last trial's result and every trial's status.

    `current_expectations` (target -> tick -> expectation or a missing marker) lets an outcome say
    whether the expectation it was judged against has been edited since (`stale`).
    """
    grouped: dict[tuple[str, int], list[tuple[int, SampleResult]]] = {}
    for trial, result in run.results:
        if result.case != case_name or not isinstance(result.timestamp_s, (int, float)):
            continue
        grouped.setdefault((result.target, timestamp_tick(float(result.timestamp_s))), []).append((trial, result))
    outcomes: dict[str, list[dict[str, Any]]] = {}
    for (target, tick), entries in grouped.items():
        entries.sort(key=lambda entry: entry[0])
        last = entries[-1][1]
        current = current_expectations.get(target, {})
        stale = tick not in current or not strictly_equal(current[tick], last.expected)
        outcomes.setdefault(target, []).append(
            {
                "timestamp_s": last.timestamp_s,
                "sample_index": last.sample_index,
                "status": last.status,
                "statuses": [result.status for _, result in entries],
                "expected": jsonable(last.expected),
                "observed": jsonable(last.observed),
                "observed_value": jsonable(last.observed_value),
                "compare_mode": last.compare_mode,
                "field": last.field,
                "reason": last.reason,
                "stale": stale and last.status != "ignored",
            }
        )
    for items in outcomes.values():
        items.sort(key=lambda item: item["timestamp_s"])
    return outcomes
