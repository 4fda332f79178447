"""What carrying costs (issue 35): a second `assay agent run` of N unchanged instant evals, every slot
carried (no agent call), against the first run that executed them: CPU and peak RSS of the child.

The project is benchmarks/agent_cli.py's (N instant single-turn evals, two assertions each) with
`--units-kb` of reply text per attempt, so the previous units are real-sized agent units (a reply,
a transcript) rather than empty ones. Each round makes a fresh store, runs the project once (every
slot executes) and again (every slot carried); CPU is also given above start-up, i.e. minus a
1-eval run's CPU in the same round. Rounds are interleaved, figures are medians.
Run: python benchmarks/agent_carry_cost.py [--evals 2000] [--rounds 3] [--units-kb 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_cli import make_project, run_once  # noqa: E402


def sized_project(root: Path, count: int, reply_kb: int) -> Path:
    """agent_cli's project whose agent answers `reply_kb` KiB of text (the answer stays 42)."""
    project = make_project(root, count)
    experiment = project / "experiments" / "bench.py"
    filler = "x" * (reply_kb * 1024)
    experiment.write_text(experiment.read_text().replace(
        'message("The answer is 42.")', f'message("The answer is 42. {filler}")'))
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--units-kb", type=int, default=2, help="KiB of reply text per attempt")
    args = parser.parse_args()
    first_cpu: list[float] = []
    carried_cpu: list[float] = []
    ratios: list[float] = []
    marginal: list[float] = []
    rss_ratios: list[float] = []
    with tempfile.TemporaryDirectory(prefix="assay-carry-cost-") as folder:
        root = Path(folder)
        one = sized_project(root / "one", 1, args.units_kb)
        many = sized_project(root / "many", args.evals, args.units_kb)
        for number in range(args.rounds):
            store = root / f"store-{number}" / "assay.db"
            _, cpu_one, _ = run_once(one, root / f"store-one-{number}" / "assay.db")
            _, cpu_first, rss_first = run_once(many, store)
            _, cpu_carried, rss_carried = run_once(many, store)
            first_cpu.append(cpu_first)
            carried_cpu.append(cpu_carried)
            ratios.append(cpu_carried / cpu_first)
            marginal.append((cpu_carried - cpu_one) / (cpu_first - cpu_one))
            rss_ratios.append(rss_carried / rss_first)
            print(f"round {number + 1}: first run CPU {cpu_first:.2f} s, peak RSS {rss_first:.0f} MiB; carried run "
                  f"CPU {cpu_carried:.2f} s, peak RSS {rss_carried:.0f} MiB; 1-eval run {cpu_one:.2f} s -> "
                  f"CPU {ratios[-1]:.2f}x ({marginal[-1]:.2f}x above start-up), RSS {rss_ratios[-1]:.2f}x", flush=True)
    load = os.getloadavg()[0]
    print(f"median of {args.rounds} ({args.evals} evals, {args.units_kb} KiB replies, load {load:.1f}): first run "
          f"{statistics.median(first_cpu):.2f} s CPU, carried run {statistics.median(carried_cpu):.2f} s -> "
          f"{statistics.median(ratios):.2f}x CPU ({statistics.median(marginal):.2f}x above start-up), "
          f"{statistics.median(rss_ratios):.2f}x peak RSS")


if __name__ == "__main__":
    main()
