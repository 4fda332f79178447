"""Ask the adapter about a case's samples: one decode pass, bounded concurrency, batch or not.

`run` judges each observation against its expectation and `seed` turns it into one; both drive
the adapter through `observe_case`, so scheduling, decoding and error wording exist once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence, Set
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.schedule import Completed, run_bounded
from assay.core.jsonvalue import check_json_like
from assay.errors import AdapterError, AdapterRuntimeError, AssayError, JsonValueError, VideoError
from assay.video.adapters import AdapterConfig, FrameSample, TargetContext, VideoEvaluator
from assay.video.model import Case, Sample, Target


class EvalRunError(AssayError):
    """An evaluation that cannot go on (exit 2), e.g. the first adapter error without --keep-going."""


class SampleAbort(Exception):
    """Raised by an observation handler to stop a fail-fast evaluation at this sample."""

    def __init__(self, sample: Sample, message: str) -> None:
        super().__init__(message)
        self.sample = sample
        self.message = message


@dataclass(slots=True)
class Observation:
    """What the adapter said about one sample, or why it could not say anything."""

    sample: Sample
    target: Target
    value: Any
    error: str | None  # the adapter error message (only delivered with keep-going)
    duration_seconds: float
    timing_mode: str  # individual | batch_amortized
    pixels: Any  # the frame sent, for failure artifacts


def error_text(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if isinstance(error, KeyError):  # its text is the bare key (`'lamp'`), which says nothing of what failed
        return f"{text} (KeyError: a key that is not there)"
    return text


def video_path(case: Case) -> Path:
    path = case.video.path
    if path is None:
        raise VideoError(f"video for case '{case.name}' is not available locally: {case.video.display_name}")
    return path


ADAPTER_TIMEOUT_SETTING = "set by --adapter-timeout"


async def create_evaluator(
    *,
    adapter: str | None,
    adapter_command: str | None,
    config: AdapterConfig,
    executor: Executor | None,
    adapter_timeout: float | None = None,
) -> VideoEvaluator:
    """A fresh evaluator: a Python adapter imported anew, or a newly spawned command adapter.

    `adapter_timeout` (seconds) limits each call to a command adapter; `initialize` has its own
    default limit (`assay.adapters.ndjson.start_timeout`)."""
    if adapter_command:
        from assay.adapters.ndjson import NO_TIMEOUT, RequestTimeout
        from assay.video.command_adapter import start_command_evaluator

        call_timeout = RequestTimeout(adapter_timeout, ADAPTER_TIMEOUT_SETTING) if adapter_timeout else NO_TIMEOUT
        return await start_command_evaluator(adapter_command, config, call_timeout=call_timeout)
    from assay.video.python_adapter import create_python_evaluator

    assert adapter is not None
    return await create_python_evaluator(adapter, config, executor=executor)


class TrialEvaluator:
    """One trial's evaluator: created on first use (never when nothing is pending), closed once.

    `async with` closes it with GlassKit's rules: a close failure while another error propagates
    becomes a note on that error; otherwise it is `adapter close failed: …` (exit 2)."""

    def __init__(
        self,
        *,
        adapter: str | None,
        adapter_command: str | None,
        config: AdapterConfig,
        executor: Executor | None,
        adapter_timeout: float | None = None,
    ) -> None:
        self._arguments = {
            "adapter": adapter, "adapter_command": adapter_command, "config": config, "executor": executor,
            "adapter_timeout": adapter_timeout,
        }
        self._evaluator: VideoEvaluator | None = None

    async def get(self) -> VideoEvaluator:
        if self._evaluator is None:
            self._evaluator = await create_evaluator(**self._arguments)
        return self._evaluator

    async def __aenter__(self) -> TrialEvaluator:
        return self

    async def __aexit__(self, error_type: Any, error: BaseException | None, traceback: Any) -> None:
        evaluator, self._evaluator = self._evaluator, None
        if evaluator is None:
            return
        try:
            await evaluator.close()
        except Exception as close_error:  # noqa: BLE001 - the adapter's own code
            if error is not None:
                if error_text(close_error) not in str(error):  # a fatal adapter failure fails close too: said once
                    error.add_note(f"adapter close failed while handling previous error: {error_text(close_error)}")
            elif isinstance(close_error, AssayError):
                raise
            else:
                raise AdapterError(f"adapter close failed: {error_text(close_error)}") from close_error


def invalid_observation(sample: Sample, target: Target, value: Any) -> str | None:
    """The adapter-error message for an observation that is not JSON-like, else None."""
    try:
        check_json_like(value, "observation", tuples=False)  # GlassKit takes lists, not tuples, as arrays
    except JsonValueError as error:
        return (
            f"adapter returned non-JSON observation for {sample.case_name}/{target.id} "
            f"sample {sample.sample_index}: {error}"
        )
    return None


def _call_error(sample: Sample, target: Target, error: BaseException) -> str:
    # Transport errors already say everything (GlassKit passes them through without sample context).
    if isinstance(error, AdapterRuntimeError):
        return error_text(error)
    return (
        f"adapter failed for {sample.case_name}/{target.id} sample {sample.sample_index} "
        f"at {sample.timestamp_s:g}s: {error_text(error)}"
    )


async def observe_case(
    case: Case,
    work: Sequence[tuple[Target, Sequence[Sample]]],
    evaluator: VideoEvaluator,
    *,
    concurrency: int,
    keep_going: bool,
    handle: Callable[[Observation], Any],
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Evaluate `work` (targets with their pending samples) and pass each observation to `handle`.

    Without `keep_going` an adapter error (or a `SampleAbort` raised by `handle`) stops new calls for
    samples after it in GlassKit's order (sample index), lets calls in flight finish, and raises
    `EvalRunError` for the lowest failing sample index: the one GlassKit reports."""
    if evaluator.batch:
        for target, samples in work:
            await _observe_target_batch(case, target, samples, evaluator, keep_going, handle, progress)
    else:
        await _observe_individually(case, work, evaluator, concurrency, keep_going, handle, progress)


