"""The Python API examples of docs/agent/python.md run as written."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples" / "python"


def test_running_a_project_from_python(tmp_path):
    project = tmp_path / "shop"
    shutil.copytree(REPO / "examples" / "agent", project, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    done = subprocess.run([sys.executable, str(EXAMPLES / "run_project.py"), str(project)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr  # the example's `wrong_on_purpose` is tagged orders too
    assert "orders/refund [baseline] #1: passed" in done.stdout
    assert "failed: wrong_on_purpose" in done.stdout


def test_running_a_project_that_cannot_run_prints_why(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLES / "run_project.py"), str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.splitlines()[:2] == [f"error: project folder does not exist: {tmp_path / 'nope'}",
                                            "exit code 2: 0 attempts"]
    assert "Traceback" not in done.stderr


def test_evals_built_in_code():
    done = subprocess.run([sys.executable, str(EXAMPLES / "in_code.py")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "['passed', 'passed', 'passed']"


def test_a_pydantic_ai_agent_evaluated_as_it_is():
    done = subprocess.run([sys.executable, str(EXAMPLES / "pydantic_ai_shop.py")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "['passed']"


def test_a_langgraph_graph_evaluated_as_it_is():
    done = subprocess.run([sys.executable, str(EXAMPLES / "langgraph_shop.py")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "['passed']"
