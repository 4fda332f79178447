"""Figures for the Ray executor: a 4-case video eval on 2 CPUs vs 1, and Ray's overhead per agent attempt.

`python benchmarks/ray_figures.py` prints both (targets: 2 CPUs >= 1.6x faster than 1 CPU; overhead
per agent-eval unit <= 2 ms). Each cluster size runs in its own process with `ray.init(num_cpus=k)`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from fractions import Fraction
from pathlib import Path

CASES = 4
SAMPLES_PER_CASE = 24
WORK_SECONDS = 0.04  # CPU-bound work per sample, so the speed-up shows where the work runs

ADAPTER = f"""
import time

async def evaluate(sample, target):
    # Busy CPU (not sleep): only a second process can make this go faster.
    end = time.process_time() + {WORK_SECONDS}
    total = 0
    while time.process_time() < end:
        total += 1
    return True
"""


def make_video(path: Path, seconds: int = 6, fps: int = 10) -> None:
    import av
    import numpy as np

    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        stream.time_base = Fraction(1, fps)
        for index in range(seconds * fps):
            frame = np.full((120, 160, 3), index % 256, dtype=np.uint8)
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            video_frame.pts = index
            container.mux(stream.encode(video_frame))
        container.mux(stream.encode())


def make_video_eval(root: Path) -> Path:
    cases = root / "cases"
    cases.mkdir(parents=True)
    make_video(cases / "clip.mp4")
    every = 6.0 / SAMPLES_PER_CASE
    for number in range(CASES):
        (cases / f"case{number}.yaml").write_text(
            f"video: clip.mp4\ntargets:\n  t:\n    samples:\n      - range: [0.0, 6.0]\n"
            f"        every_s: {every}\n        expect: true\n"
        )
    (root / "adapter.py").write_text(textwrap.dedent(ADAPTER))
    return root


def video_child(cpus: int) -> dict:
    import ray

    from assay.core.ray_executor import RayExecutor
    from assay.video.loading import load_eval_directory
    from assay.core.run_events import RunEvents
    from assay.video.request import VideoRunRequest
    from assay.video.run import VideoRun, VideoWorker, remaining_case_work

    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as folder:
        eval_dir = make_video_eval(Path(folder) / "eval")
        directory = load_eval_directory(eval_dir)
        options = VideoRunRequest(eval_dir=eval_dir, adapter=f"{eval_dir}/adapter.py:evaluate")

        async def run() -> float:
            executor = RayExecutor.connect(VideoWorker, (options, directory.path), remainder=remaining_case_work)
            # Actors start once per run and stay warm; time the work, not process start-up.
            await asyncio.gather(*(actor.pid.remote() for actor in executor.actors))
            started = time.perf_counter()
            outcome = await VideoRun(directory, options, RunEvents(), executor=executor).run()
            elapsed = time.perf_counter() - started
            await executor.close()
            assert outcome.success and len(outcome.trials[0].results) == CASES * SAMPLES_PER_CASE
            return elapsed

        runs = [asyncio.run(run()) for _ in range(3)]
    ray.shutdown()
    return {"cpus": cpus, "seconds": min(runs), "runs": runs}


AGENT_EXPERIMENT = """
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

async def send(turn_input, ctx):
    return Turn([message("The answer is 42.")])

bench = Experiment(agent=define_agent(name="instant", send=send, evidence_coverage=complete_evidence_coverage),
                   model="bench-model")
"""
AGENT_EVALS = """
from assay.agent import define_eval, includes

def make(index):
    async def test(t):
        await t.send(f"question {index}")
        t.succeeded()
        t.check(t.reply, includes("42"))
    return define_eval(test)

EVALS = {f"e{index:04d}": make(index) for index in range(COUNT)}
"""


def agent_child(count: int, concurrency: int) -> dict:
    import ray

    from assay.agent.discovery import discover_evals, discover_experiments
    from assay.agent.plan import build_plan
    from assay.agent.remote_worker import AgentWorker
    from assay.agent.run_options import RunOptions
    from assay.agent.runner import AgentRun
    from assay.core.ray_executor import RayExecutor

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "project"
        (root / "experiments").mkdir(parents=True)
        (root / "evals").mkdir()
        (root / "pyproject.toml").write_text("[tool.assay]\n")
        (root / "experiments" / "bench.py").write_text(AGENT_EXPERIMENT)
        (root / "evals" / "bench_eval.py").write_text(AGENT_EVALS.replace("COUNT", str(count)))
        experiments = discover_experiments(root)
        plan = build_plan(experiments, {experiments[0].id: discover_evals(root)})
        options = RunOptions(concurrency=concurrency, run_id="bench")

        async def timed(executor) -> float:
            started = time.perf_counter()
            outcome = await AgentRun(plan, options, executor=executor).run()
            elapsed = time.perf_counter() - started
            assert outcome.count("passed") == count, outcome.results[:1]
            return elapsed

        async def measure() -> dict:
            local = min([await timed(None) for _ in range(3)])
            executor = RayExecutor.connect(AgentWorker, (str(root), options), concurrency=concurrency)
            await timed(executor)  # warm: actors started, project discovered, code imported
            remote = min([await timed(executor) for _ in range(3)])
            await executor.close()
            return {"local_seconds": local, "ray_seconds": remote}

        figures = asyncio.run(measure())
    ray.shutdown()
    figures.update(units=count, concurrency=concurrency)
    figures["overhead_ms_per_unit"] = (figures["ray_seconds"] - figures["local_seconds"]) / count * 1000
    return figures


def child(arguments: list[str]) -> dict:
    return json.loads(subprocess.run(
        [sys.executable, __file__, *arguments], check=True, capture_output=True, text=True
    ).stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--video-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--agent-child", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--agent-units", type=int, default=1000)
    arguments = parser.parse_args()
    if arguments.video_child:
        print(json.dumps(video_child(arguments.video_child)))
        return
    if arguments.agent_child:
        print(json.dumps(agent_child(*arguments.agent_child)))
        return
    one, two = child(["--video-child", "1"]), child(["--video-child", "2"])
    print(f"video, {CASES} cases x {SAMPLES_PER_CASE} samples x {WORK_SECONDS * 1000:.0f} ms CPU: "
          f"1 CPU {one['seconds']:.2f} s, 2 CPUs {two['seconds']:.2f} s, speed-up {one['seconds'] / two['seconds']:.2f}x")
    for concurrency in (1, 32):
        agent = child(["--agent-child", str(arguments.agent_units), str(concurrency)])
        print(f"agent, {agent['units']} instant attempts at concurrency {concurrency}: local {agent['local_seconds']:.2f} s, "
              f"Ray {agent['ray_seconds']:.2f} s, overhead {agent['overhead_ms_per_unit']:.3f} ms per unit")


if __name__ == "__main__":
    main()
