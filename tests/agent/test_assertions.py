import pytest

from agent_helpers import run_one, scripted_agent, statuses
from assay.agent import (
    COMPLETE, EvidenceCoverage, InputOption, InputRequest, InputRequested, Turn, Usage, at_least, equals,
    event_match, includes, message, partial, similarity, tool_call, tool_match, tool_result,
)
from assay.agent.run_options import RunOptions

WEATHER = Turn([
    tool_call("c1", "search", {"q": "weather"}), tool_result("c1", {"hits": 3}),
    tool_call("c2", "get_weather", {"city": "Paris"}), tool_result("c2", {"temp": 21}),
    tool_call("c3", "get_weather", {"city": "Rome"}), tool_result("c3", {"error": "down"}, "failed"),
    message("Paris is 21C."),
], usage=Usage(input_tokens=100, output_tokens=20))

PARTIAL_ACTIONS = EvidenceCoverage(COMPLETE, partial("server-side tool loop is hidden"), COMPLETE,
                                   partial("no usage in protocol"), COMPLETE, COMPLETE)


def one_turn(test, turn=WEATHER, **kwargs):
    agent, _ = scripted_agent([turn], **kwargs.pop("agent_options", {}))
    return run_one(agent, test, **kwargs)


def test_called_tool_counts_occurrences_exactly_or_at_least():
    async def test(t):
        await t.send("weather")
        t.called_tool("get_weather")
        t.called_tool("get_weather", count=2)
        t.called_tool("get_weather", count=at_least(2))
        t.called_tool("get_weather", count=1)
        t.called_tool("get_weather", count=at_least(3))
        t.called_tool(tool_match("get_weather", input={"city": "Rome"}, status="failed"), count=1)

    result = one_turn(test)
    assert statuses(result) == ["matched", "matched", "matched", "mismatched", "mismatched", "matched"]
    assert result.verdict == "failed"
    assert "found 2" in result.assertions[3]["reason"]


def test_a_zero_count_is_an_authoring_error():
    async def test(t):
        await t.send("weather")
        t.called_tool("get_weather", count=0)

    result = one_turn(test)
    assert result.verdict == "errored"
    assert result.error["code"] == "authoring-error"
    assert "use not_called_tool" in result.error["message"]


def test_not_called_tool_used_no_tools_and_max_tool_calls():
    async def test(t):
        await t.send("weather")
        t.not_called_tool("delete_file")
        t.not_called_tool("search")
        t.used_no_tools()
        t.max_tool_calls(3)
        t.max_tool_calls(2)

    assert statuses(one_turn(test)) == ["matched", "mismatched", "mismatched", "matched", "mismatched"]


def test_tool_order_finds_an_ordered_subsequence_with_a_moving_cursor():
    async def test(t):
        await t.send("weather")
        t.tool_order(["search", "get_weather"])
        t.tool_order(["get_weather", "search"])
        t.tool_order([tool_match("get_weather", input={"city": "Paris"}), tool_match("get_weather", input={"city": "Rome"})])
        t.tool_order([tool_match("get_weather", input={"city": "Rome"}), tool_match("get_weather", input={"city": "Paris"})])

    assert statuses(one_turn(test)) == ["matched", "mismatched", "matched", "mismatched"]


def test_no_failed_actions_ignores_rejections_but_not_failures():
    rejected = Turn([tool_call("c1", "send_email", {}), tool_result("c1", status="rejected"), message("ok")])

    async def test(t):
        await t.send("mail")
        t.no_failed_actions()
        t.called_tool(tool_match("send_email", status="rejected"))

    assert statuses(one_turn(test, rejected)) == ["matched", "matched"]

    async def failing(t):
        await t.send("weather")
        t.no_failed_actions()

    result = one_turn(failing)
    assert statuses(result) == ["mismatched"]
    assert "tool 'get_weather'" in result.assertions[0]["reason"]


def test_failed_subagents_count_as_failed_actions():
    from assay.agent import OperationFinished, OperationStarted, SubagentOperation

    turn = Turn([OperationStarted("s1", SubagentOperation("researcher")), OperationFinished("s1", "failed", kind="subagent")])

    async def test(t):
        await t.send("go")
        t.no_failed_actions()
        t.used_no_tools()

    assert statuses(one_turn(test, turn)) == ["mismatched", "matched"]


