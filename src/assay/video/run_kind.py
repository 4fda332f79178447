"""`video` in the run pipeline: how an `assay video run` opens, executes and concludes, and how
shard records merge into the run the unsharded invocation would have recorded.

The console wording and the JSON report are GlassKit's (`report.py`); the checkpoint is video's own
(`checkpoint.py`); everything else — order, executor, JUnit, the results store — is the pipeline's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.pipeline import WorkerSpec
from assay.core.run_events import RunEvents, RunFinished
from assay.core.run_request import to_invocation
from assay.errors import EXIT_INTERRUPTED, AssayError, UsageError
from assay.video.run import VERDICT_OF_STATUS, VideoRunRequest

__all__ = ["VIDEO", "VideoConclusion", "VideoKind", "shard_directory"]


@dataclass(frozen=True)
class VideoConclusion:
    """A finished video run as its reporters see it."""

    run: Any  # RunOutcome
    summary: Mapping[str, Any]
    resumable: int  # adapter errors a resume would retry
    checkpoint_entry: Mapping[str, Any] | None  # the JSON report's `checkpoint`


def shard_directory(directory: Any, shard_text: str | None) -> Any:
    """The eval directory narrowed to one shard's cases (a case's video is decoded by one shard)."""
    if shard_text is None:
        return directory
    from assay.core.shard import parse_shard, shard_members

    shard = parse_shard(shard_text)
    names = [case.name for case in directory.cases]
    weights = [sum(len(target.samples) for target in case.targets) for case in directory.cases]
    members = shard_members(names, weights, shard)
    return dataclasses.replace(directory, cases=tuple(case for case in directory.cases if case.name in members))


def _resumable_adapter_errors(outcome: Any) -> int:
    return sum(
        1
        for trial in outcome.trials
        for result in trial.results
        if result.status == "error" and result.reason.startswith("adapter_error:")
    )


class _OpenedVideoRun:
    def __init__(self, request: VideoRunRequest, directory: Any, checkpoint: Any) -> None:
        self.request = request
        self.directory = directory
        self.checkpoint = checkpoint
        self.run_id = checkpoint.path.name
        self._resumable = 0
        self._concluded = False

    def worker(self) -> WorkerSpec:
        from assay.video.run import VideoWorker, remaining_case_work

        return WorkerSpec(VideoWorker, (self.request, self.directory.path), remaining_case_work)

    async def execute(self, events: RunEvents, executor: Any) -> Any:
        from assay.video.run import VideoRun

        async with self.checkpoint.writing():
            return await VideoRun(self.directory, self.request, events, checkpoint=self.checkpoint, executor=executor).run()

    def _resume_lines(self) -> list[str]:
        from assay.video.checkpoint import resume_lines

        return resume_lines(self.checkpoint.path)

    def conclude(self, outcome: Any) -> RunFinished:
        from assay.video.gates import summarize_run

        resumable = self._resumable = _resumable_adapter_errors(outcome)
        self._concluded = True
        kept = self.checkpoint.would_remain(resumable)
        summary = summarize_run(
            [trial.results for trial in outcome.trials], [trial.success for trial in outcome.trials],
            outcome.duration_seconds,
        )
        entry = self.checkpoint.report_entry(resumable) if kept else None
        return RunFinished(
            "video", self.run_id, 0 if outcome.success else 1, VideoConclusion(outcome, summary, resumable, entry),
            checkpoint=self.checkpoint.path, checkpoint_kept=kept,
            resume_lines=self._resume_lines() if resumable and kept else (),
            build_units=lambda: _units(outcome),
            build_manifest=lambda code: _manifest(outcome, summary, self.request, code, self.run_id),
            home=self.request.eval_dir,
        )

    def _let_go(self, **fields: Any) -> RunFinished:
        kept = self.checkpoint.abandon()
        return RunFinished(
            "video", self.run_id, checkpoint=self.checkpoint.path, checkpoint_kept=kept,
            resume_lines=self._resume_lines() if kept else (), **fields,
        )

    def interrupted(self) -> RunFinished:
        return self._let_go(exit_code=EXIT_INTERRUPTED, interrupted=True)

    def failed(self, error: AssayError) -> RunFinished:
        return self._let_go(exit_code=error.exit_code, error=error)

    def seal(self, finished: RunFinished) -> None:
        if self._concluded:
            self._concluded = False
            self.checkpoint.finish(self._resumable)


def _units(outcome: Any) -> list[Any]:
    from assay.video.record import video_run_units

    return video_run_units(outcome)


def _manifest(
    outcome: Any, summary: Mapping[str, Any], request: VideoRunRequest, exit_code: int, checkpoint_id: str
) -> Any:
    from assay.core.record import checkpointed_run_id
    from assay.video.record import video_run_manifest

    manifest = video_run_manifest(
        outcome, summary, to_invocation(request), exit_code, run_id=checkpointed_run_id("video", checkpoint_id)
    )
    if request.shard:
        manifest = dataclasses.replace(manifest, options={**manifest.options, "shard": request.shard})
    return manifest


class VideoKind:
    name = "video"

    def reporters(self, request: VideoRunRequest, outputs: Any = None) -> list[Any]:
        from assay.core.console import stdout_console
        from assay.core.report.junit import JUnitReport
        from assay.video.report import VideoConsole, VideoJsonReport

        reporters: list[Any] = []
        if request.output_json is not None:
            reporters.append(VideoJsonReport(request.output_json))
        junit = [JUnitReport(Path(request.junit))] if request.junit else []
        if request.json:
            from assay.core.report.ndjson import NdjsonEvents

            return [*reporters, *junit, NdjsonEvents()]  # the last line carries the final exit code
        return [*reporters, VideoConsole(stdout_console(), verbose=request.verbose), *junit]

    def open(self, request: VideoRunRequest, resume: Any, events: RunEvents) -> _OpenedVideoRun:
        """Load and check the selection, then start the checkpoint (or resume `resume`: path, manifest)."""
        from assay.core.fsutil import check_report_path
        from assay.core.memory import tune_allocator_for_frames
        from assay.video.checkpoint import RunCheckpoint
        from assay.video.cloud_store import materialize
        from assay.video.loading import load_eval_directory
        from assay.video.run import check_run_options, check_sample_times

        check_run_options(request)
        check_report_path("--output-json", request.output_json)  # before any work: GlassKit found out after
        check_report_path("--junit", request.junit)
        tune_allocator_for_frames()
        directory = load_eval_directory(
            request.eval_dir, case=request.case, targets=request.targets, at=request.at, from_s=request.from_s,
            until_s=request.until_s, allow_empty=request.allow_empty, materialize=materialize,
        )
        directory = shard_directory(directory, request.shard)
        check_sample_times(directory)
        if resume is not None:
            path, manifest = resume
            checkpoint = RunCheckpoint.resume(path, manifest, directory, request.repeat)
        else:
            checkpoint = RunCheckpoint.start(directory, to_invocation(request), directory.sample_count * request.repeat)
        return _OpenedVideoRun(request, directory, checkpoint)

    def open_failed(self, request: VideoRunRequest, error: AssayError) -> RunFinished:
        return RunFinished("video", "", error.exit_code, error=error)

    # -- `assay runs merge` ----------------------------------------------------------------------
    def merge(self, records: Sequence[tuple[Any, list[Any]]], output_json: str | None = None) -> int:
        """Shard records as the run the unsharded invocation would have recorded: units in plan
        order, gates recomputed over all of them from the recorded options; GlassKit's summary.

        Returns the exit code (0 gates passed, 1 a gate failed); UsageError for records that are not
        the complete shard set of one run."""
        from assay.core.console import stdout_console
        from assay.core.results_store import publish_run_quietly
        from assay.core.shard import check_shard_set
        from assay.video.report import build_report, print_summary, write_json_report

        manifests = [manifest for manifest, _ in records]
        check_shard_set(manifests, identity_keys=("eval_dir", "adapter", "adapter_command"))
        options = dict(manifests[0].options)
        outcome = _merged_outcome(records, options, Path(manifests[0].identity["eval_dir"]))
        from assay.video.gates import summarize_run

        summary = summarize_run(
            [trial.results for trial in outcome.trials], [trial.success for trial in outcome.trials],
            outcome.duration_seconds,
        )
        if output_json is not None:
            write_json_report(output_json, build_report(outcome, summary, None))
        print_summary(stdout_console(), outcome, summary)
        exit_code = 0 if outcome.success else 1
        invocation = {
            "eval_dir": str(outcome.eval_directory.path), "adapter": manifests[0].identity.get("adapter"),
            "adapter_command": manifests[0].identity.get("adapter_command"),
            "adapter_config": dict.fromkeys(manifests[0].identity.get("adapter_config_keys") or ()),
            **{name: value for name, value in options.items() if name != "shard"},
        }

        def build() -> Any:
            from assay.video.record import video_run_manifest, video_run_units

            manifest = video_run_manifest(outcome, summary, invocation, exit_code)
            merged_options = {**manifest.options, "merged_from": [m.run_id for m in manifests]}
            return dataclasses.replace(manifest, options=merged_options), video_run_units(outcome)

        from assay.core.record import store_path

        publish_run_quietly(build, database=store_path(outcome.eval_directory.path))
        return exit_code


_STATUS_OF_VERDICT = {verdict: status for status, verdict in VERDICT_OF_STATUS.items()}


def _sample_result(unit: Any, sample: Any) -> Any:
    """A shard's unit back as the SampleResult the unsharded run would hold (timing mode is not recorded)."""
    from assay.video.model import SampleResult

    detail = dict(unit.detail or {})
    artifacts = dict(unit.artifacts or {})
    return SampleResult(
        case=detail["case"], target=detail["target"], target_label=detail.get("target_label"),
        sample_index=detail["sample_index"], timestamp_s=detail["timestamp_s"],
        status=_STATUS_OF_VERDICT[unit.verdict], expected=unit.expected, observed=detail.get("observed_raw"),
        observed_value=unit.observed, compare_mode=sample.compare.mode, effective_mode=detail.get("compare_mode"),
        field=detail.get("field"), reason=unit.reason, source=detail.get("source", sample.source),
        evaluation_duration_seconds=unit.duration_seconds,
        artifact_image=artifacts.get("image"), artifact_json=artifacts.get("json"),
    )


