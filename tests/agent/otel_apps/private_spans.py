"""A child process whose spans follow no convention (no `gen_ai.*`, no tool or agent names the waterfall
knows), exported with the real OpenTelemetry SDK configured only by the environment assay hands it.

    python private_spans.py named|opaque

`named`: names that say what a span is to a reader (callLLM, runTool search, delegate researcher) and
that the heuristic tagger reads; `opaque`: `step N` names, where only the app's own `step.type` attribute
says what each is (a mapper written for the app reads it). Both: one root step, a model call, a tool, a
subagent and a cache lookup (plain work) under it.
"""

from __future__ import annotations

import os
import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

NAMES = {
    "named": ("handle request", "callLLM", "runTool search", "delegate researcher", "cache.lookup"),
    "opaque": ("step 0", "step 1", "step 2", "step 3", "step 4"),
}
TYPES = ("root", "model", "tool", "agent", "cache")


def main() -> None:
    names = NAMES[sys.argv[1]]
    provider = TracerProvider(resource=Resource.create({"service.name": "private-spans"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("tests.private_spans")
    parent = TraceContextTextMapPropagator().extract({"traceparent": os.environ["TRACEPARENT"]})
    with tracer.start_as_current_span(names[0], context=parent, attributes={"step.type": TYPES[0]}):
        for name, kind in zip(names[1:], TYPES[1:]):
            with tracer.start_as_current_span(name, attributes={"step.type": kind, "app.note": f"{kind} work"}):
                pass
    provider.shutdown()


if __name__ == "__main__":
    main()
