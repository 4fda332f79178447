"""The OTLP/HTTP trace receiver against the real OpenTelemetry SDK in a child process (protobuf and JSON,
gzip or not), and the edges of the protocol: methods, paths, content types, bodies, replies, ports."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest, ExportTraceServiceResponse,
)

from assay.agent.traces import otlp  # noqa: E402
from assay.agent.traces.attribution import TraceHub  # noqa: E402
from assay.agent.traces.receiver import TraceReceiver  # noqa: E402
from assay.errors import ConfigError  # noqa: E402

EXPORT_SPANS = Path(__file__).resolve().parent / "otel_apps" / "export_spans.py"


@pytest.fixture
def hub_and_receiver():
    hub = TraceHub()
    receiver = TraceReceiver(hub.ingest)
    receiver.start()
    yield hub, receiver
    receiver.stop()


def _endpoint(receiver: TraceReceiver, prefix: str = "") -> str:
    return f"http://127.0.0.1:{receiver.port}{prefix}/v1/traces"


def _export(endpoint: str, protocol: str, compression: str, traceparent: str, count: int) -> None:
    done = subprocess.run([sys.executable, str(EXPORT_SPANS), endpoint, protocol, compression, traceparent, str(count)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("protocol", ["protobuf", "json"])
@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_a_real_sdk_exporter_in_a_child_process_lands_in_the_turn_it_joined(hub_and_receiver, protocol, compression):
    hub, receiver = hub_and_receiver
    turn = hub.open_turn("run/exp/eval/1", "agent", 0, 1)
    _export(_endpoint(receiver), protocol, compression, turn.traceparent, 40)
    hub.close_turn(turn)
    assert hub.received == 40 and hub.unattributed == 0
    spans = {span["name"]: span for span in turn.spans}
    assert len(turn.spans) == 40
    root = spans["invoke_agent helper"]
    assert root["trace_id"] == turn.trace_id and root["parent_span_id"] == turn.span_id
    assert root["kind"] == "server" and root["service"] == "export-spans" and root["scope"] == "tests.export_spans"
    first = spans["chat 0"]
    assert first["parent_span_id"] == root["span_id"] and first["kind"] == "client"
    assert first["status"] == "error" and first["status_message"] == "the model refused"
    assert first["attributes"] == {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 0,
        "ratio": 0.5, "flag": True, "tags": ["a", "b"],
    }
    assert first["events"][0]["name"] == "chunk" and first["events"][0]["attributes"] == {"index": 0}
    assert first["start"] <= first["end"] and "status" not in spans["chat 1"]


def test_replies_are_empty_export_responses_in_the_request_encoding(hub_and_receiver):
    _, receiver = hub_and_receiver
    body = ExportTraceServiceRequest().SerializeToString()
    reply = httpx.post(_endpoint(receiver), content=body, headers={"Content-Type": "application/x-protobuf"})
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("application/x-protobuf")
    assert ExportTraceServiceResponse.FromString(reply.content) == ExportTraceServiceResponse()
    reply = httpx.post(_endpoint(receiver), content=b"{}", headers={"Content-Type": "application/json; charset=utf-8"})
    assert reply.status_code == 200 and reply.json() == {}


def test_gzip_is_recognised_by_its_magic_bytes_without_a_header(hub_and_receiver):
    hub, receiver = hub_and_receiver
    turn = hub.open_turn("a", "agent", 0, 1)
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": turn.trace_id, "spanId": "00f067aa0ba902b7", "parentSpanId": turn.span_id, "name": "chat",
        "kind": 3, "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000500000000",
        "attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}}],
        "status": {"code": 2, "message": "boom"},
    }]}]}]}
    reply = httpx.post(_endpoint(receiver), content=gzip.compress(json.dumps(document).encode()),
                       headers={"Content-Type": "application/json"})
    assert reply.status_code == 200, reply.text
    [span] = turn.spans
    assert span["span_id"] == "00f067aa0ba902b7" and span["kind"] == "client" and span["status"] == "error"
    assert span["attributes"] == {"gen_ai.usage.input_tokens": 12} and span["end"] - span["start"] == 500_000_000


def test_a_gzipped_protobuf_export_without_a_content_encoding_is_read_by_its_magic_bytes(hub_and_receiver):
    hub, receiver = hub_and_receiver
    turn = hub.open_turn("a", "agent", 0, 1)
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = bytes.fromhex(turn.trace_id), bytes.fromhex("00f067aa0ba902b7"), "chat"
    body = gzip.compress(request.SerializeToString())
    assert body[:2] == b"\x1f\x8b"
    reply = httpx.post(_endpoint(receiver), content=body, headers={"Content-Type": "application/x-protobuf"})
    assert reply.status_code == 200 and ExportTraceServiceResponse.FromString(reply.content) == ExportTraceServiceResponse()
    assert [span["name"] for span in turn.spans] == ["chat"]


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/v1/traces", 405), ("PUT", "/v1/traces", 405), ("POST", "/v1/metrics", 404), ("POST", "/", 404),
    ("POST", "/somewhere/v1/traces", 404), ("GET", "/attempts/abc/v1/traces", 405),
])
def test_only_post_to_v1_traces_is_served(hub_and_receiver, method, path, status):
    _, receiver = hub_and_receiver
    reply = httpx.request(method, f"http://127.0.0.1:{receiver.port}{path}", content=b"",
                          headers={"Content-Type": "application/x-protobuf"})
    assert reply.status_code == status
    if status == 405:
        assert reply.headers["allow"] == "POST"


@pytest.mark.parametrize(("body", "headers", "status"), [
    (b"x", {"Content-Type": "text/plain"}, 415),
    (b"x", {}, 415),
    (b"\xff\xff\xff", {"Content-Type": "application/x-protobuf"}, 400),
    (b"[1, 2]", {"Content-Type": "application/json"}, 400),
    (b"{not json", {"Content-Type": "application/json"}, 400),
    (b"\x1f\x8bnot gzip at all", {"Content-Type": "application/json"}, 400),
    (b"{}", {"Content-Type": "application/json", "Content-Encoding": "br"}, 415),
])
def test_bodies_that_cannot_be_read_are_refused_with_their_status(hub_and_receiver, body, headers, status):
    hub, receiver = hub_and_receiver
    reply = httpx.post(_endpoint(receiver), content=body, headers=headers)
    assert reply.status_code == status, reply.text
    assert hub.received == 0 and receiver.refused == 1


def test_a_body_that_inflates_past_the_cap_is_refused(hub_and_receiver, monkeypatch):
    _, receiver = hub_and_receiver
    monkeypatch.setattr(otlp, "MAX_BODY_BYTES", 1024)
    reply = httpx.post(_endpoint(receiver), content=gzip.compress(b"\0" * 4096),
                       headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    assert reply.status_code == 413


def test_an_attempt_scoped_endpoint_names_its_attempt(hub_and_receiver):
    hub, receiver = hub_and_receiver
    token = hub.attempt("run/exp/eval/1")
    turn = hub.open_turn("run/exp/eval/1", "agent", 0, 1)
    hub.open_turn("run/exp/eval/2", "agent", 0, 1)  # open at the same time: only the path tells them apart
    _export(_endpoint(receiver, f"/attempts/{token}"), "protobuf", "gzip", "-", 3)
    hub.close_turn(turn)
    assert len(turn.spans) == 3 and turn.windowed == 3


def test_a_fixed_port_in_use_is_a_config_error():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        with pytest.raises(ConfigError, match="in use"):
            TraceReceiver(lambda spans, token: None, "127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()