def test_event_checks_count_select_and_order_events():
    async def test(t):
        await t.send("weather please")
        t.event(event_match("message", role="assistant", text="21C"))
        t.event(event_match("operation.started", tool="get_weather"), count=2)
        t.event(event_match("operation.finished", tool=tool_match("get_weather", status="failed")), count=1)
        t.event(event_match("message", role="user", text="please"))
        t.not_event(event_match("message", text="sorry"))
        t.not_event(event_match("operation.started", tool="search"))
        t.event_order([event_match("message", role="user"), event_match("operation.started", tool="search"),
                       event_match("message", role="assistant")])
        t.event_order([event_match("message", role="assistant"), event_match("operation.started")])

    assert statuses(one_turn(test)) == [
        "matched", "matched", "matched", "matched", "matched", "mismatched", "matched", "mismatched",
    ]


def test_max_tokens_and_max_cost_use_usage_and_the_price_table():
    async def test(t):
        await t.send("weather")
        t.max_tokens(120)
        t.max_tokens(119)
        t.max_cost(0.0002)
        t.max_cost(0.0001)

    pricing = {"m": {"input": 1.0, "output": 2.0}}  # 100*1e-6 + 20*2e-6 = 0.00014
    result = one_turn(test, options=RunOptions(pricing=pricing), model="m")
    assert statuses(result) == ["matched", "mismatched", "matched", "mismatched"]
    assert result.estimated_cost_usd == pytest.approx(0.00014)


def test_max_cost_without_a_price_is_unavailable_and_errors_the_attempt():
    async def test(t):
        await t.send("weather")
        t.max_cost(1.0)

    result = one_turn(test, model="unpriced")
    assert statuses(result) == ["unavailable"]
    assert "no price for model 'unpriced'" in result.assertions[0]["reason"]
    assert result.verdict == "errored"


def test_an_explicit_zero_price_is_a_valid_estimate():
    async def test(t):
        await t.send("weather")
        t.max_cost(0)

    result = one_turn(test, options=RunOptions(pricing={"free": {"input": 0, "output": 0}}), model="free")
    assert statuses(result) == ["matched"]


def test_succeeded_needs_completed_turns_and_no_unanswered_request():
    waiting = Turn([tool_call("c1", "refund", {}), InputRequested(InputRequest("r1", options=(InputOption("ok"),)))],
                   "waiting")

    async def test(t):
        await t.send("refund")
        t.succeeded()

    result = one_turn(test, waiting)
    assert statuses(result) == ["mismatched"]
    assert "waiting for input that was never given" in result.assertions[0]["reason"]

    async def failed(t):
        await t.send("x")
        t.succeeded()

    assert statuses(one_turn(failed, Turn([message("cannot")], "failed"))) == ["mismatched"]


# -- the evidence-coverage rule --------------------------------------------------------------------


def test_negative_assertions_over_incomplete_evidence_are_unavailable_never_passed():
    turn = Turn([message("no tools here")])

    async def test(t):
        await t.send("x")
        t.not_called_tool("delete_file")
        t.used_no_tools()
        t.max_tool_calls(5)
        t.no_failed_actions()
        t.max_tokens(10_000)

    result = one_turn(test, turn, agent_options={"coverage": PARTIAL_ACTIONS})
    assert statuses(result) == ["unavailable"] * 5
    assert result.verdict == "errored"
    assert "actions evidence is partial: server-side tool loop is hidden" in result.assertions[0]["reason"]
    codes = [d["code"] for d in result.diagnostics]
    assert codes.count("evidence-incomplete") == 5
    assert result.coverage["actions"] == {"state": "partial", "reason": "server-side tool loop is hidden"}