async def _observe_individually(
    case: Case,
    work: Sequence[tuple[Target, Sequence[Sample]]],
    evaluator: VideoEvaluator,
    concurrency: int,
    keep_going: bool,
    handle: Callable[[Observation], None],
    progress: Callable[[int, int], None] | None,
) -> None:
    from assay.video.feed import FrameFeed, merge_in_time_order

    targets = {target.index: target for target, _ in work}
    contexts = {target.index: TargetContext(target.id, target.index, target.label, target.config) for target, _ in work}
    path = video_path(case)
    location = str(path)
    samples = merge_in_time_order([list(samples) for _, samples in work])
    total = len(samples)
    finished = 0
    feed = FrameFeed(
        path, samples, window=concurrency + 2, convert_ahead=not getattr(evaluator, "converts_frames", False)
    )

    # Fail-fast in GlassKit's order. GlassKit calls a case's samples target by target, in sample-index
    # order, so the error it reports is that of the lowest failing index: every lower sample was asked
    # first. The feed asks in time order, across targets; so after a failure at index k the samples
    # below k are still asked (GlassKit asked them before k) and those above it are not.
    ceiling: list[int | None] = [None]  # the lowest failing sample index so far; -1: stop everything

    async def ask(pair: Any) -> None:
        try:
            await _ask(pair)
        except SampleAbort as abort:
            if ceiling[0] is None or abort.sample.sample_index < ceiling[0]:
                ceiling[0] = abort.sample.sample_index
            raise
        except BaseException:
            ceiling[0] = -1
            raise

    async def _ask(pair: Any) -> None:
        sample, frame = pair
        target = targets[sample.target_index]
        try:
            frame_sample = FrameSample.of_frame(frame, sample.timestamp_s, sample.sample_index, location, case.name)
            started = time.perf_counter()
            try:
                value = await evaluator.evaluate(frame_sample, contexts[sample.target_index])
                error = None
            except Exception as failure:  # noqa: BLE001 - adapter code
                if not keep_going:
                    raise SampleAbort(sample, _call_error(sample, target, failure)) from failure
                value, error = None, _call_error(sample, target, failure)
            finally:
                frame_sample.release()
            # Handled here rather than in on_complete, so a SampleAbort from the handler stops
            # the run the same way an adapter error does (calls in flight still finish).
            durable = handle(
                Observation(sample, target, value, error, time.perf_counter() - started, "individual", frame.pixels)
            )
        finally:
            feed.release()
        if durable is not None:
            # Hold this worker (not its frame) until the result is on disk: a crash then loses
            # at most one answered call per worker.
            await durable

    def complete(done: Completed[Any]) -> None:
        nonlocal finished
        if done.error is None:
            finished += 1
            if progress is not None:
                progress(finished, total)

    source: Any = feed if keep_going else _below_ceiling(feed, samples, ceiling)
    try:
        completed = await run_bounded(
            source, ask, concurrency=concurrency, keep_going=True, on_complete=complete, collect=False
        )
    finally:
        await feed.close()
    failures = [done.error for done in completed if done.error is not None]
    if failures:
        aborts = [failure for failure in failures if isinstance(failure, SampleAbort)]
        if len(aborts) < len(failures):
            raise next(failure for failure in failures if not isinstance(failure, SampleAbort))
        first = min(aborts, key=lambda abort: abort.sample.sample_index)
        raise EvalRunError(first.message) from first.__cause__


