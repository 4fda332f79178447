"""Docker sandboxes: what one attempt's container costs beside `docker run --rm`, and that a burst leaves nothing.

1. Per attempt, for a 200-file git repository, with the workdir in each place a Docker sandbox puts it (a
   host folder the container mounts: the default; a tmpfs; the container's own file system, as for a remote
   daemon): create the container from the cached image, upload the repository, take the change ledger's baseline, one send window in which one command changes a file,
   the diff, and the removal — and, interleaved with it, the floor: `cp -a` of the repository into a new
   folder and `docker run --rm` of the same image running the same command on that copy, bind-mounted
   (then `rm -rf` of the copy). Medians of --repeat runs, milliseconds.
2. 50 attempts at concurrency 8 through the real runner (each runs commands and leaves a background process
   behind in its container): afterwards the daemon lists no container of theirs (the Docker SDK), no
   process of theirs is left on the host (`ps`: no `containerd-shim` of theirs, no process carrying their
   marker), and the sandbox folder holds nothing of theirs.
Needs a Docker daemon and the test image (python tests/containers.py build makes it, without a registry).
Run: python benchmarks/docker_sandbox.py [--repeat 15] [--attempts 50] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from containers import BASE_IMAGE, ensure_images  # noqa: E402

from assay.agent import (  # noqa: E402
    Experiment,
    Turn,
    complete_evidence_coverage,
    define_eval,
    define_sandbox_agent,
    docker_sandbox,
)
from assay.agent.discovery import EvalEntry, ExperimentEntry  # noqa: E402
from assay.agent.model import message  # noqa: E402
from assay.agent.plan import build_plan, link_plan  # noqa: E402
from assay.agent.run_options import RunOptions  # noqa: E402
from assay.agent.runner import AgentRun  # noqa: E402
from assay.agent.sandbox import docker_workspace  # noqa: E402
from assay.agent.sandbox.docker import DockerProvider, docker_client  # noqa: E402
from assay.agent.sandbox.handle import Sandbox, SandboxCore  # noqa: E402
from assay.agent.sandbox.interface import CreateRequest  # noqa: E402
from assay.agent.sandbox.layers import upload  # noqa: E402
from assay.agent.sandbox.ledger import ChangeLedger, ExecGit  # noqa: E402

COMMAND = "sed -i 's/= 0/= 1/' pkg0/module_0.py"  # the one command: an edit the diff must show


def make_repository(folder: Path, files: int = 200) -> Path:
    for index in range(files):
        path = folder / f"pkg{index % 10}" / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {index}\nvalue = 0\n" + "".join(f"line_{line} = {line}\n" for line in range(30)))
    environment = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
                   "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "a repository"]):
        subprocess.run(argv, cwd=folder, check=True, env=environment)
    return folder


VARIANTS = {  # how each variant places the workdir (docker_workspace.py)
    "host": "docker_sandbox() (the default: a host folder the container mounts)",
    "tmpfs": "docker_sandbox(tmpfs_workdir=True)",
    "container": "docker_sandbox() with a remote daemon (the workdir in the container's own file system)",
}


@contextlib.contextmanager
def placed_in_the_container(variant: str):
    """For the `container` variant: the placement a remote daemon gets, on this local one."""
    if variant != "container":
        yield
        return
    original = docker_workspace.remote_daemon
    docker_workspace.remote_daemon = lambda environment=None: "measured as a remote daemon"
    try:
        yield
    finally:
        docker_workspace.remote_daemon = original


async def one_attempt(repository: Path, base: Path, variant: str) -> dict[str, float]:
    marks: dict[str, float] = {}
    started = time.perf_counter()

    def mark(name: str) -> None:
        marks[name] = time.perf_counter() - started - sum(marks.values())

    provider = DockerProvider(image=BASE_IMAGE, tmpfs_workdir=variant == "tmpfs")
    with placed_in_the_container(variant):
        backend = await provider.create(CreateRequest(f"bench-{os.urandom(4).hex()}", base_dir=base))
    expected = {"host": docker_workspace.HOST_FOLDER, "tmpfs": docker_workspace.TMPFS}.get(variant, "container")
    assert backend.placement.kind == expected, backend.placement
    sandbox = Sandbox(SandboxCore(backend))
    mark("create")
    await sandbox.upload_directory(repository)
    mark("upload")
    # As an attempt's ledger: a window that opens with nothing done since the baseline reuses it.
    ledger = ChangeLedger(ExecGit(backend, backend.ledger_dir), touches=lambda: sandbox._core.touches)
    await ledger.start()
    mark("baseline")
    await ledger.open_window("turn1", 0, 1)
    result = await sandbox.run_shell(COMMAND)
    window = await ledger.close_window()
    assert result.ok and window is not None and [change.path for change in window.changes] == ["pkg0/module_0.py"]
    mark("window + command + diff")
    assert await sandbox.stop()
    mark("remove")
    marks["total"] = time.perf_counter() - started
    return marks


def floor(repository: Path, base: Path) -> float:
    """`cp -a` of the repository, `docker run --rm` of the same command on it (bind-mounted), `rm -rf`."""
    copy = base / f"floor-{os.urandom(4).hex()}"
    started = time.perf_counter()
    subprocess.run(["cp", "-a", str(repository), str(copy)], check=True)
    subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", f"{copy}:/workspace", "-w", "/workspace",
                    BASE_IMAGE, "sh", "-c", COMMAND], check=True)
    subprocess.run(["rm", "-rf", str(copy)], check=True)
    return time.perf_counter() - started


def per_attempt(repository: Path, base: Path, repeat: int) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Medians (ms) of the attempt per workdir placement, and of the floor; and the median of each attempt's
    ratio to the floor measured next to it (robust to a machine whose load changes during the run: each
    pair sees the same load)."""
    order = [*VARIANTS, "floor"]

    async def run() -> list[dict[str, dict[str, float]]]:
        await one_attempt(repository, base, "host")  # warm up (imports, the SDK's first connection)
        floor(repository, base)
        rows = []
        for index in range(repeat):  # interleaved (each goes first in turn), so all see the same daemon and load
            row: dict[str, dict[str, float]] = {}
            shift = index % len(order)
            for variant in order[shift:] + order[:shift]:
                if variant == "floor":
                    row["floor"] = {"total": floor(repository, base)}
                else:
                    row[variant] = await one_attempt(repository, base, variant)
            rows.append(row)
        return rows

    base.mkdir(parents=True, exist_ok=True)
    rows = asyncio.run(run())
    medians = {variant: {name: statistics.median(row[variant][name] for row in rows) * 1000 for name in rows[0][variant]}
               for variant in rows[0]}
    ratios = {variant: statistics.median(row[variant]["total"] / row["floor"]["total"] for row in rows)
              for variant in VARIANTS}
    return medians, ratios


