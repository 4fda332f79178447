import pytest

from assay.agent.model import (
    COMPLETE, MISSING, Compaction, ContextInjected, ErrorEvent, EvidenceCoverage, InputOption, InputRequest,
    InputRequested, Message, OperationFinished, OperationStarted, SkillLoaded, SubagentOperation, Thinking,
    ToolOperation, Turn, TurnFormatError, Usage, check_turn, complete_evidence_coverage, event_from_json,
    event_to_json, partial, turn_from_json, unavailable,
)

EVERY_VARIANT = [
    Message("hello"),
    Message("question", "user"),
    OperationStarted("c1", ToolOperation("read_file", {"path": "a.txt"}, "file_read")),
    OperationFinished("c1", "completed", {"text": "x"}),
    OperationFinished("c2", "rejected"),
    OperationStarted("s1", SubagentOperation("researcher", "https://agents.example/r")),
    OperationFinished("s1", "failed", kind="subagent"),
    SkillLoaded("pdf", "c3"),
    InputRequested(InputRequest("r1", "Refund?", "Refund $5", "refund", {"id": 5}, (InputOption("approve", "Yes"),))),
    Thinking("hmm"),
    ContextInjected("rules", "AGENTS.md"),
    Compaction("context full"),
    ErrorEvent("boom"),
]


@pytest.mark.parametrize("event", EVERY_VARIANT, ids=lambda event: f"{event.type}")
def test_every_event_variant_round_trips_through_json(event):
    assert event_from_json(event_to_json(event)) == event


def test_finished_without_output_stays_missing_not_null():
    document = event_to_json(OperationFinished("c1", "completed"))
    assert "output" not in document
    assert event_from_json(document).output is MISSING
    assert event_from_json({**document, "output": None}).output is None


def test_turn_from_json_reads_niceeval_field_names():
    turn = turn_from_json({
        "status": "waiting",
        "events": [
            {"type": "operation.started", "operationId": "c1",
             "operation": {"kind": "tool", "name": "get_weather", "input": {"city": "Beijing"}}},
            {"type": "input.requested", "request": {"id": "r1", "options": [{"id": "approve"}, "deny"]}},
        ],
        "usage": {"inputTokens": 10, "outputTokens": 3, "costUSD": 0.01},
        "evidenceCoverage": {"usage": {"state": "partial", "reason": "stream broke"}},
    })
    assert turn.status == "waiting"
    assert turn.events[0].operation_id == "c1"
    assert turn.events[1].request.option_ids == ("approve", "deny")
    assert turn.usage == Usage(input_tokens=10, output_tokens=3, cost_usd=0.01)
    assert turn.evidence_coverage["usage"].state == "partial"


@pytest.mark.parametrize("document, message", [
    ({"status": "done"}, "turn status must be completed, failed or waiting"),
    ({"events": [{"type": "usage"}]}, "events[0].type 'usage' is not a stream event type"),
    ({"events": [{"type": "operation.finished", "operationId": "c", "status": "rejected", "kind": "subagent"}]},
     "events[0].status must be one of completed, failed"),
    ({"events": [{"type": "message", "role": "tool", "text": "x"}]}, "events[0].role must be assistant or user"),
    ({"usage": {"inputTokens": -1}}, "usage.inputTokens must be a non-negative number"),
    ({"evidenceCoverage": {"vibes": "complete"}}, "unknown channel 'vibes'"),
    ({"events": [], "satus": "failed"}, "turn has no field 'satus'; did you mean 'status'?"),
    ({"event": [{"type": "message", "text": "hi"}]}, "turn has no field 'event'; did you mean 'events'?"),
])
def test_invalid_turn_documents_are_rejected_with_a_location(document, message):
    with pytest.raises(TurnFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        turn_from_json(document)


def test_check_turn_accepts_typed_turns_and_parses_mappings():
    typed = Turn([Message("hi")])
    assert check_turn(typed) is typed
    assert check_turn({"events": [{"type": "message", "text": "hi"}]}).events == [Message("hi")]
    mixed = check_turn(Turn([{"type": "thinking", "text": "t"}], usage={"outputTokens": 2}))
    assert mixed.events == [Thinking("t")] and mixed.usage.output_tokens == 2
    with pytest.raises(TurnFormatError, match="must return a Turn"):
        check_turn("hello")
    with pytest.raises(TurnFormatError, match="not a stream event"):
        check_turn(Turn([object()]))


def test_tool_inputs_outputs_and_data_must_be_json():
    from datetime import date

    from assay.agent import tool_call, tool_result

    with pytest.raises(TurnFormatError, match=r"events\[0\]\.operation\.input\.when must be JSON-like; got date"):
        check_turn(Turn([tool_call("c1", "book", {"when": date(2026, 1, 1)})]))
    with pytest.raises(TurnFormatError, match=r"events\[0\]\.output must be finite"):
        check_turn(Turn([tool_result("c1", float("inf"))]))
    with pytest.raises(TurnFormatError, match="turn data must be JSON-like"):
        check_turn(Turn(data={1, 2}))


def test_every_coverage_channel_must_be_declared_and_incomplete_ones_need_a_reason():
    with pytest.raises(TypeError):
        EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE)  # data missing
    with pytest.raises(ValueError, match="needs a reason"):
        EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE, partial(""))
    with pytest.raises(TypeError, match=r"partial\(reason\) takes the reason the evidence is partial, as text; got 3"):
        partial(3)  # was accepted, and shown as the reason "3"
    with pytest.raises(TypeError, match="unavailable"):
        unavailable(None)


def test_a_turn_can_downgrade_coverage_but_never_upgrade_it():
    agent = EvidenceCoverage(COMPLETE, partial("server hides tool loops"), COMPLETE, COMPLETE, COMPLETE,
                             unavailable("no data"))
    turned = agent.downgraded({"usage": partial("stream broke"), "actions": COMPLETE, "data": COMPLETE})
    assert turned.usage.state == "partial"
    assert turned.actions.state == "partial"
    assert turned.data.state == "unavailable"
    assert complete_evidence_coverage.combined(turned) == turned


def test_total_tokens_counts_every_input_bucket_and_is_none_when_unreported():
    assert Usage(input_tokens=10, output_tokens=5, cache_read_tokens=100, cache_creation_tokens=3).total_tokens == 118
    assert Usage(requests=2).total_tokens is None
