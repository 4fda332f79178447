"""`ui_message_stream_agent` against a real HTTP server on 127.0.0.1 that answers as an AI SDK `useChat` route does:
the conversation POSTed as UI messages, the reply a UI message stream (SSE chunks, then `[DONE]`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from agent_helpers import run_one

from assay.agent import command_match, command_projection, equals, includes, shell_command_projection, tool_match
from assay.agent.adapters import ui_message_stream_agent


def sse(*chunks) -> bytes:
    return b"".join(f"data: {json.dumps(chunk) if not isinstance(chunk, str) else chunk}\n\n".encode() for chunk in chunks)


def text(part_id: str, *pieces: str) -> list[dict]:
    return [{"type": "text-start", "id": part_id}, *({"type": "text-delta", "id": part_id, "delta": piece} for piece in pieces),
            {"type": "text-end", "id": part_id}]


def tool(call_id: str, name: str, given: dict) -> list[dict]:
    return [{"type": "tool-input-start", "toolCallId": call_id, "toolName": name},
            {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": json.dumps(given)},
            {"type": "tool-input-available", "toolCallId": call_id, "toolName": name, "input": given}]


class ChatRoute:
    """A shop assistant behind POST /api/chat, replying in the UI message stream protocol; it keeps no state:
    like an AI SDK route, it reads the conversation the client sends."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict, dict]] = []
        route = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                route.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status, payload = route.reply(self.path, body)
                self.send_response(status)
                self.send_header("Content-Type", "text/event-stream" if status == 200 else "application/json")
                self.send_header("x-vercel-ai-ui-message-stream", "v1")
                self.end_headers()
                for piece in (payload[:40], payload[40:]):  # in two writes: the client reads a stream, not a body
                    self.wfile.write(piece)
                    self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/api/chat"

    def reply(self, path: str, body: dict) -> tuple[int, bytes]:
        if path != "/api/chat":
            return 404, b'{"error": "not found"}'
        last = body["messages"][-1]
        if last["role"] == "assistant":  # an answered approval: continue that message
            answered = [part for part in last["parts"] if part.get("state") == "approval-responded"]
            if len(answered) > 1:
                return 200, sse(*({"type": "tool-output-available", "toolCallId": part["toolCallId"], "output": "removed"}
                                  if part["approval"]["approved"] else {"type": "tool-output-denied", "toolCallId": part["toolCallId"]}
                                  for part in answered), *text("t9", "Done."), {"type": "finish"}, "[DONE]")
            [part] = answered
            if part["approval"]["approved"]:
                return 200, sse({"type": "start-step"},
                                {"type": "tool-output-available", "toolCallId": part["toolCallId"], "output": {"deleted": True}},
                                {"type": "finish-step"}, {"type": "start-step"}, *text("t9", "Deleted."),
                                {"type": "finish-step"}, {"type": "finish", "finishReason": "stop"}, "[DONE]")
            return 200, sse({"type": "tool-output-denied", "toolCallId": part["toolCallId"]}, *text("t9", "OK, I left it."),
                            {"type": "finish"}, "[DONE]")
        said = " ".join(part["text"] for part in last["parts"] if part["type"] == "text")
        start = [{"type": "start", "messageId": f"m{len(body['messages'])}"}, {"type": "start-step"}]
        if "weather" in said:
            return 200, sse(*start, *tool("call-1", "get_weather", {"city": "Paris"}),
                            {"type": "tool-output-available", "toolCallId": "call-1", "output": {"sky": "sunny"}},
                            {"type": "finish-step"}, {"type": "start-step"},
                            {"type": "reasoning-start", "id": "r1"}, {"type": "reasoning-delta", "id": "r1", "delta": "It is sunny."},
                            {"type": "reasoning-end", "id": "r1"}, *text("t1", "It is ", "sunny in Paris."),
                            {"type": "finish-step"}, {"type": "finish", "finishReason": "stop"}, "[DONE]")
        if "delete" in said:
            return 200, sse(*start, *tool("call-2", "run_shell", {"command": "rm -rf repo"}),
                            {"type": "tool-approval-request", "approvalId": "approval-1", "toolCallId": "call-2"},
                            {"type": "finish-step"}, {"type": "finish", "finishReason": "tool-calls"}, "[DONE]")
        if "count" in said:
            users = sum(message["role"] == "user" for message in body["messages"])
            return 200, sse(*start, *text("t1", f"You sent {users} messages."), {"type": "finish"}, "[DONE]")
        if "broken tool" in said:
            return 200, sse(*start, *tool("call-3", "lookup", {"q": "x"}),
                            {"type": "tool-output-error", "toolCallId": "call-3", "errorText": "lookup is down"},
                            *text("t1", "Sorry."), {"type": "finish"}, "[DONE]")
        if "sources" in said:
            return 200, sse(*start, {"type": "source-url", "sourceId": "s1", "url": "https://example.com"},
                            {"type": "data-weather", "data": {"sky": "sunny"}}, *text("t1", "See the source."),
                            {"type": "finish"}, "[DONE]")
        if "cut" in said:
            return 200, sse(*start, *text("t1", "I was say"))[:-2]
        if "after done" in said:
            return 200, sse(*start, *text("t1", "hi"), {"type": "finish"}, "[DONE]", {"type": "text-delta", "id": "t1", "delta": "!"})
        if "model error" in said:
            return 200, sse(*start, {"type": "error", "errorText": "the model is overloaded"}, "[DONE]")
        if "server error" in said:
            return 500, b'{"error": "boom"}'
        if "two files" in said:  # two calls behind approval in one step
            return 200, sse(*start, *tool("call-4", "run_shell", {"command": "rm a"}),
                            {"type": "tool-approval-request", "approvalId": "approval-4", "toolCallId": "call-4"},
                            *tool("call-5", "run_shell", {"command": "rm b"}),
                            {"type": "tool-approval-request", "approvalId": "approval-5", "toolCallId": "call-5"},
                            {"type": "finish", "finishReason": "tool-calls"}, "[DONE]")
        if "bad input" in said:  # the model's input failed the tool's schema: the AI SDK sends it as written
            return 200, sse(*start, {"type": "tool-input-error", "toolCallId": "call-6", "toolName": "run_shell",
                                     "input": "rm -rf /", "errorText": "Invalid input for tool run_shell"},
                            *text("t1", "Sorry."), {"type": "finish"}, "[DONE]")
        if "latin-1" in said:
            return 200, sse(*start) + b'data: {"type": "text-start", "id": "t1"}\n\ndata: {"type": "text-delta", "id": "t1", "delta": "caf\xe9"}\n\n'
        return 200, sse(*start, *text("t1", "Hello!"), {"type": "finish"}, "[DONE]")