def test_an_undecidable_count_says_what_it_expected_and_what_it_found():
    async def test(t):
        await t.send("weather")
        t.called_tool("get_weather", count=1)
        t.called_tool("search", count=at_least(2))

    result = one_turn(test, agent_options={"coverage": PARTIAL_ACTIONS})
    assert statuses(result) == ["mismatched", "unavailable"]
    assert result.assertions[1]["reason"] == (
        "expected a call to 'search' at least 2 times, found 1 (tools called: search, get_weather), "
        "but actions evidence is partial: server-side tool loop is hidden"
    )
    only_one = Turn([tool_call("c1", "search", {"q": "x"}), tool_result("c1", 1), message("done")])

    async def exact(t):
        await t.send("x")
        t.called_tool("search", count=1)

    reason = one_turn(exact, only_one, agent_options={"coverage": PARTIAL_ACTIONS}).assertions[0]["reason"]
    assert reason.startswith("expected a call to 'search' exactly 1 time, found 1 (tools called: search), but actions")
    assert "found 1 a call" not in reason


def test_positive_assertions_keep_existing_evidence_but_a_miss_is_unavailable():
    async def test(t):
        await t.send("weather")
        t.called_tool("get_weather")
        t.called_tool("book_flight")
        t.called_tool("get_weather", count=2)  # an exact count is also an upper bound
        t.not_called_tool("search")  # a known call is a known mismatch

    result = one_turn(test, agent_options={"coverage": PARTIAL_ACTIONS})
    assert statuses(result) == ["matched", "unavailable", "unavailable", "mismatched"]


def test_optional_keeps_an_unavailable_result_visible_but_neutral():
    async def test(t):
        await t.send("x")
        t.not_called_tool("delete_file").optional()
        t.called_tool("x").optional()

    result = one_turn(test, Turn([message("hi")]), agent_options={"coverage": PARTIAL_ACTIONS})
    assert statuses(result) == ["unavailable", "unavailable"]
    assert result.verdict == "passed"

    async def mismatch(t):
        t.check(1, equals(2)).optional()

    assert one_turn(mismatch).verdict == "failed"  # optional only neutralizes unavailable; a mismatch still gates


def test_a_turn_downgrade_applies_to_that_turn_and_the_attempt_aggregate():
    first = Turn([message("a")], usage=Usage(input_tokens=1, output_tokens=1))
    second = Turn([message("b")], evidence_coverage={"usage": partial("stream broke")})
    agent, _ = scripted_agent([first, second])

    async def test(t):
        one = await t.send("1")
        two = await t.send("2")
        one.max_tokens(100)
        two.max_tokens(100)
        t.max_tokens(100)

    result = run_one(agent, test)
    assert statuses(result) == ["matched", "unavailable", "unavailable"]
    assert result.coverage["usage"]["reason"] == "stream broke"
    assert result.turns[1]["coverage"]["usage"]["state"] == "partial"


def test_reply_is_unavailable_when_messages_evidence_is_incomplete_and_nothing_was_seen():
    coverage = EvidenceCoverage(COMPLETE, COMPLETE, partial("text not streamed"), COMPLETE, COMPLETE, COMPLETE)

    async def test(t):
        await t.send("x")
        t.check(t.reply, includes("hi"))

    assert statuses(one_turn(test, Turn([]), agent_options={"coverage": coverage})) == ["unavailable"]
    assert statuses(one_turn(test, Turn([]))) == ["mismatched"]


def test_succeeded_is_unavailable_when_status_evidence_is_partial():
    coverage = EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, partial("always says completed"), COMPLETE)

    async def test(t):
        await t.send("x")
        t.succeeded()

    assert statuses(one_turn(test, Turn([message("hi")]), agent_options={"coverage": coverage})) == ["unavailable"]


# -- handles, gates, measurements, folding -------------------------------------------------------


def test_key_and_label_can_be_set_once():
    async def test(t):
        await t.send("x")
        handle = t.check(1, equals(1)).key("one").label("One")
        handle.label("again")

    result = one_turn(test, Turn([message("hi")]))
    assert result.verdict == "errored"
    assert "label is already set" in result.error["message"]
    assert result.assertions[0]["label"] == "One" and result.assertions[0]["key"] == "one"


