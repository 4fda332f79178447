"""A scripted Claude Code CLI behind the Claude Agent SDK's own `Transport` interface, for tests.

It plays the CLI's side of the protocol the SDK speaks to its subprocess: it answers the SDK's `initialize`
control request, reads the user message the SDK writes, asks the SDK's `can_use_tool` callback over the control
protocol when the script wants permission, prints stream-json frames (`system` init, `assistant`, `user`
tool results, `result`) for the SDK's own parser, ends its output once stdin is closed and the result is out, and
exits non-zero after an error result (a `ProcessError`, as the subprocess transport raises). Sessions live in a
dict shared by the transports of one test, as `~/.claude/projects` is for the real CLI: `options.resume`
continues one, and an unknown id fails the way the CLI does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, Transport
from claude_agent_sdk._errors import ProcessError

_END = object()
MODEL = "claude-scripted-1"


class Play:
    """What a script sees and does: the prompt, the session's earlier prompts, and the frames it prints."""

    def __init__(self, cli: ScriptedClaudeCli, prompt: Any, history: list[str]) -> None:
        self.cli = cli
        self.content = prompt
        self.prompt = prompt if isinstance(prompt, str) else " ".join(
            block.get("text", "") for block in prompt if isinstance(block, dict) and block.get("type") == "text")
        self.history = history
        self.session_id = cli.session_id
        self.options = cli.options
        self._message = itertools.count(1)
        self.result_sent = False

    def _assistant(self, blocks: list[dict[str, Any]], parent: str | None = None, **extra: Any) -> None:
        number = next(self._message)
        self.cli.emit({
            "type": "assistant", "parent_tool_use_id": parent, "session_id": self.session_id, "uuid": str(uuid.uuid4()),
            "message": {"id": f"msg_{number}", "type": "message", "role": "assistant", "model": MODEL,
                        "content": blocks, "stop_reason": None,
                        "usage": {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 100}},
            **extra,
        })

    def say(self, text: str, *, parent: str | None = None, **extra: Any) -> None:
        self._assistant([{"type": "text", "text": text}], parent, **extra)

    def think(self, text: str) -> None:
        self._assistant([{"type": "thinking", "thinking": text, "signature": "sig"}])

    def call(self, call_id: str, name: str, given: dict[str, Any], *, parent: str | None = None) -> None:
        self._assistant([{"type": "tool_use", "id": call_id, "name": name, "input": given}], parent)

    def tool_result(self, call_id: str, content: Any, *, is_error: bool = False, parent: str | None = None) -> None:
        self.cli.emit({
            "type": "user", "parent_tool_use_id": parent, "session_id": self.session_id, "uuid": str(uuid.uuid4()),
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}]},
        })

    def system(self, subtype: str, **fields: Any) -> None:
        self.cli.emit({"type": "system", "subtype": subtype, "session_id": self.session_id,
                       "uuid": str(uuid.uuid4()), **fields})

    async def ask(self, call_id: str, name: str, given: dict[str, Any]) -> dict[str, Any]:
        """Ask the SDK's `can_use_tool` over the control protocol, as the CLI does with `--permission-prompt-tool
        stdio`; the SDK's answer (`behavior`, `message`)."""
        return await self.cli.request({"subtype": "can_use_tool", "tool_name": name, "input": given,
                                       "tool_use_id": call_id, "permission_suggestions": []})

    def result(self, text: str = "", *, subtype: str = "success", is_error: bool = False, **fields: Any) -> None:
        self.result_sent = True
        self.cli.emit({
            "type": "result", "subtype": subtype, "is_error": is_error, "duration_ms": 12, "duration_api_ms": 9,
            "num_turns": 1, "result": text, "session_id": self.session_id, "uuid": str(uuid.uuid4()),
            # (the CLI counts a resumed session's cost from its start, its usage only for this run)
            "total_cost_usd": round(0.0123 * (len(self.history) + 1), 6), "permission_denials": [],
            "usage": {"input_tokens": 40, "output_tokens": 12, "cache_read_input_tokens": 300,
                      "cache_creation_input_tokens": 20, "server_tool_use": {"web_search_requests": 0}},
            **fields,
        })


Script = Callable[[Play], Awaitable[None]]


