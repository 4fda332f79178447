"""A child process an agent starts for each turn: it exports the turn's spans with the real OpenTelemetry
SDK, configured only by the environment assay hands it (`ctx.telemetry.env`), then exits.

    python turn_spans.py CALL_ID NOISE

The exporter reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and the batch delay from the environment; the spans
join the turn's trace through TRACEPARENT. The tree is what a GenAI app emits: an agent invocation, a
model call, a tool execution with the turn's call id, a failing tool (status error), NOISE spans of
plain internal work (`other`), and the model call that writes the reply.
"""

from __future__ import annotations

import os
import sys

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator


def main() -> None:
    call_id, noise = sys.argv[1], int(sys.argv[2])
    provider = TracerProvider(resource=Resource.create({"service.name": "turn-spans"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(compression=Compression.Gzip)))
    tracer = provider.get_tracer("tests.turn_spans")
    parent = TraceContextTextMapPropagator().extract({"traceparent": os.environ["TRACEPARENT"]})
    with tracer.start_as_current_span("invoke_agent shop", context=parent, kind=SpanKind.SERVER,
                                      attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}):
        with tracer.start_as_current_span("chat small-model", kind=SpanKind.CLIENT, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "small-model", "gen_ai.usage.input_tokens": 31,
            "app.private.note": "kept for the drill-down",
        }):
            pass
        with tracer.start_as_current_span("execute_tool lookup_order", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order", "gen_ai.tool.call.id": call_id,
        }):
            pass
        with tracer.start_as_current_span("execute_tool refund_order", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund_order",
        }) as failing:
            failing.set_status(Status(StatusCode.ERROR, "the payment service refused"))
        for number in range(noise):
            with tracer.start_as_current_span(f"cache.get {number}", attributes={"cache.key": f"k{number}"}):
                pass
        with tracer.start_as_current_span("chat small-model", kind=SpanKind.CLIENT, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "small-model", "gen_ai.usage.output_tokens": 12,
        }):
            pass
    provider.shutdown()  # flushes the batch before the turn's reply is returned


if __name__ == "__main__":
    main()
