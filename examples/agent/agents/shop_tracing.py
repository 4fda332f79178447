"""The shop's own OpenTelemetry spans: each turn replayed as a trace that joins assay's (through the turn's
`traceparent`) and is exported over OTLP/HTTP to the endpoint in `ctx.telemetry`, for the viewer's waterfall.

Optional on purpose: without the OpenTelemetry SDK and its OTLP/HTTP exporter (`pip install 'assay[otel]'`),
`record_turn` does nothing and the shop answers the same; the run then says, in one warning line, that it
received no span and that the SDK is missing.
"""

from __future__ import annotations

import asyncio

try:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import SpanKind, Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # the SDK is not installed: no spans, same answers
    OTLPSpanExporter = None

_tracers: dict[str, object] = {}
# A real app's calls take time; these pauses only give the replayed spans a visible width.
MODEL_CALL_S = 0.004
TOOL_CALL_S = 0.002


def _tracer(endpoint: str):
    tracer = _tracers.get(endpoint)
    if tracer is None:
        provider = TracerProvider(resource=Resource.create({"service.name": "shop-assistant"}))
        # Simple (not batching): each span is exported as it ends, so none arrives after its turn.
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=5)))
        tracer = _tracers[endpoint] = provider.get_tracer("examples.shop")
    return tracer


async def record_turn(ctx, events, usage) -> None:
    """The turn as the spans a GenAI app emits: the agent invocation, a model call, a tool execution
    per tool call (failed ones in error), and the model call that wrote the reply."""
    telemetry = ctx.telemetry
    if OTLPSpanExporter is None or telemetry is None:
        return
    tracer = _tracer(telemetry.endpoint)
    parent = TraceContextTextMapPropagator().extract(dict(telemetry.headers))
    model = ctx.model or "demo-model"
    finished = {event.operation_id: event for event in events if getattr(event, "type", "") == "operation.finished"}
    calls = [event for event in events if getattr(event, "type", "") == "operation.started"]
    with tracer.start_as_current_span("invoke_agent shop-assistant", context=parent, kind=SpanKind.SERVER,
                                      attributes={"gen_ai.operation.name": "invoke_agent",
                                                  "gen_ai.agent.name": "shop-assistant"}):
        await _model_call(tracer, model, usage.input_tokens if usage else None, None)
        for call in calls:
            with tracer.start_as_current_span(f"execute_tool {call.operation.name}", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.operation.name,
                "gen_ai.tool.call.id": call.operation_id,
            }) as span:
                await asyncio.sleep(TOOL_CALL_S)
                result = finished.get(call.operation_id)
                if result is not None and result.status == "failed":
                    span.set_status(Status(StatusCode.ERROR, "the tool failed"))
        await _model_call(tracer, model, None, usage.output_tokens if usage else None)


async def _model_call(tracer, model: str, input_tokens, output_tokens) -> None:
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.system": "demo"}
    if input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = input_tokens
    if output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = output_tokens
    with tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes):
        await asyncio.sleep(MODEL_CALL_S)
