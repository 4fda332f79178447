"""An agent project's discovery (`assay agent list`) imports no HTTP stack, even when an experiment defines an
endpoint agent: the transport loads when a run starts, before the first attempt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXPERIMENT = """
from assay.agent import Experiment
from assay.agent.adapters.openai_chat import openai_chat_agent

experiment = Experiment(agent=openai_chat_agent(base_url="http://127.0.0.1:9/v1", model="m"))
"""
EVAL = """
from assay.agent import define_eval

async def test(t):
    await t.send("hi")

hello = define_eval(test)
"""


def test_listing_an_endpoint_agents_project_imports_no_http_stack(tmp_path: Path) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "evals").mkdir()
    (tmp_path / "experiments" / "base.py").write_text(EXPERIMENT)
    (tmp_path / "evals" / "hello_eval.py").write_text(EVAL)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "assay", "agent", "list", "--project", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "hello" in done.stdout, done
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "assay.agent.adapters.openai_chat" in imported  # the agent was defined
    assert sorted(imported & {"aiohttp", "httpx", "openai", "assay.judge.openai_http"}) == []
