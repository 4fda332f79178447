"""The shared local web app: a Starlette factory guarded for loopback use, JSON errors and serving.

Every assay web UI (video review, results viewer) is built here: it binds 127.0.0.1 only, refuses
requests whose Host is not the bound loopback address, adds the security headers, answers errors
with one JSON envelope, checks the per-launch write token and serves a static single-page app.
"""

from __future__ import annotations

import errno
import json
import secrets
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assay.web.hosts import host_is_allowed

__all__ = [
    "ALLOWED_METHODS",
    "CONTENT_SECURITY_POLICY",
    "JSON_MEDIA_TYPE",
    "LOOPBACK_HOST",
    "SECURITY_HEADERS",
    "ApiError",
    "Binding",
    "bind_loopback_socket",
    "create_web_app",
    "error_response",
    "host_is_allowed",
    "json_response",
    "new_write_token",
    "read_json_body",
    "require_write_token",
    "serve",
    "unhandled_error",
]

LOOPBACK_HOST = "127.0.0.1"
JSON_MEDIA_TYPE = "application/json; charset=utf-8"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "media-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
)
# Everything else (POST, DELETE, PATCH, OPTIONS, TRACE, CONNECT, ...) is refused before routing.
ALLOWED_METHODS = frozenset({"GET", "HEAD", "PUT"})
_HASHED_ASSET_MARK = 8  # `name-XXXXXXXX.ext`: at least this many characters of hash


class ApiError(Exception):
    """An error answered as `{"error": {"code", "message", "details"}}` with an HTTP status."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Sequence[Mapping[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = [{"path": item.get("path"), "message": str(item.get("message", ""))} for item in details]
        self.headers = dict(headers or {})


@dataclass
class Binding:
    """Where the server listens; the Host check needs the port, known only once the socket is bound."""

    port: int | None = None
    host: str = LOOPBACK_HOST
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"


def new_write_token() -> str:
    return secrets.token_urlsafe(32)


# ---------------------------------------------------------------------------------------------
# Responses


def json_response(payload: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """UTF-8 JSON (non-ASCII kept), never cached; NaN and infinities are refused, not written."""
    body = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    merged = {"cache-control": "no-store", **{key.lower(): value for key, value in (headers or {}).items()}}
    return Response(body, status_code=status, media_type=JSON_MEDIA_TYPE, headers=merged)


def error_response(error: ApiError) -> Response:
    payload = {"error": {"code": error.code, "message": error.message, "details": error.details}}
    return json_response(payload, status=error.status, headers=error.headers)


# ---------------------------------------------------------------------------------------------
# Request checks


def require_write_token(request: Request, expected: str, header: str) -> None:
    """403 `invalid_write_token` unless the request carries the per-launch token."""
    supplied = request.headers.get(header)
    if supplied is None or not secrets.compare_digest(supplied.encode("utf-8", "surrogateescape"), expected.encode()):
        raise ApiError(403, "invalid_write_token", f"The {header} header is missing or does not match this server.")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


async def read_json_body(request: Request, *, max_bytes: int) -> Any:
    """The request's JSON body after the media type (415), length (400/413) and syntax (400) checks."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(415, "unsupported_media_type", "The request body must be application/json.")
    length_header = request.headers.get("content-length")
    if length_header is None or not (length_header.isascii() and length_header.isdigit()):
        raise ApiError(400, "invalid_content_length", "The request needs a valid Content-Length header.")
    length = int(length_header)
    if length > max_bytes:
        raise ApiError(413, "request_too_large", f"The request body is larger than {max_bytes} bytes.")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > length:
            raise ApiError(400, "invalid_content_length", "The request body is longer than its Content-Length.")
    if len(body) != length:
        raise ApiError(400, "invalid_content_length", "The request body is shorter than its Content-Length.")
    try:
        text = bytes(body).decode("utf-8")
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ApiError(400, "malformed_json", "The request body is nested too deeply.") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise ApiError(400, "malformed_json", f"The request body is not valid UTF-8 JSON: {error}") from None


# ---------------------------------------------------------------------------------------------
# The guard in front of every route


