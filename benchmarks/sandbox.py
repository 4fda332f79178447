"""Local sandboxes: what one attempt's sandbox costs, and that a burst of attempts leaves nothing behind.

1. Per attempt, for a 1,000-file workspace: create the sandbox, upload the files, take the git baseline,
   one send window in which three files change, the diff, and the stop (teardown) — milliseconds each,
   on the default sandbox folder and on a tmpfs (/dev/shm) when there is one; beside it, interleaved, the
   file system's own floor for the same files (`cp -a` into a new folder and `rm -rf`, no assay).
2. 50 sandbox attempts at concurrency 8 through the real runner (each runs commands and leaves a
   background process behind): afterwards no process carries a sandbox's marker and no folder is left.
Run: python benchmarks/sandbox.py [--repeat 20] [--attempts 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from assay.agent import (
    Experiment,
    Turn,
    complete_evidence_coverage,
    define_eval,
    define_sandbox_agent,
    local_sandbox,
)
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.model import message
from assay.agent.plan import build_plan, link_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox.layers import upload
from assay.agent.sandbox.ledger import ChangeLedger
from assay.agent.sandbox.local import LocalProvider, bubblewrap_works


def make_workspace(folder: Path, files: int = 1000) -> Path:
    for index in range(files):
        path = folder / f"pkg{index % 25}" / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {index}\n" + "".join(f"value_{line} = {line}\n" for line in range(30)))
    return folder


async def one_attempt(template: Path, base: Path) -> dict[str, float]:
    marks: dict[str, float] = {}
    started = time.perf_counter()
    backend = await LocalProvider(base_dir=base).create(CreateRequest(f"bench-{os.urandom(4).hex()}"))
    sandbox = Sandbox(SandboxCore(backend))
    await sandbox.upload_directory(template)
    marks["create + upload"] = time.perf_counter() - started
    ledger = ChangeLedger(backend.ledger_git())
    await ledger.start()
    marks["baseline"] = time.perf_counter() - started - sum(marks.values())
    await ledger.open_window("turn1", 0, 1)
    for index in (1, 500, 999):  # the "agent": three edits
        path = f"pkg{index % 25}/module_{index}.py"
        await sandbox.write_text(path, (await sandbox.read_text(path)) + "changed = True\n")
    window = await ledger.close_window()
    assert window is not None and len(window.changes) == 3, window
    marks["window + diff"] = time.perf_counter() - started - sum(marks.values())
    assert await sandbox.stop()
    marks["teardown"] = time.perf_counter() - started - sum(marks.values())
    marks["total"] = time.perf_counter() - started
    return marks


def copy_floor(template: Path, base: Path) -> float:
    """What the file system alone charges: `cp -a` of the workspace into a new folder and `rm -rf` of it."""
    target = base / f"floor-{os.urandom(4).hex()}"
    started = time.perf_counter()
    subprocess.run(["cp", "-a", str(template), str(target)], check=True)
    subprocess.run(["rm", "-rf", str(target)], check=True)
    return time.perf_counter() - started


def per_attempt(template: Path, base: Path, repeat: int) -> dict[str, float]:
    async def run() -> list[dict[str, float]]:
        await one_attempt(template, base)  # warm up (imports, git's first start, the template's pack)
        rows = []
        for _ in range(repeat):  # interleaved with the floor, so both see the same disk
            row = await one_attempt(template, base)
            row["floor"] = copy_floor(template, base)
            rows.append(row)
        return rows

    base.mkdir(parents=True, exist_ok=True)
    rows = asyncio.run(run())
    return {name: statistics.median(row[name] for row in rows) * 1000 for name in rows[0]}


def burst(template: Path, base: Path, attempts: int, concurrency: int) -> tuple[float, list[int], list[str]]:
    async def send(turn_input, ctx):
        await ctx.sandbox.run_shell("sleep 30 >/dev/null 2>&1 & echo started")  # a leftover background process
        await ctx.sandbox.write_text("pkg0/module_0.py", "edited = True\n")
        return Turn([message("edited")])

    agent = define_sandbox_agent(name="bench", send=send, evidence_coverage=complete_evidence_coverage)

    async def test(t):
        await t.send("edit")
        t.sandbox.changed_paths(["pkg0/module_0.py"])

    definition = define_eval(test, sandbox=local_sandbox(base_dir=base).prepare(upload(template)))
    experiment = ExperimentEntry("bench", Experiment(agent=agent, attempts=attempts))
    plan = link_plan(build_plan([experiment], {"bench": [EvalEntry("edit", definition)]}))
    started = time.perf_counter()
    outcome = asyncio.run(AgentRun(plan, RunOptions(concurrency=concurrency)).run())
    elapsed = time.perf_counter() - started
    assert all(result.verdict == "passed" for result in outcome.results), [r.error for r in outcome.results]
    ids = {result.sandbox["sandbox_id"] for result in outcome.results}
    left = [pid for pid in _pids() if any(_carries(pid, f"ASSAY_SANDBOX={sandbox_id}") for sandbox_id in ids)]
    # The template pack cache (`.ledger-packs-<pid>`) is this process's and goes when it exits.
    folders = sorted(path.name for path in base.iterdir() if not path.name.startswith(".ledger-packs-")) \
        if base.exists() else []
    return elapsed, left, folders


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _carries(pid: int, marker: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return marker.encode() in environ.read().split(b"\0")
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--attempts", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8)
    arguments = parser.parse_args()
    print(f"isolation: {'bubblewrap' if bubblewrap_works() else 'process-group'}; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="assay-bench-") as scratch:
        template = make_workspace(Path(scratch) / "template")
        bases = [("default temp folder", Path(tempfile.gettempdir()) / f"assay-bench-sandboxes-{os.getpid()}")]
        if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK):
            bases.append(("tmpfs /dev/shm", Path("/dev/shm") / f"assay-bench-sandboxes-{os.getpid()}"))
        for label, base in bases:
            figures = per_attempt(template, base, arguments.repeat)
            parts = ", ".join(f"{name} {value:.1f}" for name, value in figures.items() if name not in ("total", "floor"))
            print(f"1,000-file workspace on {label}: {figures['total']:.1f} ms per attempt (median of "
                  f"{arguments.repeat}; {parts} ms); the file system's floor (cp -a + rm -rf, no assay) "
                  f"{figures['floor']:.1f} ms")
        label, base = bases[-1]
        elapsed, left, folders = burst(template, base / "burst", arguments.attempts, arguments.concurrency)
        print(f"{arguments.attempts} attempts at concurrency {arguments.concurrency} on {label}: {elapsed:.2f} s; "
              f"processes left: {len(left)}; folders left: {len(folders)}")
        for _, base in bases:
            shutil.rmtree(base, ignore_errors=True)
        return 0 if not left and not folders else 1


if __name__ == "__main__":
    sys.exit(main())
