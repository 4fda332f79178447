import base64

import pytest
from pydantic import BaseModel

from agent_helpers import run_one, scripted_agent, statuses
from assay.agent import (
    Answer, InputOption, InputRequest, InputRequested, Turn, Usage, create_session_slot, equals, message,
    tool_call, tool_result,
)


def request(request_id, *options, action=None, input=None, prompt=None):
    return InputRequested(InputRequest(request_id, prompt, None, action, input if input is not None else {},
                                       tuple(InputOption(option) for option in options)))


def test_send_passes_text_and_returns_a_turn_handle():
    agent, received = scripted_agent([Turn([tool_call("c1", "lookup", {"q": 1}), tool_result("c1", 5), message("five")],
                                           usage=Usage(input_tokens=3, output_tokens=1))])
    seen = {}

    async def test(t):
        turn = await t.send("how many?")
        seen.update(status=turn.status, message=turn.message, tools=[c.name for c in turn.tool_calls],
                    usage=turn.usage.total_tokens, data=turn.data, reply=t.reply,
                    events=[e.type for e in t.events])

    assert run_one(agent, test).verdict == "passed"
    turn_input = received[0][0]
    assert turn_input.text == "how many?" and turn_input.files == () and turn_input.responses == ()
    assert turn_input.output_schema is None
    assert seen == {
        "status": "completed", "message": "five", "tools": ["lookup"], "usage": 4, "data": None, "reply": "five",
        "events": ["message", "operation.started", "operation.finished", "message"],
    }


def test_send_file_reads_relative_to_the_eval_folder_and_guesses_the_mime_type(tmp_path):
    from assay.agent import define_eval
    from assay.agent.discovery import EvalEntry, ExperimentEntry
    from assay.agent import Experiment
    from assay.agent.plan import build_plan
    from assay.agent.run_options import RunOptions
    from assay.agent.runner import AgentRun
    import asyncio

    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "invoice.png").write_bytes(b"\x89PNG fake")
    agent, received = scripted_agent([Turn([message("got it")])])

    async def test(t):
        await t.send_file("fixtures/invoice.png", "total?")

    entry = EvalEntry("invoice", define_eval(test), tmp_path / "invoice_eval.py")
    plan = build_plan([ExperimentEntry("x", Experiment(agent=agent))], {"x": [entry]})
    outcome = asyncio.run(AgentRun(plan, RunOptions()).run())
    assert outcome.results[0].verdict == "passed"
    sent = received[0][0]
    assert sent.text == "total?"
    assert sent.files[0].filename == "invoice.png" and sent.files[0].mime_type == "image/png"
    assert base64.b64decode(sent.files[0].data_base64) == b"\x89PNG fake"


def test_send_file_of_a_missing_file_is_an_authoring_error():
    agent, _ = scripted_agent([])

    async def test(t):
        await t.send_file("/nonexistent/file.pdf")

    result = run_one(agent, test)
    assert result.error["code"] == "authoring-error" and "could not read" in result.error["message"]


# -- HITL ------------------------------------------------------------------------------------------


def test_one_pending_request_answered_with_an_option_id():
    agent, received = scripted_agent([
        Turn([tool_call("c1", "refund", {"order": 7}), request("req_1", "approve", "deny", action="refund")], "waiting"),
        Turn([tool_result("c1", {"ok": True}), message("Refunded.")]),
    ])

    async def test(t):
        turn = await t.send("refund order 7")
        t.check(turn.status, equals("waiting"))
        pending = t.require_input_request(action="refund")
        assert pending.id == "req_1"
        turn.called_tool("refund")
        await t.respond("approve")
        t.succeeded()
        t.called_tool("refund", count=1)

    result = run_one(agent, test)
    assert result.verdict == "passed", result.assertions
    response_input = received[1][0]
    assert response_input.text == "approve"
    assert [(r.request_id, r.option_id, r.text) for r in response_input.responses] == [("req_1", "approve", None)]


def test_a_string_that_is_not_an_option_becomes_free_text():
    agent, received = scripted_agent([
        Turn([request("req_1", "approve", "deny")], "waiting"), Turn([message("Changed.")]),
    ])

    async def test(t):
        await t.send("send the mail")
        await t.respond("Change the recipient to ceo@corp.com")

    assert run_one(agent, test).verdict == "passed"
    response = received[1][0].responses[0]
    assert (response.request_id, response.option_id, response.text) == ("req_1", None, "Change the recipient to ceo@corp.com")


