"""A fake Anthropic Messages API on 127.0.0.1 for the real Claude Code CLI, for tests: `POST /v1/messages` streams
a scripted reply as server-sent events (`message_start`, `content_block_*`, `message_delta`, `message_stop`).

The model it plays: asked to "run" something (with the Bash tool offered), it calls Bash; given a tool result, it
says the result's first line; otherwise it greets. Every request body is kept in `requests`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMMAND = "touch made-by-bash.txt"
GREETING = "Hello from the fake model."


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return str(content or "")


def reply(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content") if isinstance(last.get("content"), list) else [
        {"type": "text", "text": str(last.get("content", ""))}]
    results = [block for block in content if isinstance(block, dict) and block.get("type") == "tool_result"]
    if results:
        said = _text(results[0].get("content")).strip().splitlines()
        return [{"type": "text", "text": f"The command said: {said[0] if said else ''}"}]
    offered = [tool.get("name") for tool in body.get("tools") or []]
    asked = " ".join(_text(block.get("content") if block.get("type") != "text" else [block]) for block in content)
    if "Bash" in offered and "please run" in asked:
        return [{"type": "tool_use", "id": "toolu_fake_1", "name": "Bash",
                 "input": {"command": COMMAND, "description": "make a file"}}]
    return [{"type": "text", "text": GREETING}]


def _events(blocks: list[dict[str, Any]], model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 1, "cache_read_input_tokens": 0,
                                         "cache_creation_input_tokens": 0}}}
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = "tool_use" if any(block["type"] == "tool_use" for block in blocks) else "end_turn"
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 7}}
    yield "message_stop", {"type": "message_stop"}


REFUSAL = "the fake API refused this request"
Reply = Callable[[dict[str, Any]], "list[dict[str, Any]] | None"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeAnthropicApi

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:  # noqa: N802
        self._send(404, b'{"type": "error", "error": {"type": "not_found_error", "message": "not here"}}')

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        if not self.path.startswith("/v1/messages"):
            self._send(404, b'{"type": "error", "error": {"type": "not_found_error", "message": "not here"}}')
            return
        if "count_tokens" in self.path:
            self._send(200, b'{"input_tokens": 10}')
            return
        self.server.requests.append(body)
        self.server.api_keys.append(self.headers.get("x-api-key"))
        blocks, model = self.server.reply(body), str(body.get("model") or "claude-fake")
        if blocks is None:
            self._send(400, json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                                    "message": REFUSAL}}).encode())
        elif body.get("stream"):
            payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in _events(blocks, model))
            self._send(200, payload.encode(), "text/event-stream")
        else:
            self._send(200, json.dumps({"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                                        "content": blocks, "stop_reason": "end_turn",
                                        "usage": {"input_tokens": 11, "output_tokens": 7}}).encode())


class FakeAnthropicApi(ThreadingHTTPServer):
    """The server: `reply(body)` plays the model (its content blocks, or None for an HTTP 400 saying REFUSAL).
    Every request body is kept in `requests` and its `x-api-key` header in `api_keys`."""

    daemon_threads = True

    def __init__(self, reply: Reply = reply) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.api_keys: list[str | None] = []
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> FakeAnthropicApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()
        self.server_close()
