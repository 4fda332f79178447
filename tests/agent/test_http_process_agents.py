"""The HTTP web-agent adapter against a real HTTP server, and a JavaScript process agent under node."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent_helpers import run_one, statuses
from assay.agent import complete_evidence_coverage, equals, includes
from assay.agent.adapters import http_agent, process_agent
from assay.agent.context import AgentContext, CancelSignal, Feedback, Telemetry
from assay.agent.session import AgentSession
from assay.agent.model import TurnInput

HERE = Path(__file__).resolve().parent


class WebAgentServer:
    """A real HTTP server on 127.0.0.1 answering /api/turn from a queue of (status, body, headers)."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict, dict]] = []
        self.replies: list[tuple[int, object, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status, reply, headers = server.replies.pop(0) if server.replies else (200, {"events": []}, {})
                payload = reply.encode() if isinstance(reply, str) else json.dumps(reply).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def web_server():
    server = WebAgentServer()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def web_agent(server, **options):
    return http_agent(server.url + "/", evidence_coverage=complete_evidence_coverage, api_key="s3cret",
                      backoff=0.001, **options)


def test_http_agent_posts_the_turn_and_reads_events_data_and_usage(web_server):
    web_server.replies.append((200, {
        "events": [{"type": "message", "role": "assistant", "text": "Order 1001 ships with DHL"}],
        "data": {"carrier": "DHL"}, "usage": {"inputTokens": 7, "outputTokens": 3}, "sessionId": "srv-1",
    }, {}))
    web_server.replies.append((200, {"events": [{"type": "message", "role": "assistant", "text": "again"}]}, {}))

    async def body(t):
        turn = await t.send("Where is 1001?", output={"type": "object", "required": ["carrier"]})
        t.check(turn.data, equals({"carrier": "DHL"}))
        t.check(t.reply, includes("DHL"))
        await t.send("and now?")

    result = run_one(web_agent(web_server), body, model="gpt-x", flags={"variant": "concise"})
    assert result.verdict == "passed", result.assertions
    (headers, first), (_, second) = web_server.requests
    assert headers["authorization"] == "Bearer s3cret"
    assert first["message"] == "Where is 1001?" and first["model"] == "gpt-x" and first["flags"] == {"variant": "concise"}
    assert first["output_schema"] == {"type": "object", "required": ["carrier"]}
    assert second["session_id"] == "srv-1"
    assert result.turns[0]["data"] == {"carrier": "DHL"}
    assert result.usage == {"input_tokens": 7, "output_tokens": 3}


def test_http_agent_forwards_telemetry_headers():
    server = WebAgentServer()
    try:
        agent = web_agent(server)
        ctx = AgentContext(signal=CancelSignal(), session=AgentSession(), feedback=Feedback(),
                           telemetry=Telemetry("http://otel", headers={"traceparent": "00-abc-def-01"}))
        turn = asyncio.run(agent.send(TurnInput("hi"), ctx))
        assert turn.status == "completed"
        assert server.requests[0][0]["traceparent"] == "00-abc-def-01"
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def test_http_error_is_a_diagnostic_and_a_failed_turn(web_server):
    web_server.replies.append((503, {"error": "down"}, {}))

    async def body(t):
        turn = await t.send("hi")
        t.check(turn.status, includes("failed"))

    result = run_one(web_agent(web_server), body)
    assert result.verdict == "passed"
    assert result.turns[0]["events"] == [{"type": "error", "message": "HTTP 503"}]
    assert result.diagnostics[0]["code"] == "agent-http-error" and result.diagnostics[0]["data"] == {"status": 503}
    assert len(web_server.requests) == 1  # a 5xx may have had side effects: never resent


def test_http_429_is_retried_after_retry_after_and_counted(web_server):
    web_server.replies += [(429, {}, {"Retry-After": "0.05"}), (200, {"events": []}, {})]

    async def body(t):
        await t.send("hi")
        t.succeeded()

    result = run_one(web_agent(web_server), body)
    assert result.verdict == "passed" and result.retries == {"rate_limited": 1}
    assert len(web_server.requests) == 2


def test_http_invalid_json_reply_is_a_send_failure(web_server):
    web_server.replies.append((200, "{nope", {}))

    async def body(t):
        await t.send("hi")

    result = run_one(web_agent(web_server), body)
    assert result.verdict == "errored" and result.error["code"] == "agent-invalid-response"


@pytest.mark.parametrize("reply, message", [
    # A JSON object that is no turn used to be an empty completed turn: succeeded() passed.
    ({"detail": "Not Found"}, 'web-agent replied with an invalid turn: it has no events: {"detail": "Not Found"}'),
    # A misspelt field used to be read as absent: `satus: failed` passed as a completed turn.
    ({"events": [], "satus": "failed"}, "web-agent replied with an invalid turn: turn has no field 'satus'; did you mean 'status'?"),
])
def test_http_reply_that_is_not_a_turn_errors_the_attempt_instead_of_passing(web_server, reply, message):
    web_server.replies.append((200, reply, {}))

    async def body(t):
        await t.send("hi")
        t.succeeded()

    result = run_one(web_agent(web_server), body)
    assert result.verdict == "errored" and result.error["code"] == "agent-invalid-response", result.error
    assert message in result.error["message"]


def test_http_connection_refused_is_an_errored_attempt():
    agent = http_agent("http://127.0.0.1:9", evidence_coverage=complete_evidence_coverage, backoff=0.001,
                       max_attempts=2)

    async def body(t):
        await t.send("hi")

    from assay.agent.run_options import RunOptions

    result = run_one(agent, body, options=RunOptions(retry_base_seconds=0.001))
    assert result.verdict == "errored" and result.error["code"] == "network"
    assert result.error["message"] == (
        "agent 'web-agent' send failed: http://127.0.0.1:9/api/turn refused the connection (2 tries over 0.001s); "
        "is a server running at that address?"
    )
    assert result.retries == {"connection": 1}  # the adapter's own resends; the runner adds none


# ---- process agent (node) ---------------------------------------------------------------------------

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def js_agent():
    return process_agent(f"node {HERE / 'agents' / 'echo_agent.mjs'}", evidence_coverage=complete_evidence_coverage)


@needs_node
def test_javascript_process_agent_keeps_history_per_session_line_and_captures_its_id():
    async def body(t):
        await t.send("a")
        second = await t.send("b", output={"type": "object"})
        second.called_tool("remember", count=1)
        t.check(t.reply, includes("m1: a | b"))
        t.check(second.data, equals({"echoed": "b"}))
        other = t.new_session()
        await other.send("c")
        t.check(other.reply, includes("m1: c"))
        assert t.session_id and t.session_id.startswith("js-") and other.session_id != t.session_id

    result = run_one(js_agent(), body, model="m1")
    assert result.verdict == "passed", (result.assertions, result.error)
    assert result.usage == {"input_tokens": 9, "output_tokens": 6}


@needs_node
def test_javascript_agent_error_reply_and_crash_error_the_attempt():
    async def refused(t):
        await t.send("fail")

    async def crashed(t):
        await t.send("crash")

    first = run_one(js_agent(), refused)
    assert first.verdict == "errored" and "the agent refused" in first.error["message"]
    second = run_one(js_agent(), crashed)
    assert second.verdict == "errored" and "exited unexpectedly (exit code 3)" in second.error["message"]
    assert statuses(second) == []


# ---- process agents that misbehave -------------------------------------------------------------


@pytest.fixture
def process_mark(monkeypatch):
    from adapters.hostile import mark_children, running_with

    mark = mark_children(monkeypatch)
    yield mark
    assert running_with(mark) == [], "the agent left processes running"


def hostile_agent(mode: str, argument: object = "", **options):
    from adapters.hostile import hostile

    return process_agent(hostile(mode, argument), evidence_coverage=complete_evidence_coverage, name="hostile", **options)


def test_a_send_past_the_process_agent_timeout_errors_the_attempt_naming_the_setting(process_mark):
    import time

    async def body(t):
        await t.send("first")
        await t.send("second")  # the agent sleeps from here on

    started = time.monotonic()
    result = run_one(hostile_agent("sleeps-mid-run", 1, timeout=0.5), body)
    elapsed = time.monotonic() - started
    assert result.verdict == "errored"
    assert result.error["message"].endswith("did not answer send within 0.5s (set by process_agent(timeout=0.5))")
    assert "echo first" in str(result.turns[0])  # the answered turn is kept
    assert elapsed < 0.5 + 1.0  # stopped at once after the timeout, not closed politely


def test_an_agent_that_lingers_and_ignores_sigterm_costs_two_seconds_and_a_diagnostic(process_mark):
    import time

    async def body(t):
        await t.send("hi")

    started = time.monotonic()
    result = run_one(hostile_agent("lingers-ignoring-sigterm"), body)
    elapsed = time.monotonic() - started
    assert result.verdict == "passed"  # a teardown failure is a diagnostic, never a verdict
    (diagnostic,) = [d for d in result.diagnostics if d["code"] == "agent-teardown-failed"]
    assert "answered close but did not exit within 1s of its input ending" in diagnostic["message"]
    assert 2.0 <= elapsed < 3.5  # 1 s to exit, 1 s after SIGTERM, then SIGKILL (and a loaded machine's start-up)


def test_an_agent_process_that_exits_leaving_its_pipes_with_a_descendant_errors_at_once(process_mark):
    import time

    async def body(t):
        await t.send("hi")

    started = time.monotonic()
    result = run_one(hostile_agent("grandchild-holds-pipes"), body)
    assert result.verdict == "errored"
    assert "exited unexpectedly (exit code 5)" in result.error["message"]
    assert time.monotonic() - started < 1
