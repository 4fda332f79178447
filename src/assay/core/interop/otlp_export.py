"""Exporting a run's verdicts as OpenTelemetry: one span for the run and one `gen_ai.evaluation.result`
event per unit, sent over OTLP/HTTP (protobuf) by the official SDK's exporters.

The events follow the GenAI semantic conventions: `gen_ai.evaluation.name`, `…score.value`,
`…score.label` and `…explanation` (plus `error.type` for an errored unit and `assay.unit.id`). They
are log-based events, as the conventions define them, so each can sit in the trace it judges: a
unit with a trace of its own (an agent attempt's turn, which assay opened with a traceparent; a
pydantic-evals case span) gets that trace and span as its context, any other unit the run's span.
The run's span (`assay.run`) has ids derived from the run id, so exporting a run again sends the
same trace. The SDK is an optional extra (`assay[otel]`), imported only here and only when used.

The events are the SDK's own log records (`ReadableLogRecord`), handed in batches to its OTLP/HTTP
exporter, which encodes and sends them; the SDK's logger, processors and per-record attribute
checks are not in the way (a third of the CPU of an export; the attributes here are known to be
valid and few). While one batch is being sent, the next is being made.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
import re
import shlex
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from assay.core.interop.export_endpoint import ENVIRONMENT, check_endpoint, configured_endpoint, shown_endpoint
from assay.core.record import VERDICTS, RunManifest, UnitResult
from assay.errors import AssayError

__all__ = [
    "ENVIRONMENT", "ExportError", "Exported", "configured_endpoint", "export_after_run", "export_record", "export_run",
    "unit_trace",
]

EVENT_NAME = "gen_ai.evaluation.result"
_BATCH = 2_000  # events per request: a request stays far below a collector's body limit
_EXPLANATION_LIMIT = 1_000
_INSTALL = "pip install 'assay[otel]' (opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http)"


class ExportError(AssayError):
    """The export could not be made or was refused; the message says by whom and why (exit 2)."""


@dataclass(frozen=True)
class Exported:
    endpoint: str
    run_id: str
    trace_id: str
    span_id: str
    events: int
    linked: int  # events placed in a unit's own trace

    def to_json(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "run_id": self.run_id, "trace_id": self.trace_id, "span_id": self.span_id,
                "events": self.events, "linked_to_unit_traces": self.linked}


# ---------------------------------------------------------------------------------------------
# Where to export


def _check_connects(endpoint: str, run_id: str, timeout: float) -> None:
    """Fail at once when nothing accepts a connection at the collector's address. The SDK retries a refused
    connection with backoff until its timeout, only to fail: a run's exit waited ~5 s for it, `runs export`
    ~13 s. Through a proxy (the SDK's requests honours *_PROXY) the proxy is what is reached: not checked."""
    import urllib.request

    parts = urlsplit(endpoint)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    if urllib.request.getproxies().get(parts.scheme) and not urllib.request.proxy_bypass(host):
        return
    try:
        connection = socket.create_connection((host, port), timeout=min(timeout, 5.0))
    except OSError as error:
        why = error.strerror or str(error) or type(error).__name__
        raise ExportError(f"exporting {run_id} to {shown_endpoint(endpoint)} failed: cannot connect to {host}:{port} "
                          f"({why}); is the collector running?") from None
    with connection:
        if parts.scheme == "https":
            _check_speaks_tls(connection, endpoint, run_id, host, port)


def _check_speaks_tls(connection: socket.socket, endpoint: str, run_id: str, host: str, port: int) -> None:
    """An https:// URL of a collector that answers plain HTTP (its OTLP/HTTP port serves http:// unless TLS is set
    up) fails every request in the handshake: the SDK retried it for ~16 s, then failed with a page of its
    retries. Only whether TLS is spoken is checked here (not the certificate: the SDK checks that, as it is told)."""
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        context.wrap_socket(connection, server_hostname=host or None).close()
    except ssl.SSLError as error:
        plain = shown_endpoint(urlsplit(endpoint)._replace(scheme="http").geturl())
        raise ExportError(f"exporting {run_id} to {shown_endpoint(endpoint)} failed: {host}:{port} does not answer "
                          f"TLS ({error.reason or error}); a collector's OTLP/HTTP port serves plain HTTP unless TLS "
                          f"is set up on it: give {plain}") from None
    except OSError:
        return  # (closed or slow to answer: the export itself says what goes wrong)


_HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS")


def _check_headers() -> None:
    """Refuse a header variable the SDK cannot read. Its exporters drop an entry that is not `name=value` with a
    log line and send without it: an API key written `api-key: KEY` was not sent, and the export went on to a
    collector's 401, or to one that took it as anyone's. Each entry is read as the SDK reads it; the message
    names the variable and the entry's place, not its text (which may hold the key)."""
    from opentelemetry.util.re import parse_env_headers

    for variable in _HEADER_VARIABLES:
        entries = os.environ.get(variable, "").split(",")
        for place, entry in enumerate(entries, 1):
            if not entry.strip():
                continue
            with _sdk_messages():  # (the SDK's own line would print the entry, key and all)
                read = parse_env_headers(entry, liberal=True)
            if not read:
                name, *value = re.split("[:=]", entry, maxsplit=1)  # (a name is shown, its value never)
                name = name.strip() if value else ""
                which = f"entry {place} of {len(entries)}" + (f" ({name!r})" if name and len(name) <= 60 else "")
                raise ExportError(f"{variable}: {which} is not name=value, so it would not be sent; give the headers as "
                                  f"name=value pairs separated by commas, e.g. {variable}='api-key=KEY,x-team=evals' "
                                  "(percent-encode a comma, semicolon or quote in a value)")


# ---------------------------------------------------------------------------------------------
# What a unit says


def _is_mapping(value: Any) -> bool:
    # A unit read from its record holds dicts: a type check answers first, where `Mapping` is an
    # ABC's check (0.4 µs, five times an event, mostly on None).
    return type(value) is dict or value is not None and isinstance(value, Mapping)


def unit_trace(unit: Mapping[str, Any]) -> tuple[str, str] | None:
    """(trace id, span id) of the unit's own trace, as hex: an imported case's `detail.trace`, or an
    agent attempt's first traced turn (`detail.spans.turns`, the traceparent assay sent the app).
    `unit` is the unit's record document (`UnitResult.to_json`)."""
    detail = unit.get("detail")
    if not _is_mapping(detail):
        return None
    candidates: list[Any] = [detail.get("trace")]
    spans = detail.get("spans")
    if _is_mapping(spans):
        candidates += list(spans.get("turns") or ())
    for candidate in candidates:
        if _is_mapping(candidate):
            trace_id, span_id = candidate.get("trace_id"), candidate.get("span_id")
            if _hex(trace_id, 32) and _hex(span_id, 16):
                return trace_id.lower(), span_id.lower()
    return None


def _hex(value: Any, length: int) -> bool:
    if not isinstance(value, str) or len(value) != length:
        return False
    try:
        return int(value, 16) != 0
    except ValueError:
        return False


_VERDICT_SCORES = {"passed": 1.0, "failed": 0.0, "errored": 0.0}


def _score(unit: Mapping[str, Any]) -> float | None:
    observed = unit.get("observed")
    if _is_mapping(observed):
        value = observed.get("score")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return _VERDICT_SCORES.get(unit["verdict"])


def _evaluation_name(unit: Mapping[str, Any], manifest: RunManifest) -> str:
    detail = unit.get("detail")
    name = detail.get("evaluation") if _is_mapping(detail) else None
    return name if isinstance(name, str) and name else unit.get("group") or manifest.kind


def event_attributes(unit: Mapping[str, Any], manifest: RunManifest) -> dict[str, Any]:
    """The event's attributes, from the unit's record document (`UnitResult.to_json`, whose empty
    fields are left out)."""
    verdict, group = unit["verdict"], unit.get("group")
    attributes: dict[str, Any] = {
        "gen_ai.evaluation.name": _evaluation_name(unit, manifest),
        "gen_ai.evaluation.score.label": verdict,  # passed, failed, errored, skipped or ignored
        "assay.unit.id": unit["unit_id"],
    }
    score = _score(unit)
    if score is not None:
        attributes["gen_ai.evaluation.score.value"] = score
    explanation = unit.get("reason") or unit.get("details")
    if explanation:
        attributes["gen_ai.evaluation.explanation"] = explanation[:_EXPLANATION_LIMIT]
    if group:
        attributes["assay.unit.group"] = group
    if verdict == "errored":
        attributes["error.type"] = "_OTHER"  # the conventions' value for an error without a finer class
    return attributes


# ---------------------------------------------------------------------------------------------
# The SDK


def _sdk() -> Any:
    try:
        from opentelemetry import trace
        from opentelemetry._logs import LogRecord
        from opentelemetry.attributes import BoundedAttributes
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk._logs import LogRecordLimits, ReadableLogRecord
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.id_generator import IdGenerator
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
    except ImportError as error:
        raise ExportError(f"exporting needs the OpenTelemetry SDK and its OTLP/HTTP exporter ({error.name} is missing): "
                          f"{_INSTALL}") from None
    return locals()


def _hashed_once(resource_class: Any, resource: Any) -> Any:
    """`resource` with its hash computed once. The exporter's encoder groups a batch's records by
    resource, hashing each record's; the SDK hashes a resource by dumping its attributes as JSON,
    every time (an eighth of an export's CPU)."""

    class RunResource(resource_class):
        def __hash__(self) -> int:
            return digest

    hashed = RunResource(resource.attributes, resource.schema_url)
    digest = resource_class.__hash__(hashed)
    return hashed


def _limited(sdk: Any) -> Callable[[dict[str, Any]], Any]:
    """An event's attributes under the SDK's log record limits, as its logger would apply them, when
    the environment sets limits that can change an event (`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`, a count
    below the seven attributes an event may have); else as they are, unchecked."""
    limits = sdk["LogRecordLimits"]()
    count, length = limits.max_log_record_attributes, limits.max_log_record_attribute_length
    if length is None and (count is None or count >= 7):
        return lambda attributes: attributes
    return lambda attributes: sdk["BoundedAttributes"](
        maxlen=count, attributes=attributes, immutable=False, max_value_len=length, extended_attributes=True,
    )


class _Sending:
    """Hands records to an SDK OTLP exporter in batches and keeps what went wrong.

    The SDK's processors swallow an exporter's failure (it is logged, not returned); a command
    must report it, so every export's result is looked at here. With `background`, a full batch is
    sent from a thread while the caller makes the next (the exporter's encoding holds the GIL, its
    request and the collector's decoding do not); at most one batch is in flight. That thread is a
    daemon: an export stopped by Ctrl-C leaves at once, not once a slow collector has answered."""

    def __init__(self, exporter: Any, batch: int, *, background: bool = False) -> None:
        self.exporter = exporter
        self.batch = batch
        self.pending: list[Any] = []
        self.sent = 0
        self.failure: str | None = None
        self.success = _success(exporter)
        self._background = background
        self._in_flight: threading.Thread | None = None
        self._raised: BaseException | None = None  # what the batch in flight raised, raised again when waited for

    def export(self, records: Any) -> Any:
        self.pending.extend(records)
        if len(self.pending) >= self.batch:
            self.flush()
        return self.success

    def add(self, record: Any) -> None:
        self.pending.append(record)
        if len(self.pending) >= self.batch:
            self.flush()

    def flush(self) -> None:
        self._wait()
        if not self.pending or self.failure is not None:
            self.pending.clear()
            return
        records, self.pending = self.pending, []
        if not self._background:
            self._send(records)
        else:
            self._in_flight = threading.Thread(target=self._send_beside, args=(records,), name="assay-otlp", daemon=True)
            self._in_flight.start()

    def _send(self, records: list[Any]) -> None:
        result = self.exporter.export(records)
        if getattr(result, "name", "SUCCESS") != "SUCCESS":
            self.failure = self.failure or "the endpoint did not accept the export"
        else:
            self.sent += len(records)

    def _send_beside(self, records: list[Any]) -> None:
        try:
            self._send(records)
        except BaseException as error:  # noqa: BLE001 - handed to the thread that waits for the batch
            self._raised = error

    def _wait(self) -> None:
        if self._in_flight is not None:
            in_flight, self._in_flight = self._in_flight, None
            in_flight.join()
            raised, self._raised = self._raised, None
            if raised is not None:
                raise raised

    def force_flush(self, timeout_millis: int = 0) -> bool:
        self.flush()
        self._wait()
        return True

    def shutdown(self, *, send_pending: bool = True) -> None:
        """Send what is pending and wait for it, and close; an export being abandoned (Ctrl-C, a unit that could
        not be read) sends nothing more and does not wait for a batch in flight."""
        try:
            if send_pending:
                self.force_flush()
            else:
                self.pending.clear()
                self._in_flight = None
        finally:
            self.exporter.shutdown()


def _success(exporter: Any) -> Any:
    module = sys.modules.get(type(exporter).__module__)
    for name in ("LogRecordExportResult", "LogExportResult", "SpanExportResult"):
        result = getattr(module, name, None)
        if result is not None:
            return result.SUCCESS
    return None


@contextmanager
def _sdk_messages() -> Iterator[list[str]]:
    """What the SDK's exporters log while exporting (why a request failed), kept for our one message
    instead of being printed as lines of their own."""
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger("opentelemetry")
    handler, propagate = Keep(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _ids(run_id: str) -> tuple[int, int]:
    digest = hashlib.sha256(f"assay run {run_id}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


def _nanoseconds(timestamp: str, offset_seconds: float = 0.0) -> int:
    try:
        moment = _dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        moment = _dt.datetime.now(_dt.UTC)
    return int((moment.timestamp() + offset_seconds) * 1e9)


def _run_attributes(manifest: RunManifest, counts: Mapping[str, int]) -> dict[str, Any]:
    """The run span's attributes: its identity and, counted as its events were sent, its verdicts."""
    attributes: dict[str, Any] = {"assay.run.id": manifest.run_id, "assay.run.kind": manifest.kind}
    if manifest.title:
        attributes["assay.run.title"] = manifest.title
    for verdict, count in counts.items():
        attributes[f"assay.run.{verdict}"] = count
    judged = counts.get("passed", 0) + counts.get("failed", 0) + counts.get("errored", 0)
    if judged:
        attributes["assay.run.pass_rate"] = counts.get("passed", 0) / judged
    tool = (manifest.identity or {}).get("tool")
    if isinstance(tool, str):
        attributes["assay.run.tool"] = tool
    if manifest.git_commit:
        attributes["vcs.ref.head.revision"] = manifest.git_commit
    return attributes


def export_run(
    manifest: RunManifest, units: Iterable[UnitResult] | Iterable[Mapping[str, Any]], endpoint: str, *,
    timeout: float = 10.0,
) -> Exported:
    """Send the run's span and one event per unit to `endpoint`; an `ExportError` when the SDK is
    missing or the endpoint did not take them. A unit is a `UnitResult` or its record document (as
    `iter_unit_documents` reads it: an export needs a few fields, and making each `UnitResult` cost
    twice what decoding its line does)."""
    return _export(manifest, endpoint, timeout, lambda sdk, resource: _send_events(sdk, manifest, units, endpoint, timeout, resource))


def export_record(manifest: RunManifest, record: Path, endpoint: str, *, timeout: float = 10.0,
                  workers: int | None = None) -> Exported:
    """`export_run` of a run record's units, read from its lines. A big record is sent by `workers`
    processes at once (by default one per core, up to four, each with at least `_UNITS_PER_WORKER`
    units), each reading its own part of the file: making and encoding the events is Python work the
    GIL keeps to one core, and each event stands alone."""
    from assay.core.record import UNITS_FILE

    lines = record / UNITS_FILE
    if workers is None:
        workers = _worker_count(lines)
    if workers < 2:
        return export_run(manifest, _documents_in(lines, 0, None), endpoint, timeout=timeout)
    return _export(manifest, endpoint, timeout,
                   lambda sdk, resource: _events_in_workers(manifest, lines, workers, endpoint, timeout, resource))


_UNITS_PER_WORKER = 25_000  # below this a worker's start (~0.3 s of imports) costs more than it saves
_MAX_WORKERS = 4


def _worker_count(lines: Path) -> int:
    """One worker per core (up to `_MAX_WORKERS`) while each gets `_UNITS_PER_WORKER` units; 1: no workers."""
    cores = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, _MAX_WORKERS)
    try:
        if cores < 2 or lines.stat().st_size < _UNITS_PER_WORKER * 2 * 100:  # (a unit's line is over 100 bytes)
            return 1
        with open(lines, "rb") as handle:
            units = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return 1
    return max(1, min(cores, units // _UNITS_PER_WORKER))


@dataclass
class _Events:
    """What one sender of events did: how many it sent (linked to a unit's own trace), the verdicts it
    counted, the first thing that went wrong, and what the SDK logged meanwhile."""

    count: int = 0
    linked: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))
    failure: str | None = None
    messages: list[str] = field(default_factory=list)

    def add(self, other: _Events) -> None:
        self.count, self.linked = self.count + other.count, self.linked + other.linked
        for verdict, number in other.counts.items():
            self.counts[verdict] = self.counts.get(verdict, 0) + number
        self.failure = self.failure or other.failure
        self.messages += other.messages


def _export(manifest: RunManifest, endpoint: str, timeout: float, send_events: Callable[[Any, Any], _Events]) -> Exported:
    """The run's span, after `send_events(sdk, resource)` has sent the events (in this process or in workers)."""
    from assay.core.gcpolicy import collection_sized_for_runs

    sdk = _sdk()
    endpoint = check_endpoint(endpoint)
    _check_headers()
    _check_connects(endpoint, manifest.run_id, timeout)
    trace_id, span_id = _ids(manifest.run_id)

    class RunIds(sdk["IdGenerator"]):  # the run's span keeps the same ids however often it is exported
        def generate_trace_id(self) -> int:
            return trace_id

        def generate_span_id(self) -> int:
            return span_id

    spans = _Sending(sdk["OTLPSpanExporter"](endpoint=f"{endpoint}/v1/traces", timeout=timeout), 1)
    resource = sdk["Resource"].create({"service.name": "assay", "assay.run.id": manifest.run_id, "assay.run.kind": manifest.kind})
    tracer_provider = sdk["TracerProvider"](resource=resource, id_generator=RunIds(), shutdown_on_exit=False)
    tracer_provider.add_span_processor(sdk["SimpleSpanProcessor"](spans))
    start = _nanoseconds(manifest.created_at)
    end = _nanoseconds(manifest.created_at, manifest.duration_seconds or 0.0)
    with _sdk_messages() as messages, collection_sized_for_runs():  # the SDK makes several objects per event
        span = tracer_provider.get_tracer("assay").start_span("assay.run", kind=sdk["SpanKind"].INTERNAL, start_time=start)
        events = send_events(sdk, resource)
        span.set_attributes(_run_attributes(manifest, events.counts))
        if manifest.success is False:
            span.set_status(sdk["Status"](sdk["StatusCode"].ERROR, "the run's gates failed"))
        span.end(end_time=end)
        tracer_provider.shutdown()
    failure = spans.failure or events.failure
    if failure is not None:
        logged = [*events.messages, *messages]
        if _unanswered(logged):  # (the SDK's "Failed to export logs batch due to timeout, max retries or shutdown.")
            raise ExportError(f"exporting {manifest.run_id} to {shown_endpoint(endpoint)} failed: the collector did not "
                              f"answer within {timeout:g} s; when it is only slow, give it longer: assay runs export "
                              f"{manifest.run_id} --otlp {shlex.quote(shown_endpoint(endpoint))} --timeout {max(60, 4 * timeout):g}")
        why = "; ".join(dict.fromkeys(message.strip() for message in logged if message.strip()))[:500]
        raise ExportError(f"exporting {manifest.run_id} to {shown_endpoint(endpoint)} failed: {failure}"
                          + (f" ({why})" if why else "") + _what_to_do(logged, endpoint))
    return Exported(shown_endpoint(endpoint), manifest.run_id, f"{trace_id:032x}", f"{span_id:016x}", events.count,
                    events.linked)


def _unanswered(logged: list[str]) -> bool:
    """Whether every request that failed went unanswered for the whole timeout: the SDK gave up on it ("due to
    timeout") without an answer to retry on (a 503's "Transient error Service Unavailable") or a status code."""
    said = " ".join(logged)
    return "due to timeout" in said and "Transient error" not in said and "code:" not in said


def _what_to_do(logged: list[str], endpoint: str) -> str:
    """The fix for a collector's answer that has one: the credentials it asks for, or the URL it does not serve."""
    said = " ".join(logged)
    if "code: 401" in said or "code: 403" in said:
        return ("; the collector wants credentials: give them in OTEL_EXPORTER_OTLP_HEADERS, e.g. "
                "OTEL_EXPORTER_OTLP_HEADERS='authorization=Bearer TOKEN'")
    if "code: 404" in said or "code: 405" in said:
        return (f"; {shown_endpoint(endpoint)} does not take OTLP/HTTP at /v1/traces and /v1/logs: give the collector's "
                "OTLP/HTTP base URL (its port is 4318 by default; 4317 is OTLP/gRPC)")
    return ""


def _send_events(sdk: Any, manifest: RunManifest, units: Iterable[Any], endpoint: str, timeout: float, resource: Any) -> _Events:
    """One event per unit (of the run's `resource`), in the run span's trace or the unit's own, sent in
    batches; a unit that cannot be read stops the export (what was made before it is not sent)."""
    trace_module, log_record, readable = sdk["trace"], sdk["LogRecord"], sdk["ReadableLogRecord"]

    def context_of(trace_id: int, span_id: int, *, remote: bool) -> Any:
        span_context = sdk["SpanContext"](trace_id, span_id, is_remote=remote, trace_flags=sdk["TraceFlags"](sdk["TraceFlags"].SAMPLED))
        return trace_module.set_span_in_context(sdk["NonRecordingSpan"](span_context))

    run_context = context_of(*_ids(manifest.run_id), remote=False)  # the run span's, wherever it is sent from
    event_resource, scope = _hashed_once(sdk["Resource"], resource), sdk["InstrumentationScope"]("assay")
    limited = _limited(sdk)
    end = _nanoseconds(manifest.created_at, manifest.duration_seconds or 0.0)
    sending = _Sending(sdk["OTLPLogExporter"](endpoint=f"{endpoint}/v1/logs", timeout=timeout), _BATCH, background=True)
    done = _Events()
    counts = done.counts
    contexts: dict[tuple[str, str], Any] = {}
    observed = time.time_ns()
    sent = False
    try:
        for unit in units:
            if type(unit) is not dict:
                unit = unit.to_json() if isinstance(unit, UnitResult) else dict(unit)
            context = run_context
            own = unit_trace(unit)
            if own is not None:
                context = contexts.get(own)
                if context is None:
                    context = contexts[own] = context_of(int(own[0], 16), int(own[1], 16), remote=True)
                done.linked += 1
            sending.add(readable(log_record(
                timestamp=end, observed_timestamp=observed, context=context, event_name=EVENT_NAME,
                attributes=limited(event_attributes(unit, manifest)),
            ), event_resource, scope))
            done.count += 1
            counts[unit["verdict"]] = counts.get(unit["verdict"], 0) + 1
            if sending.failure is not None:
                break
        sent = True
    finally:
        sending.shutdown(send_pending=sent)  # a unit that could not be read stops the export
    done.failure = sending.failure
    return done


def _parts(lines: Path, count: int) -> list[tuple[int, int]]:
    """`count` byte ranges of the file that together hold every line once, each starting at a line."""
    size = lines.stat().st_size
    starts = [0]
    with open(lines, "rb") as handle:
        for number in range(1, count):
            handle.seek(max(size * number // count - 1, starts[-1]))
            handle.readline()  # to the start of the next line
            starts.append(max(handle.tell(), starts[-1]))
    return list(zip(starts, [*starts[1:], size]))


def _documents_in(lines: Path, start: int, end: int | None) -> Iterator[dict[str, Any]]:
    """The unit documents of the lines in bytes `start`..`end` (None: to its end) of a record's `units.jsonl`. A line
    that is not a unit's (a record cut short, or edited) is an `ExportError` naming the file and where the line
    starts; the index keeps the run's counts, so `runs show` does not tell of it."""
    from assay.core.record import decode_json

    try:
        handle = open(lines, "rb")  # noqa: SIM115 - closed below, once the lines are read
    except OSError as error:
        raise ExportError(f"{lines} cannot be read ({error.strerror or error}): the run's record is damaged; nothing "
                          "was sent") from None
    with handle:
        handle.seek(start)
        position = start
        for line in handle:
            if end is not None and position >= end:
                return
            at, position = position, position + len(line)
            if line.isspace():
                continue
            try:
                document = decode_json(line)
                if type(document) is not dict or document.get("verdict") not in VERDICTS:
                    raise ValueError("not a unit: no verdict")
            except ValueError as error:  # (a JSON or Unicode decoding error is one)
                raise ExportError(f"{lines}: the line at byte {at} is not a unit's ({error}): the run's record is damaged "
                                  "(cut short, or edited), and the export stopped there without the run's span. Mend "
                                  "or remove that line to export the run") from None
            yield document


def _events_in_workers(manifest: RunManifest, lines: Path, workers: int, endpoint: str, timeout: float, resource: Any) -> _Events:
    """The events sent by `workers` processes at once, each given one part of the record's lines (an
    interrupt or a failure here stops them all)."""
    import subprocess
    import tempfile

    import assay

    # The workers import this copy of assay: its folder goes first on their path unless it is there already
    # (site-packages is: put first, it would shadow the standard library with any backport installed there).
    source = str(Path(assay.__file__).resolve().parents[1])
    command = [sys.executable, "-c", "import os, sys; source = sys.argv[1]; "
               "sys.path[:0] = [] if any(os.path.realpath(entry or '.') == source for entry in sys.path) else [source]; "
               "from assay.core.interop.otlp_export import worker_main; worker_main()", source]
    started: list[tuple[subprocess.Popen[bytes], Any]] = []
    done = _Events()
    try:
        for start, end in _parts(lines, workers):
            job = {"manifest": manifest.to_json(), "lines": str(lines), "start": start, "end": end, "endpoint": endpoint,
                   "timeout": timeout, "resource": [dict(resource.attributes), resource.schema_url]}
            errors = tempfile.TemporaryFile()  # (a pipe nobody reads while the others run could fill)
            worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors)
            started.append((worker, errors))
            assert worker.stdin is not None
            with worker.stdin:
                worker.stdin.write(json.dumps(job).encode())
        for worker, errors in started:
            assert worker.stdout is not None
            output = worker.stdout.read()
            worker.wait()
            try:  # (its last line: anything a library printed before it is not the report)
                report = json.loads(output.splitlines()[-1])
            except (ValueError, IndexError):
                errors.seek(0)
                said = errors.read().decode(errors="replace").strip().splitlines()
                raise ExportError(f"exporting {manifest.run_id}: an export worker failed: "
                                  f"{said[-1] if said else f'exit status {worker.returncode}'}") from None
            if "error" in report:
                raise ExportError(report["error"])
            done.add(_Events(**report))
    finally:
        for worker, errors in started:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
            if worker.stdout is not None:
                worker.stdout.close()
            errors.close()
    return done


def worker_main() -> None:
    """An export worker (see `_events_in_workers`): the job as JSON on stdin, what it did as JSON on stdout."""
    from dataclasses import asdict

    from assay.core.gcpolicy import collection_sized_for_runs

    job = json.loads(sys.stdin.buffer.read())
    manifest = RunManifest.from_json(job["manifest"])
    units = _documents_in(Path(job["lines"]), job["start"], job["end"])
    sdk = _sdk()
    with _sdk_messages() as messages, collection_sized_for_runs():  # (the run's resource as its span has it)
        try:
            done = _send_events(sdk, manifest, units, job["endpoint"], job["timeout"], sdk["Resource"](*job["resource"]))
        except ExportError as error:  # a damaged line of its part: said by the command, as one process says it
            print(json.dumps({"error": str(error)}))
            return
    done.messages = messages
    print(json.dumps(asdict(done)))


def export_after_run(record: Path, home: Path | None) -> None:
    """The pipeline's hook: export the run just recorded when the project asks for it. Whatever goes
    wrong is one warning line on stderr; the run's exit code never changes."""
    endpoint = None
    try:
        endpoint = configured_endpoint(home)
        if endpoint is None:
            return
        from assay.core.record import MANIFEST_FILE

        manifest = RunManifest.from_json(json.loads((record / MANIFEST_FILE).read_text(encoding="utf-8")))
        export_record(manifest, record, endpoint, timeout=5.0)
    except KeyboardInterrupt:
        # The run is recorded; running the command again finds it done (an import: "Already imported") and
        # exports nothing, so the way to send it is said here, then Ctrl-C goes on as it would.
        if endpoint is not None:
            shown = shown_endpoint(endpoint)
            print(f"Warning: run not exported to {shown}: interrupted (Ctrl-C); send it with: assay runs export "
                  f"{record.name} --otlp {shlex.quote(shown)}", file=sys.stderr)
        raise ExportInterrupted from None
    except AssayError as error:
        print(f"Warning: run not exported{_to(endpoint, str(error))}: {error}", file=sys.stderr)
    except Exception as error:  # noqa: BLE001 - an export must never change a run's outcome
        print(f"Warning: run not exported{_to(endpoint, str(error))}: {type(error).__name__}: {error}", file=sys.stderr)


class ExportInterrupted(KeyboardInterrupt):
    """Ctrl-C during the export that follows a recorded run: Ctrl-C as ever, and the run itself is kept (an
    import that says so need not ask for the file to be imported again)."""


def _to(endpoint: str | None, said: str) -> str:
    """` to <endpoint>` for the warning, unless what went wrong names it already."""
    return f" to {shown_endpoint(endpoint)}" if endpoint and shown_endpoint(endpoint) not in said else ""
