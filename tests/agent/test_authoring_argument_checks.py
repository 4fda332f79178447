"""The drive verbs, matchers, judge recipes and `agent show` refuse a wrong argument where the eval writes it, naming
what to write, and `show` says a judge scored below its threshold (not "matched")."""

from types import SimpleNamespace

import pytest

from agent_helpers import run_one, scripted_agent
from assay.agent import (
    InputOption, InputRequest, InputRequested, Turn, define_eval, equals, event_match, includes, message,
    tool_call, tool_result,
)


def _waiting():
    request = InputRequest("r1", "Refund?", None, "refund_order", {"order_id": "1"},
                           (InputOption("approve"), InputOption("deny")))
    return Turn([tool_call("c1", "refund_order", {}), InputRequested(request)], "waiting")


def _error(result) -> str:
    assert result.verdict == "errored", result.verdict
    return result.error["message"]


def test_an_empty_json_schema_dict_still_reaches_the_agent_as_the_output_schema():
    agent, received = scripted_agent([Turn([message("ok")], data={"anything": 1})])

    async def test(t):
        turn = await t.send("give data", output={})
        t.check(turn.output_error, equals(None))

    assert run_one(agent, test).verdict == "passed"
    assert received[0][0].output_schema == {}


@pytest.mark.parametrize("files", [["forecast.txt"], "forecast.txt", 3])
def test_send_files_that_are_not_input_files_is_the_evals_error_naming_send_file(files):
    agent, received = scripted_agent([Turn([message("ok")])])

    async def test(t):
        await t.send("read this", files=files)

    result = run_one(agent, test)
    assert "files takes a list of InputFile" in _error(result) and "send_file(path" in result.error["message"]
    assert result.error["code"] == "authoring-error" and received == []


def test_respond_on_the_wrong_session_names_the_session_that_waits():
    agent, _ = scripted_agent([_waiting()])

    async def test(t):
        other = t.new_session()
        await other.send("refund please")
        await t.respond("approve")

    assert "(session 1 has one: call respond on that session's handle)" in _error(run_one(agent, test))


def test_require_input_request_that_matches_nothing_names_the_filter_and_the_pending_requests():
    agent, _ = scripted_agent([_waiting()])

    async def test(t):
        await t.send("refund please")
        t.require_input_request(action="delete")

    message_ = _error(run_one(agent, test))
    assert "require_input_request(action='delete') matched 0 of 1" in message_
    assert "'r1' (action 'refund_order', options ['approve', 'deny'])" in message_


def test_respond_all_with_an_unknown_option_lists_the_options():
    agent, _ = scripted_agent([_waiting()])

    async def test(t):
        await t.send("refund please")
        await t.respond_all("aprove")

    assert "has no option 'aprove' (options: approve, deny)" in _error(run_one(agent, test))


@pytest.mark.parametrize("call, wanted", [
    (lambda t: t.tool_order("lookup"), "tool_order takes a list of tools, got str"),
    (lambda t: t.event_order(event_match("message")), "event_order takes a list of event_match(...)"),
])
def test_order_assertions_refuse_a_single_value_instead_of_iterating_it(call, wanted):
    agent, _ = scripted_agent([Turn([tool_call("c1", "lookup", {}), tool_result("c1", 1), message("ok")])])

    async def test(t):
        await t.send("go")
        call(t)

    assert wanted in _error(run_one(agent, test))


def test_matcher_factories_check_their_arguments_where_the_eval_calls_them():
    from assay.agent import matches, pattern, satisfies, similarity
    from assay.agent.control import AuthoringError

    with pytest.raises(TypeError, match=r"includes takes text \(a str\), got int"):
        includes(3)
    with pytest.raises(TypeError, match="similarity takes text"):
        similarity(None)
    with pytest.raises(ValueError, match=r"pattern: '\[unclosed' is not a valid regular expression"):
        pattern("[unclosed")
    with pytest.raises(TypeError, match=r"the label comes first"):
        satisfies(lambda value: value, "positive")
    with pytest.raises(AuthoringError, match=r"^matches\(schema\) takes a pydantic model class"):
        matches(3)
    with pytest.raises(ValueError, match="role must be 'assistant' or 'user', got 'asistant'"):
        event_match("message", role="asistant")


def test_judge_recipes_need_a_non_empty_criterion():
    agent, _ = scripted_agent([Turn([message("ok")])])

    async def test(t):
        turn = await t.send("q")
        turn.judge.closed_qa("")

    result = run_one(agent, {"e": define_eval(test, judge={"model": "m"})}["e"])
    assert "judge.closed_qa needs a question: a non-empty string" in _error(result)


@pytest.mark.parametrize("key", ["model", "base_url"])
def test_an_empty_judge_model_or_base_url_is_a_config_error_naming_the_key(key):
    from assay.agent.judging import check_judge_settings
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match=rf"^pyproject.toml \[tool.assay.judge\]: {key} is empty"):
        check_judge_settings({key: " "}, "pyproject.toml [tool.assay.judge]")
    check_judge_settings({"api_key_env": ""}, "pyproject.toml [tool.assay.judge]")  # "" still means: no key


def test_show_prints_a_judges_score_and_marks_one_below_its_threshold():
    from assay.agent.show import attempt_lines

    judged = {"kind": "judge", "scope": "t", "description": "judge('Friendly.', threshold=0.7)", "status": "matched",
              "reason": "meh", "value": 0.3, "threshold": 0.7, "gated": True}
    soft = {"kind": "judge", "scope": "turn 1", "description": "judge.closed_qa('Umbrella?')", "status": "matched",
            "reason": "fine", "value": 0.8}
    local = {"kind": "check", "scope": "t", "description": 'check(similarity("ok"))', "status": "matched",
             "reason": "similarity 0.500", "value": 0.5, "at_least": 0.9}
    result = SimpleNamespace(
        locator="@ABC", experiment_id="x", eval_id="e", ordinal=0, duration_seconds=0.1, carried_from=None,
        decision=None, error=None, assertions=[judged, soft, local], turns=[], coverage={}, usage=None, diagnostics=[],
        verdict="failed", outcome="executed", agent="a", model="m", numbered_from=1, attempt=1,
    )
    lines = attempt_lines(result)
    assert "  below       judge('Friendly.', threshold=0.7) [t] score 0.300 < 0.7 — meh" in lines
    assert "  matched     judge.closed_qa('Umbrella?') [turn 1] score 0.800 — fine" in lines
    assert """  matched     check(similarity("ok")) [t] score 0.500 (at least 0.9: below) — similarity 0.500""" in lines


@pytest.mark.parametrize("locator", ["", "@", " "])
def test_show_refuses_an_empty_locator_instead_of_calling_it_ambiguous(tmp_path, locator):
    from assay.agent.show import find_shown
    from assay.errors import UsageError

    with pytest.raises(UsageError, match="is empty: give @ and its first characters"):
        find_shown(tmp_path, locator, None)
