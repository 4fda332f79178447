"""Normalisation of an attempt's spans for the waterfall (spec §6): GenAI kinds, tool io back-filled from
the send events by call id, errors red, the fold past 150 spans; and spans never reaching a verdict.

The run is real: each turn of the agent starts a child process exporting with the OpenTelemetry SDK,
configured by nothing but `ctx.telemetry.env`."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")

from assay.agent.api import run  # noqa: E402
from assay.view.waterfall import FOLD_ABOVE, span_category, trace_rows, waterfall_view  # noqa: E402
from traced_projects import Collected, child_span_project  # noqa: E402


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    collected = Collected()
    results = run(child_span_project(tmp_path_factory.mktemp("traced") / "project"), reporters=[collected], record=False)
    assert results.error is None
    return {attempt.eval_id: attempt for attempt in results.attempts}, collected


def _rows_by_name(trace):
    return {row["name"]: row for row in trace["rows"]}


def test_child_process_spans_configured_only_by_ctx_telemetry_env_join_their_turns(traced):
    attempts, collected = traced
    assert collected.codes() == []
    noisy, two_turns = attempts["orders/noisy"], attempts["orders/two_turns"]
    [turn] = noisy.spans["turns"]
    assert len(turn["spans"]) == 175 and {span["trace_id"] for span in turn["spans"]} == {turn["trace_id"]}
    assert [len(turn["spans"]) for turn in two_turns.spans["turns"]] == [7, 7]
    first, second = two_turns.spans["turns"]
    assert first["trace_id"] != second["trace_id"]  # a fresh trace per turn


def test_spans_are_shown_as_model_calls_tools_subagents_or_other_with_errors_red(traced):
    attempts, _ = traced
    [trace] = waterfall_view(attempts["orders/two_turns"].to_json())["turns"][:1]
    rows = _rows_by_name(trace)
    assert rows["invoke_agent shop"]["category"] == "subagent" and rows["invoke_agent shop"]["depth"] == 0
    assert [row["category"] for row in trace["rows"] if row["name"] == "chat small-model"] == ["model", "model"]
    assert rows["execute_tool lookup_order"]["category"] == "tool" and rows["execute_tool lookup_order"]["depth"] == 1
    assert rows["cache.get 0"]["category"] == "other"
    refused = rows["execute_tool refund_order"]
    assert refused["error"] is True and refused["status_message"] == "the payment service refused"
    assert trace["errors"] == 1 and trace["counts"] == {"model": 2, "tool": 2, "subagent": 1, "other": 2}
    assert trace["folded"] == 0 and not any(row.get("folded") for row in trace["rows"])
    # Unknown attributes are kept, unchanged, for the drill-down.
    first_call = next(row for row in trace["rows"] if row["name"] == "chat small-model")
    assert first_call["attributes"]["app.private.note"] == "kept for the drill-down"
    assert first_call["attributes"]["gen_ai.usage.input_tokens"] == 31


def test_a_tool_span_gets_its_input_and_output_from_the_send_events_by_call_id(traced):
    attempts, _ = traced
    first, second = waterfall_view(attempts["orders/two_turns"].to_json())["turns"]
    for trace, order in ((first, "2001"), (second, "2002")):
        rows = _rows_by_name(trace)
        assert rows["execute_tool lookup_order"]["io"] == {
            "input": {"order_id": order}, "output": {"order_id": order, "status": "shipped"}, "status": "completed",
        }
        assert "io" not in rows["execute_tool refund_order"]  # it carries no call id: nothing to match


def test_a_trace_past_150_spans_folds_its_other_noise_and_keeps_the_rest(traced):
    attempts, _ = traced
    [trace] = waterfall_view(attempts["orders/noisy"].to_json())["turns"]
    assert trace["span_count"] == 175 > FOLD_ABOVE
    folded = [row for row in trace["rows"] if row.get("folded")]
    assert trace["folded"] == len(folded) == 170 and {row["name"].split()[0] for row in folded} == {"cache.get"}
    kept = [row["name"] for row in trace["rows"] if not row.get("folded")]
    assert sorted(kept) == sorted(["invoke_agent shop", "chat small-model", "execute_tool lookup_order",
                                   "execute_tool refund_order", "chat small-model"])


def test_spans_never_change_an_assertion_a_verdict_or_an_error(traced, tmp_path):
    attempts, _ = traced
    untraced = run(child_span_project(tmp_path / "untraced", telemetry=False), record=False)
    assert untraced.error is None
    for attempt in untraced.attempts:
        with_spans = attempts[attempt.eval_id]
        assert attempt.spans is None and with_spans.spans is not None
        assert (with_spans.verdict, with_spans.error, with_spans.score) == (attempt.verdict, attempt.error, attempt.score)
        assert with_spans.assertions == attempt.assertions
    # The failing tool span is red in the waterfall; the verdicts are what the send events say.
    assert {attempt.eval_id: attempt.verdict for attempt in untraced.attempts} == {
        "orders/noisy": "passed", "orders/two_turns": "failed",
    }


# -- the rules on their own ------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "attributes", "category"), [
    ("chat gpt", {"gen_ai.operation.name": "chat"}, "model"),
    ("complete", {"gen_ai.operation.name": "text_completion"}, "model"),
    ("embed", {"gen_ai.operation.name": "embeddings"}, "model"),
    ("generate", {"gen_ai.operation.name": "generate_content"}, "model"),
    ("run tool", {"gen_ai.operation.name": "execute_tool"}, "tool"),
    ("execute_tool search", {}, "tool"),
    ("search", {"tool_name": "search"}, "tool"),
    ("search", {"gen_ai.tool.name": "search"}, "tool"),
    ("planner", {"gen_ai.operation.name": "invoke_agent"}, "subagent"),
    ("create_agent helper", {}, "subagent"),
    ("GET /orders", {"http.method": "GET"}, "other"),
])
def test_the_genai_semantic_conventions_decide_what_a_span_is_shown_as(name, attributes, category):
    assert span_category({"name": name, "attributes": attributes}) == category


def _span(span_id, parent="", name="work", start=0, **extra):
    return {"trace_id": "t" * 32, "span_id": span_id, "parent_span_id": parent, "name": name, "start": start,
            "end": start + 1_000_000, "attributes": extra.pop("attributes", {}), **extra}


def test_the_fold_keeps_other_spans_that_hold_an_error_or_a_kept_descendant():
    spans = [_span("root", name="request")]
    spans += [_span(f"n{number:03d}", "root", f"noise {number}", start=number) for number in range(FOLD_ABOVE)]
    spans.append(_span("wrapper", "root", "wrapper", start=500))
    spans.append(_span("model", "wrapper", "chat", start=501, attributes={"gen_ai.operation.name": "chat"}))
    spans.append(_span("broken", "root", "broken", start=502, status="error"))
    trace = trace_rows({"turn": 1, "trace_id": "t" * 32, "span_id": "s" * 16, "start": 0, "end": 10**9, "spans": spans})
    rows = _rows_by_name(trace)
    assert trace["span_count"] == FOLD_ABOVE + 4 and trace["folded"] == FOLD_ABOVE
    assert not any(rows[name].get("folded") for name in ("request", "wrapper", "chat", "broken"))
    small = trace_rows({"turn": 1, "start": 0, "end": 10**9, "spans": spans[:FOLD_ABOVE]})
    assert small["folded"] == 0


def test_a_call_paused_for_approval_gets_its_output_from_the_turn_that_finished_it():
    detail = {
        "turns": [
            {"session": 0, "turn": 1, "events": [
                {"type": "operation.started", "operation_id": "refund-1",
                 "operation": {"kind": "tool", "name": "refund_order", "input": {"order_id": "1001"}}},
            ]},
            {"session": 0, "turn": 2, "events": [
                {"type": "operation.finished", "operation_id": "refund-1", "output": {"refunded": 42.5},
                 "status": "completed"},
            ]},
        ],
        "spans": {"turns": [
            {"session": 0, "turn": 1, "trace_id": "a" * 32, "span_id": "b" * 16, "start": 0, "end": 10**7, "spans": [
                _span("tool", "b" * 16, "execute_tool refund_order",
                      attributes={"gen_ai.tool.name": "refund_order", "gen_ai.tool.call.id": "refund-1"}),
            ]},
            {"session": 0, "turn": 2, "trace_id": "c" * 32, "span_id": "d" * 16, "start": 0, "end": 10**7, "spans": []},
        ]},
    }
    first, second = waterfall_view(detail)["turns"]
    assert first["rows"][0]["io"] == {"input": {"order_id": "1001"}, "output": {"refunded": 42.5}, "status": "completed"}
    assert second["span_count"] == 0


def test_a_span_whose_parent_never_arrived_is_drawn_at_the_top_and_a_parent_cycle_once():
    trace = trace_rows({"turn": 1, "span_id": "s" * 16, "start": 0, "end": 10**8, "spans": [
        _span("orphan", "gone", "orphan"), _span("a", "b", "a", start=1), _span("b", "a", "b", start=2),
    ]})
    rows = _rows_by_name(trace)
    assert rows["orphan"]["depth"] == 0 and rows["orphan"]["parent_missing"] is True
    # A cycle (a broken exporter) has no root; its spans are still drawn, each once.
    assert [row["name"] for row in trace["rows"]] == ["orphan", "a", "b"] and rows["b"]["depth"] == 1