@pytest.fixture
def route():
    served = ChatRoute()
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()


def test_a_turn_becomes_paired_tool_events_reasoning_and_a_message_and_the_history_stays_on_the_client(route):
    agent = ui_message_stream_agent(route.url, body=lambda ctx: {"model": ctx.model}, headers={"x-team": "evals"})

    async def body(t):
        turn = await t.send("What is the weather in Paris?")
        t.succeeded()
        turn.called_tool(tool_match("get_weather", input={"city": "Paris"}, output={"sky": "sunny"}, status="completed"))
        t.check(t.reply, equals("It is sunny in Paris."))
        again = await t.send("How many messages did I send? count them")
        t.check(again.message, equals("You sent 2 messages."))
        other = t.new_session()
        await other.send("count")
        t.check(other.reply, equals("You sent 1 messages."))

    result = run_one(agent, body, model="gpt-test")
    assert result.verdict == "passed", result.assertions
    events = [event["type"] for event in result.turns[0]["events"]]
    assert events == ["operation.started", "operation.finished", "thinking", "message"]
    (headers, first), (_, second), (_, third) = route.requests
    assert headers["accept"] == "text/event-stream" and headers["x-team"] == "evals"
    assert first["trigger"] == "submit-message" and first["model"] == "gpt-test"
    assert first["messages"] == [{"id": "user-1", "role": "user", "parts": [{"type": "text", "text": "What is the weather in Paris?"}]}]
    assert second["id"] == first["id"] != third["id"]  # one chat per session line
    assistant = second["messages"][1]  # the first reply, as useChat would have kept it
    assert assistant["id"] == "m1" and assistant["role"] == "assistant"
    assert [part["type"] for part in assistant["parts"]] == ["step-start", "tool-get_weather", "step-start", "reasoning", "text"]
    assert assistant["parts"][1] == {"type": "tool-get_weather", "toolCallId": "call-1", "state": "output-available",
                                     "input": {"city": "Paris"}, "output": {"sky": "sunny"}}
    assert assistant["parts"][4] == {"type": "text", "text": "It is sunny in Paris.", "state": "done"}


