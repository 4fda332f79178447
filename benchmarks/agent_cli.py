"""Harness cost of `assay agent run` through the CLI (issue 22): CPU per case and peak memory.

A project with N instant single-turn evals (two assertions each, one experiment) is run with
`assay agent run --concurrency 100`, journal and run record on, stdout a pipe (as in CI). The
harness CPU per case is (CPU of the N-eval run − CPU of a 1-eval run) / (N − 1), so interpreter
start-up and imports are left out; peak RSS is the child's maximum resident set.
Run: python benchmarks/agent_cli.py [--evals 10000] [--rounds 3] [--memory 50000]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXPERIMENT = """
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

async def send(turn_input, ctx):
    return Turn([message("The answer is 42.")])

bench = Experiment(agent=define_agent(name="instant", send=send, evidence_coverage=complete_evidence_coverage),
                   model="bench-model")
"""
EVALS = """
from assay.agent import define_eval, includes

def make(index):
    async def test(t):
        await t.send(f"question {index}")
        t.succeeded()
        t.check(t.reply, includes("42"))
    return define_eval(test)

EVALS = {f"e{index:06d}": make(index) for index in range(COUNT)}
"""


def make_project(root: Path, count: int) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "evals").mkdir()
    (root / "pyproject.toml").write_text("[tool.assay]\n")
    (root / "experiments" / "bench.py").write_text(EXPERIMENT)
    (root / "evals" / "bench_eval.py").write_text(EVALS.replace("COUNT", str(count)))
    return root


def run_once(project: Path, store: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one CLI run, its stdout read through a pipe."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--concurrency", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, "ASSAY_STORE": str(store)},
    )
    assert process.stdout is not None
    for _ in process.stdout:  # a reader like CI's log collector
        pass
    code = process.wait()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code not in (0, 1):
        raise SystemExit(f"the run failed with exit code {code}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", type=int, default=50_000, help="evals of the peak-memory run (0: skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        one = make_project(root / "one", 1)
        many = make_project(root / "many", args.evals)
        per_case, walls = [], []
        for round_number in range(args.rounds):  # interleaved: the baseline and the run share the machine's mood
            _, cpu_one, _ = run_once(one, root / f"store-{round_number}" / "assay.db")
            wall, cpu_many, rss = run_once(many, root / f"store-{round_number}" / "assay.db")
            per_case.append((cpu_many - cpu_one) / (args.evals - 1) * 1000)
            walls.append(wall)
            print(f"round {round_number + 1}: {args.evals} evals in {wall:.2f} s, CPU {cpu_many:.2f} s "
                  f"(1 eval: {cpu_one:.2f} s) -> {per_case[-1]:.3f} ms/case, peak RSS {rss:.0f} MiB", flush=True)
        print(f"median: {statistics.median(per_case):.3f} ms of harness CPU per case, wall {statistics.median(walls):.2f} s")
        if args.memory:
            big = make_project(root / "big", args.memory)
            wall, cpu, rss = run_once(big, root / "store-big" / "assay.db")
            print(f"{args.memory} evals: {wall:.2f} s, CPU {cpu:.2f} s, peak RSS {rss:.0f} MiB "
                  "(RUSAGE_CHILDREN: the largest child so far)")


if __name__ == "__main__":
    main()
