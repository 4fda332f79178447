"""`sys.exit()` in an eval, in its agent's `send`, or in the agent's setup and teardown is that attempt's error:
it ended the whole run with its status, with no result, no summary and no word of why."""

from __future__ import annotations

from agent_projects import attempts_of_bodies

AGENT = """
import sys
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message


async def send(turn_input, ctx):
    if "die" in turn_input.text:
        sys.exit(4)
    return Turn([message("ok")])


async def setup(ctx):
    if ctx.eval_id == "setup_exits":
        sys.exit(5)


async def teardown(ctx):
    if ctx.eval_id == "teardown_exits":
        raise SystemExit("bye")


e = Experiment(agent=define_agent(name="a", send=send, setup=setup, teardown=teardown,
                                  evidence_coverage=complete_evidence_coverage))
"""


def test_sys_exit_in_user_code_errors_its_attempt_and_the_run_goes_on(tmp_path):
    attempts = attempts_of_bodies(tmp_path / "project", AGENT, {
        "body_exits": "await t.send('hi')\nimport sys\nsys.exit(3)",
        "send_exits": "await t.send('die now')",
        "setup_exits": "await t.send('hi')",
        "teardown_exits": "await t.send('hi')\nt.succeeded()",
        "fine": "await t.send('hello')\nt.succeeded()",
    }, store=tmp_path / "store.db")
    assert attempts["fine"]["verdict"] == "passed", attempts
    body = attempts["body_exits"]
    assert body["verdict"] == "errored" and body["error"]["code"] == "eval-exception", body
    assert body["error"]["message"] == "SystemExit: 3 (sys.exit() ends this attempt, not the run)"
    sent = attempts["send_exits"]
    assert sent["verdict"] == "errored", sent
    assert sent["error"]["message"] == "agent 'a' send raised SystemExit: 4 (sys.exit() ends this attempt, not the run)"
    setup = attempts["setup_exits"]
    assert setup["error"]["code"] == "agent-setup-failed" and "SystemExit: 5" in setup["error"]["message"], setup
    teardown = attempts["teardown_exits"]
    assert teardown["verdict"] == "passed", teardown  # a failed teardown changes no verdict
    assert [d["code"] for d in teardown["diagnostics"]] == ["agent-teardown-failed"], teardown
