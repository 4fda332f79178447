"""`--budget` with a price table: the price-table estimate of each finished attempt is added up per
experiment; once it reaches the cap dispatch stops (work in flight finishes), the rest is recorded
not-dispatched with a `budget_exhausted` diagnostic, and the run exits non-zero."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest

from agent_helpers import scripted_agent
from assay.agent import Experiment, Turn, Usage, define_eval, message
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun
from assay.core.run_events import RunEvents

ENTRY = "from assay.cli.app import main; main()"
PRICES = {"m": {"input": 1.0, "output": 1.0}}  # USD per million tokens


async def one_send(t):
    await t.send("go")
    t.succeeded()


class Warnings:
    def __init__(self):
        self.seen = []
        self.messages = []

    def warning(self, event):
        self.seen.append((event.code, dict(event.fields)))
        self.messages.append(event.message)


def run(agent, count, *, budget, concurrency=1, warnings=None, **experiment):
    warnings = Warnings() if warnings is None else warnings
    entry = ExperimentEntry("exp", Experiment(agent=agent, model="m", **experiment))
    plan = build_plan([entry], {"exp": [EvalEntry(f"e{index}", define_eval(one_send)) for index in range(count)]})
    options = RunOptions(concurrency=concurrency, budget=budget, pricing=PRICES)
    return asyncio.run(AgentRun(plan, options, RunEvents([warnings])).run()), warnings.seen


def costing(dollars):
    """An agent whose every turn the price table estimates at `dollars`."""
    return scripted_agent(lambda i, c: Turn([message("ok")], usage=Usage(input_tokens=int(dollars * 1_000_000), output_tokens=0)))


def test_dispatch_stops_once_the_estimate_reaches_the_cap():
    agent, received = costing(1.0)
    outcome, warnings = run(agent, 5, budget=2.0)
    assert len(received) == 2
    assert [r.outcome for r in outcome.results] == ["executed"] * 2 + ["not_dispatched"] * 3
    assert {r.decision["code"] for r in outcome.results[2:]} == {"budget_exhausted"}
    [(code, fields)] = warnings
    assert code == "budget_exhausted" and fields["experiment_id"] == "exp" and fields["spent"] == 2.0
    assert outcome.budget_exhausted == ["exp"] and outcome.exit_code == 1


def test_work_in_flight_finishes_when_the_cap_is_reached():
    started = []

    async def slow(turn_input, ctx):
        started.append(ctx.eval_id)
        await asyncio.sleep(0.05)
        return Turn([message("ok")], usage=Usage(input_tokens=1_000_000, output_tokens=0))

    agent, _ = scripted_agent(slow)
    outcome, _ = run(agent, 6, budget=1.5, concurrency=2)
    executed = [r for r in outcome.results if r.outcome == "executed"]
    assert len(started) == len(executed) and all(r.verdict == "passed" for r in executed)  # none killed
    assert 2 <= len(executed) < 6 and outcome.exit_code == 1


def test_a_zero_budget_dispatches_nothing():
    agent, received = costing(1.0)
    outcome, warnings = run(agent, 2, budget=0.0)
    assert received == [] and [code for code, _ in warnings] == ["budget_exhausted"]
    assert outcome.exit_code == 1


def test_the_experiment_budget_applies_unless_the_command_line_gives_one():
    agent, received = costing(1.0)
    warnings = Warnings()
    entry = ExperimentEntry("exp", Experiment(agent=agent, model="m", budget=1.0))
    plan = build_plan([entry], {"exp": [EvalEntry(f"e{index}", define_eval(one_send)) for index in range(3)]})
    asyncio.run(AgentRun(plan, RunOptions(concurrency=1, pricing=PRICES), RunEvents([warnings])).run())
    assert len(received) == 1
    asyncio.run(AgentRun(plan, RunOptions(concurrency=1, pricing=PRICES, budget=10.0)).run())
    assert len(received) == 4


def test_without_a_price_the_budget_cannot_be_enforced_and_says_so():
    agent, received = costing(1.0)
    warnings = Warnings()
    entry = ExperimentEntry("exp", Experiment(agent=agent, model="unpriced"))
    plan = build_plan([entry], {"exp": [EvalEntry(f"e{index}", define_eval(one_send)) for index in range(3)]})
    outcome = asyncio.run(AgentRun(plan, RunOptions(budget=1.0, pricing=PRICES), RunEvents([warnings])).run())
    assert len(received) == 3 and outcome.exit_code == 0
    assert [code for code, _ in warnings.seen] == ["budget-unenforceable"]


@pytest.mark.parametrize("model, usage, prices, reason", [
    (None, Usage(input_tokens=5, output_tokens=0), PRICES, "its experiment names no model"),
    ("m", None, PRICES, "its agent reports no token usage (Turn(usage=...))"),
    ("unpriced", Usage(input_tokens=5, output_tokens=0), PRICES, "[tool.assay.pricing] has no price for 'unpriced'"),
    ("m", Usage(input_tokens=5, output_tokens=0), {}, "[tool.assay.pricing] has no price for 'm' (the table is empty or missing)"),
    # A key one character off the model is named: the table looked right and the budget still went unenforced.
    ("scripted-1", Usage(input_tokens=5, output_tokens=0), {"scripted_1": {"input": 1.0, "output": 1.0}},
     "[tool.assay.pricing] has no price for 'scripted-1' (its table has 'scripted_1': a misspelt key?)"),
    ("m", Usage(input_tokens=5, output_tokens=0, cache_read_tokens=3), PRICES,
     "the price of 'm' in [tool.assay.pricing] has no cache_read rate, and cache_read tokens were used"),
])
def test_the_unenforceable_budget_warning_names_what_is_missing(model, usage, prices, reason):
    # It said "(no model, usage or price)" whatever was missing.
    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")], usage=usage))
    warnings = Warnings()
    entry = ExperimentEntry("exp", Experiment(agent=agent, model=model))
    plan = build_plan([entry], {"exp": [EvalEntry("e", define_eval(one_send))]})
    asyncio.run(AgentRun(plan, RunOptions(budget=1.0, pricing=prices), RunEvents([warnings])).run())
    assert warnings.messages == [f"experiment exp: the budget cannot be enforced: {reason}"]


def test_a_small_spend_is_not_shown_as_zero_dollars():
    warnings = Warnings()
    agent, _ = costing(0.00001)
    run(agent, 3, budget=0.00002, warnings=warnings)
    assert warnings.messages == ["experiment exp spent an estimated $0.000020 of its $0.000020 budget; "
                                 "its remaining attempts were not dispatched"]


@pytest.fixture
def priced_project(tmp_path):
    root = tmp_path / "priced"
    (root / "evals").mkdir(parents=True)
    (root / "experiments").mkdir()
    (root / "pyproject.toml").write_text('[tool.assay]\nconcurrency = 1\n\n[tool.assay.pricing]\n"m" = { input = 1.0, output = 1.0 }\n')
    (root / "experiments" / "main.py").write_text(textwrap.dedent("""
        import os
        from assay.agent import Experiment, Turn, Usage, complete_evidence_coverage, define_agent, message

        async def send(turn_input, ctx):
            with open(os.environ["BUDGET_CALLS"], "a") as calls:
                calls.write(ctx.eval_id + "\\n")
            return Turn([message("ok")], usage=Usage(input_tokens=600_000, output_tokens=400_000))

        main = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage),
                          model="m")
    """))
    for index in range(4):
        (root / "evals" / f"e{index}_eval.py").write_text(
            "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    await t.send('go')\n    t.succeeded()\n"
        )
    return root


def cli(root, *args, calls):
    return subprocess.run(
        [sys.executable, "-c", ENTRY, "agent", "run", "--project", str(root), *args],
        capture_output=True, text=True, env={**os.environ, "BUDGET_CALLS": str(calls)}, timeout=60,
    )


def test_through_the_cli_the_budget_stops_the_run_with_a_diagnostic_and_exit_1(priced_project, tmp_path):
    calls = tmp_path / "calls.txt"
    result = cli(priced_project, "--budget", "2", "--json", calls=calls)
    assert result.returncode == 1, result.stderr
    assert len(calls.read_text().splitlines()) == 2  # $1 each: the cap is reached after two
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    [warning] = [line for line in lines if line.get("event") == "warning"]
    assert warning["code"] == "budget_exhausted" and warning["experiment_id"] == "main"
    receipt = lines[-1]["receipt"]
    assert receipt["title"] == "INCOMPLETE" and receipt["counts"]["not_dispatched"] == 2 and receipt["exit_code"] == 1

    # The console says so too, and a resume of the same invocation does not spend past the cap again.
    checkpoint = receipt["checkpoint"]
    resumed = cli(priced_project, "--resume", checkpoint, calls=calls)
    assert resumed.returncode == 1 and len(calls.read_text().splitlines()) == 2
    assert "warning [budget_exhausted]: experiment main spent an estimated $2.00 of its $2.00 budget" in resumed.stdout
    assert "INCOMPLETE" in resumed.stdout


def test_carried_attempts_cost_this_run_nothing(priced_project, tmp_path):
    calls = tmp_path / "calls.txt"
    assert cli(priced_project, calls=calls).returncode == 0
    (priced_project / "evals" / "e4_eval.py").write_text(
        "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    await t.send('new')\n    t.succeeded()\n"
    )
    result = cli(priced_project, "--budget", "1", "--json", calls=calls)
    assert result.returncode == 0, result.stdout
    assert calls.read_text().splitlines()[4:] == ["e4"]
