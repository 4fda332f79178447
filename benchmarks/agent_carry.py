"""Carry figure (issue 21): a second `assay agent run` of a 1,000-eval suite with nothing changed
carries every slot, with no agent call, in ≤ 1.5 s wall; changing one shared helper reruns exactly
the evals that import it.

The project has N eval files (`evals/e0000_eval.py` …), each importing one of two helpers: the
first `--alpha` evals import `evals/_lib/alpha.py`, the rest `evals/_lib/beta.py`. The agent appends
a line to a file for every send, so agent calls are counted, not assumed. Each invocation is the CLI
in a child process (interpreter start-up included), stdout a pipe, as in CI.
Run: python benchmarks/agent_carry.py [--evals 1000] [--alpha 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXPERIMENT = """
import os
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

CALLS = os.environ["CARRY_BENCH_CALLS"]

async def send(turn_input, ctx):
    with open(CALLS, "a") as calls:
        calls.write(ctx.eval_id + "\\n")
    return Turn([message("The answer is 42.")])

bench = Experiment(agent=define_agent(name="counting", send=send, evidence_coverage=complete_evidence_coverage),
                   model="bench-model")
"""
HELPER = '''
def question(index):
    return f"question {index} from NAME"
'''
EVAL = """
from assay.agent import define_eval, includes
from evals._lib.HELPER import question


@define_eval
async def test(t):
    await t.send(question(INDEX))
    t.check(t.reply, includes("42"))
"""


def make_project(root: Path, count: int, alpha: int) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "evals" / "_lib").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.assay]\nconcurrency = 50\n")
    (root / "experiments" / "bench.py").write_text(EXPERIMENT)
    for name in ("alpha", "beta"):
        (root / "evals" / "_lib" / f"{name}.py").write_text(HELPER.replace("NAME", name))
    for index in range(count):
        helper = "alpha" if index < alpha else "beta"
        (root / "evals" / f"e{index:04d}_eval.py").write_text(EVAL.replace("HELPER", helper).replace("INDEX", str(index)))
    return root


def invoke(project: Path, store: Path, calls: Path, *extra: str) -> tuple[float, dict, str]:
    """(wall seconds, the receipt or --dry document, stdout) of one CLI invocation."""
    environment = {**os.environ, "ASSAY_STORE": str(store), "CARRY_BENCH_CALLS": str(calls)}
    command = [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json", *extra]
    started = time.perf_counter()
    finished = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    lines = [json.loads(line) for line in finished.stdout.splitlines() if line.strip()]
    if finished.returncode not in (0, 1) or not lines:
        raise SystemExit(f"`{' '.join(command)}` exited {finished.returncode}:\n{finished.stderr[-2000:]}")
    last = lines[-1]
    return wall, last.get("receipt", last), finished.stdout


def agent_calls(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--alpha", type=int, default=100, help="evals importing the helper that is changed")
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-carry-") as folder:
        base = Path(folder)
        project = make_project(base / "project", arguments.evals, arguments.alpha)
        store, calls = base / "store" / "assay.db", base / "calls.txt"

        wall, receipt, _ = invoke(project, store, calls)
        print(f"first run: {arguments.evals} evals executed in {wall:.2f} s, {len(agent_calls(calls))} agent calls")
        assert receipt["counts"]["passed"] == arguments.evals, receipt

        walls = []
        for _ in range(arguments.rounds):
            before = len(agent_calls(calls))
            wall, receipt, _ = invoke(project, store, calls)
            walls.append(wall)
            assert receipt["counts"]["carried"] == arguments.evals, receipt["counts"]
            assert len(agent_calls(calls)) == before, "a carried slot called the agent"
        print(f"nothing changed: {arguments.evals}/{arguments.evals} carried, 0 agent calls, wall "
              f"median {statistics.median(walls):.3f} s (runs: {', '.join(f'{w:.3f}' for w in walls)})")

        helper = project / "evals" / "_lib" / "alpha.py"
        helper.write_text(helper.read_text() + "\n# edited\n")
        wall, plan, _ = invoke(project, store, calls, "--dry")
        executed = {slot["eval_id"] for slot in plan["slots"] if slot["action"] == "execute"}
        importing = {f"e{index:04d}" for index in range(arguments.alpha)}
        assert executed == importing, sorted(executed ^ importing)[:10]
        reasons = {slot["reason"] for slot in plan["slots"] if slot["action"] == "execute"}
        print(f"--dry after editing evals/_lib/alpha.py: {len(executed)} to run, exactly the evals importing it "
              f"({', '.join(sorted(reasons))}), in {wall:.2f} s")
        before = len(agent_calls(calls))
        wall, receipt, _ = invoke(project, store, calls)
        rerun = agent_calls(calls)[before:]
        assert sorted(rerun) == sorted(importing), "the rerun called the agent for other evals"
        assert receipt["counts"]["carried"] == arguments.evals - arguments.alpha, receipt["counts"]
        print(f"run after the edit: {len(rerun)} agent calls (the {arguments.alpha} importing evals), "
              f"{receipt['counts']['carried']} carried, in {wall:.2f} s")


if __name__ == "__main__":
    main()
