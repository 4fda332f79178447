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
from peak_rss import run_with_peak_rss  # noqa: E402

EXPORT_SPANS = Path(__file__).resolve().parent / "otel_apps" / "export_spans.py"
RECEIVER_BOMBS = Path(__file__).resolve().parent / "otel_apps" / "receiver_bombs.py"


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


def test_bodies_built_to_eat_memory_are_refused_with_413_and_the_receiver_stays_small():
    """A ~62 KB gzip of empty JSON objects took a run to 2.6 GB, and 31 M empty protobuf spans to ~10 GB."""
    done, peak_mib = run_with_peak_rss([sys.executable, str(RECEIVER_BOMBS)], timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(done.stdout)
    assert {name: status for name, (_, status) in outcome["statuses"].items()} == {
        "json_objects": 413, "protobuf_spans": 413, "protobuf_over_span_limit": 413,
    }
    assert outcome["statuses"]["json_objects"][0] < 100_000 and outcome["received"] == []
    assert peak_mib < 400, f"the receiver's process peaked at {peak_mib:.0f} MiB"


def test_a_foreign_host_header_is_refused_and_a_loopback_one_served(hub_and_receiver):
    _, receiver = hub_and_receiver
    body = ExportTraceServiceRequest().SerializeToString()
    headers = {"Content-Type": "application/x-protobuf"}
    foreign = httpx.post(_endpoint(receiver), content=body, headers={**headers, "Host": f"evil.example:{receiver.port}"})
    assert foreign.status_code == 400 and "Host" in foreign.text
    wrong_port = httpx.post(_endpoint(receiver), content=body, headers={**headers, "Host": "127.0.0.1:1"})
    assert wrong_port.status_code == 400
    named = httpx.post(_endpoint(receiver), content=body, headers={**headers, "Host": f"localhost:{receiver.port}"})
    assert named.status_code == 200


def test_an_advertised_name_is_accepted_beside_loopback_ones():
    receiver = TraceReceiver(lambda spans, token: None, names={"tunnel.example"})
    receiver.start()
    try:
        body = ExportTraceServiceRequest().SerializeToString()
        for host, status in ((f"tunnel.example:{receiver.port}", 200), (f"other.example:{receiver.port}", 400)):
            reply = httpx.post(_endpoint(receiver), content=body,
                               headers={"Content-Type": "application/x-protobuf", "Host": host})
            assert reply.status_code == status, host
    finally:
        receiver.stop()


@pytest.mark.parametrize("body", [
    b'{"resourceSpans": NaN}',
    b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": {"a": 1}}]}]}]}',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}',
], ids=["nan", "deep", "name-object", "time-text"])
def test_malformed_json_bodies_get_400_and_one_warning_never_a_traceback(body, capfd):
    warnings = []
    receiver = TraceReceiver(lambda spans, token: None, warn=lambda code, message: warnings.append((code, message)))
    receiver.start()
    try:
        reply = httpx.post(_endpoint(receiver), content=body, headers={"Content-Type": "application/json"})
    finally:
        receiver.stop()
    assert reply.status_code == 400, reply.text
    assert [code for code, _ in warnings] == ["telemetry-export-refused"]
    assert "400" in warnings[0][1] and "Traceback" not in capfd.readouterr().err


def test_a_run_takes_in_a_bounded_number_of_spans_then_answers_413_with_a_warning():
    hub = TraceHub()
    warnings = []
    receiver = TraceReceiver(hub.ingest, max_spans=60, warn=lambda code, message: warnings.append(code))
    receiver.start()
    try:
        turn = hub.open_turn("run/exp/eval/1", "agent", 0, 1)
        _export(_endpoint(receiver), "protobuf", "none", turn.traceparent, 40)
        assert hub.received == 40
        subprocess.run(  # its export is refused: the exporter logs it and exits 0
            [sys.executable, str(EXPORT_SPANS), _endpoint(receiver), "protobuf", "none", turn.traceparent, "40"],
            capture_output=True, text=True, timeout=60)
        hub.close_turn(turn)
    finally:
        receiver.stop()
    assert hub.received == 40 and "telemetry-export-too-large" in warnings


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


def _gzip_cut(data: bytes) -> bytes:
    return gzip.compress(data)[:-8]  # its trailer (CRC and length) cut off: the stream never ends


@pytest.mark.parametrize(("body", "said"), [
    (_gzip_cut(ExportTraceServiceRequest().SerializeToString() + b"\x0a\x00" * 64), "cut short or is not gzip"),
    (b"\x1f\x8bjunk", "cut short or is not gzip"),
    (gzip.compress(b"") + b"trailing junk", "bytes that are not gzip follow its stream"),
], ids=["cut-off", "bad-method", "trailing-junk"])
def test_a_gzip_body_that_does_not_end_is_refused_not_read_as_the_export_it_begins(hub_and_receiver, body, said):
    # isal inflates a cut-off stream (and a bad method byte) without a word: its first spans used to be taken in.
    hub, receiver = hub_and_receiver
    reply = httpx.post(_endpoint(receiver), content=body,
                       headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    assert reply.status_code == 400, reply.text
    assert reply.text.startswith("the gzip body does not inflate: ") and said in reply.text
    assert hub.received == 0 and receiver.refused == 1


def test_every_member_of_a_multi_member_gzip_body_is_read(hub_and_receiver):
    hub, receiver = hub_and_receiver
    request = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "split",
         "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}).encode()
    body = gzip.compress(request[:40]) + gzip.compress(request[40:]) + b"\0\0"
    reply = httpx.post(_endpoint(receiver), content=body,
                       headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert reply.status_code == 200, reply.text
    assert hub.received == 1


def test_a_request_that_is_not_valid_http_is_one_warning_never_a_traceback(capfd):
    # aiohttp answers it 400 itself and logged it with a traceback, in the middle of the run's output.
    warnings = []
    receiver = TraceReceiver(lambda spans, token: None, warn=lambda code, message: warnings.append((code, message)))
    receiver.start()
    try:
        with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as client:
            client.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           b"Content-Length: abc\r\n\r\n{}")
            answer = client.recv(4096)
    finally:
        receiver.stop()
    assert answer.split(b" ", 2)[1] == b"400"
    assert [code for code, _ in warnings] == ["telemetry-export-refused"]
    assert "the request is not valid HTTP: Invalid character in Content-Length" in warnings[0][1]
    assert "\n" not in warnings[0][1] and receiver.refused == 1
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error handling request" not in err
