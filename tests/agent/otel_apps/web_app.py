"""A long-running web app under test: POST /api/turn answers a turn and exports its spans over OTLP/HTTP.

    python web_app.py propagate|ignore [simple|batch]

It reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT once at start (as services do, hence a fixed receiver port),
prints its own port, and serves until killed. `propagate` continues the request's `traceparent`;
`ignore` starts a trace of its own per request (an app not wired for Tier 2 attribution). Every span
carries `app.message`, the turn's text, so a test can tell whose spans landed where.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

MODE = sys.argv[1]
PROCESSOR = sys.argv[2] if len(sys.argv) > 2 else "simple"
exporter = OTLPSpanExporter(endpoint=os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], compression=Compression.Gzip)
provider = TracerProvider(resource=Resource.create({"service.name": "web-app"}))
provider.add_span_processor(
    SimpleSpanProcessor(exporter) if PROCESSOR == "simple" else BatchSpanProcessor(exporter, schedule_delay_millis=50)
)
tracer = provider.get_tracer("tests.web_app")
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        return

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = body["message"]
        parent = TraceContextTextMapPropagator().extract(dict(self.headers)) if MODE == "propagate" else None
        marker = {"app.message": message}
        with tracer.start_as_current_span("POST /api/turn", context=parent, kind=SpanKind.SERVER, attributes=marker):
            with tracer.start_as_current_span("chat small-model", kind=SpanKind.CLIENT,
                                              attributes={**marker, "gen_ai.operation.name": "chat"}):
                time.sleep(0.02)
            with tracer.start_as_current_span("execute_tool lookup", attributes={
                **marker, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.id": f"call-{message}",
            }):
                time.sleep(0.005)
        reply = json.dumps({"events": [
            {"type": "operation.started", "operationId": f"call-{message}",
             "operation": {"kind": "tool", "name": "lookup", "input": {"q": message}}},
            {"type": "operation.finished", "operationId": f"call-{message}", "kind": "tool",
             "output": {"found": message}, "status": "completed"},
            {"type": "message", "role": "assistant", "text": f"done {message}"},
        ]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


ThreadingHTTPServer.request_queue_size = 256  # 64 turns connect at once; the default backlog is 5
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
