"""Peak memory of `assay.agent.api.run_evals` (issue 35): N instant evals built in code, run in a child.

The same instant agent and two-assertion evals as benchmarks/agent_cli.py, defined in code and run with
`run_evals(..., concurrency=100)`; the child then reads what a caller reads (exit code, failures, every
attempt's verdict once). Peak RSS is the child's own maximum resident set (os.wait4).
Run: python benchmarks/agent_api.py [--evals 100000] [--rounds 1] [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

CHILD = """
import sys
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, define_eval, includes, message
from assay.agent.api import run_evals

async def send(turn_input, ctx):
    return Turn([message("The answer is 42.")])

def make(index):
    async def test(t):
        await t.send(f"question {index}")
        t.succeeded()
        t.check(t.reply, includes("42"))
    return define_eval(test)

count = int(sys.argv[1])
experiment = Experiment(agent=define_agent(name="instant", send=send, evidence_coverage=complete_evidence_coverage),
                        model="bench-model")
results = run_evals({f"e{index:06d}": make(index) for index in range(count)}, experiment, concurrency=100)
passed = sum(1 for attempt in results.attempts if attempt.verdict == "passed")
assert results.exit_code == 0 and passed == count and not results.failures(), (results.exit_code, passed)
"""


def run_once(count: int, source: str | None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one child running `count` evals through `run_evals`."""
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = os.pathsep.join([source, *filter(None, [os.environ.get("PYTHONPATH")])])
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", CHILD, str(count)], env=environment)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("the child failed")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline-src", help="a `src` folder of another version, measured in the same rounds")
    args = parser.parse_args()
    versions = {"this": None} if args.baseline_src is None else {"baseline": args.baseline_src, "this": None}
    for round_number in range(args.rounds):  # interleaved: every version shares the machine's mood
        for name, source in versions.items():
            wall, cpu, rss = run_once(args.evals, source)
            print(f"round {round_number + 1} {name}: run_evals of {args.evals} evals: {wall:.2f} s, "
                  f"CPU {cpu:.2f} s, peak RSS {rss:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
