"""Attribution of spans to turns: exact by trace id under concurrency, the serial time-window fallback
when an app does not forward the traceparent, and what a run says when no span arrives.

The app is a real web service in a child process, instrumented with the OpenTelemetry SDK and
exporting protobuf over OTLP/HTTP with gzip; assay drives it with `http_agent`."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")

from assay.agent.api import run  # noqa: E402
from assay.agent.traces.attribution import TraceHub  # noqa: E402
from assay.agent.traces.tracing import unattributed_message  # noqa: E402
from traced_projects import Collected, free_port, span_messages, web_app, web_project, write_project  # noqa: E402


def test_attribution_by_trace_id_is_exact_under_concurrency_64(tmp_path):
    port = free_port()
    with web_app(port, "propagate", "batch") as url:
        project = web_project(tmp_path / "project", url, port, evals=64, concurrency=64)
        collected = Collected()
        results = run(project, reporters=[collected], record=False)
    assert results.exit_code == 0, results.error
    assert len(results.attempts) == 64
    for attempt in results.attempts:
        message = "m" + attempt.eval_id.rsplit("/e", 1)[1]
        assert span_messages(attempt) == [message] * 3, attempt.eval_id
        [turn] = attempt.spans["turns"]
        assert "attributed_by_window" not in turn
        server = next(span for span in turn["spans"] if span["name"] == "POST /api/turn")
        assert server["trace_id"] == turn["trace_id"] and server["parent_span_id"] == turn["span_id"]
    assert "telemetry-turns-serialized" not in collected.codes() and "telemetry-no-spans" not in collected.codes()


def test_without_a_traceparent_turns_are_serialized_and_placed_by_time_window_never_wrongly(tmp_path):
    port = free_port()
    with web_app(port, "ignore", "simple") as url:
        project = web_project(tmp_path / "project", url, port, evals=12, concurrency=4)
        collected = Collected()
        results = run(project, reporters=[collected], record=False)
    assert results.exit_code == 0, results.error
    serialized = [event for event in collected.warnings if event.code == "telemetry-turns-serialized"]
    assert len(serialized) == 1 and "serialized" in serialized[0].message and "web-app" in serialized[0].message
    placed = 0
    for attempt in results.attempts:
        messages = span_messages(attempt)
        # A span no single open turn could own is left out, never given to the wrong turn.
        assert set(messages) <= {"m" + attempt.eval_id.rsplit("/e", 1)[1]}, attempt.eval_id
        if messages:
            placed += 1
            assert attempt.spans["turns"][0]["attributed_by_window"] == len(messages)
    # Only the turns already in flight when the first foreign span arrived can be ambiguous.
    assert placed >= 12 - 4
    sends = sorted(
        (row["start_offset_ms"], row["duration_ms"], attempt)
        for attempt in results.attempts for row in attempt.timing if row["phase"] == "agent.send"
    )
    assert sends  # the phase tree records each send (its overlap is what serialization removes)


def test_a_run_whose_app_exports_nothing_warns_once_about_the_endpoint(tmp_path):
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay.telemetry]\n",
        "experiments/quiet.py": """
            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            seen = []

            async def send(turn_input, ctx):
                seen.append(ctx.telemetry)
                return Turn([message("ok")])

            quiet = Experiment(agent=define_agent(name="quiet", send=send, evidence_coverage=complete_evidence_coverage))
        """,
        "evals/one_eval.py": """
            from assay.agent import define_eval

            @define_eval()
            async def test(t):
                await t.send("a")
                await t.send("b")
                t.succeeded()
        """,
    })
    collected = Collected()
    results = run(project, reporters=[collected], record=False)
    assert results.exit_code == 0
    assert collected.codes() == ["telemetry-no-spans"]
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in collected.warnings[0].message
    [attempt] = results.attempts
    assert attempt.spans is None and attempt.verdict == "passed"


def test_ctx_telemetry_carries_a_fresh_traceparent_per_turn_and_otel_env(tmp_path):
    # The agent writes what it was given to a file: discovery imports the experiment under a private
    # module name, so the test cannot reach into the module itself.
    seen_file = tmp_path / "seen.jsonl"
    project = write_project(tmp_path / "project", {
        "pyproject.toml": '[tool.assay.telemetry]\nscope = "attempt"\n',
        "experiments/probe.py": f"""
            import json

            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            def note(phase, telemetry):
                with open({str(seen_file)!r}, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps({{"phase": phase, "endpoint": telemetry.endpoint, "env": dict(telemetry.env),
                                              "headers": dict(telemetry.headers),
                                              "traceparent": telemetry.traceparent}}) + "\\n")

            async def setup(ctx):
                note("setup", ctx.telemetry)

            async def send(turn_input, ctx):
                note("send", ctx.telemetry)
                return Turn([message("ok")])

            probe = Experiment(agent=define_agent(name="probe", send=send, setup=setup,
                                                  evidence_coverage=complete_evidence_coverage))
        """,
        "evals/two_eval.py": """
            from assay.agent import define_eval

            @define_eval()
            async def test(t):
                await t.send("a")
                await t.send("b")
        """,
    })
    results = run(project, record=False)
    assert results.exit_code == 0, results.error
    setup, first, second = (json.loads(line) for line in seen_file.read_text(encoding="utf-8").splitlines())
    assert [setup["phase"], first["phase"], second["phase"]] == ["setup", "send", "send"]
    assert setup["headers"] == {} and "TRACEPARENT" not in setup["env"] and setup["traceparent"] is None
    assert setup["endpoint"] == first["endpoint"]  # one attempt: one attempt-scoped endpoint
    assert first["traceparent"] != second["traceparent"]
    for telemetry in (first, second):
        version, trace_id, span_id, flags = telemetry["traceparent"].split("-")
        assert (version, flags, len(trace_id), len(span_id)) == ("00", "01", 32, 16)
        assert telemetry["headers"] == {"traceparent": telemetry["traceparent"]}
        assert telemetry["env"]["TRACEPARENT"] == telemetry["traceparent"]
        base = telemetry["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"]
        assert base.startswith("http://127.0.0.1:") and "/attempts/" in base  # scope = "attempt"
        assert telemetry["env"]["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == telemetry["endpoint"] == base + "/v1/traces"
        assert telemetry["env"]["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"


def test_without_telemetry_config_ctx_telemetry_is_none(tmp_path):
    project = write_project(tmp_path / "project", {
        "experiments/plain.py": """
            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            async def send(turn_input, ctx):
                assert ctx.telemetry is None
                return Turn([message("ok")])

            plain = Experiment(agent=define_agent(name="plain", send=send, evidence_coverage=complete_evidence_coverage))
        """,
        "evals/one_eval.py": """
            from assay.agent import define_eval

            @define_eval()
            async def test(t):
                await t.send("a")
                t.succeeded()
        """,
    })
    collected = Collected()
    results = run(project, reporters=[collected], record=False)
    assert results.exit_code == 0 and collected.codes() == [] and results.attempts[0].spans is None


def test_a_span_sent_while_no_turn_was_open_is_not_blamed_on_overlapping_turns(tmp_path):
    """A span from the agent's setup (one attempt, one turn at a time) was said to have matched no turn "while
    several turns were open", with forwarding the traceparent as the fix."""
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay.telemetry]\n",
        "experiments/boot.py": """
            import json
            import os
            import time
            import urllib.request

            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            def setup(ctx):
                now = time.time_ns()
                span = {"traceId": os.urandom(16).hex(), "spanId": os.urandom(8).hex(), "name": "connect",
                        "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 1000)}
                body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
                request = urllib.request.Request(ctx.telemetry.endpoint, body, {"Content-Type": "application/json"})
                urllib.request.urlopen(request, timeout=10).read()

            async def send(turn_input, ctx):
                return Turn([message("ok")])

            boot = Experiment(agent=define_agent(name="boot", send=send, setup=setup,
                                                 evidence_coverage=complete_evidence_coverage))
        """,
        "evals/one_eval.py": """
            from assay.agent import define_eval

            @define_eval()
            async def test(t):
                await t.send("a")
                t.succeeded()
        """,
    })
    collected = Collected()
    results = run(project, reporters=[collected], record=False)
    assert results.exit_code == 0, results.error
    assert collected.codes() == ["telemetry-unattributed"]
    message = collected.warnings[0].message
    assert message.startswith("1 of 1 spans matched no turn") and "1 started while no turn was open" in message
    assert "several turns" not in message and "forward ctx.telemetry.headers" not in message


