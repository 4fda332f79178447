"""Benchmark what checkpointing costs `assay video run` (issue 4: at most 10% of the wall time).

Workload: the 600-sample run of Video evals I (1 target every 0.1 s over the cached 60 s 1280x720
30 fps H.264 clip from video_run.py, an async adapter that returns True, --concurrency 8), driven
in-process as the video run kind does (`assay.video.run_kind`): load, probe, run, finish. "On" journals every result
through a `RunCheckpoint` (group commit, one fsync per batch); "off" passes `checkpoint=None`.
Rounds alternate on/off so drift in machine load hits both alike; medians of wall and CPU time
and their ratios are printed, with the number of group commits of one checkpointed run. Process start-up is left out,
so the ratio is stricter than one over whole CLI runs.
Run: python benchmarks/checkpoint_overhead.py [--rounds 7] [--noisy] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from assay.core.gcpolicy import collection_sized_for_runs
from assay.core.journal import Journal, checkpoints_root
from assay.core.run_events import RunEvents
from assay.core.run.request import to_invocation
from assay.video.checkpoint import RunCheckpoint
from assay.video.loading import load_eval_directory
from assay.video.report import VideoConsole
from assay.video.request import VideoRunRequest
from assay.video.run import VideoRun, check_sample_times

sys.path.insert(0, str(Path(__file__).resolve().parent))
from video_run import OUT, make_eval, make_video  # a sibling script, not a package


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # all threads: decoder, adapter, journal writer
    return usage.ru_utime + usage.ru_stime


def run_once(options: VideoRunRequest, checkpointed: bool) -> tuple[float, float, Path | None]:
    """Wall and CPU seconds of one run from loading to the checkpoint's last write, and its checkpoint."""
    started = time.perf_counter()
    cpu_started = cpu_seconds()
    directory = load_eval_directory(options.eval_dir)
    check_sample_times(directory)
    reporter = VideoConsole(Console(file=io.StringIO()), verbose=False)
    events = RunEvents([reporter])
    run_checkpoint = None
    if checkpointed:
        run_checkpoint = RunCheckpoint.start(directory, to_invocation(options), directory.sample_count)

    async def execute() -> Any:
        if run_checkpoint is None:
            return await VideoRun(directory, options, events).run()
        async with run_checkpoint.writing():
            return await VideoRun(directory, options, events, checkpoint=run_checkpoint).run()

    with collection_sized_for_runs():  # what the run pipeline does around a run
        outcome = asyncio.run(execute())
    if run_checkpoint is not None:
        run_checkpoint.finish(0)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu_started
    results = [result for trial in outcome.trials for result in trial.results]
    if len(results) != directory.sample_count or any(result.status != "passed" for result in results):
        raise SystemExit("the benchmark run did not pass every sample")
    return elapsed, cpu, run_checkpoint.path if run_checkpoint is not None else None


def count_group_commits(options: VideoRunRequest) -> tuple[int, int]:
    """(fsynced writes, records) of one checkpointed run; timed rounds are not instrumented."""
    original = Journal.append_lines
    batches: list[int] = []

    def counting(self: Journal, data: bytes) -> None:
        original(self, data)
        batches.append(data.count(b"\n"))  # one line per record

    Journal.append_lines = counting  # type: ignore[method-assign]
    try:
        _, _, path = run_once(options, checkpointed=True)
    finally:
        Journal.append_lines = original  # type: ignore[method-assign]
    if path is not None:
        shutil.rmtree(path)
    return len(batches), sum(batches)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed runs of each kind")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--noisy", action="store_true", help="use the noisy (~4 Mbit/s) clip")
    args = parser.parse_args()
    name = "perf-noisy.mp4" if args.noisy else "perf.mp4"
    video = make_video(OUT / name, args.noisy)
    # Its own eval dir, so checkpoints of other benchmarks running at the same time are untouched.
    eval_dir = make_eval(OUT / f"eval-checkpoint-overhead-{name}", video, 1, 0.1)
    options = VideoRunRequest(eval_dir=eval_dir.resolve(), adapter=f"{eval_dir}/adapter.py:evaluate", concurrency=args.concurrency)
    print(f"{name}, 600 samples, --concurrency {args.concurrency}; before: {load_average()}")

    run_once(options, checkpointed=False)  # warm the page cache and imports
    timings: dict[bool, list[float]] = {False: [], True: []}
    cpu_timings: dict[bool, list[float]] = {False: [], True: []}
    for round_number in range(args.rounds):
        # Alternate which kind goes first, so neither always runs on a freshly warmed cache.
        for checkpointed in (True, False) if round_number % 2 else (False, True):
            elapsed, cpu, path = run_once(options, checkpointed)
            timings[checkpointed].append(elapsed)
            cpu_timings[checkpointed].append(cpu)
            if path is not None:
                shutil.rmtree(path)
    batches, records = count_group_commits(options)
    root = checkpoints_root(eval_dir)
    if root.exists() and not any(root.iterdir()):
        root.rmdir()

    off, on = statistics.median(timings[False]), statistics.median(timings[True])
    print(f"off: median {off:.3f} s  ({' '.join(f'{t:.3f}' for t in timings[False])})")
    print(f"on:  median {on:.3f} s  ({' '.join(f'{t:.3f}' for t in timings[True])})")
    print(f"checkpointing adds {(on - off) * 1000:.0f} ms = {(on / off - 1) * 100:+.1f}% of wall time (budget +10%)")
    # Each round ran both kinds back to back, so its own ratio is least disturbed by load drift.
    paired = statistics.median(on_time / off_time for off_time, on_time in zip(timings[False], timings[True]))
    print(f"median of per-round on/off ratios: {(paired - 1) * 100:+.1f}%")
    cpu_off, cpu_on = statistics.median(cpu_timings[False]), statistics.median(cpu_timings[True])
    print(f"CPU (all threads): off {cpu_off:.3f} s, on {cpu_on:.3f} s, {(cpu_on / cpu_off - 1) * 100:+.1f}%")
    print(f"group commits: {records} records in {batches} fsynced writes ({records / max(batches, 1):.1f} per write)")
    print(f"after: {load_average()}")


if __name__ == "__main__":
    main()
