"""docs/agent/judges.md as written: `assay judge cache clear` clears "the project in the current directory". Run
from a folder inside the project (its evals/), it said "No judge cache at .assay/cache/judge; nothing to clear." and
exited 0, while the project's cached answers stayed and the next run read them again. It now names the project's
cache and how to clear it (exit 2), as `assay agent list` does from there."""

from __future__ import annotations

import os
import subprocess
import sys

from agent_projects import replying_project
from servers.fake_openai import json_reply


def _assay(*args, cwd, env):
    return subprocess.run([sys.executable, "-m", "assay", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_clearing_from_inside_a_project_names_its_cache_instead_of_saying_there_is_nothing(tmp_path, fake_openai):
    fake_openai.respond_with(lambda request: json_reply({"reasons": "fine", "score": 0.9}))
    project = replying_project(tmp_path / "proj", reply="Paris: sunny, 21 °C.")
    (project / "pyproject.toml").write_text(
        f'[tool.assay]\n\n[tool.assay.judge]\nmodel = "judge-1"\nbase_url = "{fake_openai.base_url}"\napi_key_env = ""\n',
        encoding="utf-8")
    (project / "evals" / "weather_eval.py").write_text(
        "from assay.agent import define_eval\n\n\n"
        "@define_eval(judge=True)\n"
        "async def test(t):\n"
        "    await t.send('What is the weather in Paris?')\n"
        "    t.judge('Names the city.')\n",
        encoding="utf-8",
    )
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}
    run = _assay("agent", "run", "--quiet", cwd=project, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    cache = project / ".assay" / "cache" / "judge"
    entries = [path for path in cache.rglob("*") if path.is_file()]
    assert entries, "the run cached no judge answer"

    inside = _assay("judge", "cache", "clear", cwd=project / "evals", env=env)
    assert inside.returncode == 2, inside.stdout + inside.stderr
    assert "nothing to clear" not in inside.stdout
    assert (f"the current folder has no judge cache, and is inside {project.resolve()}, which has one "
            f"({project.resolve() / '.assay' / 'cache' / 'judge'}); clear that one from there") in inside.stderr, inside.stderr
    assert f"--project {project.resolve()}" in inside.stderr
    assert "Traceback" not in inside.stderr
    assert all(path.exists() for path in entries)  # nothing was touched

    given = _assay("judge", "cache", "clear", "--project", "evals", cwd=project, env=env)
    assert given.returncode == 2 and "--project evals has no judge cache" in given.stderr, given.stderr

    # as the message says: from the project itself, the cache is cleared
    done = _assay("judge", "cache", "clear", "--project", str(project.resolve()), cwd=project / "evals", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Removed {len(entries)} cached judge answer(s)" in done.stdout
    # a project of its own below (its own pyproject.toml) with no cache of its own is only empty
    (project / "evals" / "pyproject.toml").write_text("[tool.assay]\n", encoding="utf-8")
    nested = _assay("judge", "cache", "clear", cwd=project / "evals", env=env)
    assert nested.returncode == 0 and "nothing to clear" in nested.stdout, nested.stdout + nested.stderr