@pytest.mark.parametrize("answer", ["approve", "deny"])
def test_a_tool_approval_waits_and_the_answer_is_sent_back_in_the_tool_part(route, answer):
    agent = ui_message_stream_agent(
        route.url, project_tool_command=lambda name, given: command_projection("sh", ["-c", given["command"]])
        if name == "run_shell" else None)

    async def body(t):
        turn = await t.send("delete the repo")
        t.check(turn.status, equals("waiting"))
        request = t.require_input_request(action="run_shell", option_ids=["approve", "deny"])
        t.check(request.input, equals({"command": "rm -rf repo"}))
        turn.called_tool(command_match("sh", args_start=["-c"]))
        await t.respond(answer)
        if answer == "approve":
            t.called_tool(tool_match("run_shell", status="completed", output={"deleted": True}))
            t.check(t.reply, includes("Deleted"))
        else:
            t.called_tool(tool_match("run_shell", status="rejected"))
            t.check(t.reply, includes("left it"))

    result = run_one(agent, body)
    assert result.verdict == "passed", result.assertions
    _, resent = route.requests[-1]
    assert [message["role"] for message in resent["messages"]] == ["user", "assistant"]  # no new user message
    part = resent["messages"][1]["parts"][1]
    assert part["state"] == "approval-responded" and part["toolCallId"] == "call-2"
    if answer == "approve":
        assert part["approval"] == {"id": "approval-1", "approved": True}
    else:
        assert part["approval"] == {"id": "approval-1", "approved": False,
                                    "reason": "The user denied this tool call. Do not retry it; continue without it."}


def test_a_tool_error_is_a_failed_call_and_parts_that_are_not_events_lower_the_events_coverage(route):
    agent = ui_message_stream_agent(route.url)

    async def body(t):
        turn = await t.send("use the broken tool")
        turn.called_tool(tool_match("lookup", status="failed", output={"error": "lookup is down"}))
        said = await t.send("show me sources")
        t.check(said.message, equals("See the source."))

    result = run_one(agent, body)
    assert result.verdict == "passed", result.assertions
    first, second = result.turns
    assert "coverage" not in first  # nothing lowered: the agent's own declaration holds
    assert result.coverage["usage"]["state"] == "unavailable"  # the protocol has no token counts
    assert second["coverage"]["events"] == {"state": "partial", "reason": "the stream's data-weather parts are not events"}


