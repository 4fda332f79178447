"""`assay runs merge` of video shard records: the run the unsharded invocation would have finished.

Units are put back in plan order (the eval directory is loaded again from the recorded options),
every gate is recomputed over all of them, and the merged run is reported (GlassKit's summary and
JSON report) and recorded by the pipeline like any run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.core.record import RunManifest, UnitResult, merged_created_at, merged_run_id
from assay.core.run.kinds import ShardRecord
from assay.core.run.request import Outputs
from assay.core.run_events import RunFinished
from assay.errors import UsageError
from assay.video.model import VERDICT_OF_STATUS, RunOutcome, Sample, SampleResult, TrialOutcome

__all__ = ["VideoMerge"]

_STATUS_OF_VERDICT = {verdict: status for status, verdict in VERDICT_OF_STATUS.items()}


class VideoMerge:
    identity_keys = ("eval_dir", "adapter", "adapter_command")
    # `concurrency` (--concurrency) is how many adapter calls are in flight: each sample is still decoded,
    # sent and judged alone, so it changes how long a shard took, never a sample's result.
    pace_options = ("concurrency",)

    def recorded_units(self, manifest: RunManifest) -> int | None:
        """Every trial holds each sample once: trials times samples (evaluated or ignored), as summarised."""
        summary = manifest.summary or {}
        counts = [summary.get(key) for key in ("trials", "evaluated_samples", "ignored_samples")]
        if not all(type(count) is int and count >= 0 for count in counts):
            return None  # a record that does not say (written by hand, or by another version)
        trials, evaluated, ignored = counts
        return trials * (evaluated + ignored)

    def merged(self, records: Sequence[ShardRecord], outputs: Outputs) -> RunFinished:
        """Exit 0 when every gate of the merged run passes, else 1."""
        from assay.core.fsutil import check_report_path
        from assay.video.gates import summarize_run
        from assay.video.record import video_run_manifest, video_run_units
        from assay.video.report import VideoConclusion

        check_report_path("--output-json", outputs.output_json)
        manifests = [manifest for manifest, _ in records]
        options = dict(manifests[0].options)
        outcome = _merged_outcome(records, options, Path(manifests[0].identity["eval_dir"]))
        summary = summarize_run(
            [trial.results for trial in outcome.trials], [trial.success for trial in outcome.trials],
            outcome.duration_seconds,
        )
        paces = _shard_paces(manifests, self.pace_options)
        invocation = {
            "eval_dir": str(outcome.eval_directory.path), "adapter": manifests[0].identity.get("adapter"),
            "adapter_command": manifests[0].identity.get("adapter_command"),
            "adapter_config": dict.fromkeys(manifests[0].identity.get("adapter_config_keys") or ()),
            **{name: value for name, value in options.items() if name != "shard"},
            **dict.fromkeys(paces),  # null: no one value describes shards that ran at different widths
        }

        def manifest(exit_code: int) -> RunManifest:
            made = video_run_manifest(outcome, summary, invocation, exit_code, run_id=merged_run_id("video", manifests))
            shard_paces = {f"shard_{name}": values for name, values in paces.items()}
            return dataclasses.replace(made, options={**made.options, "merged_from": [m.run_id for m in manifests],
                                                      **shard_paces}, created_at=merged_created_at(manifests))

        return RunFinished(
            "video", "", 0 if outcome.success else 1, VideoConclusion(outcome, summary, 0, None),
            build_units=lambda: video_run_units(outcome), build_manifest=manifest, home=outcome.eval_directory.path,
        )


def _shard_paces(manifests: Sequence[RunManifest], pace_options: Sequence[str]) -> dict[str, list[Any]]:
    """Each pace option the shards differ in, with each shard's value (in `merged_from` order): the merged
    run records them as `shard_<option>` and its own option as null. Shards that agree keep their one value."""
    paces = {}
    for name in pace_options:
        values = [manifest.options.get(name) for manifest in manifests]
        if any(value != values[0] for value in values):
            paces[name] = values
    return paces


def _sample_result(unit: UnitResult, sample: Sample) -> SampleResult:
    """A shard's unit back as the SampleResult the unsharded run would hold (a record written before units
    kept their timing mode gives none)."""
    detail = dict(unit.detail or {})
    artifacts = dict(unit.artifacts or {})
    return SampleResult(
        case=detail["case"], target=detail["target"], target_label=detail.get("target_label"),
        sample_index=detail["sample_index"], timestamp_s=detail["timestamp_s"],
        status=_STATUS_OF_VERDICT[unit.verdict], expected=unit.expected, observed=detail.get("observed_raw"),
        observed_value=unit.observed, compare_mode=sample.compare.mode, effective_mode=detail.get("compare_mode"),
        field=detail.get("field"), reason=unit.reason, source=detail.get("source", sample.source),
        evaluation_duration_seconds=unit.duration_seconds, evaluation_timing_mode=detail.get("timing_mode"),
        artifact_image=artifacts.get("image"), artifact_json=artifacts.get("json"),
    )


def _merged_outcome(records: Sequence[ShardRecord], options: Mapping[str, Any], eval_dir: Path) -> RunOutcome:
    from assay.video.gates import flaky_gate, stability_rows, trial_gates
    from assay.video.loading import load_eval_directory
    from assay.video.record import sample_unit_id

    directory = load_eval_directory(
        eval_dir,
        case=options.get("case_filter"),
        targets=tuple(options.get("target_filter") or ()),
        at=tuple(options.get("at_times_s") or ()),
        from_s=options.get("from_time_s"),
        until_s=options.get("until_time_s"),
        allow_empty=bool(options.get("allow_empty")),
        materialize_videos=False,
    )
    units = {unit.unit_id: unit for _, shard_units in records for unit in shard_units}
    repeat = int(options.get("repeat") or 1)
    trials = []
    used: set[str] = set()
    for trial in range(1, repeat + 1):
        results = []
        for case in directory.cases:
            for target in case.targets:
                for sample in target.samples:
                    key = sample_unit_id(case.name, target.id, sample.sample_index, sample.timestamp_s, trial)
                    unit = units.get(key)
                    if unit is None:
                        raise UsageError(f"the shard records have no result for unit {key}, which the eval directory's "
                                         "cases hold now: was a case or sample added since the shards ran, or a "
                                         "shard incomplete?")
                    results.append(_sample_result(unit, sample))
                    used.add(key)
        gates = trial_gates(
            results, directory, min_pass_rate=options.get("min_pass_rate"), max_failures=options.get("max_failures"),
            min_target_pass_rate=options.get("min_target_pass_rate"),
        )
        trials.append(TrialOutcome(trial, results, gates, all(gate.passed for gate in gates), 0.0))
    if len(used) != len(units):
        extra = sorted(set(units) - used)
        raise UsageError(f"the shard records hold units outside the run's plan: {', '.join(extra[:5])}")
    run_gates = []
    if options.get("max_flaky_samples") is not None:
        rows = stability_rows([trial.results for trial in trials])
        run_gates.append(flaky_gate(sum(1 for row in rows if row["flaky"]), options["max_flaky_samples"]))
    # Shards run side by side: the merged run took as long as its slowest shard.
    duration = max((manifest.duration_seconds or 0.0 for manifest, _ in records), default=0.0)
    for outcome_trial in trials:
        outcome_trial.duration_seconds = duration / max(1, repeat)
    success = all(trial.success for trial in trials) and all(gate.passed for gate in run_gates)
    return RunOutcome(directory, repeat, trials, run_gates, success, duration)