class ScriptedClaudeCli(Transport):
    """One CLI process: made per query (the SDK closes its transport after each), from the query's options."""

    def __init__(self, options: ClaudeAgentOptions, script: Script, sessions: dict[str, list[str]] | None = None):
        self.options = options
        self.script = script
        self.sessions = {} if sessions is None else sessions
        self.session_id = options.resume or str(uuid.uuid4())
        self.written: list[dict[str, Any]] = []  # every frame the SDK wrote to the CLI's stdin
        self.initialize: dict[str, Any] | None = None
        self._out: asyncio.Queue[Any] = asyncio.Queue()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._requests = itertools.count(1)
        self._ready = False
        self._input_ended = False
        self._turns: list[asyncio.Task[None]] = []
        self._exit_code = 0
        self._done = False
        self._last_result: dict[str, Any] | None = None

    # -- the Transport interface -------------------------------------------------------------------------
    async def connect(self) -> None:
        self._ready = True

    def is_ready(self) -> bool:
        return self._ready

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            if line.strip():
                self._read(json.loads(line))

    def read_messages(self):  # noqa: ANN201 - an async iterator of frames
        return self._frames()

    async def _frames(self):  # noqa: ANN202
        while True:
            item = await self._out.get()
            if item is _END:
                if self._exit_code:
                    raise ProcessError("Command failed with exit code 1", exit_code=self._exit_code,
                                       stderr="Check stderr output for details")
                return
            yield item

    async def end_input(self) -> None:
        self._input_ended = True
        self._maybe_exit()

    async def close(self) -> None:
        self._ready = False
        for task in self._turns:
            task.cancel()
        self._out.put_nowait(_END)

    # -- the CLI's side ------------------------------------------------------------------------------------
    def emit(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "result":
            self._last_result = frame
        self._out.put_nowait(frame)

    async def request(self, body: dict[str, Any]) -> dict[str, Any]:
        request_id = f"cli_req_{next(self._requests)}"
        answered = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answered
        self.emit({"type": "control_request", "request_id": request_id, "request": body})
        return await answered

    def _read(self, frame: dict[str, Any]) -> None:
        self.written.append(frame)
        kind = frame.get("type")
        if kind == "control_request" and frame["request"].get("subtype") == "initialize":
            self.initialize = frame["request"]
            self.emit({"type": "control_response", "response": {
                "subtype": "success", "request_id": frame["request_id"],
                "response": {"commands": [], "output_style": "default", "models": [], "account": {}}}})
        elif kind == "control_response":
            response = frame["response"]
            waiting = self._pending.pop(response["request_id"])
            waiting.set_result(response.get("response") or {"error": response.get("error")})
        elif kind == "user":
            self._turns.append(asyncio.get_running_loop().create_task(self._turn(frame["message"]["content"])))

    async def _turn(self, content: Any) -> None:
        if self.options.resume and self.options.resume not in self.sessions:
            self._fail_resume()
            return
        history = self.sessions.setdefault(self.session_id, [])
        play = Play(self, content, list(history))
        history.append(play.prompt)
        self.emit({"type": "system", "subtype": "init", "session_id": self.session_id, "uuid": str(uuid.uuid4()),
                   "cwd": "/work", "tools": ["Bash", "Read", "Edit", "Task"], "model": self.options.model or MODEL,
                   "permissionMode": "default", "apiKeySource": "none"})
        await self.script(play)
        if not play.result_sent:
            play.result(play.prompt)
        self._done = True
        self._maybe_exit()

    def _fail_resume(self) -> None:
        self.emit({"type": "result", "subtype": "error_during_execution", "is_error": True, "duration_ms": 0,
                   "duration_api_ms": 0, "num_turns": 0, "session_id": self.session_id,
                   "errors": [f"No conversation found with session ID: {self.options.resume}"]})
        self._done = True
        self._maybe_exit()

    def _maybe_exit(self) -> None:
        if self._done and self._input_ended:
            # (the CLI exits 1 after an error result, on purpose, for shell scripts)
            last = self._last_result
            self._exit_code = 1 if last is not None and last.get("is_error") else 0
            self._out.put_nowait(_END)



def scripted(script: Script, sessions: dict[str, list[str]] | None = None,
             made: list[ScriptedClaudeCli] | None = None) -> Callable[[ClaudeAgentOptions], ScriptedClaudeCli]:
    """The `transport=` of `claude_agent_sdk_agent`: a new scripted CLI per query, all sharing `sessions`;
    each one made is appended to `made`."""
    shared = {} if sessions is None else sessions

    def make(options: ClaudeAgentOptions) -> ScriptedClaudeCli:
        cli = ScriptedClaudeCli(options, script, shared)
        if made is not None:
            made.append(cli)
        return cli

    return make


async def shop(play: Play) -> None:
    """A small shop assistant: looks an order up with a tool, remembers how many messages the session holds."""
    if "order" in play.prompt:
        play.call("toolu_order", "mcp__shop__lookup_order", {"order_id": "1001"})
        play.tool_result("toolu_order", '{"order_id": "1001", "status": "shipped"}')
        play.say("Order 1001 has shipped.")
    else:
        play.say(f"This session holds {len(play.history) + 1} message(s).")
