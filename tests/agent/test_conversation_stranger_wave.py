"""A stranger's mistakes with the conversation features (docs/agent/evals.md, assertions.md): structured output,
people in the loop, the evidence assertions and `assay agent run`'s selection. Each mistake that used to pass
silently, or to say too little to fix it, is now named with its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent_projects import agent_project, attempts_of_bodies

AGENT = """
from assay.agent import (
    Experiment, InputOption, InputRequest, InputRequested, Turn, complete_evidence_coverage, define_agent, message,
    tool_call, tool_result,
)

APPROVAL = InputRequest("r1", "Refund order 1?", None, "refund_order", {"order_id": "1"},
                        (InputOption("approve"), InputOption("deny")))


async def send(turn_input, ctx):
    if turn_input.responses:
        answer = turn_input.responses[0]
        status = "completed" if answer.option_id == "approve" else "rejected"
        return Turn([tool_result("c1", {"refunded": True}, status=status), message("done")])
    if "refund" in turn_input.text:
        return Turn([tool_call("c1", "refund_order", {"order_id": "1"}), InputRequested(APPROVAL)], "waiting")
    if turn_input.output_schema is not None:
        return Turn([message("order 1 shipped")], data={"order_id": "1", "total": 42.5})
    return Turn([tool_call("w1", "get_weather", {"city": "Paris"}), tool_result("w1", {"sky": "sunny", "celsius": 21}),
                 message("It is sunny in Paris")])


e = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage))
"""


def _attempts(tmp_path: Path, evals: dict[str, str]) -> dict[str, dict]:
    """Each eval's attempt by id, from one `assay agent run` of a project with AGENT and `evals`."""
    return attempts_of_bodies(tmp_path / "project", AGENT, evals, store=tmp_path / "store.db")


def _error(attempt: dict) -> str:
    assert attempt["verdict"] == "errored", attempt
    return attempt["error"]["message"]


def test_a_misspelt_schema_keyword_errors_the_eval_instead_of_checking_nothing(tmp_path):
    # JSON Schema ignores a keyword it does not know: `requried` made every reply match, so the attempt passed.
    attempts = _attempts(tmp_path, {
        "required_typo": """
            schema = {"type": "object", "properties": {"carrier": {"type": "string"}}, "requried": ["carrier"]}
            turn = await t.send("status of my order?", output=schema)
            t.check(turn.output_error, equals(None))
        """,
        "nested_typo": """
            turn = await t.send("status of my order?", output={"type": "object", "properties": {"total": {"typ": "string"}}})
        """,
        "matches_typo": """
            await t.send("hi")
            t.check(t.reply, matches({"typ": "integer"}))
        """,
        "generic_alias": """
            await t.send("status of my order?", output=list[int])
        """,
        "annotations_are_fine": """
            schema = {"type": "object", "title": "Order", "example": {"order_id": "1"}, "x-order": 1,
                      "properties": {"order_id": {"type": "string", "description": "its id"}}, "required": ["order_id"]}
            turn = await t.send("status of my order?", output=schema)
            t.check(turn.output_error, equals(None))
        """,
    })
    required = _error(attempts["required_typo"])
    assert "$ has no keyword 'requried'; did you mean 'required'?" in required, required
    assert attempts["required_typo"]["error"]["code"] == "authoring-error"
    assert "required_typo_eval.py:7" in json.dumps(attempts["required_typo"]["error"]), attempts["required_typo"]["error"]
    assert "$.properties.total has no keyword 'typ'; did you mean 'type'?" in _error(attempts["nested_typo"])
    assert "'typ'; did you mean 'type'?" in _error(attempts["matches_typo"])
    assert "TypeAdapter(list[int])" in _error(attempts["generic_alias"])
    assert attempts["annotations_are_fine"]["verdict"] == "passed", attempts["annotations_are_fine"]


def test_called_tool_says_why_the_call_of_that_name_did_not_match(tmp_path):
    # "found 0 (tools called: get_weather)" hid that the misspelt output field was what missed.
    attempts = _attempts(tmp_path, {
        "output_typo": """
            await t.send("weather?")
            t.called_tool(tool_match("get_weather", output={"sky": "sunny", "celsus": 21}))
            t.called_tool(tool_match("get_weather", input={"city": "paris"}))
        """,
    })
    attempt = attempts["output_typo"]
    assert attempt["verdict"] == "failed", attempt
    reasons = [assertion["reason"] for assertion in attempt["assertions"]]
    assert reasons[0].endswith("(tools called: get_weather); get_weather #w1 did not match: output $.celsus: missing"), reasons
    assert 'input $.city: expected "paris", got "Paris"' in reasons[1], reasons


