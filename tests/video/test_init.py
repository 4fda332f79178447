"""`assay video init`: a starter eval directory that the real `assay video run` passes as written."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest


def assay(*arguments: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "assay", *arguments], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_python_starter_in_the_default_folder_passes_a_real_run(tmp_path):
    made = assay("video", "init", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    assert sorted(path.relative_to(tmp_path / "eval").as_posix() for path in (tmp_path / "eval").rglob("*")) == [
        "adapter.py", "adapter.yaml", "cases", "cases/lamp.mp4", "cases/lamp.yaml", "config.yaml",
    ]
    assert "eval/cases/lamp.mp4" in made.stdout
    assert made.stdout.rstrip().endswith("Next: assay video run --eval-dir eval")

    run = assay("video", "run", "--eval-dir", "eval", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "10 evaluated, 10 passed, 0 failed" in run.stdout


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_js_starter_passes_a_real_run_through_node(tmp_path):
    made = assay("video", "init", "app-eval", "--adapter", "js", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    folder = tmp_path / "app-eval"
    assert (folder / "adapter-kit.mjs").is_file() and (folder / "adapter-kit.d.mts").is_file()
    assert not (folder / "adapter.py").exists()
    command = "Next: assay video run --eval-dir app-eval --adapter-command 'node app-eval/adapter.mjs'"
    assert made.stdout.rstrip().endswith(command)

    run = assay("video", "run", "--eval-dir", "app-eval", "--adapter-command", "node app-eval/adapter.mjs", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "10 evaluated, 10 passed, 0 failed" in run.stdout


def test_running_a_js_starter_without_its_command_names_the_command_to_use(tmp_path):
    made = assay("video", "init", "jseval", "--adapter", "js", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    plain = assay("video", "run", "--eval-dir", "jseval", cwd=tmp_path)
    assert plain.returncode == 2, plain.stdout + plain.stderr
    assert plain.stdout.strip() == (
        f"Eval failed: adapter file does not exist: {tmp_path.resolve()}/jseval/adapter.py; this eval's adapter is "
        "adapter.mjs (JavaScript): run it with --adapter-command 'node jseval/adapter.mjs'"
    )


def test_existing_files_are_kept_unless_forced(tmp_path):
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "config.yaml").write_text("mine\n")

    refused = assay("video", "init", cwd=tmp_path)
    assert refused.returncode == 2
    assert "already has config.yaml" in refused.stderr and "--force" in refused.stderr
    assert (tmp_path / "eval" / "config.yaml").read_text() == "mine\n"
    assert sorted(path.name for path in (tmp_path / "eval").iterdir()) == ["config.yaml"]

    forced = assay("video", "init", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "min_pass_rate" in (tmp_path / "eval" / "config.yaml").read_text()


def test_unknown_adapter_kind_is_a_usage_error(tmp_path):
    refused = assay("video", "init", "--adapter", "ruby", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--adapter must be one of python, js" in refused.stderr
    assert not (tmp_path / "eval").exists()


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("notes", "notes is a file, not a folder"),
        ("notes/eval", "notes/eval cannot be created: notes is a file, not a folder"),  # not an errno about notes/eval/cases
    ],
)
def test_a_folder_that_cannot_be_made_names_the_file_in_the_way(tmp_path, given, problem):
    (tmp_path / "notes").write_text("mine\n")
    refused = assay("video", "init", given, cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.strip() == f"Error: {problem}; give a folder to write the eval into (it is created when missing)"
    assert (tmp_path / "notes").read_text() == "mine\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_getting_started_steps_run_in_order_in_one_folder(tmp_path):
    """docs/getting-started/video.md wrote the JS starter into the folder of step 1's, which init refused."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "getting-started" / "video.md").read_text(encoding="utf-8")
    commands = ["assay video init", "assay video init js-eval --adapter js",
                "assay video run --eval-dir js-eval --adapter-command 'node js-eval/adapter.mjs'"]
    assert all(f"\n{command}\n" in page for command in commands)
    assert assay("video", "init", cwd=tmp_path).returncode == 0
    made = assay("video", "init", "js-eval", "--adapter", "js", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    ran = assay("video", "run", "--eval-dir", "js-eval", "--adapter-command", "node js-eval/adapter.mjs", cwd=tmp_path)
    assert ran.returncode == 0 and "10 passed" in ran.stdout, ran.stdout + ran.stderr
