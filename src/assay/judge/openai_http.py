"""Sending OpenAI-compatible requests: a JSON body out, a JSON or server-sent-event reply back.

`OpenAIHTTP` does it over one pooled aiohttp session per endpoint, without the openai SDK; a caller's
own `openai.AsyncOpenAI` goes behind `SDKTransport`, which offers the same two calls and raises the same errors.
`probe_endpoint` is the judge preflight's one cheap request.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import yarl

from assay import __version__

__all__ = [
    "EventStreamDecoder",
    "HTTPStatusError",
    "InvalidReply",
    "OpenAIHTTP",
    "SDKTransport",
    "deliver_events",
    "encode_body",
    "probe_endpoint",
    "request_headers",
    "sdk_url",
    "status_detail",
    "url_problem",
]

EXCERPT_CHARS = 200


class HTTPStatusError(Exception):
    """The server answered with a status outside 2xx: `status`, its `headers` (a 429's Retry-After) and
    `detail`, `HTTP <status>: <the server's error message, or an excerpt of the body>`."""

    def __init__(self, status: int, headers: Mapping[str, str], body: Any) -> None:
        self.status = status
        self.headers = headers
        self.detail = status_detail(status, body)
        super().__init__(self.detail)


class InvalidReply(ValueError):
    """A 2xx reply whose body is not the JSON object the protocol promises."""


def status_detail(status: int, body: Any) -> str:
    """`body` (bytes, text or parsed JSON) as a person reads it: the OpenAI error message when there is one."""
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else body
    if isinstance(text, str):
        try:
            body = json.loads(text)
        except ValueError:
            body = text
    message = ""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        message = inner.get("message", "") if isinstance(inner, Mapping) else str(inner)
        if not message and body:
            message = excerpt(json.dumps(body, ensure_ascii=False))
    elif isinstance(body, str):
        message = excerpt(body)
    return f"HTTP {status}" + (f": {message}" if message else "")


def excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "…"


def _sdk_json_default(value: Any) -> Any:
    # What the SDK's encoder accepts beyond plain JSON, so a request option that works there works here.
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_unset=True, mode="json", by_alias=True)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# The SDK's serialisation (compact, UTF-8 as is, no NaN), built once: `json.dumps` with options
# builds a new encoder on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_sdk_json_default)


def encode_body(body: Any) -> bytes:
    """`body` as the exact bytes the openai SDK would send."""
    return _ENCODER.encode(body).encode("utf-8")


def parse_object(raw: bytes) -> dict[str, Any]:
    try:
        document = json.loads(raw)
    except ValueError as error:
        received = excerpt(raw.decode("utf-8", "replace")) if raw else "an empty body"
        raise InvalidReply(f"the body is not JSON ({error}): {received}") from None
    if not isinstance(document, dict):
        raise InvalidReply(f"the reply is {type(document).__name__}, not a JSON object")
    return document


def request_headers(api_key: str | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers the SDK sends, its x-stainless telemetry aside: bearer auth, JSON both ways, and the
    organization and project it reads from OPENAI_ORG_ID and OPENAI_PROJECT_ID."""
    env = os.environ if environ is None else environ
    headers = {"Accept": "application/json", "Content-Type": "application/json", "User-Agent": f"assay/{__version__}"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    for variable, header in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
        if env.get(variable):
            headers[header] = env[variable]
    return headers


def url_problem(url: str) -> str | None:
    """Why `url` cannot be an endpoint's base URL (not http(s), no host, a port that is no port), for a
    person; None for a usable one."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as error:
        return f"is not a valid URL ({error})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an http(s) URL; give one like http://127.0.0.1:8000/v1"
    path = parts.path.rstrip("/")
    for endpoint in ("/chat/completions", "/completions"):
        # An endpoint's own URL copied from its docs: every request would go to …/chat/completions/chat/completions.
        if path.endswith(endpoint):
            base = parts._replace(path=path[: -len(endpoint)], query="", fragment="").geturl()
            return f"is an endpoint's URL, not its base URL: leave out {endpoint} ({base})"
    return None


def endpoint_url(base_url: str, path: str) -> yarl.URL:
    """`path` under `base_url`; a query in the base URL (`?api-version=…`) stays at the end, where it belongs."""
    head, separator, query = base_url.partition("?")
    return yarl.URL(head.rstrip("/") + "/" + path.lstrip("/") + separator + query)


def _proxy_for(url: yarl.URL) -> tuple[yarl.URL | None, aiohttp.BasicAuth | None]:
    # The proxy variables (HTTPS_PROXY, NO_PROXY, …) are read once, by aiohttp's own reader: the SDK
    # honours them, and aiohttp's `trust_env` would read them (and ~/.netrc) again on every request.
    try:
        return aiohttp.helpers.get_env_proxy_for_url(url)
    except LookupError:
        return None, None


_BOM = b"\xef\xbb\xbf"


class EventStreamDecoder:
    """Server-sent events from bytes as they arrive: the `data` of each event, its lines joined by
    newlines. Event names, ids, retry fields, comments and empty events are dropped: the OpenAI protocols
    name each event inside its JSON (`sse_json_frames(events=True)` keeps the names in a subclass). A byte order mark opening the body is skipped, as
    the SSE standard says (browsers do; its first event was lost)."""

    __slots__ = ("_data", "_pending", "_head")

    def __init__(self) -> None:
        self._pending = b""
        self._data: list[bytes] = []
        self._head: bytes | None = b""  # the body's first bytes, until they are known not to be a byte order mark

    def feed(self, chunk: bytes) -> list[bytes]:
        if self._head is not None:
            chunk = self._head + chunk
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._head = chunk
                return []
            self._head = None
            chunk = chunk.removeprefix(_BOM)
        lines = (self._pending + chunk if self._pending else chunk).split(b"\n")
        self._pending = lines.pop()  # a line is only whole once its newline arrived
        return self._events(lines)

    def finish(self) -> list[bytes]:
        """What the body's end completes: the last event is kept even without its blank line, so a
        stream cut after it is reported for what it lacks, not as empty."""
        if self._head:  # a body of fewer bytes than a byte order mark has
            self._pending, self._head = self._head, None
        events = self._events([self._pending] if self._pending else [])
        self._pending = b""
        if self._data:
            events.append(b"\n".join(self._data))
            self._data = []
        return events

    def _events(self, lines: list[bytes]) -> list[bytes]:
        events: list[bytes] = []
        for line in lines:
            if line.endswith(b"\r"):
                line = line[:-1]
            if b"\r" in line:  # a lone carriage return ends a line too
                for part in line.split(b"\r"):
                    self._line(part, events)
            else:
                self._line(line, events)
        return events

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self._data:
                data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
                self._data = []
                if data:
                    events.append(data)
        elif line.startswith(b"data:"):
            self._data.append(line[6:] if line.startswith(b"data: ") else line[5:])
        elif line == b"data":
            self._data.append(b"")


async def deliver_events(chunks: AsyncIterator[bytes], on_data: Callable[[bytes], object]) -> None:
    """`on_data(data)` for each event of a body read as `chunks`, in order, up to the body's end."""
    decoder = EventStreamDecoder()
    async for chunk in chunks:
        for data in decoder.feed(chunk):
            on_data(data)
    for data in decoder.finish():
        on_data(data)


class OpenAIHTTP:
    """One endpoint's requests over one aiohttp session, opened on first use in the event loop that
    uses it. The pool keeps connections alive and holds at most `max_connections`, the endpoint's
    concurrency ceiling, so a request the limiter admitted never queues for a connection.

    Timeouts are the SDK's: `timeout` seconds each to get a connection, to connect and between reads."""

    def __init__(self, base_url: str, *, api_key: str | None, timeout: float, max_connections: int,
                 headers: Mapping[str, str] | None = None) -> None:
        """`headers`: the session's headers instead of the OpenAI SDK's (a service that is no model endpoint)."""
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self.max_connections = max_connections
        self._headers = dict(headers) if headers is not None else request_headers(api_key)
        self._urls: dict[str, yarl.URL] = {}
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            proxy, proxy_auth = _proxy_for(endpoint_url(self.base_url, ""))
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0),
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=self.timeout, sock_connect=self.timeout, sock_read=self.timeout
                ),
                proxy=proxy,
                proxy_auth=proxy_auth,
            )
        return self._session

    def url(self, path: str) -> yarl.URL:
        found = self._urls.get(path)
        if found is None:
            found = self._urls[path] = endpoint_url(self.base_url, path)
        return found

    async def post_json(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """POST `body`, return the reply's JSON object; a non-2xx status raises `HTTPStatusError`.
        `headers` are added to the session's (a turn's traceparent)."""
        async with self.session.post(self.url(path), data=encode_body(body), headers=headers) as response:
            raw = await response.read()
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response.status, response.headers, raw)
        return parse_object(raw)

    async def post_stream(
        self, path: str, body: Mapping[str, Any], on_data: Callable[[bytes], object],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """POST `body` and call `on_data` with each event's data as the stream delivers it, to the
        stream's end (so the connection can be kept); an exception from `on_data` ends the exchange."""
        async with self.session.post(self.url(path), data=encode_body(body), headers=headers) as response:
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response.status, response.headers, await response.read())
            await deliver_events(response.content.iter_any(), on_data)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


