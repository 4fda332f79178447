"""Model judges in agent evals as a new user meets them, from docs/agent/judges.md."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent_projects import replying_project
from assay.agent import define_eval
from assay.errors import ConfigError


async def judged(t):
    await t.send("What is the weather in Paris?")
    t.judge("Names the city and gives a temperature.")


def test_an_empty_eval_judge_is_refused_where_the_eval_is_defined():
    """`judge={}` is falsy, as `judge=False` is: the eval declared no judge, and each judge assertion errored at
    run time with "declare judge=True (or a judge config) on the eval", which it seemed to have done."""
    with pytest.raises(ConfigError, match=r"eval judge is empty, which declares no judge; write judge=True"):
        define_eval(judged, judge={})
    define_eval(judged, judge=True)  # what it meant
    define_eval(judged)  # and no judge at all is no error


def test_assay_agent_list_names_the_file_and_line_of_an_empty_eval_judge(tmp_path):
    project = replying_project(tmp_path / "proj")
    (project / "evals" / "weather_eval.py").write_text(
        "from assay.agent import define_eval\n\n\n"
        "@define_eval(judge={})\n"
        "async def test(t):\n"
        "    await t.send('hi')\n"
        "    t.judge('Says hello.')\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "assay", "agent", "list"], cwd=project,
        env={**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "weather_eval.py (line 4): eval judge is empty" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
