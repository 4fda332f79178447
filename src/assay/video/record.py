"""A video run as a run record: one unit per (trial, case, target, sample).

Unit ids are `case/target/sample_index@timestamp#trial`, stable across runs of the same cases,
so `assay runs compare` pairs the same sample of the same trial.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.core.record import (
    RunManifest,
    UnitResult,
    jsonable,
)
from assay.video.model import VERDICT_OF_STATUS, EvalDirectory, RunOutcome, SampleResult

__all__ = ["sample_unit_id", "video_paths", "video_run_manifest", "video_run_units", "video_unit", "video_unit_id"]

# Options worth showing beside a run; the adapter config may hold secrets, so only its keys are kept.
_RECORDED_OPTIONS = (
    "case_filter", "target_filter", "at_times_s", "from_time_s", "until_time_s", "concurrency", "repeat",
    "min_pass_rate", "min_target_pass_rate", "max_failures", "max_flaky_samples", "keep_going", "allow_empty",
)


def sample_unit_id(case: str, target: str, sample_index: int, timestamp_s: float, trial: int) -> str:
    return f"{case}/{target}/{sample_index}@{timestamp_s:g}s#{trial}"


def video_unit_id(result: SampleResult, trial: int) -> str:
    return sample_unit_id(result.case, result.target, result.sample_index, result.timestamp_s, trial)


def video_paths(directory: EvalDirectory) -> dict[str, str]:
    paths = {}
    for case in directory.cases:
        path = getattr(case.video, "path", None)
        if path is not None:
            paths[case.name] = str(path)
    return paths


def video_unit(result: SampleResult, trial: int, video_paths: Mapping[str, str], repeat: int = 1) -> UnitResult:
    artifacts: dict[str, Any] = {"timestamp_s": result.timestamp_s}
    if result.case in video_paths:
        artifacts["video"] = video_paths[result.case]
    if result.artifact_image:
        artifacts["image"] = result.artifact_image
    if result.artifact_json:
        artifacts["json"] = result.artifact_json
    title = f"{result.target} @{result.timestamp_s:g}s" + (f" [trial {trial}]" if repeat > 1 else "")
    details = ""
    if result.status in ("failed", "error"):
        details = f"expected={result.expected!r} observed={result.observed_value!r} reason={result.reason}"
    return UnitResult(
        unit_id=video_unit_id(result, trial),
        verdict=VERDICT_OF_STATUS[result.status],
        group=f"{result.case}/{result.target}",
        title=title,
        details=details,
        expected=jsonable(result.expected),
        observed=jsonable(result.observed_value),
        reason=result.reason,
        duration_seconds=result.evaluation_duration_seconds,
        artifacts=artifacts,
        detail={
            "case": result.case,
            "target": result.target,
            "target_label": result.target_label,
            "sample_index": result.sample_index,
            "timestamp_s": result.timestamp_s,
            "trial": trial,
            "compare_mode": result.effective_mode or result.compare_mode,
            "field": result.field,
            "source": result.source,
            "observed_raw": jsonable(result.observed),
            "timing_mode": result.evaluation_timing_mode,  # so `runs merge` reports it as the run did
        },
    )


def video_run_units(outcome: RunOutcome) -> list[UnitResult]:
    paths = video_paths(outcome.eval_directory)
    return [
        video_unit(result, trial.trial, paths, outcome.repeat) for trial in outcome.trials for result in trial.results
    ]


def video_run_manifest(
    outcome: RunOutcome, summary: Mapping[str, Any], invocation: Mapping[str, Any], exit_code: int,
    *, run_id: str | None = None,
) -> RunManifest:
    eval_dir = Path(invocation["eval_dir"])
    config = invocation.get("adapter_config") or {}
    gates = [{**gate.to_json(), "trial": trial.trial} for trial in outcome.trials for gate in trial.gates]
    gates += [gate.to_json() for gate in outcome.gates]
    return RunManifest.begin(
        "video",
        eval_dir,
        run_id=run_id,
        title=f"{eval_dir.name} ({', '.join(case.name for case in outcome.eval_directory.cases) or 'no cases'})",
        identity={
            "eval_dir": str(eval_dir),
            "adapter": invocation.get("adapter"),
            "adapter_command": invocation.get("adapter_command"),
            "adapter_config_keys": sorted(str(key) for key in config) if isinstance(config, Mapping) else [],
        },
        options={name: invocation.get(name) for name in _RECORDED_OPTIONS},
        gates=gates,
        summary=jsonable(dict(summary)),
        success=outcome.success,
        exit_code=exit_code,
        duration_seconds=outcome.duration_seconds,
    )