def _merged_outcome(records: Sequence[tuple[Any, list[Any]]], options: Mapping[str, Any], eval_dir: Path) -> Any:
    from assay.video.gates import flaky_gate, stability_rows, trial_gates
    from assay.video.loading import load_eval_directory
    from assay.video.record import video_unit_id
    from assay.video.run import RunOutcome, TrialOutcome

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
    used = 0
    for trial in range(1, repeat + 1):
        results = []
        for case in directory.cases:
            for target in case.targets:
                for sample in target.samples:
                    key = f"{case.name}/{target.id}/{sample.sample_index}@{sample.timestamp_s:g}s#{trial}"
                    unit = units.get(key)
                    if unit is None:
                        raise UsageError(f"the shard records have no result for unit {key}; was a shard incomplete?")
                    results.append(_sample_result(unit, sample))
                    used += 1
        gates = trial_gates(
            results, directory, min_pass_rate=options.get("min_pass_rate"), max_failures=options.get("max_failures"),
            min_target_pass_rate=options.get("min_target_pass_rate"),
        )
        trials.append(TrialOutcome(trial, results, gates, all(gate.passed for gate in gates), 0.0))
    if used != len(units):
        extra = sorted(set(units) - {video_unit_id(r, t.trial) for t in trials for r in t.results})
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


VIDEO = VideoKind()