def burst(repository: Path, base: Path, attempts: int, concurrency: int) -> tuple[float, list[str], list[str], list[str]]:
    async def send(turn_input, ctx):
        await ctx.sandbox.run_shell("sleep 300 >/dev/null 2>&1 & echo started")  # a leftover background process
        await ctx.sandbox.run_shell(COMMAND)
        return Turn([message("edited")])

    agent = define_sandbox_agent(name="bench", send=send, evidence_coverage=complete_evidence_coverage)

    async def test(t):
        await t.send("edit")
        t.sandbox.changed_paths(["pkg0/module_0.py"])

    definition = define_eval(test, sandbox=docker_sandbox(image=BASE_IMAGE).prepare(upload(repository)))
    experiment = ExperimentEntry("bench", Experiment(agent=agent, attempts=attempts))
    plan = link_plan(build_plan([experiment], {"bench": [EvalEntry("edit", definition)]}))
    shims_before = set(_shims())
    previous = os.environ.get("ASSAY_SANDBOX_DIR")
    os.environ["ASSAY_SANDBOX_DIR"] = str(base)
    try:
        started = time.perf_counter()
        outcome = asyncio.run(AgentRun(plan, RunOptions(concurrency=concurrency)).run())
        elapsed = time.perf_counter() - started
    finally:
        if previous is None:
            os.environ.pop("ASSAY_SANDBOX_DIR", None)
        else:
            os.environ["ASSAY_SANDBOX_DIR"] = previous
    assert all(result.verdict == "passed" for result in outcome.results), [r.error for r in outcome.results]
    ids = {result.sandbox["sandbox_id"] for result in outcome.results}
    client = docker_client()
    try:
        containers = [container.id for container in client.containers.list(all=True, filters={"label": "assay.sandbox"})
                      if container.labels.get("assay.sandbox") in ids]
    finally:
        client.close()
    listing = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    processes = [line.strip() for line in listing.splitlines()
                 if any(sandbox_id in line for sandbox_id in ids) or "sleep 300" in line]
    processes += [f"containerd-shim of {shim}" for shim in set(_shims()) - shims_before]  # a container's runtime
    folders = sorted(path.name for path in base.iterdir() if not path.name.startswith(".ledger-packs-")) \
        if base.exists() else []
    return elapsed, containers, processes, folders


def _shims() -> list[str]:
    """The container ids the running `containerd-shim` processes serve (one per live container)."""
    listing = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True, check=True).stdout
    return [line.split(" -id ", 1)[1].split()[0] for line in listing.splitlines()
            if "containerd-shim" in line and " -id " in line]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--attempts", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8)
    arguments = parser.parse_args()
    problem = ensure_images()
    if problem is not None:
        print(f"no Docker figures: {problem}", file=sys.stderr)
        return 2
    version = docker_client().version()
    print(f"Docker {version.get('Version')} ({version.get('Os')}/{version.get('Arch')}); image {BASE_IMAGE}; "
          f"{os.cpu_count()} cores; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="assay-bench-docker-") as scratch:
        repository = make_repository(Path(scratch) / "repository")
        base = Path(scratch) / "sandboxes"
        figures, ratios = per_attempt(repository, base, arguments.repeat)
        floor_ms = figures["floor"]["total"]
        print(f"200-file git repository, medians of {arguments.repeat} interleaved runs; the floor (cp -a + docker "
              f"run --rm on the bind-mounted copy + rm -rf) {floor_ms:.0f} ms")
        for variant, label in VARIANTS.items():
            marks = figures[variant]
            parts = ", ".join(f"{name} {value:.0f}" for name, value in marks.items() if name != "total")
            print(f"  {label}: {marks['total']:.0f} ms per attempt ({parts} ms); {ratios[variant]:.2f}x the floor "
                  "(median of the paired ratios)")
        elapsed, containers, processes, folders = burst(repository, base / "burst", arguments.attempts,
                                                        arguments.concurrency)
        print(f"{arguments.attempts} attempts at concurrency {arguments.concurrency}: {elapsed:.1f} s; containers left: "
              f"{len(containers)}; processes left: {len(processes)}; folders left: {len(folders)}")
        for line in processes:
            print(f"  left: {line}")
        return 0 if ratios["host"] <= 1.5 and not containers and not processes and not folders else 1


if __name__ == "__main__":
    sys.exit(main())
