"""Harness overhead of `assay agent` runs: an instant in-process agent, and one that sleeps 100 ms.

`python benchmarks/agent_overhead.py` prints both figures (targets: 10,000 single-turn evals with two
assertions at concurrency 100, journal on, <= 2 s; 1,000 evals of a 100 ms agent at concurrency 100 <= 1.5 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

from assay.agent import (
    Experiment, Turn, Usage, complete_evidence_coverage, define_agent, define_eval, includes, message,
)
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun
from assay.core.gcpolicy import collection_sized_for_runs
from assay.core.journal import Checkpoint, JournalWriter


def make_agent(delay_seconds: float):
    reply = Turn([message("The answer is 42.")], usage=Usage(input_tokens=12, output_tokens=6))

    async def send(turn_input, ctx):
        if delay_seconds:
            await asyncio.sleep(delay_seconds)
        return reply

    return define_agent(name="instant" if not delay_seconds else "sleepy", send=send,
                        evidence_coverage=complete_evidence_coverage)


@define_eval(description="one turn, two assertions")
async def single_turn(t):
    await t.send("What is the answer?")
    t.succeeded()
    t.check(t.reply, includes("42"))


async def run_once(count: int, delay_seconds: float, concurrency: int, journal_dir: Path | None) -> tuple[float, int]:
    experiment = ExperimentEntry("bench", Experiment(agent=make_agent(delay_seconds), model="bench-model"))
    evals = [EvalEntry(f"bench/{position:05d}", single_turn) for position in range(count)]
    plan = build_plan([experiment], {"bench": evals})
    started = time.perf_counter()
    cpu_started = time.process_time()
    writer = None
    checkpoint = None
    if journal_dir is not None:
        checkpoint = Checkpoint.create(journal_dir, "agent", plan_hash="bench", total=len(plan), invocation={})
        writer = JournalWriter(checkpoint.journal)
    outcome = await AgentRun(plan, RunOptions(concurrency=concurrency), journal=writer).run()
    if writer is not None:
        await writer.close()
        checkpoint.mark_complete()
        checkpoint.release()
    elapsed = time.perf_counter() - started
    run_once.cpu_seconds = time.process_time() - cpu_started  # type: ignore[attr-defined]
    return elapsed, outcome.count("passed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is reported")
    arguments = parser.parse_args()
    figures = []
    for name, count, delay, target in (
        ("instant agent, 10,000 evals x 2 assertions, concurrency 100, journal on", 10_000, 0.0, 2.0),
        ("100 ms agent, 1,000 evals, concurrency 100, journal on", 1_000, 0.1, 1.5),
    ):
        timings = []
        cpu = []
        for _ in range(arguments.repeat):
            with tempfile.TemporaryDirectory() as directory:
                with collection_sized_for_runs():  # what `assay agent run` does around a run
                    elapsed, passed = asyncio.run(run_once(count, delay, 100, Path(directory)))
            assert passed == count, f"{passed} of {count} passed"
            timings.append(elapsed)
            cpu.append(run_once.cpu_seconds)  # type: ignore[attr-defined]
        best = min(timings)
        figures.append({
            "figure": name, "evals": count, "best_seconds": round(best, 3),
            "per_eval_ms": round(best / count * 1000, 4), "target_seconds": target,
            "all_seconds": [round(value, 3) for value in timings],
            "cpu_seconds_of_best": round(cpu[timings.index(best)], 3),
            "load_average_1m": round(os.getloadavg()[0], 2),
        })
        print(f"{name}: best {best:.3f} s ({best / count * 1000:.3f} ms/eval; target <= {target} s; "
              f"process CPU {cpu[timings.index(best)]:.3f} s) runs: {', '.join(f'{value:.3f}' for value in timings)}",
              flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
