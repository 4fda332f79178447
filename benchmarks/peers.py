"""assay beside pydantic-evals on the same work: CPU per instant case, measured side by side.

pydantic-evals is installed by this script into a virtual environment of its own (it is not an
assay dependency). Both run N instant single-turn cases with two checks ("contains 42", and a
boolean), concurrency 100; assay through its CLI with the journal and the run record on, stdout a
pipe; pydantic-evals with `Dataset.evaluate_sync` and no persistence at all. The cost per case is
(CPU of N cases − CPU of 1 case) / (N − 1), so start-up and imports are left out. Rounds alternate.
Run: python benchmarks/peers.py [--cases 2000] [--rounds 3]
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
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_cli import make_project  # a sibling script

PEERS = Path(__file__).resolve().parent / ".out" / "peers-venv"

PYDANTIC_EVALS = """
import sys
from dataclasses import dataclass
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Contains, Evaluator, EvaluatorContext

@dataclass
class Answered(Evaluator):
    def evaluate(self, ctx: EvaluatorContext) -> bool:
        return bool(ctx.output)

async def task(question: str) -> str:
    return "The answer is 42."

count = int(sys.argv[1])
dataset = Dataset(name="bench", cases=[Case(name=f"e{i:06d}", inputs=f"question {i}") for i in range(count)],
                  evaluators=[Contains(value="42"), Answered()])
report = dataset.evaluate_sync(task, max_concurrency=100, progress=False)
assert len(report.cases) == count
"""


def peers_python() -> Path:
    python = PEERS / "bin" / "python"
    if not python.exists():
        print(f"installing pydantic-evals into {PEERS} …", flush=True)
        venv.create(PEERS, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "pydantic-evals"], check=True)
    return python


def child_cpu(command: list[str], *, ok: tuple[int, ...] = (0,), **options: object) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, **options)  # type: ignore[call-overload]
    assert process.stdout is not None
    for _ in process.stdout:
        pass
    if process.wait() not in ok:
        raise SystemExit(f"{' '.join(command[:4])} failed with exit code {process.returncode}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    peers = peers_python()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        script = root / "pydantic_evals_bench.py"
        script.write_text(PYDANTIC_EVALS)
        one, many = make_project(root / "one", 1), make_project(root / "many", args.cases)
        assay_runs, peer_runs = [], []
        for round_number in range(args.rounds):
            environment = {**os.environ, "ASSAY_STORE": str(root / f"store-{round_number}" / "assay.db")}

            def assay(project: Path) -> float:
                return child_cpu([sys.executable, "-m", "assay", "agent", "run", "--project", str(project),
                                  "--concurrency", "100"], env=environment)

            started = time.perf_counter()
            assay_runs.append((assay(many) - assay(one)) / (args.cases - 1) * 1000)
            peer_runs.append((child_cpu([str(peers), str(script), str(args.cases)])
                              - child_cpu([str(peers), str(script), "1"])) / (args.cases - 1) * 1000)
            print(f"round {round_number + 1} ({time.perf_counter() - started:.0f} s): assay {assay_runs[-1]:.3f} ms/case, "
                  f"pydantic-evals {peer_runs[-1]:.3f} ms/case", flush=True)
        a, p = statistics.median(assay_runs), statistics.median(peer_runs)
        print(f"median CPU per case: assay {a:.3f} ms (journal and run record on), pydantic-evals {p:.3f} ms "
              f"(no persistence): assay is {p / a:.2f}x cheaper")


if __name__ == "__main__":
    main()
