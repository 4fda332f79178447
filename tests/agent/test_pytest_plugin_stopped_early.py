"""The pytest plugin under `-x` / `--maxfail`: a session stopped before the rest of its selected evals ran
is cut short, as after Ctrl-C, and not recorded as a run; one whose last selected eval was the one to stop it
ran everything and is recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    # A second failing eval that runs first (files are collected in name order): `-x` stops on it.
    failing = (root / "evals" / "wrong_on_purpose_eval.py").read_text(encoding="utf-8")
    (root / "evals" / "aaa_wrong_eval.py").write_text(failing.replace("wrong_on_purpose", "aaa_wrong"), encoding="utf-8")
    return root


def _run(project: Path, store: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *arguments], cwd=project, env={**os.environ, "ASSAY_STORE": str(store)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _run_ids(project: Path, store: Path) -> list[dict]:
    listed = _run(project, store, "-m", "assay", "runs", "list", "--json")
    if listed.returncode != 0:  # no store yet: nothing was recorded
        assert "no results store" in listed.stdout + listed.stderr, listed.stdout + listed.stderr
        return []
    return json.loads(listed.stdout)["runs"]


def test_a_session_stopped_by_x_before_its_other_evals_ran_is_not_recorded(project: Path, tmp_path: Path) -> None:
    store = tmp_path / "store" / "assay.db"
    done = _run(project, store, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed in" in done.stdout, done.stdout
    # It was recorded as a 1-unit run at 0 % pass rate, the series' latest: `runs compare latest` read it as a run.
    assert (f"assay: the session stopped early (stopping after 1 failures), so its 1 finished attempt(s) of {project} "
            "are not recorded in the results store (8 selected attempt(s) did not run)") in done.stdout
    assert _run_ids(project, store) == []


def test_a_session_whose_maxfail_is_reached_on_its_last_eval_is_recorded(project: Path, tmp_path: Path) -> None:
    store = tmp_path / "store" / "assay.db"
    done = _run(project, store, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--maxfail", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 7 passed" in done.stdout and "not recorded" not in done.stdout, done.stdout
    (run,) = _run_ids(project, store)
    assert run["unit_count"] == 9
