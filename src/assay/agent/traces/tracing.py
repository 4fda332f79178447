"""One run's tracing: its receiver and trace hub, the `ctx.telemetry` each turn gets, and the
spans each attempt's record keeps.

`execute` makes it current (`ACTIVE`) for the run's tasks; an attempt finds it there, so nothing in
the scheduler has to carry it. Spans only ever reach the record and the waterfall: no assertion,
verdict or error reads them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.agent.context import Telemetry
from assay.agent.traces.active import ACTIVE
from assay.agent.traces.attribution import Notice, TraceHub, TurnTrace
from assay.agent.traces.config import TelemetryConfig
from assay.agent.traces.mapping import map_document
from assay.agent.traces.otlp import OtlpError, decode_export, spans_of_request
from assay.agent.traces.receiver import ATTEMPT_PREFIX, TRACES_PATH, TraceReceiver, is_loopback

__all__ = [
    "ACTIVE", "AttemptTracing", "RunTracing", "no_spans_message", "sdk_installed", "telemetry_env", "unresolved_host",
    "unattributed_message",
]

BATCH_DELAY_MS = 100  # OTEL_BSP_SCHEDULE_DELAY handed to child processes
SETTLE_QUIET_S = 0.25  # nothing for this long after the last turn and the last export: the late spans are in
SETTLE_LIMIT_S = 2.0


def telemetry_env(base: str, traceparent: str | None = None) -> dict[str, str]:
    """OTEL_* variables for a child process: the SDK appends /v1/traces to the base endpoint itself.
    A short batch delay, so a batching app exports its last spans soon after its turn (well within
    the SETTLE_QUIET_S the run waits for them at its end)."""
    env = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": base,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": base + TRACES_PATH,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": str(BATCH_DELAY_MS),
    }
    if traceparent is not None:
        env["TRACEPARENT"] = traceparent
    return env


def sdk_installed() -> bool:
    """Whether this environment has the OpenTelemetry SDK and its OTLP/HTTP exporter (the `otel` extra)."""
    try:
        return all(importlib.util.find_spec(name) is not None
                   for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"))
    except ImportError:  # a parent package that is not there at all
        return False


def tracing_switched_off(environ: Mapping[str, str] | None = None) -> str | None:
    """The variable of the run's environment (which its apps inherit) that keeps the OpenTelemetry SDK from
    exporting any span, as `NAME=value`; None when none does."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return f"OTEL_SDK_DISABLED={env['OTEL_SDK_DISABLED']}"
    if env.get("OTEL_TRACES_SAMPLER", "").strip().lower() == "always_off":
        return f"OTEL_TRACES_SAMPLER={env['OTEL_TRACES_SAMPLER']}"
    return None


def unresolved_host(host: str | None) -> str | None:
    """Why `host` (the name apps are told) cannot be looked up on this machine; None when it can, or is not set."""
    if not host:
        return None
    import socket

    try:
        socket.getaddrinfo(host.strip("[]"), None)
    except (OSError, UnicodeError) as error:
        return getattr(error, "strerror", None) or str(error) or type(error).__name__
    return None


def no_spans_message(endpoint: str, environ: Mapping[str, str] | None = None) -> str:
    """One line for a run that received no span: what is missing, and where the wiring goes."""
    head = f"no span reached the OTLP trace receiver at {endpoint} in this run, so there is no waterfall: "
    if not sdk_installed():
        return head + ("the OpenTelemetry SDK is not installed in this environment (assay's `otel` extra: pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http), and an "
                       "app outside it must export to ctx.telemetry.endpoint and forward ctx.telemetry.headers "
                       "(docs/agent/traces.md)")
    switched_off = tracing_switched_off(environ)
    if switched_off is not None:
        return head + (f"{switched_off} is set in the run's environment, and an app that inherits it exports no "
                       "span: unset it for the run, or override it in the env the app is started with "
                       "(docs/agent/traces.md)")
    return head + ("export the app's spans to ctx.telemetry.endpoint (a child process: OTEL_EXPORTER_OTLP_ENDPOINT in "
                   "ctx.telemetry.env) and forward ctx.telemetry.headers with each request (docs/agent/traces.md)")


