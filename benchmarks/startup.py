"""Start-up CPU of the `assay` command (issue 35): `--version`, `agent list` and a one-eval `agent run`.

Each round runs, interleaved so all share the machine's mood: bare Python starting asyncio (the floor:
`python -c "import asyncio; asyncio.run(asyncio.sleep(0))"`), `assay --version`, `assay agent list` and
`assay agent run` of a one-eval project (an echo agent, journal and run record on, stdout a pipe as in CI),
bare and with numbers typed (`--concurrency 8 --timeout 60`), each in a fresh copy of the project, so every
run is a first run that calls its agent. The figure is each child's user+sys CPU (os.wait4); medians over
the rounds, and the ratio to the floor. Bytecode is cached as an installed package has it (a first,
uncounted round writes it).
Run: python benchmarks/startup.py [--rounds 15] [--baseline-src DIR]

`--baseline-src` (another version's `src`, e.g. `git archive HEAD~3 src | tar -x -C /tmp/base`)
measures that version in the same rounds too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

EXPERIMENT = """
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

async def send(turn_input, ctx):
    return Turn(events=[message("hello")])

base = Experiment(agent=define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage))
"""
EVAL = """
from assay.agent import define_eval

async def test(t):
    await t.send("hi")

one = define_eval(test)
"""
FLOOR = [sys.executable, "-c", "import asyncio; asyncio.run(asyncio.sleep(0))"]


def make_project(root: Path) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "evals").mkdir()
    (root / "experiments" / "base.py").write_text(EXPERIMENT)
    (root / "evals" / "one_eval.py").write_text(EVAL)
    return root


def cpu_of(command: list[str], source: str | None = None, cwd: Path | None = None) -> float:
    """User+sys CPU seconds of one child, its stdout read through a pipe; `source`: a `src` to import assay from."""
    environment = dict(os.environ)
    # As installed: bytecode cached. With PYTHONDONTWRITEBYTECODE (set on the project's VM) every module
    # edited since its .pyc was written is compiled again by every run: ~0.1 s more for a run.
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    if source is not None:
        environment["PYTHONPATH"] = os.pathsep.join([source, *filter(None, [os.environ.get("PYTHONPATH")])])
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment, cwd=cwd)
    assert process.stdout is not None
    process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(command)} failed with exit code {code}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--baseline-src", help="a `src` folder of another version, measured in the same rounds")
    args = parser.parse_args()
    versions = {"this": None} if args.baseline_src is None else {"baseline": args.baseline_src, "this": None}
    assay = [sys.executable, "-m", "assay"]
    figures: dict[str, list[float]] = {"bare asyncio": []}
    with tempfile.TemporaryDirectory() as folder:
        template = make_project(Path(folder) / "template")
        for round_number in range(-1, args.rounds):  # round -1 writes the bytecode caches; not counted
            figures["bare asyncio"].append(cpu_of(FLOOR))
            for name, source in versions.items():
                project = Path(folder) / f"{name}-{round_number}"
                shutil.copytree(template, project)
                numbers = shutil.copytree(template, Path(folder) / f"{name}-{round_number}-numbers")  # a first run too
                for label, command in (
                    ("assay --version", [*assay, "--version"]),
                    ("assay agent list", [*assay, "agent", "list", "--project", str(project)]),
                    ("one-eval assay agent run", [*assay, "agent", "run", "--project", str(project)]),
                    ("the same with --concurrency 8 --timeout 60", [*assay, "agent", "run", "--project", str(numbers),
                                                                   "--concurrency", "8", "--timeout", "60"]),
                ):
                    figures.setdefault(f"{label} ({name})", []).append(cpu_of(command, source))
            if round_number < 0:
                figures = {label: [] for label in figures}
                continue
            print(f"round {round_number + 1}: " + ", ".join(f"{label} {values[-1]:.3f}" for label, values in
                                                            figures.items()), flush=True)
    floor = statistics.median(figures["bare asyncio"])
    print(f"load average at the end: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    for label, values in figures.items():
        median = statistics.median(values)
        print(f"median {label}: {median:.3f} s CPU ({median / floor:.2f}x bare asyncio)")


if __name__ == "__main__":
    main()
