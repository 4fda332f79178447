"""A stranger's mistakes in evals and agents, found by following docs/agent/evals.md, assertions.md and agents.md
as written and then getting things wrong: each is one clear message naming the line and the fix, never Python's own
words (`object SessionHandle can't be used in 'await' expression`) or a silent mismatch."""

from __future__ import annotations

from pathlib import Path

from agent_projects import attempts_of_bodies

AGENT = """
from assay.agent import (
    Experiment, InputOption, InputRequest, InputRequested, Turn, complete_evidence_coverage, define_agent, message,
    tool_call, tool_result,
)

REQUEST = InputRequest("r1", "Refund?", None, "refund_order", {"order_id": "1"},
                       (InputOption("approve"), InputOption("deny")))


async def send(turn_input, ctx):
    text = turn_input.text
    if text == "dict":
        return {"answer": "hi"}  # the service's own body, not a turn
    if text == "options":
        return Turn([InputRequested(InputRequest("r1", "ok?", options="approve"))], "waiting")
    if text == "str-event":
        return Turn(["hello"])
    if "refund" in text:
        return Turn([tool_call("c1", "refund_order", {}), InputRequested(REQUEST)], "waiting")
    if turn_input.responses:
        return Turn([tool_result("c1", {"ok": True}), message("done")])
    return Turn([tool_call("w1", "get_weather", {}), tool_result("w1", "sun"), message("It is sunny in " + text)])


e = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage))
"""


def _errors(tmp_path: Path, evals: dict[str, str]) -> dict[str, dict]:
    """Each eval's attempt by id, from one `assay agent run` of a project with AGENT and `evals`."""
    return attempts_of_bodies(tmp_path / "project", AGENT, evals, store=tmp_path / "store.db")


def _message(attempt: dict, verdict: str = "errored") -> str:
    assert attempt["verdict"] == verdict, attempt
    return attempt["error"]["message"]


def test_wrong_arguments_to_the_drive_verbs_name_the_verb_and_the_fix(tmp_path):
    attempts = _errors(tmp_path, {
        "new_session_awaited": """
            other = await t.new_session()
        """,
        "new_session_argument": """
            other = t.new_session("other")
        """,
        "send_file_list": """
            await t.send_file(["forecast.txt"])
        """,
        "send_file_none": """
            await t.send_file(None)
        """,
        "respond_all_list": """
            await t.send("refund please")
            await t.respond_all(["approve"])
        """,
        "require_by_position": """
            await t.send("refund please")
            t.require_input_request("r1")
        """,
        "require_option_ids_str": """
            await t.send("refund please")
            t.require_input_request(option_ids="approve")
        """,
        # an assertion's settings went into the report as they were given
        "key_number": """
            await t.send("Paris")
            t.check(t.reply, includes("sunny")).key(3)
        """,
        "label_none": """
            await t.send("Paris")
            t.check(t.reply, includes("sunny")).label(None)
        """,
    })
    for attempt in attempts.values():
        assert attempt["error"]["code"] == "authoring-error", attempt
        assert "TypeError" not in attempt["error"]["message"], attempt
    assert _message(attempts["new_session_awaited"]).startswith(
        "t.new_session() opens a conversation at once and is not awaited: write `other = t.new_session()`")
    assert _message(attempts["new_session_argument"]).startswith("new_session takes no arguments, got 'other'")
    assert _message(attempts["send_file_list"]).startswith(
        "send_file takes one file's path (a str or Path, relative to the eval file), got list")
    assert "got NoneType" in _message(attempts["send_file_none"])
    assert _message(attempts["respond_all_list"]).startswith(
        'respond_all takes one option id (a str), got list: respond_all("approve")')
    assert _message(attempts["require_by_position"]).startswith(
        "require_input_request takes its filters by name, got 'r1' by position: require_input_request(id='r1')")
    assert _message(attempts["require_option_ids_str"]).startswith(
        "require_input_request: option_ids takes a list of option ids, got str: option_ids=['approve']")
    assert _message(attempts["key_number"]) == 'key takes a non-empty text, got 3: .key("mentions-refund")'
    assert _message(attempts["label_none"]) == 'label takes a non-empty text, got None: .label("Mentions the refund")'


def test_wrong_arguments_to_matchers_are_the_evals_error_not_a_silent_mismatch(tmp_path):
    """`tool_match(["get_weather"])` failed the attempt as "expected a call to ['get_weather']" though the tool was
    called; `event_match(text=[...])` raised "'list' object has no attribute 'describe'"."""
    attempts = _errors(tmp_path, {
        "tool_match_list": """
            await t.send("Paris")
            t.called_tool(tool_match(["get_weather"]))
        """,
        "tool_match_number": """
            await t.send("Paris")
            t.called_tool(tool_match(3))
        """,
        "event_match_text_list": """
            await t.send("Paris")
            t.event(event_match("message", text=["sunny"]))
        """,
        "and_list": """
            await t.send("Paris")
            t.check(t.reply, and_([includes("sunny"), includes("Paris")]))
        """,
        "includes_list": """
            await t.send("Paris")
            t.check(t.reply, includes(["sunny", "Paris"]))
        """,
    })
    assert "tool_match takes a tool's name (a non-empty str) or None, got ['get_weather'] (one tool per tool_match" \
        in _message(attempts["tool_match_list"])
    assert "tool_match takes a tool's name (a non-empty str) or None, got 3" in _message(attempts["tool_match_number"])
    assert "event_match text takes a str (contained in the message) or a matcher, got list" in _message(
        attempts["event_match_text_list"])
    assert "and_ takes matchers, got list: pass them one by one" in _message(attempts["and_list"])
    assert ("includes takes one text (a str), got list: for several, combine them: and_(includes('sunny'), "
            "includes('Paris'))") in _message(attempts["includes_list"])


def test_a_send_that_returns_no_turn_or_a_malformed_event_names_the_mistake(tmp_path):
    """A dict that is the service's own body (`{"answer": …}`) read as an empty completed turn, and an input
    request's `options="approve"` as the options a, p, p, r, o, v, e."""
    attempts = _errors(tmp_path, {
        "dict": 'await t.send("dict")',
        "options": 'await t.send("options")',
        "str_event": 'await t.send("str-event")',
    })
    for attempt in attempts.values():
        assert attempt["error"]["code"] == "agent-send-failed", attempt
        assert attempt["error"]["where"].endswith("experiments/e.py:11"), attempt["error"]
    assert "a turn given as a dict needs 'events' (and optionally status, data, usage); got keys: 'answer'" in \
        _message(attempts["dict"])
    assert "events[0].request.options must be a list of InputOption(id, label) or option ids, got str" in \
        _message(attempts["options"])
    assert "events[0] is not a stream event: str (a text is not an event: write message(text))" in \
        _message(attempts["str_event"])


def test_a_call_with_the_wrong_arguments_says_how_it_is_called_as_the_eval_calls_it(tmp_path):
    """Python's own words named an internal class (`_Scoped.succeeded() takes 1 positional argument but 2 were given`)
    and left the signature to be looked up."""
    attempts = _errors(tmp_path, {
        "succeeded_true": """
            await t.send("Paris")
            t.succeeded(True)
        """,
        "check_no_value": """
            await t.send("Paris")
            t.check(includes("sunny"))
        """,
    })
    assert _message(attempts["succeeded_true"]).endswith("were given; it is called t.succeeded()")
    assert _message(attempts["check_no_value"]) == ("TypeError: EvalContext.check() missing 1 required positional "
                                                    "argument: 'matcher'; it is called t.check(value, matcher)")