# -- the hub on its own ----------------------------------------------------------------------------

def _span(trace_id: str, start: int, name: str = "s", parent: str = "") -> dict:
    return {"trace_id": trace_id, "span_id": name.encode().hex()[:16].ljust(16, "0"), "parent_span_id": parent,
            "name": name, "start": start, "end": start + 1, "attributes": {}}


def test_a_span_two_open_turns_could_own_is_left_unattributed_and_both_agents_serialize():
    notices = []
    hub = TraceHub(notices.append)
    first = hub.open_turn("a1", "alpha", 0, 1)
    second = hub.open_turn("a2", "beta", 0, 1)
    hub.ingest([_span("f" * 32, second.start + 1)])
    assert first.spans == [] and second.spans == [] and hub.unattributed == 1 and hub.ambiguous == 1
    hub.ingest([_span("d" * 32, first.start - 1)])  # before any turn: left out too, but not as ambiguous
    assert hub.unattributed == 2 and hub.ambiguous == 1
    message = unattributed_message(hub.unattributed, hub.ambiguous, hub.received)
    assert "1 started while several turns were open (forward ctx.telemetry.headers" in message
    assert "1 started while no turn was open" in message
    assert [notice.code for notice in notices] == ["telemetry-turns-serialized", "telemetry-turns-serialized"]
    assert isinstance(hub.serializes("alpha"), asyncio.Lock) and isinstance(hub.serializes("beta"), asyncio.Lock)


