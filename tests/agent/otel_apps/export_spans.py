"""A child process that exports spans with the real OpenTelemetry SDK to an OTLP/HTTP endpoint, then exits.

    python export_spans.py ENDPOINT PROTOCOL COMPRESSION TRACEPARENT COUNT

PROTOCOL is `protobuf` (the SDK's OTLPSpanExporter) or `json` (the SDK's own OTLP encoding, as OTLP JSON:
the Python JSON exporter cannot be installed beside the protobuf one of the same release); COMPRESSION
is `gzip` or `none`. Spans are children of TRACEPARENT (or new roots when it is `-`).
"""

from __future__ import annotations

import gzip
import json
import sys

import requests
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator


class OtlpJsonExporter(SpanExporter):
    """OTLP/HTTP with a JSON body: the SDK's protobuf encoding in the OTLP JSON mapping (hex ids)."""

    def __init__(self, endpoint: str, compress: bool) -> None:
        self.endpoint = endpoint
        self.compress = compress

    def export(self, spans):
        document = json_format.MessageToDict(encode_spans(spans))
        for resource in document.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    for name in ("traceId", "spanId", "parentSpanId"):
                        if name in span:
                            span[name] = __import__("base64").b64decode(span[name]).hex()
        body = json.dumps(document).encode()
        headers = {"Content-Type": "application/json"}
        if self.compress:
            body = gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        reply = requests.post(self.endpoint, data=body, headers=headers, timeout=10)
        reply.raise_for_status()
        assert reply.json() == {}, reply.text
        return SpanExportResult.SUCCESS


def main() -> None:
    endpoint, protocol, compression, traceparent, count = sys.argv[1:6]
    if protocol == "protobuf":
        exporter = OTLPSpanExporter(
            endpoint=endpoint, compression=Compression.Gzip if compression == "gzip" else Compression.NoCompression
        )
    else:
        exporter = OtlpJsonExporter(endpoint, compression == "gzip")
    provider = TracerProvider(resource=Resource.create({"service.name": "export-spans"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=512))
    tracer = provider.get_tracer("tests.export_spans")
    parent = TraceContextTextMapPropagator().extract({"traceparent": traceparent}) if traceparent != "-" else None
    with tracer.start_as_current_span("invoke_agent helper", context=parent, kind=SpanKind.SERVER,
                                      attributes={"gen_ai.operation.name": "invoke_agent"}):
        for number in range(int(count) - 1):
            with tracer.start_as_current_span(f"chat {number}", kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": number,
                "ratio": 0.5, "flag": True, "tags": ["a", "b"],
            }) as span:
                span.add_event("chunk", {"index": number})
                if number == 0:
                    span.set_status(Status(StatusCode.ERROR, "the model refused"))
    provider.shutdown()


if __name__ == "__main__":
    main()
