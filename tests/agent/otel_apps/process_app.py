"""A Python agent over assay's NDJSON process protocol (`process_agent`) that exports its spans with the
OpenTelemetry SDK: configured at start from the OTEL_* variables the process was started with, and
joined to each turn by the traceparent in the request's `context.telemetry.headers`.
"""

from __future__ import annotations

import json
import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

provider = TracerProvider(resource=Resource.create({"service.name": "process-app"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))  # endpoint from the environment
tracer = provider.get_tracer("tests.process_app")


def reply(message_id, **body) -> None:
    sys.stdout.write(json.dumps({"id": message_id, **body}) + "\n")
    sys.stdout.flush()


def answer(params: dict) -> dict:
    text = params["input"]["text"]
    headers = (params["context"].get("telemetry") or {}).get("headers") or {}
    parent = TraceContextTextMapPropagator().extract(headers)
    call_id = f"echo-{text}"
    with tracer.start_as_current_span("invoke_agent process-app", context=parent, kind=SpanKind.SERVER,
                                      attributes={"gen_ai.operation.name": "invoke_agent", "app.message": text}):
        with tracer.start_as_current_span("chat tiny", kind=SpanKind.CLIENT,
                                          attributes={"gen_ai.operation.name": "chat", "app.message": text}):
            pass
        with tracer.start_as_current_span("execute_tool echo", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": call_id, "app.message": text,
        }):
            pass
    return {"status": "completed", "events": [
        {"type": "operation.started", "operationId": call_id, "operation": {"kind": "tool", "name": "echo", "input": text}},
        {"type": "operation.finished", "operationId": call_id, "kind": "tool", "status": "completed", "output": text},
        {"type": "message", "role": "assistant", "text": f"echo {text}"},
    ]}


for line in sys.stdin:
    message = json.loads(line)
    if message.get("id") is None:
        continue  # a notification (cancel)
    if message["method"] == "close":
        provider.shutdown()
        reply(message["id"], result=None)
    elif message["method"] == "send":
        reply(message["id"], result=answer(message["params"]))
    else:
        reply(message["id"], error={"message": f"unknown method {message['method']}"})