async def probe_endpoint(base_url: str, *, api_key: str | None, timeout: float) -> str | None:
    """One cheap `GET models` within `timeout` seconds, as a judge preflight: None when the endpoint
    answers (any status but a refused key: some servers have no model list), else why it cannot be
    used, for a person. Never raises for the endpoint's sake, a base URL that is no URL included."""
    problem = url_problem(base_url)
    if problem is not None:
        return f"the base URL {problem}"
    try:
        url = endpoint_url(base_url, "models")
    except ValueError as error:  # what urlsplit lets through and yarl does not
        return f"the base URL is not a valid URL ({error})"
    proxy, proxy_auth = _proxy_for(url)
    headers = {key: value for key, value in request_headers(api_key).items() if key != "Content-Type"}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
            async with session.get(url, headers=headers, proxy=proxy, proxy_auth=proxy_auth) as response:
                status = response.status
    except (TimeoutError, asyncio.TimeoutError):
        return f"no answer within {timeout:g}s"
    except (aiohttp.ClientError, OSError, ValueError) as error:
        from assay.core.transport_failure import transport_failure

        failure = transport_failure(error, url=base_url)
        return failure.detail if failure is not None and not failure.worth_resending else f"{type(error).__name__}: {error}"
    if status in (401, 403):
        return f"HTTP {status}: the endpoint refused the key"
    return None