def test_a_placed_trace_keeps_its_later_spans_and_propagation_lifts_serialization():
    hub = TraceHub()
    turn = hub.open_turn("a1", "alpha", 0, 1)
    hub.ingest([_span("e" * 32, turn.start + 5, "root")])
    hub.close_turn(turn)
    later = hub.open_turn("a1", "alpha", 0, 2)
    hub.ingest([_span("e" * 32, later.start + 5, "late child")])  # same foreign trace: it follows its root
    assert [span["name"] for span in turn.spans] == ["root", "late child"] and later.spans == []
    assert hub.serializes("alpha") is not None
    hub.ingest([_span(later.trace_id, later.start + 1, "joined", parent=later.span_id)])
    assert later.spans[0]["name"] == "joined" and hub.serializes("alpha") is None


def test_collect_then_late_returns_the_document_again_only_when_spans_came_after():
    hub = TraceHub()
    turn = hub.open_turn("a1", "alpha", 0, 1)
    assert hub.collect("a1") is None
    hub.ingest([_span(turn.trace_id, turn.start)])
    hub.close_turn(turn)
    assert hub.late("a1") is not None  # arrived after a collect that found nothing
    document = hub.collect("a1")
    assert [len(entry["spans"]) for entry in document["turns"]] == [1] and hub.late("a1") is None
    hub.ingest([_span(turn.trace_id, turn.start, "second")])
    assert [len(entry["spans"]) for entry in hub.late("a1")["turns"]] == [2]


@pytest.mark.parametrize("variable", ["OTEL_SDK_DISABLED=true", "OTEL_TRACES_SAMPLER=always_off"])
def test_no_spans_names_the_variable_that_switched_the_apps_tracing_off(tmp_path, monkeypatch, variable):
    # The app inherits the run's environment: the warning told the user to wire up an export that was wired.
    from traced_projects import child_span_project

    name, value = variable.split("=")
    monkeypatch.setenv(name, value)
    collected = Collected()
    results = run(child_span_project(tmp_path / "project"), "shop", ["orders/two_turns"], reporters=[collected],
                  record=False)
    assert results.error is None and len(results.attempts) == 1
    assert collected.codes() == ["telemetry-no-spans"]
    message = collected.warnings[0].message
    assert f"{variable} is set in the run's environment, and an app that inherits it exports no span" in message
    assert "forward ctx.telemetry.headers" not in message
