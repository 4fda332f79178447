"""A SIGTERM while `--executor ray` starts its local cluster (the first seconds of a run) stops it as Ctrl-C does.

Ray's `init` installed its own SIGTERM handlers for those seconds: the command exited 15 with nothing said (no
"interrupted", no checkpoint line), and the agents its raylet had started (ray::DashboardAgent,
ray::RuntimeEnvAgent) were left running, orphaned, for about a minute.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the Ray executor needs the optional extra: the `ray` extra")

# Sent once the raylet has started its agents and before the driver has connected: Ray waits there for seconds,
# where a person's Ctrl-C or a cancelled CI job lands most often.
INJECT = """
import os, signal, sys, threading, time
import psutil
import ray._private.node as node

_started = node.Node.start_ray_processes

def start_ray_processes(self, *arguments, **keywords):
    result = _started(self, *arguments, **keywords)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            "Agent" in " ".join(process.cmdline()) or "agent.py" in " ".join(process.cmdline())
            for process in psutil.Process().children(recursive=True) if process.ppid() != os.getpid()):
        time.sleep(0.05)
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIG{name})).start()  # lands where Ray waits, inside init
    return result

node.Node.start_ray_processes = start_ray_processes
sys.argv = ["assay", *sys.argv[1:]]
from assay.__main__ import main
main()
"""


def _marked(marker: str) -> list[int]:
    """Live processes whose environment holds `marker`: the command and everything it started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the cluster's processes through /proc")
@pytest.mark.parametrize("name", ["TERM"])
def test_sigterm_while_the_local_cluster_starts_stops_the_run_as_ctrl_c_and_leaves_no_ray_process(tmp_path, name):
    store = tmp_path / "store" / "results.db"
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    marker = f"ASSAY_SCALE_WAVE_{uuid.uuid4().hex}"
    env.update(ASSAY_STORE=str(store), PYTHONUNBUFFERED="1", **{marker: "1"})
    subprocess.run([sys.executable, "-m", "assay", "video", "init"], cwd=tmp_path, env=env, check=True,
                   capture_output=True)  # fmt: skip
    (tmp_path / "inject.py").write_text(INJECT.format(name=name))
    done = subprocess.run(
        [sys.executable, "inject.py", "video", "run", "--eval-dir", "eval", "--executor", "ray"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _marked(marker)
    names = {pid: Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace") for pid in left
             if Path(f"/proc/{pid}/cmdline").exists()}  # fmt: skip
    for pid in left:  # this test's own processes only: they carry its marker
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    said = done.stdout + done.stderr
    assert done.returncode == 130, said
    assert "Eval interrupted" in said and "Traceback" not in said, said
    assert "SIGTERM received" not in said, said
    assert not left, f"left running: {names}"
