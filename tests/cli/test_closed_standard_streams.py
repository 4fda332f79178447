"""A standard stream closed by the caller (`assay … >&-`, a cron job without a terminal) is the null device:
the command runs and keeps its exit code, saying once on stderr that its output is discarded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent_projects import replying_project

EVAL = """
import subprocess, sys
from assay.agent import define_eval

async def test(t):
    # A process the eval starts writes to the standard output it inherits: the null device, never a file of assay's.
    subprocess.run([sys.executable, "-c", "print('x' * 5000)"], check=True)
    await t.send("hi")

one = define_eval(test)
"""


def _assay(shell: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`assay` run by bash with `shell`'s redirections (`>&-` closes stdout: Python cannot close fd 1 for a child)."""
    command = f"exec {sys.executable} -m assay {shell}"
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")})


def _project(root: Path) -> Path:
    replying_project(root, "hello")
    (root / "evals" / "one_eval.py").write_text(EVAL)
    return root


def test_a_run_with_stdout_closed_is_recorded_and_no_child_writes_into_its_files(tmp_path):
    project = _project(tmp_path / "project")
    done = _assay(f"agent run --project {project} >&-", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("Standard output is closed: what this command prints is discarded.\n")
    listed = _assay("runs list --json", tmp_path)
    runs = json.loads(listed.stdout)["runs"]
    assert [(run["kind"], run["unit_count"], run["exit_code"]) for run in runs] == [("agent", 1, 0)], listed.stdout
    shown = _assay(f"agent show --project {project} --json", tmp_path)  # the journal and the store read back whole
    assert shown.returncode == 0 and "xxxxx" not in shown.stdout, shown.stderr
    assert not any(b"xxxxx" in path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())
    # Any command: its exit code kept (a usage error's too), the output discarded, said once.
    for shell, code in (("--version >&-", 0), ("runs list >&-", 0), ("runs show no-such-run >&-", 2)):
        done = _assay(shell, tmp_path)
        assert (done.returncode, done.stderr.splitlines()[0]) == (
            code, "Standard output is closed: what this command prints is discarded."), done
    # Closed stdin and stderr are the null device as well: the answer still reaches stdout.
    done = _assay("runs list --json <&- 2>&-", tmp_path)
    assert done.returncode == 0 and len(json.loads(done.stdout)["runs"]) == 1, done
