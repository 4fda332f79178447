"""`assay agent sandbox enter ID [--leave-running]`: a shell in a kept sandbox, driven through a pipe as a
person would type into it, over both providers: it starts in the workdir, a file it writes is in the
sandbox's diff (the `after` window), its exit code is the command's; afterwards nothing of the sandbox is left
running (the container stopped, not removed) unless --leave-running; the Engine API path where there is no
docker CLI; an unknown id and a running attempt's sandbox are usage errors."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox_helpers import processes_carrying, run_linked, sandbox_agent, sandbox_dir  # noqa: F401
from typer.testing import CliRunner

from assay.agent import Turn, define_eval, message
from assay.agent.sandbox.registry import SandboxEntry, list_entries, write_entry
from assay.cli.agent import sandbox_app
from containers import docker_containers, docker_image, provider, sandbox_template  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]


def _kept(provider_name: str, **options: str) -> dict:
    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("notes.txt", "by the agent\n")
        return Turn([message("done")])

    async def test(t):
        await t.send("write notes")

    [result] = run_linked(sandbox_agent(send), {"e": define_eval(test, sandbox=sandbox_template(provider_name, **options))},
                          keep="all").results
    assert result.verdict == "passed" and result.sandbox["kept"], result.error
    return result.sandbox


def enter(sandbox_id: str, typed: str, *options: str, environment: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", "agent", "sandbox", "enter", sandbox_id, *options],
                          input=typed, capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env=environment or dict(os.environ))


def test_a_shell_starts_in_the_workdir_and_what_it_writes_is_in_the_diff(provider, sandbox_dir):
    kept = _kept(provider)
    sandbox_id = kept["sandbox_id"]
    shell = enter(sandbox_id, "pwd\necho made in the shell > shell.txt\nsleep 300 &\nexit 3\n")
    assert shell.returncode == 3, shell.stderr
    assert shell.stdout.splitlines()[0] == kept["workdir"]
    diff = CliRunner().invoke(sandbox_app, ["diff", sandbox_id], catch_exceptions=False)
    assert "== turn1 ==" in diff.output and "+by the agent" in diff.output
    assert "== after ==" in diff.output and "+made in the shell" in diff.output.split("== after ==")[1]
    # Nothing left running: the shell's background `sleep` went with it.
    if provider == "docker":
        [container] = docker_containers(sandbox_id)
        assert container.status == "exited"  # stopped, still kept: enter starts it again
        again = enter(sandbox_id, "cat shell.txt\n")
        assert again.returncode == 0 and again.stdout == "made in the shell\n", again.stderr
    else:
        assert processes_carrying(f"ASSAY_SANDBOX={sandbox_id}") == []
    assert [entry.state for entry in list_entries(sandbox_dir)] == ["kept"]
    assert CliRunner().invoke(sandbox_app, ["stop", "--all"]).exit_code == 0
    assert list(sandbox_dir.iterdir()) == [] and (provider == "local" or docker_containers(sandbox_id) == [])


def test_leave_running_keeps_the_container_running_and_needs_no_docker_cli(docker_image, sandbox_dir, tmp_path):
    """With no `docker` on PATH the shell goes through the Engine API."""
    sandbox_id = _kept("docker")["sandbox_id"]
    environment = {**os.environ, "PATH": str(tmp_path / "no-tools-here")}
    shell = enter(sandbox_id, "pwd; echo $0; sleep 300 &\n", "--leave-running", environment=environment)
    assert shell.returncode == 0 and shell.stdout.splitlines()[0] == "/workspace", shell.stderr
    [container] = docker_containers(sandbox_id)
    assert container.status == "running"
    listing = container.exec_run(["ps", "-eo", "args"]).output.decode()
    assert "sleep 300" in listing  # what the shell left running still runs
    assert CliRunner().invoke(sandbox_app, ["stop", sandbox_id]).exit_code == 0
    assert docker_containers(sandbox_id) == []


def test_an_unknown_id_and_a_running_attempts_sandbox_are_usage_errors(sandbox_dir):
    sandbox_dir.mkdir(parents=True, exist_ok=True)
    for name, owner in (("5be1a2c3d4e5", os.getpid()), ("77aa00bb11cc", 0)):
        root = sandbox_dir / name
        (root / "workspace").mkdir(parents=True)
        write_entry(root, SandboxEntry(sandbox_id=name, provider="local", state="active" if owner else "kept",
                                       workdir=str(root / "workspace"), root=str(root), owner_pid=owner,
                                       created=time.time()))
    unknown = CliRunner().invoke(sandbox_app, ["enter", "5be1a2c3d4e6"])
    assert unknown.exit_code == 2
    assert "no sandbox under" in unknown.output and "'5be1a2c3d4e6'; did you mean '5be1a2c3d4e5'?" in unknown.output
    assert "the sandboxes there: 5be1a2c3d4e5, 77aa00bb11cc" in unknown.output
    busy = CliRunner().invoke(sandbox_app, ["enter", "5be1"])
    assert busy.exit_code == 2 and f"belongs to a running attempt (pid {os.getpid()})" in busy.output


def test_the_pages_example_runs_as_written(tmp_path, sandbox_dir):
    """docs/agent/sandboxes.md: keep the example project's sandbox, run its tests and an edit through a piped
    shell, and see the edit as the `after` window."""
    import shutil

    page = (ROOT / "docs" / "agent" / "sandboxes.md").read_text(encoding="utf-8")
    # unittest, which the example's repository uses: pytest is not in every image (nor on every host)
    typed = "python3 -m unittest -q\necho \"# checked\" >> calc.py\n"
    assert "$ printf 'python3 -m unittest -q\\necho \"# checked\" >> calc.py\\n' | assay agent sandbox enter" in page
    project = tmp_path / "sandbox"
    shutil.copytree(ROOT / "examples" / "agent" / "sandbox", project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    ran = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--keep-sandbox=all"],
                         capture_output=True, text=True, timeout=120, env=environment)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [entry] = list_entries(sandbox_dir)
    shell = enter(entry.sandbox_id[:4], typed)
    assert shell.returncode == 0 and "Ran 2 tests" in shell.stdout + shell.stderr, shell.stdout + shell.stderr
    assert "Ran 2 tests in" in page
    diff = CliRunner().invoke(sandbox_app, ["diff", entry.sandbox_id[:4], "--window", "after"])
    assert diff.output.startswith("== after ==\ndiff --git a/calc.py b/calc.py") and "+# checked\n" in diff.output
    assert "== after ==\ndiff --git a/calc.py b/calc.py" in page and "+# checked" in page
    assert CliRunner().invoke(sandbox_app, ["stop", entry.sandbox_id[:4]]).exit_code == 0


# An interactive shell's way with Ctrl-C: the command running in it stops, the shell goes on.
FAKE_SHELL = """#!/bin/sh
trap 'echo "shell: command interrupted"' INT
echo "shell: ready"
sleep 3
echo "shell: still here"
exit 7
"""


@pytest.mark.parametrize("isolation", ["none", "bubblewrap"])
def test_ctrl_c_typed_into_the_shell_is_the_shells_and_sigterm_still_ends_it(sandbox_dir, tmp_path, isolation):
    """A terminal's Ctrl-C reaches its whole foreground process group, assay included: it used to end the
    command (exit 130), killing the shell the person was typing into. Under bubblewrap, bwrap's own process
    is in that group too: it used to die of Ctrl-C and take the shell with it."""
    import signal

    kept = _kept("local", isolation=isolation)
    assert kept["isolation"] == ("process-group" if isolation == "none" else "bubblewrap"), kept
    sandbox_id = kept["sandbox_id"]
    shell = Path(kept["workdir"]) / "fake-shell"
    shell.write_text(FAKE_SHELL)
    shell.chmod(0o755)
    environment = {**os.environ, "SHELL": str(shell)}
    command = [sys.executable, "-m", "assay", "agent", "sandbox", "enter", sandbox_id]

    def started() -> subprocess.Popen:
        process = subprocess.Popen(command, cwd=ROOT, env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)  # a group of its own
        first = process.stdout.readline()
        assert first == "shell: ready\n", first + process.communicate(timeout=60)[1]
        return process

    typed_into = started()
    os.killpg(typed_into.pid, signal.SIGINT)  # Ctrl-C at the terminal: every process of the foreground group
    stdout, stderr = typed_into.communicate(timeout=60)
    assert typed_into.returncode == 7, stderr
    assert stdout == "shell: command interrupted\nshell: still here\n"

    cancelled = started()
    os.kill(cancelled.pid, signal.SIGTERM)  # a job cancelled: assay alone is told
    stdout, stderr = cancelled.communicate(timeout=60)
    assert cancelled.returncode == 130 and stderr.strip() == "Interrupted." and "still here" not in stdout


@pytest.mark.parametrize("isolation", ["none", "bubblewrap"])
def test_the_shell_has_default_signals_and_dying_of_one_exits_as_a_shell_says(sandbox_dir, isolation):
    """Under bubblewrap the shell used to start with SIGPIPE ignored (left so by the Python that gives it Ctrl-C
    back), so `seq … | head -1` in it said "write error: Broken pipe"; and a shell killed by a signal made
    `enter` exit 247 (-9 as a byte) instead of 137."""
    sandbox_id = _kept("local", isolation=isolation)["sandbox_id"]
    shell = enter(sandbox_id, "seq 1 1000000 | head -1\ngrep SigIgn /proc/self/status\nkill -KILL $$\n")
    assert shell.returncode == 137, shell.stderr
    assert shell.stdout.splitlines()[0] == "1" and "Broken pipe" not in shell.stdout + shell.stderr
    ignored = int(shell.stdout.split("SigIgn:")[1].split()[0], 16)
    assert not ignored & (1 << (13 - 1)), shell.stdout  # SIGPIPE
    assert CliRunner().invoke(sandbox_app, ["stop", sandbox_id]).exit_code == 0
