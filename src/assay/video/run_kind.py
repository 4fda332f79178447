"""`video` in the run pipeline: how an `assay video run` opens, executes and concludes, how `--resume`
restores it, and what else the kind does through the pipeline (merging shard records, `seed`).

The console wording and the JSON report are GlassKit's (`report.py`); the checkpoint is video's own
(`checkpoint.py`); everything else — order, executor, progress, NDJSON, JUnit, the results store — is
the pipeline's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.core.run.kinds import KindOutput, Resumed, RunKind, WorkerSpec
from assay.core.run.request import Outputs, from_invocation, to_invocation
from assay.core.run_events import RunEvents, RunFinished
from assay.errors import EXIT_INTERRUPTED, AssayError
from assay.video.merge import VideoMerge
from assay.video.model import RunOutcome, expand_home
from assay.video.request import VideoRunRequest, invocation_with_outputs, outputs_from_invocation, refusal

__all__ = ["VIDEO", "VideoKind", "shard_directory"]


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


def _resumable_adapter_errors(outcome: RunOutcome) -> int:
    return sum(
        1
        for trial in outcome.trials
        for result in trial.results
        if result.status == "error" and result.reason.startswith("adapter_error:")
    )


class _OpenedVideoRun:
    def __init__(self, request: VideoRunRequest, verbose: bool, directory: Any, checkpoint: Any) -> None:
        self.request = request
        self.verbose = verbose  # the adapter is told
        self.directory = directory
        self.checkpoint = checkpoint
        self.run_id = checkpoint.path.name
        self._resumable = 0
        self._concluded = False

    def worker(self) -> WorkerSpec:
        from assay.video.run import VideoWorker, remaining_case_work

        return WorkerSpec(VideoWorker, (self.request, self.directory.path, self.verbose), remaining_case_work)

    async def execute(self, events: RunEvents, executor: Any) -> RunOutcome:
        from assay.video.run import VideoRun

        async with self.checkpoint.writing():
            return await VideoRun(
                self.directory, self.request, events, checkpoint=self.checkpoint, executor=executor, verbose=self.verbose
            ).run()

    def _resume_lines(self) -> list[str]:
        from assay.video.checkpoint import resume_lines

        return resume_lines(self.checkpoint.path)

    def conclude(self, outcome: RunOutcome) -> RunFinished:
        from assay.video.gates import summarize_run
        from assay.video.report import VideoConclusion

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
        self._concluded = False  # stopped after concluding (while being recorded): nothing to seal
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


def _units(outcome: RunOutcome) -> list[Any]:
    from assay.video.record import video_run_units

    return video_run_units(outcome)


def _manifest(
    outcome: RunOutcome, summary: Mapping[str, Any], request: VideoRunRequest, exit_code: int, checkpoint_id: str
) -> Any:
    from assay.core.record import checkpointed_run_id
    from assay.video.record import video_run_manifest

    manifest = video_run_manifest(
        outcome, summary, to_invocation(request), exit_code, run_id=checkpointed_run_id("video", checkpoint_id)
    )
    manifest = dataclasses.replace(manifest, aliases=(checkpoint_id,))  # the id GlassKit's lines and --json show
    if request.shard:
        manifest = dataclasses.replace(manifest, options={**manifest.options, "shard": request.shard})
    return manifest


class VideoResume:
    """`assay video run --resume`: GlassKit's run checkpoints (their invocation holds the outputs too)."""

    checkpoint_kind = "run"

    def locate(self, ref: str, given: VideoRunRequest) -> Path:
        from assay.core.run.resume import locate_in, with_the_id_meant

        return with_the_id_meant(locate_in(given.eval_dir, ref), ref)

    def invocation(self, request: VideoRunRequest, outputs: Outputs) -> dict[str, Any]:
        return invocation_with_outputs(request, outputs)

    def restored(
        self, invocation: object, manifest_path: Path, given: VideoRunRequest, outputs: Outputs
    ) -> tuple[VideoRunRequest, Outputs]:
        request = from_invocation(VideoRunRequest, invocation, manifest_path)
        return request, outputs_from_invocation(invocation, manifest_path, outputs)

    def refusal(self, flags: Sequence[str]) -> str:
        return refusal("run", flags)


class VideoKind:
    name = "video"
    resume = VideoResume()
    merge = VideoMerge()

    @property
    def commands(self) -> Mapping[str, RunKind[Any]]:
        from assay.video.seed_kind import SEED

        return {"seed": SEED}

    def output(self, outputs: Outputs) -> KindOutput:
        from assay.core.console import stdout_console
        from assay.video.report import VideoConsole, VideoJsonReport

        files = [VideoJsonReport(outputs.output_json)] if outputs.output_json is not None else []
        return KindOutput(VideoConsole(stdout_console(), verbose=outputs.verbose), files=files)

    def open(
        self, request: VideoRunRequest, outputs: Outputs, resume: Resumed | None, events: RunEvents
    ) -> _OpenedVideoRun:
        """Load and check the selection, then start the checkpoint (or resume `resume`)."""
        from assay.core.memory import tune_allocator_for_frames
        from assay.video.artifacts import check_artifacts_dir
        from assay.video.checkpoint import RunCheckpoint
        from assay.video.cloud_store import materialize
        from assay.video.loading import load_eval_directory
        from assay.video.request import check_run_options
        from assay.video.run import check_sample_times

        check_run_options(request)
        # Before any video is fetched or adapter started: a bad folder is not found at the first failure.
        check_artifacts_dir(
            request.artifacts_dir, expand_home(request.eval_dir), save_failures=request.save_failures,
            restored=resume is not None,
        )
        tune_allocator_for_frames()
        directory = load_eval_directory(
            request.eval_dir, case=request.case, targets=request.targets, at=request.at, from_s=request.from_s,
            until_s=request.until_s, allow_empty=request.allow_empty, materialize=materialize,
        )
        whole = len(directory.cases)
        directory = shard_directory(directory, request.shard)
        if request.shard is not None and not directory.cases:
            from assay.core.run_events import RunWarning

            # More shards than cases is normal when a suite is split over a fixed number of CI jobs: this job
            # passes (exit 0) and says why, and the gates are the shards' that hold cases, and the merged run's.
            events.warning(RunWarning(
                "empty-shard",
                f"shard {request.shard} holds none of the eval's {whole} case(s) (a case is never split between "
                "shards): nothing to run, so this shard passes; the gates are judged on the shards that hold cases, "
                "and on the run `assay runs merge` makes of them all",
                {"shard": request.shard, "cases": whole},
            ))
        check_sample_times(directory)
        if resume is not None:
            checkpoint = RunCheckpoint.resume(resume.path, resume.manifest, directory, request.repeat)
        else:
            invocation = invocation_with_outputs(request, outputs)
            checkpoint = RunCheckpoint.start(directory, invocation, directory.sample_count * request.repeat)
        return _OpenedVideoRun(request, outputs.verbose, directory, checkpoint)

    def open_failed(self, request: VideoRunRequest, error: AssayError) -> RunFinished:
        return RunFinished("video", "", error.exit_code, error=error)


VIDEO = VideoKind()
