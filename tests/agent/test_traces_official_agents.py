"""The official agents forward `ctx.telemetry`: `process_agent` starts its process with the OTEL_*
variables and sends each turn's traceparent in the request context; `openai_chat_agent` and
`openai_responses_agent` send the turn's traceparent to their endpoint (http_agent: the concurrency
test in test_traces_attribution.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")

from assay.agent.api import run  # noqa: E402
from servers.fake_openai import chat_reply, responses_reply  # noqa: E402
from traced_projects import Collected, span_messages, write_project  # noqa: E402

PROCESS_APP = Path(__file__).resolve().parent / "otel_apps" / "process_app.py"
TRACEPARENT = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")


def test_process_agent_exports_from_its_process_into_each_turn_by_traceparent(tmp_path):
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay]\nconcurrency = 4\n[tool.assay.telemetry]\n",
        "experiments/proc.py": f"""
            import sys

            from assay.agent import Experiment, complete_evidence_coverage
            from assay.agent.adapters import process_agent

            proc = Experiment(agent=process_agent(f"{{sys.executable}} {PROCESS_APP}", name="process-app",
                                                  evidence_coverage=complete_evidence_coverage))
        """,
        "evals/chat_eval.py": """
            from assay.agent import define_eval

            def make(number):
                async def test(t):
                    await t.send(f"a{number}")
                    await t.send(f"b{number}")
                    t.called_tool("echo")
                return define_eval(test)

            EVALS = {f"e{number}": make(number) for number in range(4)}
        """,
    })
    collected = Collected()
    results = run(project, reporters=[collected], record=False)
    assert results.exit_code == 0, [attempt.error for attempt in results.attempts]
    assert collected.codes() == []
    for attempt in results.attempts:
        number = attempt.eval_id.rsplit("/e", 1)[1]
        first, second = attempt.spans["turns"]
        assert span_messages(attempt) == [f"a{number}"] * 3 + [f"b{number}"] * 3, attempt.eval_id
        for turn in (first, second):
            root = next(span for span in turn["spans"] if span["name"] == "invoke_agent process-app")
            assert root["parent_span_id"] == turn["span_id"] and "attributed_by_window" not in turn
            assert {span["trace_id"] for span in turn["spans"]} == {turn["trace_id"]}


@pytest.mark.parametrize("kind", ["chat", "responses"])
def test_openai_agents_send_each_turns_traceparent_to_their_endpoint(tmp_path, fake_openai, kind, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    reply = chat_reply if kind == "chat" else responses_reply
    fake_openai.respond_with(lambda request: reply("fine"))

    def project(name, telemetry):
        return write_project(tmp_path / name, {
            "pyproject.toml": "[tool.assay]\n" + ("[tool.assay.telemetry]\n" if telemetry else ""),
            "experiments/model.py": f"""
                from assay.agent import Experiment
                from assay.agent.adapters import openai_chat_agent, openai_responses_agent

                agent = openai_{kind}_agent(base_url={fake_openai.base_url!r}, model="m", backoff=0.001)
                model = Experiment(agent=agent)
            """,
            "evals/two_eval.py": """
                from assay.agent import define_eval

                @define_eval()
                async def test(t):
                    await t.send("one")
                    await t.send("two")
            """,
        })

    traced = run(project("traced", True), record=False)
    assert traced.exit_code == 0, traced.attempts[0].error
    model_requests = fake_openai.chat_requests if kind == "chat" else fake_openai.responses_requests
    sent = [request.headers.get("traceparent") for request in model_requests]
    assert len(sent) == 2 and all(TRACEPARENT.match(value or "") for value in sent) and sent[0] != sent[1]
    untraced = run(project("untraced", False), record=False)
    assert untraced.exit_code == 0
    model_requests = fake_openai.chat_requests if kind == "chat" else fake_openai.responses_requests
    assert [request.headers.get("traceparent") for request in model_requests[2:]] == [None, None]