class LoopbackGuard:
    """Pure ASGI middleware: Host check, method filter and security headers on every response."""

    def __init__(self, app: ASGIApp, binding: Binding) -> None:
        self.app = app
        self.binding = binding

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":  # no web UI of ours uses websockets
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (key, value)
                    for key, value in message.get("headers", [])
                    if key.decode("latin-1").lower() not in {name for name, _ in SECURITY_HEADERS}
                ]
                headers += [(name.encode("latin-1"), value.encode("latin-1")) for name, value in SECURITY_HEADERS]
                message = {**message, "headers": headers}
            await send(message)

        host = _header(scope, b"host")
        if not host_is_allowed(host, self.binding.port):
            response = error_response(
                ApiError(400, "invalid_host", "The Host header must name this server's loopback address and port.")
            )
            await response(scope, receive, send_with_headers)
            return
        if scope["method"] not in ALLOWED_METHODS:
            response = error_response(
                ApiError(405, "method_not_allowed", f"Method {scope['method']} is not allowed.", headers={"allow": "GET, HEAD, PUT"})
            )
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


# What a request's own content can make a handler raise (`at=1e308` overflowing a seek, a NUL byte
# in a path, text that does not decode): the request is bad, not the server.
REQUEST_ERRORS: tuple[type[BaseException], ...] = (ValueError, ArithmeticError, ClientDisconnect)


def unhandled_error(error: Exception) -> ApiError:
    """The JSON answer for an exception no route turned into an `ApiError`."""
    if isinstance(error, OSError) and error.errno == errno.ENAMETOOLONG:
        # A URL path looked up on disk (a static asset, a case file) that no file name can be.
        return ApiError(404, "route_not_found", "Nothing matches this path: it is longer than a file name can be.")
    if isinstance(error, REQUEST_ERRORS):
        return ApiError(400, "invalid_request", f"The request could not be handled: {type(error).__name__}: {error}")
    return ApiError(500, "internal_error", f"Unexpected server error: {type(error).__name__}: {error}")


