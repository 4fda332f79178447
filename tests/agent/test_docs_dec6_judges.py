"""docs/agent/judges.md as written.

- `api_key_env` names the variable that holds the judge's key. A key written there
  instead (the mistake the name invites) was echoed as "the judge key variable sk-… is not set" on the console and in
  every stored record; it is refused when the file is read, without repeating it.
- `assay judge cache clear` clears "the project in the current directory". Run
  from a folder inside the project (its evals/), it said "No judge cache at .assay/cache/judge; nothing to clear." and
  exited 0, while the project's cached answers stayed and the next run read them again. It now names the project's
  cache and how to clear it (exit 2), as `assay agent list` does from there.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent_projects import replying_project
from servers.fake_openai import json_reply

SECRET = "sk-proj-Abc123SECRETvalue-xyz"


def _judged_project(root, judge_table: str):
    project = replying_project(root / "proj", reply="Paris: sunny, 21 °C.")
    (project / "pyproject.toml").write_text("[tool.assay]\n\n[tool.assay.judge]\n" + judge_table, encoding="utf-8")
    (project / "evals" / "weather_eval.py").write_text(
        "from assay.agent import define_eval\n\n\n"
        "@define_eval(judge=True)\n"
        "async def test(t):\n"
        "    await t.send('What is the weather in Paris?')\n"
        "    t.judge('Names the city.')\n",
        encoding="utf-8",
    )
    return project


def _assay(project, tmp_path, *args):
    return subprocess.run(
        [sys.executable, "-m", "assay", "agent", *args], cwd=project,
        env={**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("command", [("list",), ("run",)])
def test_a_key_written_as_api_key_env_is_refused_and_never_repeated(tmp_path, command):
    project = _judged_project(tmp_path, f'model = "judge-1"\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "{SECRET}"\n')
    done = _assay(project, tmp_path, *command)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "pyproject.toml [tool.assay.judge]: api_key_env names the environment variable" in done.stderr, output
    assert "SECRET" not in output
    assert "Traceback" not in output
    # nothing was recorded that could hold it either
    assert not (project / ".assay" / "runs").exists() or "SECRET" not in "".join(
        path.read_text(errors="replace") for path in (project / ".assay" / "runs").rglob("*") if path.is_file())


def test_an_experiment_judge_with_a_key_for_its_variable_is_refused_where_it_is_read(tmp_path):
    project = _judged_project(tmp_path, 'model = "judge-1"\n')
    (project / "experiments" / "e.py").write_text(
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n"
        "async def send(turn_input, ctx):\n    return Turn([message('hi')])\n\n"
        "e = Experiment(agent=define_agent(name='a', send=send, evidence_coverage=complete_evidence_coverage),\n"
        f"               judge={{'api_key_env': {SECRET!r}}})\n",
        encoding="utf-8",
    )
    done = _assay(project, tmp_path, "list")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "e.py (line 6): Experiment judge: api_key_env names the environment variable" in done.stderr, done.stderr
    assert "SECRET" not in done.stdout + done.stderr


@pytest.mark.parametrize("variable", ["JUDGE_API_KEY", "_my_key2", ""])
def test_a_variable_name_or_no_key_is_still_taken(tmp_path, variable):
    project = _judged_project(tmp_path, f'model = "judge-1"\napi_key_env = "{variable}"\n')
    done = _assay(project, tmp_path, "list")
    assert done.returncode == 0, done.stdout + done.stderr


def _cli(*args, cwd, env):
    return subprocess.run([sys.executable, "-m", "assay", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_clearing_from_inside_a_project_names_its_cache_instead_of_saying_there_is_nothing(tmp_path, fake_openai):
    fake_openai.respond_with(lambda request: json_reply({"reasons": "fine", "score": 0.9}))
    project = _judged_project(tmp_path, f'model = "judge-1"\nbase_url = "{fake_openai.base_url}"\napi_key_env = ""\n')
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}
    run = _cli("agent", "run", "--quiet", cwd=project, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    cache = project / ".assay" / "cache" / "judge"
    entries = [path for path in cache.rglob("*") if path.is_file()]
    assert entries, "the run cached no judge answer"

    inside = _cli("judge", "cache", "clear", cwd=project / "evals", env=env)
    assert inside.returncode == 2, inside.stdout + inside.stderr
    assert "nothing to clear" not in inside.stdout
    assert (f"the current folder has no judge cache, and is inside {project.resolve()}, which has one "
            f"({project.resolve() / '.assay' / 'cache' / 'judge'}); clear that one from there") in inside.stderr, inside.stderr
    assert f"--project {project.resolve()}" in inside.stderr
    assert "Traceback" not in inside.stderr
    assert all(path.exists() for path in entries)  # nothing was touched

    given = _cli("judge", "cache", "clear", "--project", "evals", cwd=project, env=env)
    assert given.returncode == 2 and "--project evals has no judge cache" in given.stderr, given.stderr

    # as the message says: from the project itself, the cache is cleared
    done = _cli("judge", "cache", "clear", "--project", str(project.resolve()), cwd=project / "evals", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Removed {len(entries)} cached judge answer(s)" in done.stdout
    # a project of its own below (its own pyproject.toml) with no cache of its own is only empty
    (project / "evals" / "pyproject.toml").write_text("[tool.assay]\n", encoding="utf-8")
    nested = _cli("judge", "cache", "clear", cwd=project / "evals", env=env)
    assert nested.returncode == 0 and "nothing to clear" in nested.stdout, nested.stdout + nested.stderr