class SDKTransport:
    """A caller's `openai.AsyncOpenAI` behind `OpenAIHTTP`'s calls: its auth, base URL, timeout and HTTP
    client, with its status errors raised as `HTTPStatusError`. The caller owns the client and closes it.

    It posts raw JSON and reads raw bytes: the typed `create()` methods transform every parameter and
    build response models, several milliseconds of CPU per call."""

    def __init__(self, client: Any) -> None:
        import httpx
        import openai

        self.client = client
        self._urls: dict[str, str] = {}
        self._urls_base: Any = None
        self._raw = httpx.Response
        self._status_error = openai.APIStatusError
        self._invalid_reply = openai.APIResponseValidationError

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)

    @property
    def api_key(self) -> str | None:
        return self.client.api_key

    def url(self, path: str) -> str:
        """`sdk_url`, once per path while the client's `base_url` stays: the SDK parses and joins a
        relative path on every request (~80 µs of CPU), and takes an absolute URL as it is."""
        if self.client.base_url is not self._urls_base:
            self._urls, self._urls_base = {}, self.client.base_url
        found = self._urls.get(path)
        if found is None:
            found = self._urls[path] = sdk_url(self.client, path)
        return found

    async def post_json(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        options = {"headers": dict(headers)} if headers else {}
        try:
            raw = await self.client.post(self.url(path), body=body, cast_to=self._raw, options=options)
        except self._status_error as error:
            raise _status_error_from_sdk(error) from None
        except self._invalid_reply as error:
            raise InvalidReply(str(error)) from None
        return parse_object(raw.content)

    async def post_stream(
        self, path: str, body: Mapping[str, Any], on_data: Callable[[bytes], object],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        options = {"headers": dict(headers)} if headers else {}
        try:
            response = await self.client.post(self.url(path), body=body, cast_to=self._raw, stream=True, options=options)
        except self._status_error as error:
            raise _status_error_from_sdk(error) from None
        try:
            await deliver_events(response.aiter_bytes(), on_data)
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        """Nothing: the client is its owner's to close."""


def _status_error_from_sdk(error: Any) -> HTTPStatusError:
    body = getattr(error, "body", None)
    if body is None:
        try:
            body = error.response.content
        except Exception:  # noqa: BLE001 - a streamed reply the SDK did not read: no body to show
            body = None
    return HTTPStatusError(error.status_code, error.response.headers, body)


def sdk_url(client: Any, path: str) -> str:
    """`path` under an SDK client's base URL, joined exactly as the SDK joins it."""
    base = client.base_url
    return str(base.copy_with(raw_path=base.raw_path + path.lstrip("/").encode("ascii")))
