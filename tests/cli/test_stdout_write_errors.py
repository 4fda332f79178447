"""Standard output that cannot be written for another reason than a reader leaving (`assay … > /dev/full`, a full
disk): the command stops as it does when its reader leaves, says why in one line on stderr (a run: how to resume)
and exits 2. It was a traceback of assay's own frames, exit 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_projects import replying_project

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")

FULL = "Error: standard output could not be written (No space left on device; free space or write it elsewhere)"


def _into_full_device(*args: str, cwd: Path, store: Path) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-m", "assay", *args], stdout=full, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, env={**os.environ, "ASSAY_STORE": str(store)}, timeout=120, check=False)


def _one_eval_project(tmp_path: Path) -> Path:
    project = replying_project(tmp_path / "p")
    (project / "evals" / "one_eval.py").write_text(
        "from assay.agent import define_eval\n\nasync def test(t):\n    await t.send('hi')\n\none = define_eval(test)\n")
    return project


def test_a_command_that_only_reads_says_its_output_could_not_be_written(tmp_path: Path) -> None:
    project = _one_eval_project(tmp_path)
    done = _into_full_device("agent", "list", "--project", str(project), cwd=tmp_path, store=tmp_path / "s" / "a.db")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"{FULL}, so the command stopped as on Ctrl-C."], done.stderr


def test_a_run_whose_output_cannot_be_written_keeps_its_checkpoint_and_says_how_to_resume(tmp_path: Path) -> None:
    project = _one_eval_project(tmp_path)
    done = _into_full_device("agent", "run", "--project", str(project), cwd=tmp_path, store=tmp_path / "s" / "a.db")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    line = done.stderr.splitlines()[-1]
    assert line.startswith(f"{FULL}, so the command stopped as on Ctrl-C; finished results are kept. Resume with "), line
    checkpoint = line.rsplit("--resume ", 1)[1].rstrip("`.")
    resumed = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--resume",
                              checkpoint], capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
                             env={**os.environ, "ASSAY_STORE": str(tmp_path / "s" / "a.db")})
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "1 reused from the checkpoint" in resumed.stdout and "PASSED" in resumed.stdout, resumed.stdout