def test_several_pending_requests_explicit_answers_and_respond_all():
    two = Turn([request("a", "approve", "deny", prompt="Delete a?"), request("b", "approve", "deny", prompt="Delete b?")],
               "waiting")
    agent, received = scripted_agent([two, Turn([message("done")]), two, Turn([message("done")])])

    async def test(t):
        await t.send("clean up")
        b = t.require_input_request(prompt="Delete b?")
        await t.respond(Answer(b, option_id="deny"), "approve")
        other = t.new_session()
        await other.send("clean up")
        await other.respond_all("approve")

    assert run_one(agent, test).verdict == "passed"
    first = received[1][0]
    assert [(r.request_id, r.option_id) for r in first.responses] == [("a", "approve"), ("b", "deny")]
    assert first.text == "approve\ndeny"
    everything = received[3][0]
    assert [(r.request_id, r.option_id) for r in everything.responses] == [("a", "approve"), ("b", "approve")]
    assert everything.text == "approve\napprove"


@pytest.mark.parametrize("body, message_part", [
    ("respond_nothing_pending", "no input request is pending"),
    ("require_ambiguous", "matched 2 of 2 pending request(s)"),
    ("respond_all_missing_option", "has no option 'approve'"),
    ("respond_unknown_option", "is not an option of request"),
    ("respond_too_many", "3 answers for 2 unanswered request(s)"),
    ("respond_misspelt_field", "an answer has no field 'option'; did you mean 'option_id'?"),
])
def test_hitl_misuse_is_an_authoring_error_naming_the_problem(body, message_part):
    two = Turn([request("a", "approve"), request("b", "deny")], "waiting")
    agent, _ = scripted_agent([Turn([message("hi")]) if body == "respond_nothing_pending" else two])

    async def test(t):
        await t.send("go")
        if body == "respond_nothing_pending":
            await t.respond("approve")
        elif body == "require_ambiguous":
            t.require_input_request()
        elif body == "respond_all_missing_option":
            await t.respond_all("approve")
        elif body == "respond_unknown_option":
            await t.respond(Answer("a", option_id="aprove"))
        elif body == "respond_misspelt_field":  # used to say "an Answer needs exactly one of option_id and text"
            await t.respond({"request": "a", "option": "approve"})
        else:
            await t.respond("x", "y", "z")

    result = run_one(agent, test)
    assert result.error["code"] == "authoring-error"
    assert message_part in result.error["message"]


def test_a_rejected_tool_is_rejected_not_failed():
    agent, _ = scripted_agent([
        Turn([tool_call("c1", "wire_money", {"usd": 900}), request("r1", "approve", "deny")], "waiting"),
        Turn([tool_result("c1", status="rejected"), message("Not sent.")]),
    ])

    async def test(t):
        await t.send("pay")
        await t.respond("deny")
        t.no_failed_actions()
        t.called_tool("wire_money", count=1)
        from assay.agent import tool_match
        t.called_tool(tool_match("wire_money", status="rejected"))
        t.succeeded()

    result = run_one(agent, test)
    assert statuses(result) == ["matched"] * 4


def test_a_tool_pending_in_the_waiting_turn_is_finished_by_the_next_turn():
    agent, _ = scripted_agent([
        Turn([tool_call("c1", "refund", {}), request("r1", "approve")], "waiting"),
        Turn([tool_result("c1", {"ok": 1}), message("done")]),
    ])

    async def test(t):
        waiting = await t.send("refund")
        from assay.agent import tool_match
        waiting.called_tool(tool_match("refund", status="completed"))  # undecidable within that turn
        done = await t.respond("approve")
        t.called_tool(tool_match("refund", status="completed", output={"ok": 1}))
        done.used_no_tools()  # the finish belongs to an occurrence that started earlier

    assert statuses(run_one(agent, test)) == ["unavailable", "matched", "matched"]


# -- sessions ----------------------------------------------------------------------------------------

HISTORY = create_session_slot("history")
HISTORY_TWIN = create_session_slot("history")


def remembering_agent():
    def answer(turn_input, ctx):
        history = ctx.session.get(HISTORY) or []
        ctx.session.set(HISTORY, history + [turn_input.text])
        ctx.session.capture(f"srv-{len(history)}")
        ctx.session.capture("ignored: the first id wins")
        assert ctx.session.get(HISTORY_TWIN) is None  # slots with equal names never collide
        return Turn([message(" | ".join(history + [turn_input.text]))])

    return scripted_agent(answer)


