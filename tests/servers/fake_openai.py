"""A scriptable fake OpenAI-compatible server on 127.0.0.1 for tests: queued replies, recorded requests.

Use the `fake_openai` fixture (import it into a test module or conftest:
`from servers.fake_openai import fake_openai  # noqa: F401`), enqueue replies, point the client at
`fake_openai.base_url`. Replies can be chat completions (content or tool calls, streamed when the
request asks), Responses API objects (streamed as typed SSE events when asked), any JSON body,
HTTP errors, 429 with Retry-After, or malformed bytes; any reply can be cut off mid-body
(`cut_off(reply, at)`), sent in small pieces (`in_pieces(reply, size)`), and a stream can stop early
but cleanly (`stream_stops_after(reply, n)`). Each request records the client's port, so tests can
see connections being reused.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import pytest

__all__ = [
    "FakeOpenAIServer",
    "RecordedRequest",
    "Reply",
    "chat_reply",
    "cut_off",
    "error_reply",
    "fake_openai",
    "function_call_item",
    "in_pieces",
    "json_body",
    "json_reply",
    "malformed_reply",
    "rate_limited",
    "responses_reply",
    "stream_stops_after",
    "tool_call",
]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any  # parsed JSON, or None when the body was not JSON
    client_port: int = 0  # one port per connection: equal ports mean a kept-alive connection was reused

    @property
    def prompt(self) -> str:
        """All message contents joined, for assertions on what the model was shown."""
        messages = (self.body or {}).get("messages") or []
        return "\n".join(str(message.get("content") or "") for message in messages)


@dataclass
class Reply:
    """One scripted answer. `completion` set means a chat completion (streamable); else `body` bytes."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    completion: dict[str, Any] | None = None
    delay_s: float = 0.0
    response: dict[str, Any] | None = None  # a Responses API object (streamable)
    cut_at: int | None = None  # announce the whole body, send this many bytes of it, then hang up
    stream_events: int | None = None  # a stream ends (cleanly) after this many events, before any [DONE]
    piece_size: int | None = None  # the body leaves in pieces of this many bytes, each flushed on its own


_counter = iter(range(1, 1 << 30))


