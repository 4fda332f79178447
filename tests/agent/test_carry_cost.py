"""What carrying costs: a carried slot is a reference to the published attempt, so planning a carried
run never decodes the previous attempts' transcripts, and what it holds does not grow with them."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from agent_helpers import forget_modules_under
from agent_projects import agent_project
import typer
from typer.testing import CliRunner

from assay.agent import api
from assay.cli.agent import agent_app

app = typer.Typer()
app.add_typer(agent_app, name="agent")

EXPERIMENT = """
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

async def send(turn_input, ctx):
    return Turn([message("yes " + "x" * REPLY_BYTES)])

main = Experiment(agent=define_agent(name="talkative", send=send, evidence_coverage=complete_evidence_coverage),
                  model="m1")
"""
EVALS = """
from assay.agent import define_eval, includes

def make(index):
    async def test(t):
        await t.send(f"question {index}")
        t.check(t.reply, includes("yes"))
    return define_eval(test)

EVALS = {f"e{index:03d}": make(index) for index in range(40)}
"""


def project_with_replies(root: Path, reply_bytes: int) -> Path:
    agent_project(root)
    (root / "experiments" / "main.py").write_text(EXPERIMENT.replace("REPLY_BYTES", str(reply_bytes)))
    (root / "evals" / "many_eval.py").write_text(EVALS)
    return root


def plan_peak_after_a_run(root: Path, store: Path, monkeypatch) -> int:
    """Bytes allocated at the peak of planning a second invocation (every slot carried)."""
    monkeypatch.setenv("ASSAY_STORE", str(store))
    first = CliRunner().invoke(app, ["agent", "run", "--project", str(root)])
    assert first.exit_code == 0, first.output
    forget_modules_under(root)
    tracemalloc.start()
    try:
        planned = api.plan(root)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        forget_modules_under(root)
    assert {decision.action for decision in planned.carry.decisions} == {"carry"}
    return peak


def test_planning_a_carry_holds_nothing_that_grows_with_the_previous_transcripts(tmp_path, monkeypatch):
    small = plan_peak_after_a_run(project_with_replies(tmp_path / "small", 10), tmp_path / "s1" / "assay.db", monkeypatch)
    # 40 attempts of 128 KiB replies: 5 MiB of transcript in the store, which carrying never reads.
    large = plan_peak_after_a_run(project_with_replies(tmp_path / "large", 128 * 1024), tmp_path / "s2" / "assay.db",
                                  monkeypatch)
    assert large - small < 512 * 1024, (small, large)
