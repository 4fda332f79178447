"""What `sandbox_reuse=True` saves per attempt: N attempts of a sandbox agent whose template takes measurable
preparation (a few hundred files written and a tool installed), with reuse and without, in interleaved
rounds; prints the median wall time per attempt of each and the saving.

    python benchmarks/sandbox_reuse.py [--attempts 20] [--rounds 5] [--concurrency 2] [--provider local|docker:IMAGE]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from assay.agent import Experiment, Turn, complete_evidence_coverage, define_eval, define_sandbox_agent, message
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan, link_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun
from assay.agent.sandbox import shell

# A small repository (300 files) and a "global install" under $HOME: what a real template spends its time on.
PREPARE = (
    "mkdir -p src && for i in $(seq 1 300); do echo \"line $i\" > src/file$i.txt; done && "
    "git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm base && "
    "mkdir -p \"$HOME/.tool\" && for i in $(seq 1 100); do echo x > \"$HOME/.tool/part$i\"; done"
)


async def send(turn_input, ctx):
    await ctx.sandbox.run_shell("echo change >> src/file1.txt && ls \"$HOME/.tool\" | wc -l")
    return Turn([message("done")])


async def test(t):
    await t.send("change one file")


def run(attempts: int, concurrency: int, reuse: bool, provider: str) -> float:
    from assay.agent import local_sandbox

    agent = define_sandbox_agent(name="bench", send=send, evidence_coverage=complete_evidence_coverage)
    fields = {"sandbox_reuse": True, "lifetime": 3600} if reuse else {}
    experiment = ExperimentEntry("bench", Experiment(
        agent=agent, sandbox=local_sandbox().prepare(shell(PREPARE)), concurrency=concurrency, **fields,
    ))
    evals = [EvalEntry(f"task{n:02d}", define_eval(test)) for n in range(attempts)]
    plan = link_plan(build_plan([experiment], {"bench": evals}), sandbox=None if provider == "local" else provider)
    started = time.perf_counter()
    outcome = asyncio.run(AgentRun(plan, RunOptions(concurrency=concurrency)).run())
    elapsed = time.perf_counter() - started
    bad = [result.error for result in outcome.results if result.verdict != "passed"]
    if bad:
        raise SystemExit(f"an attempt did not pass: {bad[0]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--provider", default="local", help="local, or docker:IMAGE")
    options = parser.parse_args()
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(options.rounds):
        for reuse in (False, True):  # interleaved: both see the same machine load
            times[reuse].append(run(options.attempts, options.concurrency, reuse, options.provider))
    fresh, reused = (statistics.median(times[reuse]) / options.attempts for reuse in (False, True))
    print(f"{options.attempts} attempts, concurrency {options.concurrency}, {options.rounds} rounds, {options.provider}")
    print(f"fresh sandbox per attempt: {fresh * 1000:.0f} ms per attempt (median)")
    print(f"sandbox_reuse=True:        {reused * 1000:.0f} ms per attempt (median)")
    print(f"saved: {(fresh - reused) * 1000:.0f} ms per attempt ({(1 - reused / fresh) * 100:.0f} %)")


if __name__ == "__main__":
    main()
