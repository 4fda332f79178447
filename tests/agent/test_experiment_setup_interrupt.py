"""Ctrl-C while an experiment's synchronous `setup` runs: real `assay agent run` processes.

A sync setup ran in the event loop's thread pool and the run waited for it whatever happened: Ctrl-C during a
`time.sleep(30)` setup was answered only after the 30 s (then teardown, then exit 130), because the pool's thread
is joined at exit. Now the run stops waiting (a thread cannot be stopped; it ends with the process), exits 130 at
once, and skips the teardown of the setup it left running, saying so; a lease of its shared state is let go.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_projects import agent_project

EXPERIMENT = '''
import os, time
from pathlib import Path
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent
from assay.agent.model import message


async def send(turn_input, ctx):
    return Turn([message("done")])


def log(what):
    with open(os.environ["HOOK_LOG"], "a") as f:
        f.write(what + "\\n")


def setup(ctx):
    log("setup-started")
    time.sleep(float(os.environ.get("SETUP_SLEEP", "0")))
    log("setup-finished")


def teardown(ctx):
    log("teardown")


fixtures = Experiment(
    agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage),
    setup=setup, teardown=teardown, shared_state="fixtures-db",
)
'''


@pytest.fixture
def project(tmp_path):
    root = agent_project(tmp_path / "project")
    (root / "experiments" / "fixtures.py").write_text(EXPERIMENT)
    (root / "evals" / "hello_eval.py").write_text(
        "from assay.agent import define_eval\n\nhello = define_eval(lambda t: t.send('hi'))\n"
    )
    return root


def environment(root: Path, **variables: str) -> dict[str, str]:
    return {**os.environ, "ASSAY_STORE": str(root.parent / "store.db"), "HOOK_LOG": str(root.parent / "hooks.log"),
            "COLUMNS": "200", "PYTHONUNBUFFERED": "1", **variables}


def hooks(root: Path) -> list[str]:
    path = root.parent / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


def assay(root: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments, "--project", str(root)],
                          env=environment(root, **variables), capture_output=True, text=True, timeout=60)


def test_ctrl_c_during_a_slow_sync_setup_stops_the_run_at_once_with_130(project):
    run = subprocess.Popen(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
        env=environment(project, SETUP_SLEEP="30"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while "setup-started" not in hooks(project):
            assert run.poll() is None and time.monotonic() < deadline, "the setup never started"
            time.sleep(0.05)
        pressed = time.monotonic()
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=25)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    elapsed = time.monotonic() - pressed
    assert run.returncode == 130, out + err
    assert elapsed < 5, elapsed  # it was the setup's 30 s
    assert "INTERRUPTED" in out and "Resume with" in out and "Traceback" not in out + err
    # The setup was left running, so its teardown would have raced it: skipped, and the run says so.
    assert hooks(project) == ["setup-started"]
    assert ("warning [experiment-teardown-skipped]: experiment fixtures teardown skipped: its setup was still "
            "running when the run was interrupted (it ends with the process); clean up what the setup made by hand"
            ) in out + err
    # Its shared state's lease is let go, as on any Ctrl-C.
    listed = assay(project, "agent", "shared-state", "list", "--json")
    assert listed.returncode == 0 and listed.stdout.strip() == "", listed.stdout + listed.stderr
    # The checkpoint resumes: the setup runs again, to its end this time, and then its teardown.
    resume = next(line for line in out.splitlines() if line.startswith("Checkpoint: ")).split(": ", 1)[1]
    resumed = assay(project, "agent", "run", "--resume", resume)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert hooks(project) == ["setup-started", "setup-started", "setup-finished", "teardown"]


def test_a_sync_setup_that_ends_is_waited_for_and_its_teardown_runs(project):
    done = assay(project, "agent", "run", "--json", SETUP_SLEEP="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert hooks(project) == ["setup-started", "setup-finished", "teardown"]
    verdicts = [line["attempt"]["verdict"] for line in map(json.loads, done.stdout.splitlines())
                if line["type"] == "attempt"]
    assert verdicts == ["passed"]