def test_eval_and_experiment_options_say_they_are_arguments(tmp_path):
    # click answered `--eval` with "Possible options: --help, --model", a hidden option that is refused.
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "e.py").write_text(AGENT)
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    for given, wanted in (
        (["--eval", "drive/sessions"], "`assay agent run EXPERIMENT drive/sessions`"),
        (["--evl=orders/"], "`assay agent run EXPERIMENT orders/`"),
        (["--experiment", "e"], "`assay agent run e`"),
    ):
        done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), *given],
                              capture_output=True, text=True, timeout=120, check=False, env=env)
        assert done.returncode == 2, done
        assert wanted in done.stderr and "--model" not in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--tgs", "x"],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 2 and "--tag" in done.stderr, done.stderr  # other unknown options: as before


def test_reading_data_that_missed_its_schema_says_why_it_is_none(tmp_path):
    # `turn.data.carrier` after a mismatch said only "'NoneType' object has no attribute 'carrier'"; the
    # mismatch itself was in `assay agent show` alone.
    attempts = _attempts(tmp_path, {
        "reads_none": """
            turn = await t.send("status of my order?", output={"type": "object", "required": ["carrier"]})
            t.check(turn.data["carrier"], equals("DHL"))
        """,
        "unrelated_none": """
            await t.send("status of my order?", output={"type": "object", "required": ["carrier"]})
            nothing = None
            nothing.carrier
        """,
        "no_mismatch": """
            await t.send("hi")
            nothing = None
            nothing.carrier
        """,
    })
    message = _error(attempts["reads_none"])
    assert message.startswith("TypeError: 'NoneType' object is not subscriptable; turn 1's data is None: "), message
    assert "$: 'carrier' is a required property" in message and ".or_stop()" in message, message
    assert "turn 1's data is None" in _error(attempts["unrelated_none"])  # a None near a mismatch: likely why
    assert _error(attempts["no_mismatch"]) == "AttributeError: 'NoneType' object has no attribute 'carrier'"


def test_an_answer_that_is_nearly_an_option_id_goes_as_free_text_and_is_said_once(tmp_path):
    """`t.respond("aprove")` goes to the agent as free text (NiceEval's rule for a string that is no option id, and
    free text like "Approve" may be meant), but it was sent in silence while the agent read a refusal and the eval
    passed: the attempt now carries a warning, and the run says it once."""
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "e.py").write_text(AGENT)
    (project / "evals" / "typo_eval.py").write_text(
        "from assay.agent import *\n\n\n@define_eval()\nasync def test(t):\n    await t.send('refund order 1')\n"
        "    await t.respond('aprove')\n    t.succeeded()\n")
    (project / "evals" / "meant_eval.py").write_text(
        "from assay.agent import *\n\n\n@define_eval()\nasync def test(t):\n    await t.send('refund order 1')\n"
        "    await t.respond('deny')\n")
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")})
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    attempts = {line["attempt"]["eval_id"]: line["attempt"] for line in lines if line.get("type") == "attempt"}
    typo = attempts["typo"]
    assert typo["verdict"] == "passed", typo  # the verdict is the eval's: a warning changes none
    [noted] = [d for d in typo["diagnostics"] if d["code"] == "respond-near-option"]
    assert noted["message"] == ("respond: 'aprove' went to request 'r1' as free text, though it is nearly its option "
                                "'approve' (for the option: respond('approve'))")
    assert not attempts["meant"].get("diagnostics")
    [warning] = [line for line in lines if line.get("event") == "warning" and line["code"] == "respond-near-option"]
    assert warning["message"].endswith("(in 1 attempt(s); the option may have been meant; "
                                       "`assay agent show e/typo#1` has the first)"), warning


def test_a_message_sent_while_the_agent_waits_for_input_is_said_once(tmp_path):
    """`t.send("yes")` after a turn that waits for input was accepted without a word: the request stayed unanswered
    (the sample agent read the message as a new question) and the eval passed. It still goes as a new turn, as
    NiceEval has it; the attempt now carries a warning, and the run says it once."""
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "e.py").write_text(AGENT)
    body = "from assay.agent import *\n\n\n@define_eval()\nasync def test(t):\n    await t.send('refund order 1')\n"
    (project / "evals" / "unanswered_eval.py").write_text(body + "    await t.send('yes, go ahead')\n")
    (project / "evals" / "answered_eval.py").write_text(body + "    await t.respond('approve')\n    await t.send('thanks')\n")
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")})
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    attempts = {line["attempt"]["eval_id"]: line["attempt"] for line in lines if line.get("type") == "attempt"}
    assert attempts["unanswered"]["verdict"] == "passed", attempts  # a warning changes no verdict
    [noted] = [d for d in attempts["unanswered"]["diagnostics"] if d["code"] == "send-while-waiting"]
    assert noted["message"] == ("send: the main session's last turn waits for input (request 'r1'); the message went "
                                "as a new turn and left the request unanswered (to answer it: respond(...) or "
                                "respond_all(option_id))")
    assert not attempts["answered"].get("diagnostics"), attempts["answered"]
    [warning] = [line for line in lines if line.get("event") == "warning" and line["code"] == "send-while-waiting"]
    assert warning["message"].endswith("(in 1 attempt(s); an answer may have been meant; "
                                       "`assay agent show e/unanswered#1` has the first)"), warning
