"""Evals and an experiment defined in code, run without a project (docs/agent/python.md)."""

import sys

# --8<-- [start:in-code]
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, equals, message
from assay.agent.api import run_evals


async def send(turn_input, ctx):
    return Turn([message(f"You said: {turn_input.text}")])


echo = define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage)


async def repeats_the_question(t):
    await t.send("what time is it?")
    t.check(t.reply, equals("You said: what time is it?"))


results = run_evals({"repeats": repeats_the_question}, Experiment(agent=echo, model="none"), attempts=3)
print([attempt.verdict for attempt in results.attempts])  # ['passed', 'passed', 'passed']
# --8<-- [end:in-code]
sys.exit(results.exit_code)