def test_session_continuation_by_slots_and_by_id():
    agent, received = remembering_agent()
    seen = {}

    async def test(t):
        await t.send("one")
        await t.send("two")
        seen["main"] = (t.reply, t.session_id)
        other = t.new_session()
        await other.send("three")
        seen["other"] = (other.reply, other.session_id)

    assert run_one(agent, test).verdict == "passed"
    assert seen == {"main": ("one | two", "srv-0"), "other": ("three", "srv-0")}
    contexts = [ctx for _, ctx in received]
    assert contexts[0].session is contexts[1].session
    assert contexts[2].session is not contexts[0].session


def test_take_reads_and_clears_a_slot():
    from assay.agent.session import AgentSession

    session = AgentSession()
    slot = create_session_slot("paused")
    session.set(slot, {"cursor": 3})
    assert session.take(slot) == {"cursor": 3}
    assert session.take(slot) is None
    session.capture("")
    assert session.id is None


def test_t_assertions_see_every_session_but_reply_is_the_main_line():
    agent, _ = scripted_agent([Turn([message("main")]), Turn([tool_call("c", "search", {}), tool_result("c", 1),
                                                              message("side")])])

    async def test(t):
        await t.send("a")
        side = t.new_session()
        await side.send("b")
        t.called_tool("search")
        side.called_tool("search")
        t.check(t.reply, equals("main"))
        t.check(side.reply, equals("side"))

    assert statuses(run_one(agent, test)) == ["matched"] * 4


def test_the_context_passes_experiment_settings_through():
    agent, received = scripted_agent([Turn([message("ok")])])

    async def test(t):
        assert t.flags == {"variant": "b"} and t.model == "m1"
        await t.send("x")

    result = run_one(agent, test, model="m1", reasoning_effort="high", flags={"variant": "b"})
    assert result.verdict == "passed"
    ctx = received[0][1]
    assert (ctx.model, ctx.reasoning_effort, dict(ctx.flags), ctx.experiment_id, ctx.eval_id) == (
        "m1", "high", {"variant": "b"}, "exp", "e")
    assert ctx.telemetry is None and not ctx.signal.cancelled


def test_progress_and_diagnostics_from_the_adapter_are_kept_with_the_attempt():
    def answer(turn_input, ctx):
        ctx.progress("thinking", 1, 2)
        ctx.diagnostic("slow-backend", "warning", "took 9s", {"seconds": 9}, dedupe_key="slow")
        ctx.diagnostic("slow-backend", "warning", "took 9s again", dedupe_key="slow")
        return Turn([message("ok")])

    agent, _ = scripted_agent(answer)

    async def test(t):
        await t.send("x")
        t.diagnostic("eval-note", "warning", "from the eval")

    result = run_one(agent, test)
    assert [(d["code"], d.get("phase")) for d in result.diagnostics] == [("slow-backend", "agent.run"), ("eval-note", "eval.run")]


# -- structured output ---------------------------------------------------------------------------


class Invoice(BaseModel):
    amount: float
    currency: str


def test_structured_output_is_lowered_validated_and_typed():
    agent, received = scripted_agent([Turn([message("ok")], data={"amount": 12.5, "currency": "EUR"})])
    seen = {}

    async def test(t):
        turn = await t.send("total?", output=Invoice)
        seen["data"] = turn.data
        t.succeeded()
        t.check(turn.data, equals({"amount": 12.5, "currency": "EUR"}))

    assert run_one(agent, test).verdict == "passed"
    assert isinstance(seen["data"], Invoice) and seen["data"].amount == 12.5
    assert received[0][0].output_schema["properties"]["currency"] == {"title": "Currency", "type": "string"}


def test_a_models_non_finite_number_in_turn_data_is_sealed_as_null_as_the_record_stores_it():
    """The sealed turn is strict JSON, so the NDJSON stream's attempt line says what the journal and
    the record say (`null`), never the `NaN` no JSON reader accepts."""
    import json
    import math

    agent, _ = scripted_agent([Turn([message("ok")], data=Invoice(amount=math.nan, currency="EUR"))])

    async def test(t):
        await t.send("total?", output=Invoice)

    result = run_one(agent, test)
    assert result.turns[0]["data"] == {"amount": None, "currency": "EUR"}
    json.dumps(result.to_json(), allow_nan=False)


