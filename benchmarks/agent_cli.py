"""Harness cost of `assay agent run` through the CLI (issue 22): CPU per case and peak memory.

A project with N instant single-turn evals (two assertions each, one experiment) is run with
`assay agent run --concurrency 100`, journal and run record on, stdout a pipe (as in CI). The
harness CPU per case is (CPU of the N-eval run − CPU of a 1-eval run) / (N − 1), so interpreter
start-up and imports are left out; peak RSS is the child's maximum resident set.
Run: python benchmarks/agent_cli.py [--evals 10000] [--rounds 3] [--memory 50000] [--baseline-src DIR]

`--sizes 10000,100000,1000000` (issue 35) runs each size once instead, in a fresh store, and prints its
CPU per case over the 1-eval run, the marginal CPU per case from the size before (creep shows as a
marginal that grows with N), and its peak RSS. A 1,000,000-eval run takes minutes and gigabytes.

`--baseline-src` (another checkout's `src`, e.g. from `git worktree add`) measures that version in
the same rounds, interleaved with this one, so both share the machine's mood; medians of each.
"""

from __future__ import annotations

import argparse
import os
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


def run_once(project: Path, store: Path, source: str | None = None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one CLI run, its stdout read through a pipe; `source` is
    a `src` folder to import assay from instead of the installed one."""
    environment = {**os.environ, "ASSAY_STORE": str(store)}
    if source is not None:
        environment["PYTHONPATH"] = os.pathsep.join([source, *filter(None, [os.environ.get("PYTHONPATH")])])
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--concurrency", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment,
    )
    assert process.stdout is not None
    for _ in process.stdout:  # a reader like CI's log collector
        pass
    # wait4: this child's own usage (RUSAGE_CHILDREN's peak would be the largest child so far).
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = code = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if code not in (0, 1):
        raise SystemExit(f"the run failed with exit code {code}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure_sizes(root: Path, sizes: list[int], source: str | None) -> None:
    """One run per size (smallest first), each with its own store: CPU per case over the 1-eval run,
    the marginal from the size before, peak RSS."""
    _, cpu_one, _ = run_once(make_project(root / "one", 1), root / "store-one" / "assay.db", source)
    before = (1, cpu_one)
    for size in sorted(sizes):
        wall, cpu, rss = run_once(make_project(root / f"n{size}", size), root / f"store-{size}" / "assay.db", source)
        marginal = (cpu - before[1]) / (size - before[0]) * 1000
        print(f"{size} evals: {wall:.2f} s, CPU {cpu:.2f} s (1 eval: {cpu_one:.2f} s) -> "
              f"{(cpu - cpu_one) / (size - 1) * 1000:.3f} ms/case, marginal from {before[0]}: {marginal:.3f} ms/case, "
              f"peak RSS {rss:.0f} MiB", flush=True)
        before = (size, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", type=int, default=50_000, help="evals of the peak-memory run (0: skip)")
    parser.add_argument("--baseline-src", help="a `src` folder of another version, measured in the same rounds")
    parser.add_argument("--sizes", help="comma-separated eval counts, one run each: CPU per case, marginal, peak RSS")
    args = parser.parse_args()
    if args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            measure_sizes(Path(folder), [int(size) for size in args.sizes.split(",")], args.baseline_src)
        return
    versions = {"this": None} if args.baseline_src is None else {"baseline": args.baseline_src, "this": None}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        one = make_project(root / "one", 1)
        many = make_project(root / "many", args.evals)
        per_case: dict[str, list[float]] = {name: [] for name in versions}
        walls: dict[str, list[float]] = {name: [] for name in versions}
        for round_number in range(args.rounds):  # interleaved: every version shares the machine's mood
            for name, source in versions.items():
                store = root / f"store-{name}-{round_number}" / "assay.db"
                _, cpu_one, _ = run_once(one, store, source)
                wall, cpu_many, rss = run_once(many, store, source)
                per_case[name].append((cpu_many - cpu_one) / (args.evals - 1) * 1000)
                walls[name].append(wall)
                print(f"round {round_number + 1} {name}: {args.evals} evals in {wall:.2f} s, CPU {cpu_many:.2f} s "
                      f"(1 eval: {cpu_one:.2f} s) -> {per_case[name][-1]:.3f} ms/case, peak RSS {rss:.0f} MiB", flush=True)
        for name in versions:
            print(f"median {name}: {statistics.median(per_case[name]):.3f} ms of harness CPU per case, "
                  f"wall {statistics.median(walls[name]):.2f} s")
        if args.memory:
            big = make_project(root / "big", args.memory)
            for name, source in versions.items():
                wall, cpu, rss = run_once(big, root / f"store-big-{name}" / "assay.db", source)
                print(f"{name}: {args.memory} evals: {wall:.2f} s, CPU {cpu:.2f} s, peak RSS {rss:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
