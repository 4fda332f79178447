"""What carrying costs (issue 35): a second `assay agent run` of N unchanged instant evals, every slot
carried (no agent call), against the first run that executed them: CPU and peak RSS of the child.

The project is benchmarks/agent_cli.py's (N instant single-turn evals, two assertions each) with
`--units-kb` of reply text per attempt, so the previous units are real-sized agent units (a reply,
a transcript) rather than empty ones. Each round makes a fresh store, runs the project once (every
slot executes) and again (every slot carried); CPU is also given above start-up, i.e. minus a
1-eval run's CPU in the same round. Rounds are interleaved, figures are medians; bytecode is
cached as an installed package has it (PYTHONDONTWRITEBYTECODE is cleared, a first round uncounted).
Run: python benchmarks/agent_carry_cost.py [--evals 2000] [--rounds 3] [--units-kb 2] [--baseline-src DIR]

`--baseline-src` (another checkout's `src`) measures that version in the same rounds, interleaved.
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
    parser.add_argument("--baseline-src", help="a `src` folder of another version, measured in the same rounds")
    args = parser.parse_args()
    versions = {"this": None} if args.baseline_src is None else {"baseline": args.baseline_src, "this": None}
    figures: dict[str, dict[str, list[float]]] = {
        name: {"first": [], "carried": [], "cpu": [], "above": [], "first_rss": [], "carried_rss": [], "rss": []}
        for name in versions
    }
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the children write and then use bytecode
    with tempfile.TemporaryDirectory(prefix="assay-carry-cost-") as folder:
        root = Path(folder)
        one = sized_project(root / "one", 1, args.units_kb)
        many = sized_project(root / "many", args.evals, args.units_kb)
        for name, source in versions.items():  # uncounted: writes each version's bytecode
            run_once(one, root / f"store-warm-{name}" / "assay.db", source)
        for number in range(args.rounds):  # interleaved: every version shares the machine's mood
            for name, source in versions.items():
                store = root / f"store-{name}-{number}" / "assay.db"
                _, cpu_one, _ = run_once(one, root / f"store-one-{name}-{number}" / "assay.db", source)
                _, cpu_first, rss_first = run_once(many, store, source)
                _, cpu_carried, rss_carried = run_once(many, store, source)
                figure = figures[name]
                figure["first"].append(cpu_first)
                figure["carried"].append(cpu_carried)
                figure["cpu"].append(cpu_carried / cpu_first)
                figure["above"].append((cpu_carried - cpu_one) / (cpu_first - cpu_one))
                figure["first_rss"].append(rss_first)
                figure["carried_rss"].append(rss_carried)
                figure["rss"].append(rss_carried / rss_first)
                print(f"round {number + 1} {name}: first run CPU {cpu_first:.2f} s, peak RSS {rss_first:.1f} MiB; "
                      f"carried run CPU {cpu_carried:.2f} s, peak RSS {rss_carried:.1f} MiB; 1-eval run {cpu_one:.2f} s"
                      f" -> CPU {figure['cpu'][-1]:.2f}x ({figure['above'][-1]:.2f}x above start-up), "
                      f"RSS {figure['rss'][-1]:.2f}x", flush=True)
    load = os.getloadavg()[0]
    for name, figure in figures.items():
        median = {key: statistics.median(values) for key, values in figure.items()}
        print(f"median {name} of {args.rounds} ({args.evals} evals, {args.units_kb} KiB replies, load {load:.1f}): "
              f"first run {median['first']:.2f} s CPU / {median['first_rss']:.1f} MiB, carried run "
              f"{median['carried']:.2f} s / {median['carried_rss']:.1f} MiB -> {median['cpu']:.2f}x CPU "
              f"({median['above']:.2f}x above start-up), {median['rss']:.2f}x peak RSS")


if __name__ == "__main__":
    main()