def test_structured_output_mismatch_fails_the_turn_with_the_difference():
    agent, _ = scripted_agent([Turn([message("ok")], data={"amount": "lots"})])

    async def test(t):
        turn = await t.send("total?", output=Invoice)
        assert turn.data is None and turn.status == "failed"
        t.succeeded()

    result = run_one(agent, test)
    assert result.verdict == "failed"
    reason = result.assertions[0]["reason"]
    assert "turn data does not match the output schema" in reason
    assert "$.amount" in reason and "$.currency: Field required" in reason
    assert any(d["code"] == "output-schema-mismatch" for d in result.diagnostics)


def test_structured_output_with_a_json_schema_and_missing_data():
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    agent, _ = scripted_agent([Turn([message("a")], data={"ok": True}), Turn([message("b")]),
                               Turn([message("c")], data={"ok": "yes"})])
    seen = []

    async def test(t):
        for _ in range(3):
            turn = await t.send("?", output=schema)
            seen.append((turn.status, turn.data, turn.output_error))

    run_one(agent, test)
    assert seen[0] == ("completed", {"ok": True}, None)
    assert seen[1][0] == "failed" and "returned no data" in seen[1][2]
    assert seen[2][0] == "failed" and "$.ok: 'yes' is not of type 'boolean'" in seen[2][2]


def test_data_without_a_declared_output_is_dropped_with_a_warning():
    agent, _ = scripted_agent([Turn([message("a")], data={"raw": "body"})])
    seen = []

    async def test(t):
        turn = await t.send("?")
        seen.append(turn.data)

    result = run_one(agent, test)
    assert seen == [None]
    assert [d["code"] for d in result.diagnostics] == ["unexpected-turn-data"]


def test_an_agent_that_raises_or_returns_garbage_errors_the_attempt():
    from assay.agent import SendFailure

    def crash(turn_input, ctx):
        raise SendFailure("HTTP 502", acceptance="rejected")

    agent, _ = scripted_agent(crash)

    async def test(t):
        await t.send("x")

    from assay.agent.run_options import RunOptions

    result = run_one(agent, test, options=RunOptions(retry_base_seconds=0.001))
    assert result.verdict == "errored"
    assert result.error["code"] == "agent-send-failed" and "HTTP 502" in result.error["message"]

    agent, _ = scripted_agent(lambda i, c: {"status": "finished"})
    result = run_one(agent, test)
    assert result.error["code"] == "agent-send-failed"
    assert "turn status must be completed, failed or waiting" in result.error["message"]


def test_a_send_that_is_not_async_names_the_fix_and_its_file():
    # A plain `def send` errored the attempt with "object Turn can't be used in 'await' expression".
    from assay.agent import complete_evidence_coverage, define_agent

    def send(turn_input, ctx):
        return Turn([message("hi")])

    agent = define_agent(name="plain", send=send, evidence_coverage=complete_evidence_coverage)

    async def test(t):
        await t.send("x")

    result = run_one(agent, test)
    assert result.verdict == "errored" and result.error["code"] == "agent-send-failed"
    assert ("agent 'plain' send returned Turn, not an awaitable: define it with `async def send(input, ctx)`"
            in result.error["message"]), result.error
    assert __file__ in result.error["message"] or __file__ in str(result.error.get("where")), result.error


def test_an_orphan_finish_is_a_diagnostic_not_an_occurrence():
    agent, _ = scripted_agent([Turn([tool_result("ghost", 1), message("hi")])])

    async def test(t):
        await t.send("x")
        t.used_no_tools()

    result = run_one(agent, test)
    assert statuses(result) == ["matched"]
    assert result.diagnostics[0]["code"] == "orphan-operation-finished"


def test_an_authoring_error_names_the_eval_line_that_made_it_not_assays_own_code():
    import inspect

    from agent_helpers import run_one, scripted_agent
    from assay.agent import Turn, message

    agent, _ = scripted_agent(lambda i, c: Turn([message("nothing to approve")]))

    async def asks_for_a_missing_request(t):
        await t.send("hello")
        t.require_input_request(action="refund")  # nothing is pending: the author's mistake, on this line

    result = run_one(agent, asks_for_a_missing_request)
    assert result.verdict == "errored"
    line = inspect.getsourcelines(asks_for_a_missing_request)[1] + 2
    assert result.error["where"] == f"{__file__}:{line}"


