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
    "MAX_BODY_BYTES", "MAX_MESSAGES_PER_EXPORT", "MAX_SPANS_PER_EXPORT", "OtlpError", "decode_export", "encoding_of",
    "export_reply", "spans_of_request",
]

MAX_BODY_BYTES = 64 * 1024 * 1024  # after decompression: an export that large is a misconfigured app
# What one export may hold. The SDK's batches are 512 spans; these bound memory, not real use. A body's
# bytes alone do not: an empty span or object is 2 bytes on the wire and ~100 in memory.
MAX_SPANS_PER_EXPORT = 10_000
MAX_MESSAGES_PER_EXPORT = 200_000  # nested messages (protobuf) or objects and arrays (JSON), spans included
_COUNT_FROM_BYTES = 1024 * 1024  # below this, even 2-byte elements cannot add up to much memory
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
    """The inflated body, every gzip member of it; one that does not end (cut short, or no gzip past its
    magic bytes: isal reports neither) is refused, not read as the export it begins."""
    try:
        from isal import isal_zlib as zlib  # a dependency already, and several times faster than zlib
    except ImportError:  # pragma: no cover - isal ships wheels for every platform assay supports
        import zlib  # type: ignore[no-redef]
    if not body:
        return body
    pieces: list[bytes] = []
    size = 0
    rest = body
    while rest:
        inflater = zlib.decompressobj(31)
        try:
            data = inflater.decompress(rest, MAX_BODY_BYTES + 1 - size)
        except zlib.error as error:
            raise OtlpError(400, f"the gzip body does not inflate: {error}") from None
        size += len(data)
        if size > MAX_BODY_BYTES:
            raise OtlpError(413, f"the export inflates to more than {MAX_BODY_BYTES // 1024 // 1024} MiB")
        if not inflater.eof:
            raise OtlpError(400, "the gzip body does not inflate: its stream is cut short or is not gzip")
        pieces.append(data)
        rest = inflater.unused_data
        if rest and not rest.startswith(_GZIP_MAGIC):
            if rest.strip(b"\0"):  # zero padding after the last member is allowed, as gzip(1) allows it
                raise OtlpError(400, "the gzip body does not inflate: bytes that are not gzip follow its stream")
            break
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def decode_export(body: bytes, content_type: str | None, content_encoding: str | None = None) -> tuple[str, Any]:
    """(encoding, ExportTraceServiceRequest) of one POST body; raises `OtlpError` for what cannot be read
    and 413 for what would take far more memory than its bytes (see the limits above)."""
    encoding = encoding_of(content_type)
    coding = (content_encoding or "").strip().lower()
    if coding == "gzip" or body[:2] == _GZIP_MAGIC:
        body = _gunzip(body)
    elif coding not in ("", "identity"):
        raise OtlpError(415, f"unsupported content encoding {coding!r} (gzip or none)")
    if len(body) > _COUNT_FROM_BYTES:
        counted = _count_json_containers(body) if encoding == JSON else _count_messages(body)
        if counted > MAX_MESSAGES_PER_EXPORT:
            raise OtlpError(413, f"the export holds more than {MAX_MESSAGES_PER_EXPORT:,} nested messages")
    message = _decode_protobuf(body) if encoding == PROTOBUF else _decode_json(body)
    spans = sum(len(scope_spans.spans) for resource_spans in message.resource_spans
                for scope_spans in resource_spans.scope_spans)
    if spans > MAX_SPANS_PER_EXPORT:
        raise OtlpError(413, f"the export holds {spans:,} spans; one export may hold {MAX_SPANS_PER_EXPORT:,}")
    return encoding, message


def _decode_protobuf(body: bytes) -> Any:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        return ExportTraceServiceRequest.FromString(body)
    except Exception as error:  # noqa: BLE001 - upb raises DecodeError; any failure is the body's
        raise OtlpError(400, f"the protobuf body is not an ExportTraceServiceRequest: {error}") from None


def _decode_json(body: bytes) -> Any:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        document = json.loads(body)
        if not isinstance(document, dict):
            raise ValueError("the body is not a JSON object")
        _ids_to_base64(document)
        return json_format.ParseDict(document, ExportTraceServiceRequest(), ignore_unknown_fields=True)
    except RecursionError:
        raise OtlpError(400, "the JSON body is not an OTLP trace export: it is nested too deeply") from None
    except Exception as error:  # noqa: BLE001 - ParseError, ValueError, TypeError (`NaN` where a list goes) …
        raise OtlpError(400, f"the JSON body is not an OTLP trace export: {error}") from None


def _count_json_containers(body: bytes) -> int:
    """An upper bound on the objects and arrays `json.loads` would build (brackets inside strings count too)."""
    return body.count(b"{") + body.count(b"[")


def _nested_messages() -> dict[str, dict[int, str]]:
    """For each message type an export nests, its message-typed fields: number -> type name (from the
    official descriptors, so nothing here restates the schema)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    table: dict[str, dict[int, str]] = {}
    pending = [ExportTraceServiceRequest.DESCRIPTOR]
    while pending:
        descriptor = pending.pop()
        if descriptor.full_name in table:
            continue
        fields = {field.number: field.message_type for field in descriptor.fields if field.message_type is not None}
        table[descriptor.full_name] = {number: kind.full_name for number, kind in fields.items()}
        pending.extend(fields.values())
    return table


_NESTED: dict[str, dict[int, str]] | None = None


def _count_messages(body: bytes) -> int:
    """How many nested messages a protobuf export holds, counted on the wire without decoding it, and
    stopping once past the limit. A body that is not well formed stops the count; decoding refuses it."""
    global _NESTED
    if _NESTED is None:
        _NESTED = _nested_messages()
    root = "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest"
    stack = [(0, len(body), root)]
    counted = 0
    while stack:
        position, end, kind = stack.pop()
        fields = _NESTED.get(kind, {})
        while position < end:
            tag, position = _varint(body, position)
            if tag < 0:
                return counted
            wire_type = tag & 7
            if wire_type == 0:
                _, position = _varint(body, position)
            elif wire_type == 1:
                position += 8
            elif wire_type == 5:
                position += 4
            elif wire_type == 2:
                length, position = _varint(body, position)
                if length < 0 or position + length > end:
                    return counted
                nested = fields.get(tag >> 3)
                if nested is not None:
                    counted += 1
                    if counted > MAX_MESSAGES_PER_EXPORT:
                        return counted
                    stack.append((position, position + length, nested))
                position += length
            else:
                return counted  # groups are not in OTLP: the decoder refuses the body
            if position < 0:
                return counted
    return counted


def _varint(body: bytes, position: int) -> tuple[int, int]:
    """(value, next position); (-1, -1) past the end or for a varint longer than ten bytes."""
    value = shift = 0
    while position < len(body) and shift < 70:
        byte = body[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    return -1, -1


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
