"""What carrying costs: a carried slot is a reference to the published attempt, so planning a carried
run never decodes the previous attempts' transcripts, and what it holds does not grow with them."""

from __future__ import annotations

import gc
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


def test_what_a_carried_slot_holds_is_its_verdict_and_a_shared_reference(tmp_path, monkeypatch):
    """From planning to the end of the run, a carried slot holds what its failure lines show and the run id it
    adopts (one string for every slot carried from that run), not a record with its reference spelt out: a
    20,000-slot carry held 1.40x the peak memory of the run that executed them (97.8 against 70.1 MiB)."""
    root = project_with_replies(tmp_path / "p", 10)
    (root / "evals" / "many_eval.py").write_text(EVALS.replace("range(40)", "range(400)"))
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "s" / "assay.db"))
    first = CliRunner().invoke(app, ["agent", "run", "--project", str(root), "--json"])
    assert first.exit_code == 0, first.output
    forget_modules_under(root)

    def held_by(**options) -> int:
        """Bytes a plan holds (the second of two, so nothing imported or cached on the way counts)."""
        for _ in range(2):
            forget_modules_under(root)
            gc.collect()
            tracemalloc.start()
            try:
                kept = api.plan(root, **options)
                gc.collect()
                held, _ = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            del kept
        forget_modules_under(root)
        return held

    # Per carried slot, beyond what the same plan holds with every slot to run: ~1.4 KB before, ~0.3 KB now.
    carrying, running = held_by(), held_by(rerun="all")
    assert (carrying - running) / 400 < 500, (carrying, running)

    carried_plan = api.plan(root)
    forget_modules_under(root)
    references = [decision.carried for decision in carried_plan.carry.decisions]
    run_ids = {id(reference.origin) for reference in references}
    assert len(run_ids) == 1 and isinstance(references[0].origin, str)  # one run id, held once
    planned = carried_plan.plan[3]
    assert references[3].carried_from(planned) == {
        "run_id": references[3].origin, "unit_id": f"main/{planned.eval.id}#1",
        "attempt_id": f"{references[3].origin}/main/{planned.eval.id}/1",
    }

    # The run keeps a summary per slot that spells the reference out only when asked.
    outcome = api.run(root)
    forget_modules_under(root)
    summaries = outcome.summaries
    assert [summary.outcome for summary in summaries] == ["carried"] * 400
    assert len({id(summary._rare) for summary in summaries}) == 1
    assert summaries[5].carried_from == carried_plan.carry.decisions[5].carried.carried_from(carried_plan.plan[5])
    assert summaries[5].attempt_id == summaries[5].carried_from["attempt_id"]
    assert outcome.attempts[5].carried_from == summaries[5].carried_from  # as recorded