def test_a_cut_stream_an_event_after_done_an_error_chunk_and_an_http_error(route):
    agent = ui_message_stream_agent(route.url, max_attempts=1)

    async def cut(t):
        await t.send("cut")

    result = run_one(agent, cut)
    assert result.error["code"] == "agent-stream-broken"
    assert result.error["message"].endswith("the stream ended after 5 chunk(s) without [DONE]; the partial text was 'I was say'")

    async def after_done(t):
        await t.send("after done")

    assert "the stream went on after [DONE]" in run_one(agent, after_done).error["message"]

    async def model_error(t):
        turn = await t.send("model error")
        t.check(turn.status, equals("failed"))

    result = run_one(agent, model_error)
    assert result.verdict == "passed", result.assertions
    assert result.turns[0]["events"][-1] == {"type": "error", "message": "the model is overloaded"}

    async def server_error(t):
        await t.send("server error")

    result = run_one(agent, server_error)
    assert result.error["code"] == "agent-http-error" and "HTTP 500" in result.error["message"]


def test_bad_settings_are_refused_when_the_agent_is_made():
    with pytest.raises(ValueError, match="is not an http:// or https:// URL"):
        ui_message_stream_agent("localhost:3000/api/chat")
    with pytest.raises(TypeError, match="project_tool_command takes a function"):
        ui_message_stream_agent("http://127.0.0.1:3000/api/chat", project_tool_command={"run_shell": "sh"})
    # (not at the first send, as "'<=' not supported between instances of 'str' and 'int'")
    with pytest.raises(TypeError, match=r"timeout takes seconds \(a number above 0\), like timeout=120, got '30'"):
        ui_message_stream_agent("http://127.0.0.1:3000/api/chat", timeout="30")
    with pytest.raises(TypeError, match="max_attempts takes a whole number of at least 1, like max_attempts=4, got 0"):
        ui_message_stream_agent("http://127.0.0.1:3000/api/chat", max_attempts=0)


def test_several_approvals_are_answered_together_and_one_left_out_is_said(route):
    agent = ui_message_stream_agent(route.url)

    async def both(t):
        await t.send("remove two files")
        await t.respond("approve", "deny")
        t.succeeded()
        t.called_tool(tool_match("run_shell", input={"command": "rm a"}, status="completed"))
        t.called_tool(tool_match("run_shell", input={"command": "rm b"}, status="rejected"))

    result = run_one(agent, both)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error
    parts = [part for part in route.requests[-1][1]["messages"][-1]["parts"] if "toolCallId" in part]
    assert [part["approval"]["approved"] for part in parts] == [True, False]

    async def one(t):
        await t.send("remove two files")
        await t.respond("approve")  # the second left waiting: useChat would not send the message back yet

    sent = len(route.requests)
    result = run_one(agent, one)
    assert result.error["code"] == "agent-send-failed" and len(route.requests) == sent + 1  # not sent half answered
    assert result.error["message"].endswith(
        "respond answered 1 of the 2 tool approvals the last turn waits for (unanswered: approval-5 (run_shell)): the "
        "AI SDK continues a message only when each of its approvals is answered, so answer them together: "
        't.respond("approve", "deny", …) in the order they were asked, or t.respond_all("approve")')


def test_the_command_projection_of_a_refused_input_a_projection_that_raises_and_a_stream_that_is_not_utf8(route):
    # The docs' projection, given["command"], on a call whose input failed the tool's schema (a str): that call
    # never ran, so it ran no command; the attempt is not errored by a TypeError from the lambda.
    agent = ui_message_stream_agent(route.url, project_tool_command=lambda tool, given: (
        shell_command_projection(given["command"]) if tool == "run_shell" else None))

    async def refused(t):
        turn = await t.send("bad input")
        turn.called_tool(tool_match("run_shell", status="failed"))
        turn.not_called_tool(command_match("rm"))

    result = run_one(agent, refused)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error

    reading = ui_message_stream_agent(route.url, project_tool_command=lambda tool, given: shell_command_projection(given["cmd"]))

    async def delete(t):
        await t.send("delete the repo")

    result = run_one(reading, delete)
    assert result.error["code"] == "agent-send-failed"
    assert result.error["message"].endswith("""ui_message_stream_agent project_tool_command('run_shell', {"command": "rm -rf repo"}) """
                                            "raised KeyError: 'cmd'; return None for a call it cannot read")
    typo = ui_message_stream_agent(route.url, project_tool_command=lambda tool, given: {
        "kind": "command", "original": {"state": "available", "executable": "rm", "arg": ["-rf", "repo"]}})
    assert "result.original has an unknown field 'arg'; did you mean 'args'?" in run_one(typo, delete).error["message"]

    async def latin1(t):
        await t.send("latin-1")

    result = run_one(ui_message_stream_agent(route.url), latin1)
    assert result.error["code"] == "agent-stream-broken"
    assert "the stream's event after 3 chunk(s) is not UTF-8 (byte 0xe9 at " in result.error["message"]
    assert result.error["message"].endswith("; the route must send UTF-8")