def chat_reply(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    model: str = "fake-model",
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    completion = {
        "id": f"chatcmpl-fake-{next(_counter)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Reply(completion=completion)


def json_reply(value: Any, **options: Any) -> Reply:
    """A chat completion whose content is `value` as JSON text."""
    return chat_reply(json.dumps(value), **options)


def tool_call(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    return {
        "id": call_id or f"call_{next(_counter)}",
        "type": "function",
        "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
    }


def function_call_item(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    """A Responses API `function_call` output item."""
    number = next(_counter)
    return {
        "type": "function_call",
        "id": f"fc_{number}",
        "call_id": call_id or f"call_{number}",
        "name": name,
        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        "status": "completed",
    }


def responses_reply(
    text: str | None = None,
    *,
    function_calls: list[dict[str, Any]] | None = None,
    items: list[dict[str, Any]] | None = None,
    model: str = "fake-model",
    status: str = "completed",
    usage: dict[str, Any] | None = None,
) -> Reply:
    """A Responses API object: optional extra `items` first, then function calls, then the message."""
    output: list[dict[str, Any]] = list(items or []) + list(function_calls or [])
    if text is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_{next(_counter)}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    response = {
        "id": f"resp_{next(_counter)}",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": status,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage
        or {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }
    return Reply(response=response)


def json_body(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """Any JSON body verbatim (e.g. a Responses API object, or an unusual completion shape)."""
    return Reply(
        status=status,
        body=json.dumps(value).encode("utf-8"),
        headers={"Content-Type": "application/json", **(headers or {})},
    )


def error_reply(status: int = 500, message: str = "fake server error", headers: dict[str, str] | None = None) -> Reply:
    body = {"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error"}}
    return json_body(body, status=status, headers=headers)


def rate_limited(retry_after: float | str = 0, message: str = "rate limited") -> Reply:
    return error_reply(429, message, headers={"Retry-After": str(retry_after)})


def malformed_reply(text: str = '{"choices": [', status: int = 200) -> Reply:
    return Reply(status=status, body=text.encode("utf-8"), headers={"Content-Type": "application/json"})


def cut_off(reply: Reply, at: int) -> Reply:
    """`reply`, but the connection closes after `at` bytes of a body whose full length was announced."""
    reply.cut_at = at
    return reply


def in_pieces(reply: Reply, size: int) -> Reply:
    """`reply`, written `size` bytes at a time with a pause between, so the client reads it in pieces
    that split lines, events and UTF-8 characters."""
    reply.piece_size = size
    return reply


def stream_stops_after(reply: Reply, events: int) -> Reply:
    """`reply` streamed, but the body ends after `events` SSE events: no finish, no [DONE], no final event."""
    reply.stream_events = events
    return reply


def _stream_chunks(completion: dict[str, Any]) -> Iterator[dict[str, Any]]:
    choice = completion["choices"][0]
    message = choice["message"]
    base = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    content = message.get("content") or ""
    for start in range(0, len(content), 16):
        yield chunk({"content": content[start : start + 16]})
    for index, call in enumerate(message.get("tool_calls") or []):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": call["function"]["arguments"]}}]})
    yield chunk({}, choice["finish_reason"])


def _responses_events(response: dict[str, Any]) -> Iterator[dict[str, Any]]:
    in_progress = response | {"status": "in_progress", "output": []}
    yield {"type": "response.created", "sequence_number": 0, "response": in_progress}
    sequence = 1
    for index, item in enumerate(response["output"]):
        if item.get("type") == "message":
            text = "".join(part.get("text", "") for part in item.get("content", []))
            for start in range(0, len(text), 16):
                yield {
                    "type": "response.output_text.delta",
                    "sequence_number": sequence,
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": text[start : start + 16],
                    "logprobs": [],
                }
                sequence += 1
        yield {"type": "response.output_item.done", "sequence_number": sequence, "output_index": index, "item": item}
        sequence += 1
    yield {"type": "response.completed", "sequence_number": sequence, "response": response}


class FakeOpenAIServer:
    """A ThreadingHTTPServer on 127.0.0.1:0 answering from a queue, then from `responder`, else 500."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def enqueue(self, *replies: Reply) -> "FakeOpenAIServer":
        with self._lock:
            self._queue.extend(replies)
        return self

    def respond_with(self, responder: Callable[[RecordedRequest], Reply]) -> "FakeOpenAIServer":
        self.responder = responder
        return self

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path.endswith("/chat/completions")]

    @property
    def responses_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path.endswith("/responses")]

    def start(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        # The model list answers a judge preflight's probe; it never takes a scripted reply from the queue.
        if request.method == "GET" and request.path.rstrip("/").endswith("/models"):
            with self._lock:
                self.requests.append(request)
            return json_body({"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]})
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(request)
        return error_reply(500, "fake server has no scripted reply for this request")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                request = RecordedRequest(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, raw, body,
                    self.client_address[1],
                )
                reply = server._next_reply(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                wants_stream = isinstance(body, dict) and body.get("stream") is True
                if reply.completion is not None and wants_stream:
                    self._send_stream(reply, body.get("stream_options") or {})
                    return
                if reply.response is not None and wants_stream:
                    self._send_responses_stream(reply)
                    return
                structured = reply.completion if reply.completion is not None else reply.response
                payload = json.dumps(structured).encode("utf-8") if structured is not None else reply.body
                headers = {"Content-Type": "application/json"} | reply.headers
                self._send(reply.status, payload, headers, reply.cut_at, reply.piece_size)

            def _send(
                self, status: int, payload: bytes, headers: dict[str, str], cut_at: int | None = None,
                piece_size: int | None = None,
            ) -> None:
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    if piece_size is not None:
                        self.wfile.flush()
                        for start in range(0, len(payload), piece_size):
                            self.wfile.write(payload[start : start + piece_size])
                            self.wfile.flush()
                            time.sleep(0.001)  # so that the pieces arrive as separate reads
                        return
                    if cut_at is None:
                        self.wfile.write(payload)
                        return
                    self.wfile.write(payload[:cut_at])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)  # the client sees the body end early
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass

            def _send_stream(self, reply: Reply, stream_options: dict[str, Any]) -> None:
                assert reply.completion is not None
                chunks = list(_stream_chunks(reply.completion))
                if stream_options.get("include_usage"):
                    # As OpenAI does: one last chunk with no choices that carries the usage.
                    last = chunks[-1]
                    chunks.append({key: last[key] for key in ("id", "object", "created", "model")}
                                  | {"choices": [], "usage": reply.completion.get("usage")})
                done = b"data: [DONE]\n\n"
                if reply.stream_events is not None:
                    chunks, done = chunks[: reply.stream_events], b""
                events = b"".join(b"data: " + json.dumps(chunk).encode("utf-8") + b"\n\n" for chunk in chunks) + done
                self._send(reply.status, events, {"Content-Type": "text/event-stream"} | reply.headers, reply.cut_at,
                           reply.piece_size)

            def _send_responses_stream(self, reply: Reply) -> None:
                assert reply.response is not None
                typed = list(_responses_events(reply.response))
                if reply.stream_events is not None:
                    typed = typed[: reply.stream_events]
                events = b"".join(
                    b"event: " + event["type"].encode("ascii") + b"\ndata: " + json.dumps(event).encode("utf-8")
                    + b"\n\n"
                    for event in typed
                )
                self._send(reply.status, events, {"Content-Type": "text/event-stream"} | reply.headers, reply.cut_at,
                           reply.piece_size)

            do_POST = _handle
            do_GET = _handle

        return Handler


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A started fake server; stopped after the test. Never reaches the network."""
    server = FakeOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


def as_https(base_url: str) -> str:
    """The fake server's http:// URL as https://: a plain-HTTP server given as a TLS one (a common slip)."""
    assert base_url.startswith("http://")
    return "https://" + base_url[len("http://"):]


def plain_http_message(base_url: str) -> str:
    """What assay says when the https:// form of `base_url` is used: it fails at once and names the URL to use."""
    return (f"the server at {as_https(base_url)} answered in plain HTTP, not TLS: use http:// instead of https:// "
            f"({base_url})")
