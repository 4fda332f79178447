"""The sandbox page's project (docs/examples/sandbox/) runs as written: `assay agent run` passes, in a
local sandbox and (`--sandbox docker:IMAGE`) in a container of the test image, and `pytest` in it runs the
eval through assay's plugin without collecting the fixture's failing tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "sandbox"
PAGE = REPO / "docs" / "agent" / "sandboxes.md"


def test_the_sandbox_page_shows_the_project_it_runs():
    text = PAGE.read_text(encoding="utf-8")
    for name in ("experiments/fixer.py", "evals/fix_failing_test_eval.py", "conftest.py"):
        assert f'--8<-- "examples/sandbox/{name}"' in text, name
    assert 'upload("../fixtures/calculator")' in (EXAMPLE / "evals" / "fix_failing_test_eval.py").read_text()


def test_the_sandbox_project_passes_with_assay_and_with_pytest(tmp_path):
    project = tmp_path / "coding"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db"),
                   "ASSAY_SANDBOX_DIR": str(tmp_path / "sandboxes")}
    ran = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json"],
                         capture_output=True, text=True, timeout=120, env=environment)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    attempts = [line["attempt"] for line in map(json.loads, ran.stdout.splitlines()) if line["type"] == "attempt"]
    assert [(attempt["eval_id"], attempt["verdict"]) for attempt in attempts] == [("fix_failing_test", "passed")]

    tested = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA"], cwd=project,
                            capture_output=True, text=True, timeout=120, env=environment)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "1 passed" in tested.stdout and "test_calc" not in tested.stdout, tested.stdout


def test_the_sandbox_project_passes_in_a_container(tmp_path):
    sys.path.insert(0, str(REPO / "tests"))
    from containers import BASE_IMAGE, ensure_images

    problem = ensure_images()
    if problem is not None:
        pytest.skip(f"Docker tests need a daemon and a locally built image: {problem}")
    project = tmp_path / "coding"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db"),
                   "ASSAY_SANDBOX_DIR": str(tmp_path / "sandboxes")}
    ran = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json",
                          "--sandbox", f"docker:{BASE_IMAGE}"], capture_output=True, text=True, timeout=180,
                         env=environment)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    attempts = [line["attempt"] for line in map(json.loads, ran.stdout.splitlines()) if line["type"] == "attempt"]
    assert [(attempt["eval_id"], attempt["verdict"], attempt["sandbox"]["provider"]) for attempt in attempts] == [
        ("fix_failing_test", "passed", "docker")]
