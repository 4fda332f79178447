"""The results store belongs to the project a run is about, not to the folder the command was typed in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_run_of_another_folder_records_into_that_projects_store(tmp_path):
    project = tmp_path / "work" / "shop"
    shutil.copytree(EXAMPLES / "agent", project, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    elsewhere = tmp_path / "work"
    environment = {key: value for key, value in os.environ.items() if key != "ASSAY_STORE"}
    done = subprocess.run(
        [sys.executable, "-m", "assay", "agent", "run", "--project", "shop", "--quiet"],
        cwd=elsewhere, env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert (project / ".assay" / "assay.db").is_file()  # beside its checkpoints in shop/.assay/
    assert not (elsewhere / ".assay").exists()
    listed = subprocess.run(
        [sys.executable, "-m", "assay", "runs", "list"], cwd=project, env=environment, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0 and "agent-" in listed.stdout


def test_inside_a_repository_every_project_records_into_the_repositorys_store(tmp_path):
    repo = tmp_path / "repo"
    project = repo / "agents" / "shop"
    shutil.copytree(EXAMPLES / "agent", project, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    (repo / ".git").mkdir()
    environment = {key: value for key, value in os.environ.items() if key != "ASSAY_STORE"}
    done = subprocess.run(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--quiet"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert (repo / ".assay" / "assay.db").is_file() and not (project / ".assay" / "assay.db").exists()
    listed = subprocess.run(
        [sys.executable, "-m", "assay", "runs", "list"], cwd=repo, env=environment, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert "agent-" in listed.stdout
