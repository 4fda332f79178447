"""The run's OTLP/HTTP trace receiver: `POST …/v1/traces` only, on its own thread and event loop.

Its own loop, so an app inside the run's process may export synchronously (a SimpleSpanProcessor)
without deadlocking the loop it would otherwise wait on. aiohttp's low-level server (a dependency
already, with a C HTTP parser) costs a fraction of Starlette on uvicorn's pure-Python h11 per request.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from assay.agent.traces.otlp import MAX_BODY_BYTES, OtlpError, decode_export, export_reply, spans_of_request
from assay.errors import ConfigError
from assay.web.hosts import host_is_allowed, split_host_header

__all__ = ["MAX_SPANS_PER_RUN", "TRACES_PATH", "TraceReceiver", "is_loopback"]

TRACES_PATH = "/v1/traces"
ATTEMPT_PREFIX = "/attempts/"
_OTHER_SIGNALS = ("/v1/metrics", "/v1/logs", "/v1/profiles")  # what OTEL_EXPORTER_OTLP_ENDPOINT also gets, unread
_MAX_COMPRESSED = MAX_BODY_BYTES
MAX_SPANS_PER_RUN = 200_000  # spans one run takes in; later exports are answered 413 (memory, not use)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def bind_socket(host: str, port: int, where: str = "[tool.assay.telemetry]") -> socket.socket:
    """A listening TCP socket; a fixed port that is taken is the project's to fix, so it is a ConfigError
    naming `where` (the file and table the port was set in)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # Reuse only a port left in TIME_WAIT by an earlier run, never one another socket listens on.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError as error:
        sock.close()
        address = f"{host}:{port}" if port else host  # port 0 is no port anyone chose
        if error.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"the OTLP trace receiver cannot listen on {address}: the port is in use "
                f"({where} port = {port}); stop what holds it or remove the fixed port"
            ) from None
        if host != "127.0.0.1":  # an address only `--telemetry-host` gives: one this machine may not have
            raise ConfigError(f"the OTLP trace receiver cannot listen on {address} (--telemetry-host): "
                              f"{error.strerror or error}; give an address of this machine, like 127.0.0.1 (the "
                              "default) or 0.0.0.0 (every interface)") from None
        raise ConfigError(f"the OTLP trace receiver cannot listen on {address}: {error.strerror or error}") from None
    sock.setblocking(False)
    return sock


