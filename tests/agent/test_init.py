"""`assay agent init`: a new project gets an agent, an eval and an experiment that pass offline."""

from __future__ import annotations

import subprocess
import sys

import pytest


def assay(*arguments: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "assay", *arguments], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_a_new_project_runs_and_passes_as_written(tmp_path):
    made = assay("agent", "init", "shop", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    for name in ("agents/weather.py", "evals/weather_eval.py", "experiments/starter.py", "pyproject.toml"):
        assert (tmp_path / "shop" / name).is_file(), name
    assert "Next: assay agent run --project shop" in made.stdout

    run = assay("agent", "run", "--project", "shop", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1/1 (100.0%)" in run.stdout and "warning" not in run.stderr


def test_a_set_up_project_gets_no_starter_and_nothing_is_overwritten(tmp_path):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "mine_eval.py").write_text("# mine\n")
    (tmp_path / "pyproject.toml").write_text('[tool.assay]\nname = "mine"\n')

    made = assay("agent", "init", ".", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    assert "Initialized" in made.stdout and "experiments/" in made.stdout
    assert sorted(path.name for path in tmp_path.iterdir()) == ["evals", "experiments", "pyproject.toml"]
    assert [path.name for path in (tmp_path / "evals").iterdir()] == ["mine_eval.py"]
    assert (tmp_path / "pyproject.toml").read_text() == '[tool.assay]\nname = "mine"\n'

    again = assay("agent", "init", ".", cwd=tmp_path)
    assert "nothing to do (already set up)" in again.stdout


def test_the_starter_is_all_or_nothing_next_to_a_file_of_the_same_name(tmp_path):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "weather.py").write_text("# the user's own\n")

    made = assay("agent", "init", ".", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    assert (tmp_path / "agents" / "weather.py").read_text() == "# the user's own\n"
    assert list((tmp_path / "evals").iterdir()) == [] and list((tmp_path / "experiments").iterdir()) == []


def test_a_pyproject_run_would_refuse_is_refused_before_anything_is_written(tmp_path):
    """The starter files were written first, then the error came: fixing the file and running `init` again then
    said "nothing to do (already set up)"."""
    for body, words in (("[tool.assay]\nconcurency = 3\n", "unknown key 'concurency' (did you mean 'concurrency'?)"),
                        ("[tool.assay\n", "Expected ']' at the end of a table declaration")):
        project = tmp_path / f"p{len(words)}"
        project.mkdir()
        (project / "pyproject.toml").write_text(body)
        made = assay("agent", "init", str(project), cwd=tmp_path)
        assert made.returncode == 2 and words in made.stderr, made.stdout + made.stderr
        assert [path.name for path in project.iterdir()] == ["pyproject.toml"]
        assert (project / "pyproject.toml").read_text() == body


def test_a_file_given_as_the_project_is_said_to_be_a_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.assay]\n")
    for arguments in (("agent", "init", "pyproject.toml"), ("agent", "run", "--project", "pyproject.toml"),
                      ("agent", "list", "--project", "pyproject.toml")):
        done = assay(*arguments, cwd=tmp_path)
        assert done.returncode == 2, (arguments, done.stdout + done.stderr)
        assert f"{tmp_path / 'pyproject.toml'} is a file, not a folder; give the project's folder" in done.stderr, done.stderr


@pytest.mark.parametrize("name", ["evals", "experiments"])
def test_a_file_where_a_project_folder_goes_is_said_to_be_a_file(tmp_path, name):
    """`evals` as a file: run said "no evals/ folder …; run `assay agent init` there", and init said "nothing to
    do (already set up)", exit 0, sending the user round in a loop."""
    (tmp_path / "pyproject.toml").write_text("[tool.assay]\n")
    (tmp_path / name).write_text("")
    (tmp_path / ({"evals", "experiments"} - {name}).pop()).mkdir()
    ran = assay("agent", "run", cwd=tmp_path)
    assert ran.returncode == 2 and f"{tmp_path / name} is a file, not a folder" in ran.stderr, ran.stderr
    made = assay("agent", "init", ".", cwd=tmp_path)
    assert made.returncode == 2, made.stdout
    assert made.stderr == (f"Error: {tmp_path / name} is a file, not a folder: move it away and run `assay agent init` "
                           f"again (the project's {name} live in the {name}/ folder)\n")


def test_init_takes_the_folder_as_project_too(tmp_path):
    """Every other agent command names its folder with --project; init said "No such option: --project"."""
    made = assay("agent", "init", "--project", "shop", cwd=tmp_path)
    assert made.returncode == 0 and (tmp_path / "shop" / "evals").is_dir(), made.stderr
    both = assay("agent", "init", "other", "--project", "shop", cwd=tmp_path)
    assert both.returncode == 2 and "give the folder once: as DIRECTORY or as --project" in both.stderr
    assert not (tmp_path / "other").exists()