def test_the_line_of_an_error_raised_in_the_standard_library_or_an_installed_library_is_the_authors_call():
    """Not `json/decoder.py` nor a thread pool's `concurrent/futures/thread.py` (a sandbox the provider could not
    create was shown with the latter): the eval's own line that called it."""
    import concurrent.futures
    import inspect
    import json

    import yaml

    from assay.agent.attempt import attempt_error

    def parses():
        json.loads("{")  # raises inside the standard library's decoder

    def loads_yaml():
        yaml.safe_load("a: [")  # raises inside an installed library

    def in_a_thread():
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(parses).result()

    # (from a thread, the deepest of the author's frames is still `parses`' call, the worker's frames in between)
    for author, error_type, line_of in ((parses, ValueError, parses), (loads_yaml, yaml.YAMLError, loads_yaml),
                                        (in_a_thread, ValueError, parses)):
        with pytest.raises(error_type) as raised:
            author()
        where = attempt_error("agent-error", str(raised.value), raised.value)["where"]
        assert where == f"{__file__}:{inspect.getsourcelines(line_of)[1] + 1}", (author, where)


def test_plain_string_options_of_an_input_request_are_option_ids_not_a_crash_of_the_run():
    # InputRequest(options=("approve", "deny")): recording the turn used to crash the whole run
    # ("internal error: AttributeError: 'str' object has no attribute 'id'").
    asked = InputRequested(InputRequest("q1", "Refund?", options=("approve", "deny")))
    agent, received = scripted_agent([Turn([tool_call("r1", "refund", {}), asked], "waiting"),
                                      Turn([tool_result("r1", {"ok": True}), message("done")])])

    async def test(t):
        await t.send("refund please")
        t.require_input_request(option_ids=["approve", "deny"])
        await t.respond("approve")
        t.succeeded()

    result = run_one(agent, test)
    assert result.verdict == "passed", (result.error, result.assertions)
    assert received[1][0].responses[0].option_id == "approve"
    assert result.turns[0]["events"][1]["request"]["options"] == [{"id": "approve"}, {"id": "deny"}]


def test_a_misspelt_finish_status_errors_the_attempt_naming_the_agent_not_a_silent_pass():
    agent, _ = scripted_agent([Turn([tool_call("t1", "refund", {}), tool_result("t1", {"ok": False}, status="complete"),
                                     message("done")])])

    async def test(t):
        await t.send("refund please")
        t.no_failed_actions()
        t.succeeded()

    result = run_one(agent, test)
    assert result.verdict == "errored" and result.error["code"] == "agent-send-failed"
    assert "events[1].status must be one of completed, failed, rejected, got 'complete'" in result.error["message"]


def test_a_turn_may_lower_coverage_with_a_whole_evidence_coverage():
    from assay.agent import COMPLETE, EvidenceCoverage, partial

    lowered = EvidenceCoverage(events=COMPLETE, actions=partial("hidden tools"), messages=COMPLETE, usage=COMPLETE,
                               status=COMPLETE, data=COMPLETE)
    agent, _ = scripted_agent([Turn([message("hi")], evidence_coverage=lowered)])

    async def test(t):
        await t.send("hi")
        t.not_called_tool("refund")

    result = run_one(agent, test)
    assert result.verdict == "errored" and result.error is None, result.error  # the assertion, not an exception
    assert result.assertions[0]["status"] == "unavailable" and "hidden tools" in result.assertions[0]["reason"]


def test_show_sets_the_data_that_did_not_match_beside_the_differences_and_names_error_events():
    from assay.agent import ErrorEvent
    from assay.agent.show import attempt_lines

    agent, _ = scripted_agent([Turn([message("ok")], data={"amount": "lots"}),
                               Turn([ErrorEvent("HTTP 500")], "failed")])

    async def test(t):
        await t.send("total?", output=Invoice)
        await t.send("again")

    result = run_one(agent, test)
    # The record used to drop what the agent returned: the differences could not be set beside it.
    assert result.turns[0]["data"] == {"amount": "lots"}
    shown = "\n".join(attempt_lines(result))
    assert '    data (not matching the output schema): {"amount": "lots"}' in shown
    assert "    output error: turn data does not match the output schema: $.amount" in shown
    assert "    error: HTTP 500" in shown and '{"type": "error"' not in shown


def test_an_output_that_is_no_schema_is_an_authoring_error_not_an_eval_exception():
    """`t.send(..., output=str)` was reported as `eval-exception: TypeError`, as if the eval had crashed."""
    agent, _ = scripted_agent([Turn([message("hi")])])

    async def test(t):
        await t.send("go", output=str)

    result = run_one(agent, test)
    assert result.error["code"] == "authoring-error", result.error
    assert ("output must be a pydantic model class, a TypeAdapter or a JSON Schema dict, got the class str (for a plain "
            "type, TypeAdapter(str))") in result.error["message"]
