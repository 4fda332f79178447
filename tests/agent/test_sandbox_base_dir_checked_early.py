"""A `local_sandbox(base_dir=…)` where no folder can be made failed every attempt with the same
`sandbox-create-failed`; only a bad ASSAY_SANDBOX_DIR stopped the run before it began. Both do now (exit 2, one
line naming the folder, what is in the way and the setting to change)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXPERIMENT = '''
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_sandbox_agent, message

async def send(turn_input, ctx):
    return Turn([message("hello")])

base = Experiment(agent=define_sandbox_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage))
'''
EVAL = '''
from assay.agent import define_eval, local_sandbox

async def test(t):
    await t.send("hi")

one = define_eval(test, sandbox=local_sandbox(isolation="none", base_dir={base_dir!r}))
'''


def _run(root: Path, base_dir: str) -> subprocess.CompletedProcess:
    (root / "experiments").mkdir(parents=True)
    (root / "evals").mkdir()
    (root / "pyproject.toml").write_text("[tool.assay]\n", encoding="utf-8")
    (root / "experiments" / "base.py").write_text(EXPERIMENT, encoding="utf-8")
    (root / "evals" / "one_eval.py").write_text(EVAL.format(base_dir=base_dir), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "assay", "agent", "run"], cwd=root, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "ASSAY_STORE": str(root / "store" / "assay.db"),
                                            "ASSAY_SANDBOX_DIR": str(root / "registry")})


def test_a_base_dir_under_a_file_stops_the_run_before_it_begins(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "notes").write_text("mine\n", encoding="utf-8")
    done = _run(project, "notes/boxes")
    assert done.returncode == 2, done.stdout + done.stderr
    boxes = project / "notes" / "boxes"
    assert done.stderr.strip() == (f"Error: sandboxes are made in {boxes}, but {project / 'notes'} is a file, not a "
                                   f"folder (local_sandbox(base_dir={str(boxes)!r}): give it a folder you can write)")
    assert "PLAN" not in done.stdout and (project / "notes").read_text(encoding="utf-8") == "mine\n"


def test_a_base_dir_that_can_be_made_runs(tmp_path):
    done = _run(tmp_path / "p", "boxes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "p" / "boxes").is_dir()


def test_a_base_dir_the_system_cannot_make_says_why_in_the_sentence(tmp_path):
    """It read "…, but No such file or directory (…)": the system's capitalised reason mid-sentence."""
    done = _run(tmp_path / "p", "/proc/assay-nope/boxes")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().startswith(
        "Error: sandboxes are made in /proc/assay-nope/boxes, but it cannot be made: no such file or directory ("), done.stderr