class RunTracing:
    """Started by the run (`start`), consulted by each attempt, finished once every attempt is sealed."""

    def __init__(self, config: TelemetryConfig, warn: Callable[[str, str], None]) -> None:
        self.config = config
        self._warn = warn
        self._loop: asyncio.AbstractEventLoop | None = None
        self.hub = TraceHub(self._notice)
        self.receiver: TraceReceiver | None = None
        self._said: set[str] = set()
        self._mappers: dict[str, tuple[Callable[..., Any], str]] = {}  # attempt id -> its agent's span mapper, the agent
        self.sandbox_receivers_failed: list[str] = []  # why a receiver inside a sandbox did not start, each time

    def map_spans_with(self, attempt_id: str, mapper: Callable[..., Any], agent: str = "") -> None:
        """Tag the attempt's spans with its agent's span mapper when they are collected (mapping.py)."""
        self._mappers[attempt_id] = (mapper, agent)

    def mapped(self, attempt_id: str, document: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        mapper, agent = self._mappers.get(attempt_id) or (None, "")
        mapped = map_document(document, mapper)
        failure = mapped.get("span_mapper_error") if mapped is not None else None
        # Said once per agent, on the run's loop: a second agent's failing mapper is another mistake to fix, and it
        # would otherwise be hidden behind the first one's warning.
        said = f"telemetry-span-mapper-failed:{agent}"
        if failure and said not in self._said:
            self._said.add(said)
            self._warn("telemetry-span-mapper-failed",
                       f"the span mapper of agent {agent!r} raised {failure}, so its spans are in the waterfall "
                       "untagged, as they came (each such attempt's spans document names it: span_mapper_error)")
        return mapped

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        config = self.config
        # Besides loopback names, the Host may be the name apps are told, or a non-loopback bind address.
        names = {name for name in (config.host, config.bind) if name and name not in ("0.0.0.0", "::")}
        receiver = TraceReceiver(self.hub.ingest, config.bind, config.port, names=names, where=config.where,
                                 warn=lambda code, message: self._notice(Notice(code, message), once=False))
        try:
            receiver.start()
        except BaseException:
            receiver.stop()
            raise
        self.receiver = receiver
        if not is_loopback(config.bind):
            self._warn(
                "telemetry-exposed",
                f"the OTLP trace receiver listens on {config.bind}:{receiver.port} without authentication: "
                "anyone who can reach it can add spans to this run's waterfall",
            )

    @property
    def base(self) -> str:
        assert self.receiver is not None
        return f"http://{self.config.advertised_host}:{self.receiver.port}"

    def _notice(self, notice: Notice, *, once: bool = True) -> None:
        """From the receiver's thread: on the run's loop, each code once (`once`), or as often as the caller says it
        (the receiver says each refused status once itself)."""
        if self._loop is None or (once and notice.code in self._said):
            return
        self._said.add(notice.code)
        try:
            self._loop.call_soon_threadsafe(self._warn, notice.code, notice.message)
        except RuntimeError:  # the run's loop is closed: nothing left to tell
            pass

    def for_attempt(self, attempt_id: str, agent: str) -> AttemptTracing:
        base = self.base
        if self.config.scope == "attempt":
            base += ATTEMPT_PREFIX + self.hub.attempt(attempt_id)
        return AttemptTracing(self, attempt_id, agent, base)

    async def settle(self) -> None:
        """Wait (briefly) for exports still in flight or about to arrive, before the records close: until
        nothing has arrived for SETTLE_QUIET_S since the last turn closed and the last export came, which
        outlasts the batch delay `telemetry_env` gives apps (a batching app exports its last spans after
        its turn ended), and at most SETTLE_LIMIT_S."""
        receiver = self.receiver
        if receiver is None:
            return
        deadline = time.monotonic() + SETTLE_LIMIT_S
        while time.monotonic() < deadline:
            latest = max(receiver.last_request, self.hub.last_closed)
            if not receiver.in_flight and time.monotonic() - latest >= SETTLE_QUIET_S:
                return
            await asyncio.sleep(0.01)

    def add_late_spans(self, results: Sequence[Any]) -> None:
        """Spans that arrived after their attempt was sealed go into its record (not the journal's copy).

        A journaled run reads its attempts back from its unit spool (each read is a fresh copy), so
        an attempt that gained spans is written to the spool again, in its slot."""
        late = self.hub.late_attempts()
        if not late:
            return
        replace = getattr(results, "replace", None)  # a journaled run's SpooledAttempts
        for position, result in enumerate(results):
            if result.attempt_id not in late:
                continue
            document = self.hub.late(result.attempt_id)
            if document is None:
                continue
            result.spans = self.mapped(result.attempt_id, document)
            if replace is not None:
                replace(position, result)

    def finish(self, results: Sequence[Any], *, interrupted: bool = False) -> None:
        self.add_late_spans(results)
        hub = self.hub
        if hub.received == 0:
            # A run that sent no turn (every slot carried, skipped or never dispatched) expected no span; nor did
            # one stopped (Ctrl-C) before the app could export what it had (telling it to wire up tracing is wrong).
            if hub.turns_opened and not interrupted:
                self._warn("telemetry-no-spans", self._no_spans_message())
        elif hub.unattributed:
            self._warn("telemetry-unattributed", unattributed_message(hub.unattributed, hub.ambiguous, hub.received,
                                                                     foreign=hub.foreign))

    def _no_spans_message(self) -> str:
        failed = self.sandbox_receivers_failed
        if not failed:
            unresolved = unresolved_host(self.config.host)
            if unresolved is not None:
                # The apps were told a name this machine cannot look up: a typo there, not missing wiring.
                return (f"no span reached the OTLP trace receiver at {self.base + TRACES_PATH} in this run, so there is "
                        f"no waterfall: [tool.assay.telemetry] host {self.config.host!r} does not resolve on this machine "
                        f"({unresolved}), so apps here could not reach the receiver; fix the name, or leave host out "
                        "to tell them the receiver's own address (docs/agent/traces.md)")
            return no_spans_message(self.base + TRACES_PATH)
        # The app had nowhere to export: what to wire up is not the question (the sandbox's own receiver is).
        return (f"no span reached this run: the OTLP receiver inside the sandbox did not start "
                f"({len(failed)} time{'s' if len(failed) > 1 else ''}; {failed[0]}), so there is no waterfall; "
                "give the sandbox a python3, or the host's network (docs/agent/traces.md)")

    def stop(self) -> None:
        if self.receiver is not None:
            self.receiver.stop()


def unattributed_message(unattributed: int, ambiguous: int, received: int, *, foreign: int = 0) -> str:
    """Why spans in traces assay did not start found no turn: several open turns could own them (the app does not
    forward the traceparent), they started in a turn of an agent that forwards it but outside the turn's trace (a new
    root span), or none was open when they started (setup, teardown, between turns, another program)."""
    outside = unattributed - ambiguous - foreign
    why = []
    if ambiguous:
        why.append(f"{ambiguous} started while several turns were open (forward ctx.telemetry.headers so each span "
                   "carries its turn's traceparent)")
    if foreign:
        why.append(f"{foreign} started during a turn of an agent whose other spans carry the turn's traceparent, but in a "
                   "trace of their own (started outside the turn's context, as a new root span: start them inside it, "
                   "or under a span that is)")
    if outside:
        why.append(f"{outside} started while no turn was open (in setup or teardown, between turns, or sent by another "
                   "program exporting to this receiver: a waterfall holds its turns' spans only)")
    return (f"{unattributed} of {received} spans matched no turn, in traces assay did not start, and are not in the "
            f"waterfall: {'; '.join(why)}")


class AttemptTracing:
    """One attempt's side: the setup-time telemetry (no traceparent), a fresh trace per send, its spans."""

    __slots__ = ("run", "attempt_id", "agent", "base", "telemetry")

    def __init__(self, run: RunTracing, attempt_id: str, agent: str, base: str) -> None:
        self.run = run
        self.attempt_id = attempt_id
        self.agent = agent
        self.base = base
        # What setup and teardown see: where to export, no turn to join.
        self.telemetry = Telemetry(base + TRACES_PATH, telemetry_env(base), {})

    def rebase(self, base: str) -> None:
        """Tell the agent `base` from now on: a receiver inside its sandbox (one that cannot reach this
        run's), whose spooled exports come back through `ingest_exports`."""
        self.base = base
        self.telemetry = Telemetry(base + TRACES_PATH, telemetry_env(base), {})

    def ingest_exports(self, exports: Sequence[tuple[str, bytes]]) -> list[str]:
        """Exports (content type, body) collected from the attempt's sandbox, attributed like any other
        (to this attempt's turns only); returns why each export that could not be read was left out."""
        token = self.run.hub.attempt(self.attempt_id)
        problems = []
        for media, body in exports:
            try:
                _, message = decode_export(body, media)
                spans = list(spans_of_request(message))
            except OtlpError as error:
                problems.append(str(error))
                continue
            self.run.hub.ingest(spans, token)
        return problems

    def open_turn(self, session: int, turn: int) -> tuple[TurnTrace, Telemetry]:
        trace = self.run.hub.open_turn(self.attempt_id, self.agent, session, turn)
        traceparent = trace.traceparent
        return trace, Telemetry(self.base + TRACES_PATH, telemetry_env(self.base, traceparent), {"traceparent": traceparent})

    def close_turn(self, trace: TurnTrace) -> None:
        self.run.hub.close_turn(trace)

    def serializes(self) -> asyncio.Lock | None:
        return self.run.hub.serializes(self.agent)

    def collect(self) -> Mapping[str, Any] | None:
        return self.run.mapped(self.attempt_id, self.run.hub.collect(self.attempt_id))
