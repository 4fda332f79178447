"""docs/agent/sandboxes.md as written: `assay agent sandbox stop ID` of a sandbox whose attempt is still running is
refused (exit 2), and the message says what to do, not only whose sandbox it is; its `diff` says the attempt is
still running."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from agent_projects import agent_project


def _assay(*args, env, cwd):
    return subprocess.run([sys.executable, "-m", "assay", "agent", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


@contextlib.contextmanager
def _running_sandbox(tmp_path, monkeypatch):
    """A real `assay agent run` whose one attempt sleeps in a local sandbox: (its sandbox id, env, project) while it
    runs; Ctrl-C then, and the run removes its sandbox itself."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    monkeypatch.setenv("ASSAY_SANDBOX_DIR", str(tmp_path / "sandboxes"))
    project = agent_project(tmp_path / "proj")
    (project / "experiments" / "slow.py").write_text(
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_sandbox_agent, local_sandbox, message\n\n"
        "async def send(turn_input, ctx):\n"
        "    await ctx.sandbox.run_command('sleep', '30')\n"
        "    return Turn([message('done')])\n\n"
        "slow = Experiment(agent=define_sandbox_agent(name='slow', send=send, evidence_coverage=complete_evidence_coverage),\n"
        "                  sandbox=local_sandbox(isolation='none'))\n",
        encoding="utf-8",
    )
    (project / "evals" / "wait_eval.py").write_text(
        "from assay.agent import define_eval\n\n\n@define_eval()\nasync def test(t):\n    await t.send('wait')\n",
        encoding="utf-8",
    )
    env = dict(os.environ)
    run = subprocess.Popen([sys.executable, "-m", "assay", "agent", "run", "--quiet"], cwd=project, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        sandbox_id = ""
        while time.monotonic() < deadline and not sandbox_id:
            listed = _assay("sandbox", "list", env=env, cwd=project)
            active = [line for line in listed.stdout.splitlines() if " active " in line]
            sandbox_id = active[0].split()[0] if active else ""
            time.sleep(0.2)
        assert sandbox_id, "the run made no sandbox"
        yield sandbox_id, env, project
    finally:
        os.killpg(run.pid, signal.SIGINT)
        run.wait(timeout=30)
    # the interrupted run removed its sandbox itself
    assert "No sandboxes" in _assay("sandbox", "list", env=env, cwd=project).stdout


def test_stopping_the_sandbox_of_a_running_attempt_says_what_to_do(tmp_path, monkeypatch):
    with _running_sandbox(tmp_path, monkeypatch) as (sandbox_id, env, project):
        stopped = _assay("sandbox", "stop", sandbox_id, env=env, cwd=project)
        assert stopped.returncode == 2, stopped.stdout + stopped.stderr
        assert f"sandbox {sandbox_id} belongs to a running attempt" in stopped.stderr, stopped.stderr
        assert "its run removes it when the attempt ends (Ctrl-C stops the run sooner)" in stopped.stderr, stopped.stderr
        assert "Traceback" not in stopped.stderr


def test_the_diff_of_a_running_attempts_sandbox_says_its_first_window_is_still_open(tmp_path, monkeypatch):
    """It said "recorded no send windows." (exit 0) while the attempt's first send was running, and `--window after`
    showed the workdir as if the run were over."""
    with _running_sandbox(tmp_path, monkeypatch) as (sandbox_id, env, project):
        diff = _assay("sandbox", "diff", sandbox_id, env=env, cwd=project)
        assert diff.returncode == 0, diff.stdout + diff.stderr
        assert diff.stdout.startswith(f"Sandbox {sandbox_id} belongs to a running attempt (pid ") and (
            "has recorded no send window yet: each is recorded when its send returns.") in diff.stdout, diff.stdout
        after = _assay("sandbox", "diff", sandbox_id, "--window", "after", env=env, cwd=project)
        assert after.returncode == 2 and "its window 'after' exists once the run is over" in after.stderr, after.stderr
