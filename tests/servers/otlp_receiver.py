"""An OTLP/HTTP receiver on 127.0.0.1 for the export tests: it decodes what arrives with the official
`opentelemetry-proto` messages and keeps the spans, events, resources, headers and paths of each request."""

from __future__ import annotations

import http.server
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

__all__ = ["Received", "receiver"]


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


@dataclass
class Received:
    spans: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # each request's, names in lower case
    paths: list[str] = field(default_factory=list)  # each request's path (/v1/traces, /v1/logs)
    requests: int = 0


@contextmanager
def receiver(status: int = 200, delay: float = 0.0, tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, Received]]:
    """An OTLP/HTTP endpoint on a free loopback port that keeps what it decodes (answering after `delay` seconds);
    over TLS when given a server context (its URL is then https://)."""
    received = Received()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            assert self.headers["Content-Type"] == "application/x-protobuf"
            received.requests += 1
            received.headers.append({name.lower(): value for name, value in self.headers.items()})
            received.paths.append(self.path)
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    received.resources.append(_attributes(resource.resource.attributes))
                    for scope in resource.scope_spans:
                        received.spans += [{"name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                                            "attributes": _attributes(span.attributes), "status": span.status.code}
                                           for span in scope.spans]
            elif self.path == "/v1/logs":
                request = ExportLogsServiceRequest.FromString(body)
                for resource in request.resource_logs:
                    received.resources.append(_attributes(resource.resource.attributes))
                    for scope in resource.scope_logs:
                        received.events += [{"name": record.event_name, "trace_id": record.trace_id.hex(),
                                             "span_id": record.span_id.hex(), "attributes": _attributes(record.attributes)}
                                            for record in scope.log_records]
            if delay:
                time.sleep(delay)
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls is not None else 'http'}://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