def test_measurements_are_soft_unless_gated():
    async def test(t):
        await t.send("x")
        t.check(t.reply, similarity("hello world")).at_least(0.99)
        t.check(t.reply, similarity("hello world")).gate(0.5).label("close enough")

    result = one_turn(test, Turn([message("hello wrld")]))
    assert result.verdict == "passed"

    async def strict(t):
        await t.send("x")
        t.check(t.reply, similarity("hello world")).gate(0.99).label("exact")

    result = one_turn(strict, Turn([message("hello wrld")]))
    assert result.verdict == "failed" and result.failing == ["exact"]


def test_or_stop_ends_the_test_and_returns_the_checked_value():
    seen = []

    async def test(t):
        await t.send("x")
        value = await t.check(41 + 1, equals(42)).or_stop()
        seen.append(value)
        await t.check(t.reply, includes("nope")).or_stop()
        seen.append("not reached")

    result = one_turn(test, Turn([message("hi")]))
    assert seen == [42]
    assert result.verdict == "failed"


def test_or_stop_without_await_still_stops_a_check_decided_at_once():
    """`t.check(...).or_stop()` with the `await` forgotten made a coroutine nobody ran: the test went on."""
    import warnings

    seen = []

    async def test(t):
        await t.send("x")
        t.check(t.reply, includes("hi")).or_stop()  # held: goes on
        seen.append("after a check that held")
        t.check(t.reply, includes("nope")).or_stop()
        seen.append("not reached")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no "coroutine was never awaited"
        result = one_turn(test, Turn([message("hi")]))
    assert seen == ["after a check that held"]
    assert result.verdict == "failed"


def test_verdict_folding_errored_beats_failed_beats_skipped_beats_passed():
    async def errored_and_failed(t):
        await t.send("x")
        t.check(1, equals(2))
        t.not_called_tool("x")  # unavailable under partial actions
        t.skip("not today")

    result = one_turn(errored_and_failed, Turn([message("hi")]), agent_options={"coverage": PARTIAL_ACTIONS})
    assert result.verdict == "errored"

    async def failed_and_skipped(t):
        t.check(1, equals(2))
        t.skip("not today")

    assert one_turn(failed_and_skipped).verdict == "failed"

    async def skipped(t):
        t.check(1, equals(1))
        t.skip("not today")

    assert one_turn(skipped).verdict == "skipped"

    async def passed(t):
        t.check(1, equals(1))

    assert one_turn(passed).verdict == "passed"


def test_an_exception_in_the_test_is_errored_even_after_passing_checks():
    async def test(t):
        t.check(1, equals(1))
        raise RuntimeError("eval bug")

    result = one_turn(test)
    assert result.verdict == "errored"
    assert result.error["code"] == "eval-exception"
    assert result.error["where"].endswith("test_assertions.py:" + result.error["where"].rsplit(":", 1)[1])
    assert "RuntimeError: eval bug" in result.error["traceback"]


def test_a_broken_predicate_errors_its_assertion_not_the_run():
    async def test(t):
        t.check(1, equals(1))
        t.check(1, satisfies_boom())

    from assay.agent import satisfies

    def satisfies_boom():
        return satisfies("boom", lambda value: 1 / 0)

    result = one_turn(test)
    assert statuses(result) == ["matched", "errored"]
    assert result.verdict == "errored"


def test_async_satisfies_is_resolved_before_the_verdict():
    from assay.agent import satisfies

    async def positive(value):
        return value > 0

    async def test(t):
        t.check(-1, satisfies("positive", positive))

    result = one_turn(test)
    assert statuses(result) == ["mismatched"] and result.verdict == "failed"


def test_score_evals_earn_points_and_an_unavailable_scored_item_is_unrankable():
    async def test(t):
        await t.send("x")
        t.check(t.reply, includes("hello")).score(2)
        t.check(t.reply, includes("absent")).score(5)
        t.check(t.reply, similarity("hello")).score(4)
        t.score(1.5)

    result = one_turn(test, Turn([message("hello")]), score=True)
    assert result.verdict == "scored"
    assert result.score == pytest.approx(2 + 0 + 4 + 1.5)
    assert result.score_state == "complete"

    async def unrankable(t):
        await t.send("x")
        t.not_called_tool("x").score(1)

    result = one_turn(unrankable, Turn([message("hello")]), score=True, agent_options={"coverage": PARTIAL_ACTIONS})
    assert result.verdict == "scored" and result.score_state == "unavailable"


