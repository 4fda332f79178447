"""The built-in assertions as frozen values over a ScopeView, and the context read from one settings object."""

import dataclasses

import pytest

from assay.agent import AgentContext, Outcome, Unavailable, complete_evidence_coverage, message, partial, tool_call
from assay.agent import assertions, tool_match, tool_result
from assay.agent.context import AttemptSettings, CancelSignal, Feedback
from assay.agent.control import AuthoringError
from assay.agent.evidence import ScopeView, TurnRecord
from assay.agent.matchers import MATCHED, MISMATCHED, UNAVAILABLE, equals, event_match
from assay.agent.session import AgentSession

PARTIAL_ACTIONS = dataclasses.replace(complete_evidence_coverage, actions=partial("tool calls are not streamed"))


def view_of(*events, coverage=complete_evidence_coverage, status="completed"):
    turn = TurnRecord(0, 1, "hi", list(events), status, coverage)
    return ScopeView("t", [turn], coverage)


def test_a_built_in_assertion_is_a_frozen_value_with_one_evaluate():
    called = assertions.CalledTool(tool_match("search"), 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        called.count = 3  # type: ignore[misc]
    assert called == assertions.CalledTool(tool_match("search"), 2)
    assert (called.kind, called.describe()) == ("called_tool", "called_tool('search', count=2)")
    outcome = called.evaluate(view_of(tool_call("c1", "search"), tool_result("c1"), message("done")))
    assert isinstance(outcome, Outcome)
    assert (outcome.status, outcome.channel) == (MISMATCHED, None)
    assert outcome.reason == "expected a call to 'search' exactly 2 times, found 1 (tools called: search)"
    assert outcome.candidates == ("0.1.0",)


def test_a_bad_count_is_an_authoring_error_when_evaluated_at_the_call_site():
    turn = view_of(message("ok"))
    with pytest.raises(AuthoringError, match="count must be a positive integer"):
        assertions.CalledTool(tool_match("search"), 0).evaluate(turn)
    with pytest.raises(AuthoringError, match="at_least must be a positive integer"):
        assertions.EventOccurred(event_match("message"), {"at_least": 0}).evaluate(turn)


def test_no_match_over_incomplete_evidence_is_unavailable_and_names_the_channel():
    outcome = assertions.NotCalledTool(tool_match("delete")).evaluate(view_of(message("ok"), coverage=PARTIAL_ACTIONS))
    assert (outcome.status, outcome.channel) == (UNAVAILABLE, "actions")
    assert outcome.reason == "no 'delete' was seen, but actions evidence is partial: tool calls are not streamed"
    # A match that was found still counts, whatever the channel's coverage.
    found = assertions.CalledTool(tool_match("search")).evaluate(
        view_of(tool_call("c1", "search"), tool_result("c1"), coverage=PARTIAL_ACTIONS)
    )
    assert (found.status, found.channel, found.candidates) == (MATCHED, None, ("0.1.0",))


def test_each_no_argument_assertion_decides_a_clean_turn():
    clean = view_of(message("ok"))
    for assertion in (assertions.Succeeded(), assertions.UsedNoTools(), assertions.NoFailedActions()):
        assert assertion.evaluate(clean).status == MATCHED, assertion
    failed = assertions.Succeeded().evaluate(view_of(message("no"), status="failed"))
    assert (failed.status, failed.reason) == (MISMATCHED, "turn 1 failed")


def test_matchers_and_assertions_share_one_result_type_without_channel_for_matchers():
    outcome = equals(1).evaluate(Unavailable("messages evidence is partial"))
    assert outcome == Outcome(UNAVAILABLE, "messages evidence is partial")
    assert (outcome.candidates, outcome.channel) == ((), None)
    assert not Unavailable("gone") and bool(Outcome(MISMATCHED)) is True  # read status, never truthiness


def test_the_agent_context_reads_the_attempt_settings_it_was_built_from():
    settings = AttemptSettings(
        CancelSignal(), Feedback(), model="m1", reasoning_effort="low", flags={"variant": "b"}, experiment_id="exp",
        eval_id="e", attempt=2,
    )
    ctx = AgentContext(settings, session=AgentSession(), phase="agent.setup")
    assert (ctx.model, ctx.reasoning_effort, dict(ctx.flags), ctx.experiment_id, ctx.eval_id, ctx.attempt) == (
        "m1", "low", {"variant": "b"}, "exp", "e", 2)
    assert ctx.signal is settings.signal and ctx.telemetry is None
    ctx.diagnostic("slow", "warning", "took long")
    assert settings.feedback.diagnostics[0].phase == "agent.setup"


def test_an_adapter_test_can_still_build_a_context_from_keywords():
    ctx = AgentContext(signal=CancelSignal(), session=AgentSession(), feedback=Feedback(), model="m", flags=None)
    assert ctx.model == "m" and ctx.flags == {} and ctx.attempt == 0
    with pytest.raises(TypeError):
        AgentContext(signal=CancelSignal(), session=AgentSession(), feedback=Feedback(), colour="blue")