# ---- against the real AI SDK ------------------------------------------------------------------------------------

AI_SDK_HOME = Path.home() / ".cache" / "assay-tests" / "ai-sdk"  # npm install --prefix it ai@7 zod@4, as .ci/run does
needs_ai_sdk = pytest.mark.skipif(
    shutil.which("node") is None or not (AI_SDK_HOME / "node_modules" / "ai").is_dir(),
    reason=f"needs node and the AI SDK in {AI_SDK_HOME} (.ci/run installs it: npm install --prefix {AI_SDK_HOME} ai zod)",
)


@pytest.fixture
def ai_sdk_route(tmp_path):
    """The route of tests/agent/agents/ai_sdk_chat_route.mjs, run by node beside the installed `ai` package."""
    (tmp_path / "node_modules").symlink_to(AI_SDK_HOME / "node_modules")
    script = tmp_path / "route.mjs"
    shutil.copy(Path(__file__).parent / "agents" / "ai_sdk_chat_route.mjs", script)
    process = subprocess.Popen(["node", str(script)], stdout=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=10)


@needs_ai_sdk
@pytest.mark.parametrize("answer", ["approve", "deny"])
def test_a_real_ai_sdk_chat_route_with_a_tool_behind_approval(ai_sdk_route, answer):
    url, process = ai_sdk_route
    agent = ui_message_stream_agent(
        url, body=lambda ctx: {"model": ctx.model},
        project_tool_command=lambda name, given: shell_command_projection(given["command"]) if name == "run_shell" else None)

    async def body(t):
        weather = await t.send("What is the weather in Paris?")
        weather.called_tool(tool_match("get_weather", input={"city": "Paris"}, status="completed",
                                       output={"city": "Paris", "sky": "sunny"}))
        t.check(weather.message, includes('"sky":"sunny"'))
        asked = await t.send("Please delete the build folder")
        t.check(asked.status, equals("waiting"))
        t.require_input_request(action="run_shell", option_ids=["approve", "deny"])
        asked.called_tool(command_match("rm", args_start=["-rf"]))
        await t.respond(answer)
        t.succeeded()
        if answer == "approve":
            t.called_tool(tool_match("run_shell", status="completed", output={"ran": "rm -rf build"}))
            t.check(t.reply, includes('"ran":"rm -rf build"'))
        else:  # the model is told why, in the AI SDK's own execution-denied result
            t.called_tool(tool_match("run_shell", status="rejected"))
            t.check(t.reply, includes("execution-denied"))
            t.check(t.reply, includes("Do not retry it"))
        counted = await t.send("How many messages?")
        t.check(counted.message, equals("You sent 3 message(s)."))

    result = run_one(agent, body, model="scripted-4")
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error
    process.terminate()
    requests = [json.loads(line) for line in process.stdout.read().splitlines()]
    assert [request["roles"] for request in requests] == [
        ["user"], ["user", "assistant", "user"], ["user", "assistant", "user", "assistant"],
        ["user", "assistant", "user", "assistant", "user"]]
    assert {request["model"] for request in requests} == {"scripted-4"}