def test_the_results_table_shows_the_passes_beside_the_score_of_score_evals():
    from assay.agent.report import experiment_rows

    async def scored(t):
        await t.send("x")
        t.score(1.5)

    async def passing(t):
        await t.send("x")
        t.check(t.reply, includes("hello"))

    results = [one_turn(scored, Turn([message("hello")]), score=True), one_turn(passing, Turn([message("hello")]))]
    [row] = experiment_rows(results)
    assert row[2] == "1/1 (100.0%) · score 1.5 over 1"
    [only_scores] = experiment_rows(results[:1])
    assert only_scores[2] == "score 1.5 over 1"


def test_score_only_in_score_evals():
    async def test(t):
        t.score(1)

    result = one_turn(test)
    assert result.verdict == "errored" and "for score evals" in result.error["message"]


def test_judge_assertions_are_unavailable_without_a_configured_judge():
    from assay.agent import define_eval

    async def body(t):
        turn = await t.send("What is 2+2?")
        turn.judge.closed_qa("Is the answer correct?")

    result = one_turn(define_eval(body, judge=True), Turn([message("4")]))
    assert statuses(result) == ["unavailable"]
    assert result.assertions[0]["reason"].startswith("judge-model-unresolved")
    assert result.verdict == "errored"
    undeclared = one_turn(body, Turn([message("4")]))
    assert undeclared.error["code"] == "authoring-error"


def test_a_configured_judge_gets_the_turn_material_and_its_score_is_a_measurement():
    from assay.agent import JudgeScore, define_eval

    class FakeJudge:
        def __init__(self):
            self.requests = []

        async def grade(self, request):
            self.requests.append(request)
            return JudgeScore(0.75, "mostly right")

    judge = FakeJudge()

    async def body(t):
        turn = await t.send("What is 2+2?")
        turn.judge.closed_qa("Is the answer correct?").gate(0.7)
        t.judge.factuality("4", input="q", output="four")

    result = one_turn(define_eval(body, judge={"model": "judge-1"}), Turn([message("4")]),
                      options=RunOptions(judge=judge))
    assert result.verdict == "passed"
    assert result.assertions[0]["value"] == 0.75
    assert (judge.requests[0].input, judge.requests[0].output) == ("What is 2+2?", "4")
    assert judge.requests[0].config == {"model": "judge-1"}
    assert (judge.requests[1].recipe, judge.requests[1].output) == ("factuality", "four")


def test_a_test_defined_without_async_is_an_authoring_error_that_says_so():
    """`def test(t)` where `async def` was meant ran and errored with "TypeError: object NoneType can't be used in
    'await' expression", which names neither the eval's mistake nor its fix."""

    def test(t):
        t.called_tool("get_weather")

    result = one_turn(test)
    assert result.verdict == "errored" and result.error["code"] == "authoring-error"
    assert result.error["message"].startswith("the eval's test returned NoneType, not an awaitable: define it with `async def`")


def test_a_measurement_threshold_outside_zero_to_one_is_refused_by_at_least_as_by_gate():
    """`similarity(...).at_least(2)` was taken, and read "below" for ever; `.gate(1.5)` was refused."""
    for threshold, call in ((2, "at_least"), (-0.1, "at_least"), ("0.5", "at_least"), (1.5, "gate"), (True, "gate")):
        async def test(t, threshold=threshold, call=call):
            await t.send("x")
            getattr(t.check(t.reply, similarity("hello")), call)(threshold)

        result = one_turn(test, Turn([message("hello")]))
        assert result.verdict == "errored", (threshold, call)
        assert f"{call.replace('_', ' ') if call == 'gate' else call} threshold must be a number in [0, 1], got {threshold!r}" \
            in result.error["message"], result.error

    for threshold in ("0.5", 1.5):  # the judge's threshold says what it was given too
        async def judged(t, threshold=threshold):
            await t.send("x")
            t.judge("Polite.", threshold=threshold)

        result = one_turn(judged, Turn([message("hello")]))
        assert result.error["message"] == f"t.judge threshold must be a number in [0, 1], got {threshold!r}", result.error
