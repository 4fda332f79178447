"""Early exit: `attempts=N, early_exit=True` stops dispatching an eval's attempts once one passes; the
rest are recorded not-dispatched, which is neither a failure nor an incomplete run (exit 0)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest

from agent_helpers import scripted_agent
from assay.agent import Experiment, Turn, define_eval, define_score_eval, includes, message
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun
from assay.errors import ConfigError

ENTRY = "from assay.cli.app import main; main()"


def replies(*texts):
    """An agent answering `texts` in turn, one per send; records what it was sent."""
    queue = list(texts)
    return scripted_agent(lambda turn_input, ctx: Turn([message(queue.pop(0))]))


async def says_yes(t):
    await t.send("well?")
    t.check(t.reply, includes("yes"))


def run(agent, tests, *, options=RunOptions(concurrency=1), attempts=3, **experiment):
    entry = ExperimentEntry("exp", Experiment(agent=agent, attempts=attempts, **experiment))
    plan = build_plan([entry], {"exp": [EvalEntry(eval_id, test) for eval_id, test in tests.items()]})
    return asyncio.run(AgentRun(plan, options).run())


def test_once_an_attempt_passes_the_rest_are_not_dispatched_and_the_run_passes():
    agent, received = replies("yes", "yes", "yes")
    outcome = run(agent, {"e": define_eval(says_yes, early_exit=True)})
    assert len(received) == 1
    assert [(r.outcome, r.verdict) for r in outcome.results] == [
        ("executed", "passed"), ("not_dispatched", None), ("not_dispatched", None),
    ]
    assert outcome.results[1].decision["code"] == "early-exit"
    assert outcome.exit_code == 0 and outcome.not_dispatched == 0 and outcome.budget_exhausted == []


def test_failed_attempts_do_not_trigger_it_and_still_count():
    agent, received = replies("no", "yes", "yes")
    outcome = run(agent, {"e": define_eval(says_yes, early_exit=True)})
    assert len(received) == 2
    assert [r.verdict for r in outcome.results] == ["failed", "passed", None]
    assert outcome.exit_code == 1  # the failed attempt fails the run; the undispatched one does not

    from assay.agent.report import run_title

    assert run_title(outcome.summaries, False, []) == "FAILED"  # not INCOMPLETE


def test_without_early_exit_every_attempt_runs():
    agent, received = replies("yes", "yes", "yes")
    assert run(agent, {"e": define_eval(says_yes)}).exit_code == 0
    assert len(received) == 3


def test_the_experiment_and_the_command_line_win_over_the_eval():
    agent, received = replies(*["yes"] * 6)
    run(agent, {"e": define_eval(says_yes)}, early_exit=True)
    assert len(received) == 1  # the experiment turned it on
    run(agent, {"e": define_eval(says_yes, early_exit=True)}, options=RunOptions(concurrency=1, early_exit=False))
    assert len(received) == 4  # --no-early-exit ran all three


def test_score_evals_always_run_every_attempt():
    agent, received = replies("yes", "yes", "yes")

    async def points(t):
        await t.send("x")
        t.score(1)

    outcome = run(agent, {"s": define_score_eval(points)}, early_exit=True)
    assert len(received) == 3 and [r.verdict for r in outcome.results] == ["scored"] * 3
    with pytest.raises(ConfigError, match="a score eval runs every attempt"):
        from assay.agent.definition import _build

        _build(points, "score", None, (), None, None, None, early_exit=True)


def test_other_evals_keep_their_attempts():
    agent, received = replies(*["yes"] * 4)
    outcome = run(agent, {"quick": define_eval(says_yes, early_exit=True), "full": define_eval(says_yes)})
    assert len(received) == 4
    assert [(r.eval_id, r.outcome) for r in outcome.results] == [
        ("quick", "executed"), ("quick", "not_dispatched"), ("quick", "not_dispatched"),
        ("full", "executed"), ("full", "executed"), ("full", "executed"),
    ]


@pytest.fixture
def early_project(tmp_path):
    root = tmp_path / "early"
    (root / "evals").mkdir(parents=True)
    (root / "experiments").mkdir()
    (root / "pyproject.toml").write_text("[tool.assay]\nconcurrency = 1\n")
    (root / "experiments" / "main.py").write_text(textwrap.dedent("""
        import os
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

        async def send(turn_input, ctx):
            with open(os.environ["EARLY_CALLS"], "a") as calls:
                calls.write(f"{ctx.eval_id}#{ctx.attempt + 1}\\n")
            return Turn([message("yes")])

        main = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage),
                          attempts=3)
    """))
    (root / "evals" / "pass_at_3_eval.py").write_text(textwrap.dedent("""
        from assay.agent import define_eval, includes

        @define_eval(early_exit=True)
        async def test(t):
            await t.send("well?")
            t.check(t.reply, includes("yes"))
    """))
    return root


def cli(root, *args, calls):
    environment = {**os.environ, "EARLY_CALLS": str(calls)}
    return subprocess.run([sys.executable, "-c", ENTRY, "agent", "run", "--project", str(root), *args],
                          capture_output=True, text=True, env=environment, timeout=60)


def test_through_the_cli_the_run_exits_zero_and_shows_the_early_exit(early_project, tmp_path):
    calls = tmp_path / "calls.txt"
    result = cli(early_project, "--json", calls=calls)
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls.read_text().splitlines() == ["pass_at_3#1"]
    receipt = json.loads(result.stdout.splitlines()[-1])["receipt"]
    assert receipt["title"] == "PASSED" and receipt["counts"]["not_dispatched"] == 2 and receipt["exit_code"] == 0
    assert receipt["checkpoint"] and "Resume" not in result.stdout

    shown = subprocess.run([sys.executable, "-c", ENTRY, "agent", "show", "--project", str(early_project)],
                           capture_output=True, text=True, timeout=60)
    assert shown.stdout.count("not dispatched (early exit)") == 2

    # The next invocation carries the pass and leaves the rest undispatched, calling nobody.
    plan = cli(early_project, "--dry", calls=calls)
    assert "skip  pass_at_3 #2 [a]  early exit: attempt #1 passed" in plan.stdout, plan.stdout
    # The run's plan line counts as --dry does (it said "2 to run" of the two it would not dispatch).
    head = "PLAN  3 attempts · 1 evals × 1 experiments · 1 carried"
    assert plan.stdout.splitlines()[0] == f"{head} · 0 to run · 2 not dispatched"
    shown_run = cli(early_project, calls=calls)
    assert shown_run.stdout.splitlines()[0] == f"{head} from earlier runs · 0 to run · 2 not dispatched"
    again = cli(early_project, "--json", calls=calls)
    assert again.returncode == 0 and calls.read_text().splitlines() == ["pass_at_3#1"]
    no_exit = cli(early_project, "--no-early-exit", "--json", calls=calls)
    assert no_exit.returncode == 0
    assert calls.read_text().splitlines() == ["pass_at_3#1", "pass_at_3#2", "pass_at_3#3"]
