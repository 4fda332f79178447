"""Checkpoints for `assay video run`: what is journaled, how a plan is fingerprinted, how to resume.

Every result is journaled (group-committed) before it is shown. A resumed run reuses every
completed result and evaluates again only adapter errors and samples that never finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from assay.core import journal as journal_module
from assay.core.journal import Checkpoint, JournalWriter
from assay.video.model import Case, EvalDirectory, LocalVideo, SampleResult

RUN_RESULT = "run_result"
ADAPTER_ERROR_PREFIX = "adapter_error:"

ResultKey = tuple[int, str, str, int]  # trial, case, target, sample index

# How long the journal waits for the other workers' results before one fsync (see JournalWriter):
# 600 fast results took ~520 fsyncs and +12% wall without it, ~155 and +6% with it.
GROUP_COMMIT_WINDOW_S = 0.006


def journal_writer(checkpoint: Checkpoint, concurrency: int) -> JournalWriter:
    """The run's or seed's group-committing writer: up to `concurrency` results share an fsync."""
    return JournalWriter(checkpoint.journal, batch_hint=concurrency, batch_window_s=GROUP_COMMIT_WINDOW_S)


def run_result_key(trial: int, case: str, target: str, sample_index: int, timestamp_s: float) -> str:
    return f"{trial}\0{case}\0{target}\0{sample_index}\0{float.hex(timestamp_s)}"


def video_fingerprint(case: Case) -> dict[str, Any]:
    if isinstance(case.video, LocalVideo):
        stat = os.stat(case.video.path)
        return {"path": str(case.video.path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    return {"store": case.video.store, "key": case.video.key, "sha256": case.video.sha256}


def plan_hash(invocation: Mapping[str, Any], eval_directory: EvalDirectory) -> str:
    cases = [
        {"path": str(case.path), "source_sha256": case.source_sha256, "video": video_fingerprint(case)}
        for case in eval_directory.cases
    ]
    return journal_module.plan_hash({"invocation": dict(invocation), "cases": cases})


def planned_keys(eval_directory: EvalDirectory, repeat: int) -> set[str]:
    return {
        run_result_key(trial, case.name, target.id, sample.sample_index, sample.timestamp_s)
        for trial in range(1, repeat + 1)
        for case in eval_directory.cases
        for target in case.targets
        for sample in target.samples
    }


def result_from_payload(payload: Mapping[str, Any]) -> SampleResult:
    fields = {name: payload.get(name) for name in SampleResult.__dataclass_fields__ if name != "effective_mode"}
    return SampleResult(**fields, effective_mode=payload.get("compare_mode"))


def is_complete(result: SampleResult) -> bool:
    """Everything but an adapter error is final; adapter errors are retried on resume."""
    return not (result.status == "error" and result.reason.startswith(ADAPTER_ERROR_PREFIX))


class RunCheckpoint:
    """One run's checkpoint: journal writes, what a resume may reuse, and how the run ends."""

    def __init__(self, checkpoint: Checkpoint, *, resumed: bool, completed: dict[ResultKey, SampleResult]) -> None:
        self.checkpoint = checkpoint
        self.resumed = resumed
        self.completed = completed
        self.has_reusable_work = any(result.status != "ignored" for result in completed.values())
        self._writer: JournalWriter | None = None

    @property
    def path(self) -> Path:
        return self.checkpoint.path

    @classmethod
    def start(cls, eval_directory: EvalDirectory, invocation: Mapping[str, Any], total: int) -> RunCheckpoint:
        checkpoint = Checkpoint.create(
            eval_directory.path, "run", plan_hash=plan_hash(invocation, eval_directory), total=total,
            invocation=invocation,
        )
        return cls(checkpoint, resumed=False, completed={})

    @classmethod
    def resume(
        cls, path: Path, manifest: Mapping[str, Any], eval_directory: EvalDirectory, repeat: int
    ) -> RunCheckpoint:
        journal_module.ensure_not_complete(path, manifest)
        journal_module.ensure_plan_unchanged(path, manifest, plan_hash(manifest["invocation"], eval_directory))
        checkpoint = Checkpoint.resume(path, manifest)
        try:
            records = checkpoint.journal.records()
            journal_module.ensure_results_within_plan(path, records, planned_keys(eval_directory, repeat))
        except BaseException:
            checkpoint.release()
            raise
        completed: dict[ResultKey, SampleResult] = {}
        for key, record in records.items():
            if record.type != RUN_RESULT:
                continue
            result = result_from_payload(record.payload)
            if is_complete(result):
                trial = int(key.split("\0", 1)[0])
                completed[(trial, result.case, result.target, result.sample_index)] = result
        return cls(checkpoint, resumed=True, completed=completed)

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[RunCheckpoint]:
        concurrency = (self.checkpoint.manifest.get("invocation") or {}).get("concurrency")
        self._writer = journal_writer(self.checkpoint, concurrency if isinstance(concurrency, int) else 1)
        try:
            yield self
        finally:
            writer, self._writer = self._writer, None
            await writer.close()

    def submit(self, trial: int, result: SampleResult, on_durable: Callable[[], None]) -> asyncio.Future[None]:
        """Queue `result`; `on_durable` runs once it is on disk, when the returned future resolves."""
        assert self._writer is not None, "use `async with checkpoint.writing()`"
        key = run_result_key(trial, result.case, result.target, result.sample_index, result.timestamp_s)

        def durable() -> None:
            if result.status != "ignored" and is_complete(result):
                self.has_reusable_work = True
            on_durable()

        return self._writer.submit(RUN_RESULT, key, result.to_report(), durable)

    async def drain(self) -> None:
        if self._writer is not None:
            await self._writer.drain()

    def would_remain(self, resumable_adapter_errors: int) -> bool:
        """Whether `finish(resumable_adapter_errors)` will leave the checkpoint in place."""
        return resumable_adapter_errors == 0 or self.has_reusable_work

    def finish(self, resumable_adapter_errors: int) -> bool:
        """Mark complete, keep for a retry, or discard an empty checkpoint; True when it remains."""
        if resumable_adapter_errors == 0:
            self.checkpoint.mark_complete()
            self.checkpoint.release()
            return True
        return self.abandon()

    def abandon(self) -> bool:
        """An interrupted or failed run: keep the checkpoint only if it holds reusable work."""
        if self.has_reusable_work:
            self.checkpoint.release()
            return True
        self.checkpoint.discard()
        return False

    def report_entry(self, resumable_adapter_errors: int) -> dict[str, Any]:
        return {"path": str(self.path), "resumed": self.resumed, "resumable_adapter_errors": resumable_adapter_errors}


def resume_lines(path: Path) -> list[str]:
    command = journal_module.format_resume_command(["assay", "video", "run", "--resume", str(path)])
    return [f"Checkpoint: {path}", f"Resume with `{command}`."]
