"""OTLP/HTTP trace exports as plain span documents: protobuf or JSON by content type, gzip by header or magic.

Both encodings are parsed by the official `opentelemetry-proto` messages (OTLP JSON's hex ids are first
rewritten to the base64 the protobuf JSON mapping reads), so there is one path from message to document.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = [
    "MAX_BODY_BYTES", "OtlpError", "decode_export", "encoding_of", "export_reply", "spans_of_request",
]

MAX_BODY_BYTES = 64 * 1024 * 1024  # after decompression: an export that large is a misconfigured app
MAX_STRING = 4096  # characters kept of one attribute value (the waterfall shows values, it is no log store)
MAX_ATTRIBUTES = 128
MAX_EVENTS = 32
_GZIP_MAGIC = b"\x1f\x8b"
_KINDS = ("unspecified", "internal", "server", "client", "producer", "consumer")
_STATUS = ("unset", "ok", "error")
PROTOBUF, JSON = "protobuf", "json"


class OtlpError(Exception):
    """A request the receiver refuses: `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def encoding_of(content_type: str | None) -> str:
    """`protobuf` or `json` from the Content-Type (parameters ignored); anything else is a 415."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in ("application/x-protobuf", "application/protobuf"):
        return PROTOBUF
    if media == "application/json":
        return JSON
    raise OtlpError(415, f"unsupported content type {media or '(none)'!r}: OTLP/HTTP is application/x-protobuf or application/json")


def _gunzip(body: bytes) -> bytes:
    try:
        from isal import isal_zlib as zlib  # a dependency already, and several times faster than zlib
    except ImportError:  # pragma: no cover - isal ships wheels for every platform assay supports
        import zlib  # type: ignore[no-redef]
    inflater = zlib.decompressobj(31)
    try:
        data = inflater.decompress(body, MAX_BODY_BYTES + 1)
    except zlib.error as error:
        raise OtlpError(400, f"the gzip body does not inflate: {error}") from None
    if len(data) > MAX_BODY_BYTES:
        raise OtlpError(413, f"the export inflates to more than {MAX_BODY_BYTES // 1024 // 1024} MiB")
    return data


def decode_export(body: bytes, content_type: str | None, content_encoding: str | None = None) -> tuple[str, Any]:
    """(encoding, ExportTraceServiceRequest) of one POST body; raises `OtlpError` for what cannot be read."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    encoding = encoding_of(content_type)
    coding = (content_encoding or "").strip().lower()
    if coding == "gzip" or body[:2] == _GZIP_MAGIC:
        body = _gunzip(body)
    elif coding not in ("", "identity"):
        raise OtlpError(415, f"unsupported content encoding {coding!r} (gzip or none)")
    if encoding == PROTOBUF:
        try:
            return encoding, ExportTraceServiceRequest.FromString(body)
        except Exception as error:  # noqa: BLE001 - upb raises DecodeError; any failure is the body's
            raise OtlpError(400, f"the protobuf body is not an ExportTraceServiceRequest: {error}") from None
    from google.protobuf import json_format

    try:
        document = json.loads(body)
        if not isinstance(document, dict):
            raise ValueError("the body is not a JSON object")
        _ids_to_base64(document)
        return encoding, json_format.ParseDict(document, ExportTraceServiceRequest(), ignore_unknown_fields=True)
    except (ValueError, json_format.ParseError) as error:
        raise OtlpError(400, f"the JSON body is not an OTLP trace export: {error}") from None


def export_reply(encoding: str) -> tuple[bytes, str]:
    """The success reply: an empty ExportTraceServiceResponse in the request's own encoding."""
    if encoding == JSON:
        return b"{}", "application/json"
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    return ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf"


def _hex_to_base64(value: Any) -> Any:
    """OTLP JSON writes ids as hex (not the mapping's base64); an id that is not hex is left to fail parsing."""
    if isinstance(value, str) and value:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode("ascii")
        except ValueError:
            return value
    return value


def _ids_to_base64(document: dict[str, Any]) -> None:
    for resource_spans in document.get("resourceSpans") or document.get("resource_spans") or ():
        if not isinstance(resource_spans, dict):
            continue
        for scope_spans in resource_spans.get("scopeSpans") or resource_spans.get("scope_spans") or ():
            if not isinstance(scope_spans, dict):
                continue
            for span in scope_spans.get("spans") or ():
                if not isinstance(span, dict):
                    continue
                for holder in (span, *(link for link in span.get("links") or () if isinstance(link, dict))):
                    for name in ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id"):
                        if name in holder:
                            holder[name] = _hex_to_base64(holder[name])


def _value(any_value: Any) -> Any:
    which = any_value.WhichOneof("value")
    if which == "string_value":
        text = any_value.string_value
        return text if len(text) <= MAX_STRING else text[: MAX_STRING - 1] + "…"
    if which == "int_value":
        return any_value.int_value
    if which == "double_value":
        return any_value.double_value
    if which == "bool_value":
        return any_value.bool_value
    if which == "array_value":
        return [_value(item) for item in any_value.array_value.values[:MAX_ATTRIBUTES]]
    if which == "kvlist_value":
        return _attributes(any_value.kvlist_value.values)
    if which == "bytes_value":
        return any_value.bytes_value[: MAX_STRING // 2].hex()
    return None


def _attributes(pairs: Any) -> dict[str, Any]:
    if not pairs:
        return {}
    return {pair.key: _value(pair.value) for pair in pairs[:MAX_ATTRIBUTES]}


def spans_of_request(request: Any) -> Iterator[dict[str, Any]]:
    """Every span of an export as a JSON-ready document (ids in hex, times in Unix nanoseconds,
    the resource's `service.name` as `service`); unknown attributes are all kept, values bounded."""
    for resource_spans in request.resource_spans:
        service = None
        for pair in resource_spans.resource.attributes:
            if pair.key == "service.name":
                service = pair.value.string_value or None
                break
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name or None
            for span in scope_spans.spans:
                document: dict[str, Any] = {
                    "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(), "name": span.name,
                    "kind": _KINDS[span.kind] if 0 <= span.kind < len(_KINDS) else "unspecified",
                    "start": span.start_time_unix_nano, "end": span.end_time_unix_nano,
                    "attributes": _attributes(span.attributes),
                }
                status = span.status
                if status.code:
                    document["status"] = _STATUS[status.code] if status.code < len(_STATUS) else "unset"
                    if status.message:
                        document["status_message"] = status.message[:MAX_STRING]
                if span.events:
                    document["events"] = [
                        {"name": event.name, "time": event.time_unix_nano, "attributes": _attributes(event.attributes)}
                        for event in span.events[:MAX_EVENTS]
                    ]
                if service is not None:
                    document["service"] = service
                if scope is not None:
                    document["scope"] = scope
                yield document


def describe(document: Mapping[str, Any]) -> str:
    """One span for a message: `name (trace …/span …)`."""
    return f"{document.get('name')!r} (trace {document.get('trace_id')}, span {document.get('span_id')})"
