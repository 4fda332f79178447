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

from agent_cli import EVALS, EXPERIMENT

# The project of benchmarks/agent_cli.py (its experiment `bench` and `EVALS`), defined in the child itself.
CHILD = "import sys\n" + EXPERIMENT + EVALS.replace("range(COUNT)", "range(int(sys.argv[1]))") + """
from assay.agent.api import run_evals

count = int(sys.argv[1])
results = run_evals(EVALS, bench, concurrency=100)
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