class UnhandledErrorGuard:
    """Pure ASGI middleware: an exception that escapes every route becomes one JSON error.

    Starlette's catch-all for `Exception` answers and then re-raises, so the server printed a
    traceback for each such request; here it ends with the answer. A request error is only
    answered (4xx); a fault of the server also gets one line on stderr, with the traceback under
    `assay --debug`.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as error:  # noqa: BLE001 - every request ends with an answer, never a traceback
            answer = unhandled_error(error)
            if answer.status >= 500:
                _report_server_fault(scope, error)
            if not started:  # once a body is on its way, the connection closing is the only signal left
                await error_response(answer)(scope, receive, send)


def _report_server_fault(scope: Scope, error: Exception) -> None:
    import contextlib
    import sys
    import traceback

    from assay.errors import show_tracebacks

    with contextlib.suppress(Exception):  # stderr itself failing must not fail the answer
        if show_tracebacks():
            traceback.print_exception(error, file=sys.stderr)
        else:
            print(
                f"assay: error answering {scope.get('method')} {scope.get('path')!a}: {type(error).__name__}: {error}",
                file=sys.stderr,
            )


def _header(scope: Scope, name: bytes) -> str | None:
    values = [value for key, value in scope.get("headers", []) if key.lower() == name]
    if len(values) != 1:  # two Host headers are as suspicious as none
        return None
    return values[0].decode("latin-1")


# ---------------------------------------------------------------------------------------------
# Static single-page app


def _is_hashed_asset(name: str) -> bool:
    stem = name.split(".", 1)[0]
    _, dash, digest = stem.rpartition("-")
    return bool(dash) and len(digest) >= _HASHED_ASSET_MARK and digest.isalnum()


def static_endpoint(static_dir: Path) -> Callable[[Request], Any]:
    """GET of any non-API path: the asset if it exists inside `static_dir`, else `index.html`."""
    root = static_dir.resolve()

    async def endpoint(request: Request) -> Response:
        relative = request.path_params.get("path", "")
        candidate = (root / relative).resolve() if relative else root / "index.html"
        inside = candidate == root or root in candidate.parents
        if not inside or not candidate.is_file():
            candidate = root / "index.html"
        cache = "public, max-age=31536000, immutable" if _is_hashed_asset(candidate.name) else "no-store"
        media_type = _STATIC_TYPES.get(candidate.suffix.lower())
        return FileResponse(candidate, media_type=media_type, headers={"cache-control": cache})

    return endpoint


_STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": JSON_MEDIA_TYPE,
}


# ---------------------------------------------------------------------------------------------
# The app


def create_web_app(
    *,
    api_routes: Iterable[BaseRoute],
    static_dir: Path,
    binding: Binding,
    api_prefix: str = "/api",
) -> Starlette:
    """A guarded Starlette app: `api_routes`, a JSON 404 for other API paths, then the static app."""

    async def unknown_api_route(request: Request) -> Response:
        raise ApiError(404, "route_not_found", f"No API route matches {request.method} {request.url.path}.")

    routes = [
        *api_routes,
        Route(api_prefix, unknown_api_route, methods=sorted(ALLOWED_METHODS)),
        Route(api_prefix + "/{rest:path}", unknown_api_route, methods=sorted(ALLOWED_METHODS)),
        Route("/{path:path}", static_endpoint(static_dir), methods=["GET", "HEAD"]),
    ]

    async def on_api_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, ApiError)
        return error_response(error)

    async def on_http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        if error.status_code == 405:
            return error_response(ApiError(405, "method_not_allowed", f"Method {request.method} is not allowed here."))
        if error.status_code == 404:
            return error_response(ApiError(404, "route_not_found", f"Nothing matches {request.url.path}."))
        return error_response(ApiError(error.status_code, "http_error", str(error.detail)))

    app = Starlette(routes=routes, exception_handlers={ApiError: on_api_error, HTTPException: on_http_error})
    # Added first, so it sits inside the guard: its answers get the security headers too.
    app.add_middleware(UnhandledErrorGuard)
    app.add_middleware(LoopbackGuard, binding=binding)
    return app


# ---------------------------------------------------------------------------------------------
# Serving


def bind_loopback_socket(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1 (`port` 0 picks a free one); OSError when it cannot bind."""
    # proto IPPROTO_TCP matters: asyncio turns Nagle off only on sockets that say they are TCP,
    # and with Nagle on, every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK_HOST, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(app: ASGIApp, sock: socket.socket) -> None:
    """Serve on an already bound socket until interrupted; request logging stays silent.

    A Ctrl-C stops the server gracefully; uvicorn then re-raises the signal, which the caller
    sees as KeyboardInterrupt.
    """
    import uvicorn

    from assay.core.stdout_guard import stop_when_the_reader_leaves

    stop_when_the_reader_leaves()  # (`assay view | head -1`: it writes nothing more, so nothing else would stop it)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        proxy_headers=False,
        server_header=False,
        h11_max_incomplete_event_size=64 * 1024,
    )
    server = uvicorn.Server(config)
    server.run(sockets=[sock])


def serve_locally(port: int, make_app: Callable[[Binding], ASGIApp], url: Callable[[int], str], *,
                  started: Callable[[str], None], say: Callable[[str], None], open_browser: bool) -> None:
    """Bind 127.0.0.1:`port`, call `started(url(port))`, open a browser when asked (one that cannot be
    opened is said, never fatal) and serve `make_app(binding)` until Ctrl-C. A port that cannot be bound
    is an `AssayError` naming why."""
    from assay.errors import AssayError

    try:
        sock = bind_loopback_socket(port)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:  # the OS's words first (GlassKit's review prints them), then the fix
            raise AssayError(f"{error} (port {port} on 127.0.0.1; give another --port, or --port 0 for a free one)") from error
        raise AssayError(str(error)) from error
    try:
        binding = Binding(port=sock.getsockname()[1])
        app = make_app(binding)
        address = url(binding.port or 0)
        started(address)
        if open_browser:
            _open_browser(address, say)
        serve(app, sock)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a server is meant to end: exit 0 (GlassKit's review), not an interrupted command's 130
    finally:
        sock.close()


def _open_browser(url: str, say: Callable[[str], None]) -> None:
    import webbrowser

    try:
        opened = webbrowser.open(url)
    except Exception as error:  # noqa: BLE001 - any browser failure is reported, never fatal
        say(f"Could not open browser: {error}")
        return
    if not opened:
        say("Could not open browser automatically; use the URL above.")