class TraceReceiver:
    """Serves OTLP/HTTP exports to `sink(spans, token)`; `token` is the attempt an attempt-scoped
    endpoint (`/attempts/<token>/v1/traces`) names, None for the run's own `/v1/traces`."""

    def __init__(
        self, sink: Callable[[list[dict[str, Any]], str | None], Any], host: str = "127.0.0.1", port: int = 0, *,
        names: Collection[str] = (), warn: Callable[[str, str], None] | None = None,
        max_spans: int = MAX_SPANS_PER_RUN, where: str = "[tool.assay.telemetry]",
    ) -> None:
        """`names`: Host names accepted besides loopback ones (the advertised host, a non-loopback bind);
        `warn(code, message)` hears the first refused export of each status (404, 400, 415, 413): an export sent to
        the wrong path does not hide that others are refused for their bodies, and a thousand alike say it once."""
        self._sink = sink
        self.host = host
        self._sock = bind_socket(host, port, where)
        self.port = self._sock.getsockname()[1]
        self._names = frozenset(name.strip("[]").lower() for name in names)
        self._any_ip = host in ("0.0.0.0", "::", "") and not self._names
        self._warn = warn
        self._statuses_said: set[int] = set()
        self._spans_left = max_spans
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self.requests = 0
        self.in_flight = 0
        self.refused = 0
        self.last_request = 0.0  # time.monotonic() when the latest export arrived (0: none yet)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="assay-otlp-receiver", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._failure is not None:
            raise ConfigError(f"the OTLP trace receiver did not start: {self._failure}")

    def stop(self) -> None:
        loop, stopped = self._loop, self._stopped
        if loop is not None and stopped is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stopped.set)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        self._sock.close()

    def _serve(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._main())
        except BaseException as error:  # noqa: BLE001 - reported to start(); a dead receiver only loses spans
            self._failure = error
            self._ready.set()
        finally:
            loop.close()

    async def _main(self) -> None:
        from aiohttp import web

        self._stopped = asyncio.Event()
        # auto_decompress off: the body is inflated here, with a size cap, whatever its header says. A request
        # aiohttp cannot parse as HTTP never reaches `_handle`: its logger says so, as one warning of the run's.
        server = web.Server(self._handle, auto_decompress=False, access_log=None, logger=_warning_logger(self))
        runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.SockSite(runner, self._sock)
        await site.start()
        self._ready.set()
        try:
            await self._stopped.wait()
        finally:
            await runner.cleanup()

    # -- requests -------------------------------------------------------------------------------
    def _host_allowed(self, header: str | None) -> bool:
        """The Host rule of every assay server (a DNS-rebinding page is refused), plus the names this
        receiver was told it is reached by; a wildcard bind with no advertised name takes any IP literal."""
        if host_is_allowed(header, self.port, self._names):
            return True
        split = split_host_header(header) if self._any_ip else None
        if split is None or split[1] != self.port:
            return False
        try:
            ipaddress.ip_address(split[0])
        except ValueError:
            return False
        return True

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        if not self._host_allowed(request.headers.get("Host")):
            return web.Response(status=400, text="the Host header must name this receiver's address and port\n")
        path = request.path
        prefix = path[: -len(TRACES_PATH)] if path.endswith(TRACES_PATH) else None
        token = prefix[len(ATTEMPT_PREFIX):] if prefix else None
        if prefix is None or (token is not None and (not prefix.startswith(ATTEMPT_PREFIX) or "/" in token)):
            # A trace export sent to the wrong path (the app's endpoint lacks /v1/traces) is said once; an SDK that
            # also exports metrics or logs to the base URL it was given is no mistake of the app's tracing.
            if request.method == "POST" and not path.endswith(_OTHER_SIGNALS):
                self._refused(404, f"POST {path[:200]}: only …/v1/traces is served here (an "
                                   "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the whole URL, /v1/traces included)")
            return web.Response(status=404, text="only /v1/traces is served here\n")
        if request.method != "POST":
            return web.Response(status=405, headers={"Allow": "POST"}, text="POST only\n")
        self.requests += 1
        self.in_flight += 1
        self.last_request = time.monotonic()
        try:
            body = await _read_body(request)
            encoding, message = decode_export(body, request.headers.get("Content-Type"),
                                              request.headers.get("Content-Encoding"))
            del body
            spans = list(spans_of_request(message))
            if len(spans) > self._spans_left:
                raise OtlpError(413, f"this run has taken in {MAX_SPANS_PER_RUN:,} spans, as many as one run keeps")
            self._spans_left -= len(spans)
            self._sink(spans, token)
        except OtlpError as error:
            return self._refuse(error.status, str(error))
        except asyncio.IncompleteReadError:
            return self._refuse(400, "the body ended early")
        except Exception as error:  # noqa: BLE001 - a bug of ours still answers, and says so in one line
            return self._refuse(500, f"internal error: {type(error).__name__}: {error}")
        finally:
            self.in_flight -= 1
        reply, media = export_reply(encoding)
        return web.Response(body=reply, content_type=media)

    def _refuse(self, status: int, reason: str) -> Any:
        from aiohttp import web

        self._refused(status, reason)
        return web.Response(status=status, text=f"{reason}\n")

    def _refused(self, status: int, reason: str) -> None:
        self.refused += 1
        if self._warn is not None and status not in self._statuses_said:
            self._statuses_said.add(status)
            code = "telemetry-export-too-large" if status == 413 else "telemetry-export-refused"
            self._warn(code, f"the OTLP trace receiver refused an export ({status}): {reason}; its spans are not "
                             "in the waterfall (docs/limits.md)")


class _RefusedRequests(logging.Handler):
    """aiohttp's report of a request it could not parse (a bad Content-Length, a broken header), which it
    logs with a traceback and answers 400 itself: one refused export of the receiver's instead."""

    def __init__(self, receiver: TraceReceiver) -> None:
        super().__init__(logging.WARNING)  # aiohttp says a non-HTTP client's bytes at debug level: not an export
        self._receiver = receiver

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        said = getattr(error, "message", None) or (str(error) if error is not None else record.getMessage())
        reason = " ".join(str(said).split()).rstrip(" ^")
        self._receiver._refused(400, f"the request is not valid HTTP: {reason}")


def _warning_logger(receiver: TraceReceiver) -> logging.Logger:
    # A logger of its own, outside logging's tree: nothing reaches the root logger's (or Python's last-resort)
    # handler, which would print a traceback in the middle of a run's output.
    logger = logging.Logger("assay.otlp-receiver")
    logger.propagate = False
    logger.addHandler(_RefusedRequests(receiver))
    return logger


async def _read_body(request: Any) -> bytes:
    """The raw body, refused past the cap whether or not it declared its length (chunked exports)."""
    length = request.content_length
    if length is not None:
        if length > _MAX_COMPRESSED:
            raise OtlpError(413, "the export is too large")
        return await request.content.readexactly(length) if length else b""
    chunks, size = [], 0
    while chunk := await request.content.readany():
        size += len(chunk)
        if size > _MAX_COMPRESSED:
            raise OtlpError(413, "the export is too large")
        chunks.append(chunk)
    return b"".join(chunks)
