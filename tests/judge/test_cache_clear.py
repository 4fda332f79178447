"""`assay judge cache clear`: a project's judge answers are removed (and the judge asked again); a
folder named by mistake loses nothing but the cache's own entries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from servers.fake_openai import json_reply
from typer.testing import CliRunner

from assay.cli.app import app


def _project(root: Path, base_url: str) -> Path:
    project = root / "p"
    for folder in ("evals", "agents", "experiments"):
        (project / folder).mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        f'[tool.assay.judge]\nmodel = "judge-1"\nbase_url = "{base_url}"\napi_key_env = ""\n', encoding="utf-8"
    )
    (project / "agents" / "echo.py").write_text(
        "from assay.agent import Turn, complete_evidence_coverage, define_agent, message\n\n"
        "async def send(turn_input, ctx):\n    return Turn([message('Paris, 21 C')])\n\n"
        "echo = define_agent(name='echo', send=send, evidence_coverage=complete_evidence_coverage)\n", encoding="utf-8"
    )
    (project / "experiments" / "main.py").write_text(
        "from agents.echo import echo\nfrom assay.agent import Experiment\n\nmain = Experiment(agent=echo)\n", encoding="utf-8"
    )
    (project / "evals" / "judged_eval.py").write_text(
        "from assay.agent import define_eval\n\n"
        "@define_eval(judge=True)\nasync def test(t):\n    await t.send('weather?')\n    t.judge('names a city')\n",
        encoding="utf-8",
    )
    return project


def _run(project: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--quiet", "--rerun", "all"], cwd=project,
                          capture_output=True, text=True, timeout=120, check=False)


def test_clearing_a_projects_judge_cache_makes_the_next_run_ask_the_judge_again(fake_openai, tmp_path):
    fake_openai.respond_with(lambda request: json_reply({"reasons": "names Paris", "score": 1}))
    project = _project(tmp_path, fake_openai.base_url)
    assert _run(project).returncode == 0
    assert _run(project).returncode == 0 and len(fake_openai.chat_requests) == 1  # the second run read the cache
    result = CliRunner().invoke(app, ["judge", "cache", "clear", "--project", str(project)])
    assert result.exit_code == 0, result.output
    assert "Removed 1 cached judge answer(s)" in result.output and str(project / ".assay" / "cache" / "judge") in result.output
    assert _run(project).returncode == 0 and len(fake_openai.chat_requests) == 2
    again = CliRunner().invoke(app, ["judge", "cache", "clear", "--project", str(project)])
    assert "Removed 1 cached judge answer(s)" in again.output


def test_only_the_caches_own_entries_are_removed_from_a_cache_dir(tmp_path):
    folder = tmp_path / "home"
    key = "ab" + "0" * 62
    (folder / "ab").mkdir(parents=True)
    (folder / "ab" / key).write_text("{}", encoding="utf-8")
    (folder / "ab" / "notes.txt").write_text("mine", encoding="utf-8")
    (folder / "cd").mkdir()
    (folder / "cd" / key).write_text("{}", encoding="utf-8")  # a key under the wrong shard is not an entry
    (folder / "thesis.tex").write_text("mine", encoding="utf-8")
    result = CliRunner().invoke(app, ["judge", "cache", "clear", "--cache-dir", str(folder)])
    assert result.exit_code == 0, result.output
    assert "Removed 1 cached judge answer(s)" in result.output
    assert sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*")) == [
        "ab", "ab/notes.txt", "cd", f"cd/{key}", "thesis.tex",
    ]


def test_a_missing_project_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(app, ["judge", "cache", "clear", "--project", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "--project" in result.output and "no such folder" in result.output
    (tmp_path / "notes.txt").write_text("")
    a_file = CliRunner().invoke(app, ["judge", "cache", "clear", "--project", str(tmp_path / "notes.txt")])
    assert a_file.exit_code == 2 and a_file.output.strip() == f"Error: --project {tmp_path / 'notes.txt'}: not a folder"


def test_a_cache_dir_that_is_a_file_is_a_usage_error_not_an_empty_cache(tmp_path):
    """It said `No judge cache at notes.txt; nothing to clear.` and exited 0."""
    (tmp_path / "notes.txt").write_text("keep me\n")
    result = CliRunner().invoke(app, ["judge", "cache", "clear", "--cache-dir", str(tmp_path / "notes.txt")])
    assert result.exit_code == 2 and result.output.strip() == f"Error: --cache-dir {tmp_path / 'notes.txt'}: not a folder"
    assert (tmp_path / "notes.txt").read_text() == "keep me\n"


def test_a_reader_that_leaves_does_not_say_finished_results_are_kept(tmp_path):
    """`assay judge cache clear | head -0` said it "stopped as on Ctrl-C; finished results are kept": a command
    that only deletes keeps no results. It stops as on Ctrl-C (exit 130), saying only that."""
    from reader_pipes import reader_leaves

    (tmp_path / "cache").mkdir()
    read, code, stderr = reader_leaves([sys.executable, "-m", "assay", "judge", "cache", "clear", "--cache-dir",
                                        str(tmp_path / "cache")], lines=0)
    assert (code, stderr) == (130, "assay: standard output was closed, so the command stopped as on Ctrl-C.\n")


def test_a_project_given_with_a_tilde_is_the_home_folders_as_for_cache_dir(tmp_path, monkeypatch):
    """`--project=~/shop` (the shell leaves that `~` alone) was `no such folder`, while `--cache-dir=~/…` was expanded."""
    monkeypatch.setenv("HOME", str(tmp_path))
    cache = tmp_path / "shop" / ".assay" / "cache" / "judge"
    (cache / "ab").mkdir(parents=True)
    (cache / "ab" / ("ab" + "0" * 62)).write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(app, ["judge", "cache", "clear", "--project", "~/shop"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"Removed 1 cached judge answer(s) (0.0 KiB) from {cache}."


def test_a_file_in_place_of_the_projects_cache_is_named_by_the_run_and_by_clear(fake_openai, tmp_path):
    """A file at `.assay/cache/judge` failed each judge assertion as `judge-call-failed: NotADirectoryError: [Errno 20]
    Not a directory: '…/48/48c9…'`, and `assay judge cache clear` said `No judge cache at …; nothing to clear.` (exit 0)."""
    import json

    fake_openai.respond_with(lambda request: json_reply({"reasons": "names Paris", "score": 1}))
    project = _project(tmp_path, fake_openai.base_url)
    (project / ".assay" / "cache").mkdir(parents=True)
    in_the_way = project / ".assay" / "cache" / "judge"
    in_the_way.write_text("notes\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--json", "--quiet"], cwd=project,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    (attempt,) = [message["attempt"] for message in messages if message["type"] == "attempt"]
    (judged,) = [entry for entry in attempt["assertions"] if entry["kind"] == "judge"]
    assert judged["status"] == "unavailable"
    assert f"the judge cache {in_the_way} cannot be read: {in_the_way} is a file where the cache keeps a folder" in (
        judged["reason"])
    assert fake_openai.chat_requests == []  # refused before the judge was paid for an answer it could not keep

    cleared = CliRunner().invoke(app, ["judge", "cache", "clear", "--project", str(project)])
    assert cleared.exit_code == 2 and cleared.output.strip() == (
        f"Error: {in_the_way} is a file, not the judge cache's folder, so no judge answer can be cached: "
        "move the file aside")
    assert in_the_way.read_text(encoding="utf-8") == "notes\n"


def test_both_a_project_and_a_cache_dir_is_refused_rather_than_one_silently_ignored(tmp_path):
    """`--cache-dir` used to win without a word: `--project` named a cache that was left as it was."""
    cache = tmp_path / "cache"
    key = "ab" + "0" * 62
    (cache / "ab").mkdir(parents=True)
    (cache / "ab" / key).write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(app, ["judge", "cache", "clear", "--project", str(tmp_path), "--cache-dir", str(cache)])
    assert result.exit_code == 2, result.output
    assert (f"give --project or --cache-dir, not both: --cache-dir {cache} is a cache folder of its own, not one "
            f"inside --project {tmp_path}") in result.output
    assert (cache / "ab" / key).exists()
    done = CliRunner().invoke(app, ["judge", "cache", "clear", "--cache-dir", str(cache)])
    assert done.exit_code == 0 and "Removed 1 cached judge answer(s)" in done.output, done.output