async def _below_ceiling(feed: Any, samples: Sequence[Sample], ceiling: list[int | None]) -> Any:
    """The feed's items, minus those a fail-fast run no longer asks: once a sample failed, only samples
    with a lower index are asked; the feed stops when none of them is left."""
    lowest_after = [0] * len(samples)  # the lowest sample index from each position on
    lowest = None
    for position in range(len(samples) - 1, -1, -1):
        index = samples[position].sample_index
        lowest = index if lowest is None else min(lowest, index)
        lowest_after[position] = lowest
    position = 0
    while position < len(samples):
        limit = ceiling[0]
        if limit is not None and lowest_after[position] >= limit:
            return
        try:
            item = await feed.__anext__()
        except StopAsyncIteration:
            return
        position += 1
        limit = ceiling[0]  # a call in flight may have failed while the frame was being decoded
        if limit is not None and item[0].sample_index >= limit:
            feed.release()
            continue
        yield item


# What evaluate_many may not return, though list() would take it: text, a mapping, an unordered set.
_NOT_OBSERVATIONS = (str, bytes, bytearray, Mapping, Set)


async def _observe_target_batch(
    case: Case,
    target: Target,
    samples: Sequence[Sample],
    evaluator: VideoEvaluator,
    keep_going: bool,
    handle: Callable[[Observation], None],
    progress: Callable[[int, int], None] | None,
) -> None:
    from assay.video.decode import select_frames

    path = video_path(case)
    frames = await asyncio.to_thread(select_frames, path, [sample.timestamp_s for sample in samples])
    batch = [
        FrameSample.of_frame(frame, sample.timestamp_s, sample.sample_index, str(path), case.name)
        for sample, frame in zip(samples, frames)
    ]
    started = time.perf_counter()
    failure: str | None = None
    values: list[Any] = []
    try:
        context = TargetContext(target.id, target.index, target.label, target.config)
        returned = await evaluator.evaluate_many(batch, context)
        if isinstance(returned, _NOT_OBSERVATIONS):
            # GlassKit takes list(returned): a string's characters, a dict's keys or a set in no order would be
            # compared as the samples' observations whenever their count happened to match.
            failure = (f"adapter returned a {type(returned).__name__} for {len(samples)} samples in target "
                       f"'{target.id}'; evaluate_many must return a list with one observation per sample, in order")
        else:
            values = list(returned)
    except Exception as error:  # noqa: BLE001 - adapter code
        failure = (
            error_text(error)
            if isinstance(error, AdapterRuntimeError)
            else f"adapter failed for target '{target.id}': {error_text(error)}"
        )
    finally:
        for frame_sample in batch:
            frame_sample.release()
    per_sample = (time.perf_counter() - started) / len(samples)
    if failure is None and len(values) != len(samples):
        failure = f"adapter returned {len(values)} observations for {len(samples)} samples in target '{target.id}'"
    if failure is not None and not keep_going:
        raise EvalRunError(failure)
    try:
        for position, (sample, frame) in enumerate(zip(samples, frames)):
            value = None if failure is not None else values[position]
            handle(Observation(sample, target, value, failure, per_sample, "batch_amortized", frame.pixels))
            if progress is not None:
                progress(position + 1, len(samples))
    except SampleAbort as abort:
        raise EvalRunError(abort.message) from abort.__cause__
