"""docs/agent/judges.md as written: `api_key_env` names the variable that holds the judge's key. A key written there
instead (the mistake the name invites) was echoed as "the judge key variable sk-… is not set" on the console and in
every stored record; it is refused when the file is read, without repeating it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent_projects import replying_project

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
