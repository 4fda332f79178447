"""Small user-facing defects of `assay video`, each pinned where it was found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _assay(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=cwd,
                          env={**os.environ, "ASSAY_STORE": str(cwd / "store" / "assay.db")}, capture_output=True,
                          text=True, timeout=120, check=False)


def test_a_file_where_the_runs_folder_goes_is_named_with_what_to_do_not_an_errno(tmp_path):
    """A file at `eval/runs` failed the run with `… [Errno 20] Not a directory: '…/eval/runs/checkpoints'`."""
    assert _assay("video", "init", "eval", cwd=tmp_path).returncode == 0
    (tmp_path / "eval" / "runs").write_text("notes\n", encoding="utf-8")
    done = _assay("video", "run", "--quiet", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    runs = tmp_path / "eval" / "runs"
    assert done.stdout.strip() == (f"Eval failed: could not create checkpoint in {runs / 'checkpoints'}: {runs} is a "
                                   "file, not a folder; move the file aside (the run needs a folder there for its "
                                   "checkpoint)")
    assert "Errno" not in done.stdout + done.stderr
    assert runs.read_text(encoding="utf-8") == "notes\n"


def test_init_help_shows_its_example_once(tmp_path):
    """`assay video init -h` gave `Example: assay video init eval --adapter js` and then the same under Examples."""
    done = _assay("video", "init", "-h", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("--adapter js") == 1, done.stdout
    assert "Examples:" in done.stdout


def test_a_misspelt_adapter_start_limit_is_refused_naming_the_one_meant(tmp_path):
    """`ASSAY_ADAPTER_START_TIMOUT=300` was ignored: a slow-loading command adapter still met the 30 s default."""
    assert _assay("video", "init", "eval", "--adapter", "js", cwd=tmp_path).returncode == 0
    run = [sys.executable, "-m", "assay", "video", "run", "--quiet", "--adapter-command", "node eval/adapter.mjs"]
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db"), "ASSAY_ADAPTER_START_TIMOUT": "300"}
    done = subprocess.run(run, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("ASSAY_ADAPTER_START_TIMOUT is no assay setting (did you mean ASSAY_ADAPTER_START_TIMEOUT?); rename it, "
            "or unset it") in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_an_adapter_command_naming_a_file_of_the_eval_dir_from_the_folder_above_says_where_it_runs(tmp_path):
    """`assay video run --eval-dir js-eval --adapter-command 'node adapter.mjs'` from the folder above printed node's
    "Cannot find module" stack and nothing more: the command runs in the current folder, not the eval dir."""
    import shutil

    import pytest

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    assert _assay("video", "init", "js-eval", "--adapter", "js", cwd=tmp_path).returncode == 0
    done = _assay("video", "run", "--eval-dir", "js-eval", "--adapter-command", "node adapter.mjs", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("(the adapter command runs in the current folder, " f"{tmp_path}; adapter.mjs is in the eval directory: "
            "--adapter-command 'node js-eval/adapter.mjs')") in done.stdout + done.stderr, done.stdout + done.stderr
    fixed = _assay("video", "run", "--eval-dir", "js-eval", "--adapter-command", "node js-eval/adapter.mjs", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr  # the command the hint gives runs
