"""The frame helpers (`assay.agent.adapters.frames`): SSE frames, deltas folded into a turn, and a turn paused
on an open stream, answered by `t.respond(...)` on the same connection.

The end-to-end test runs a project through `assay agent run` against a real aiohttp SSE server on 127.0.0.1 that
streams frames with delays and, after an approval frame, holds its stream open until the decision is POSTed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from assay.agent.adapter import SendFailure
from assay.agent.adapters.frames import (
    DeltaStream, FrameStreamError, Pause, SSEFrame, drive_frame_stream, resume_frame_stream, sse_json_frames,
)
from assay.agent.context import AgentContext, CancelSignal, Feedback
from assay.agent.model import (
    InputRequested, InputResponse, Message, OperationFinished, OperationStarted, TurnInput, Usage,
)
from assay.agent.session import AgentSession

AGENTS = Path(__file__).resolve().parent / "agents"


def frames_of(body, **options):
    async def collect():
        return [frame async for frame in sse_json_frames(body, **options)]

    return asyncio.run(collect())


def context() -> AgentContext:
    return AgentContext(session=AgentSession(), signal=CancelSignal(), feedback=Feedback())


# -- SSE edge cases --------------------------------------------------------------------------------


def test_data_lines_comments_crlf_and_split_chunks_make_frames():
    body = (b": keep-alive\r\n\r\ndata: {\"a\": 1}\r\n\r\nid: 7\nretry: 10\ndata:{\"b\":\n"
            b"data: 2}\n\n\rdata: [1, 2]\r\r")
    expected = [{"a": 1}, {"b": 2}, [1, 2]]
    assert frames_of(body) == expected
    # the same body cut anywhere, even inside "\r\n", reads the same
    for cut in range(1, len(body)):
        assert frames_of([body[:cut], body[cut:]]) == expected, cut
    assert frames_of([bytes([byte]) for byte in body]) == expected
    accented = 'data: {"t": "café"}\n\n'.encode()
    assert frames_of([accented[:16], accented[16:]]) == [{"t": "café"}]  # cut inside the é
    assert frames_of(b'data: {"last": true}') == [{"last": True}]  # the body's end completes the last event


def test_event_names_are_kept_when_asked_and_do_not_carry_over():
    body = b"event: values\ndata: {\"x\": 1}\n\ndata: {\"x\": 2}\n\nevent:end\ndata: null\n"
    assert frames_of(body, events=True) == [SSEFrame("values", {"x": 1}), SSEFrame("message", {"x": 2}),
                                            SSEFrame("end", None)]
    assert frames_of(body) == [{"x": 1}, {"x": 2}, None]  # without events=True, the data alone


def test_done_ends_the_frames_and_a_missing_done_is_an_error_only_when_required():
    assert frames_of(b'data: {"a": 1}\n\ndata: [DONE]\n\ndata: {"late": 1}\n\n') == [{"a": 1}]
    assert frames_of(b'data: {"a": 1}\n\n') == [{"a": 1}]
    with pytest.raises(FrameStreamError, match=r"^the stream ended after 1 frame\(s\) without \[DONE\]$"):
        frames_of(b'data: {"a": 1}\n\n', require_done=True)
    assert frames_of(b'data: {"a": 1}\n\ndata: END\n\n', done="END", require_done=True) == [{"a": 1}]
    with pytest.raises(FrameStreamError, match="frame 2 of the stream is not JSON"):
        frames_of(b'data: [1]\n\ndata: [DONE]\n\n', done=None)


def test_a_malformed_or_non_utf8_frame_names_the_frame_and_what_it_held():
    with pytest.raises(FrameStreamError) as caught:
        frames_of(b'data: {"a": 1}\n\ndata: {"type": "text", "delta": oops}\n\ndata: {"b": 2}\n\n')
    assert str(caught.value).startswith("frame 2 of the stream is not JSON (Expecting value: line 1 column 27")
    assert str(caught.value).endswith(": '{\"type\": \"text\", \"delta\": oops}'")
    with pytest.raises(FrameStreamError, match=r"frame 1 of the stream is not UTF-8 \(byte 0xe9 at 4\)"):
        frames_of(b'data: "caf\xe9"\n\n')


def test_a_body_that_breaks_and_a_body_that_is_no_body():
    async def broken():
        yield b'data: {"a": 1}\n\n'
        raise ConnectionResetError("peer went away")

    with pytest.raises(FrameStreamError, match=r"^the stream broke after 1 frame\(s\): ConnectionResetError: peer went away$"):
        frames_of(broken())
    with pytest.raises(TypeError, match="sse_json_frames takes an HTTP response"):
        sse_json_frames(42)


# -- DeltaStream -----------------------------------------------------------------------------------


def test_deltas_become_events_in_the_order_each_began():
    stream = DeltaStream()
    stream.reasoning("Look it ")
    stream.reasoning("up.")
    stream.text("Let me ")
    stream.text("check.")
    stream.tool_call("c1", "get_weather")
    stream.tool_arguments("c1", '{"ci')
    stream.text("Still", id="m2")  # a message by id: where it began, whatever comes between
    stream.tool_arguments("c1", 'ty": "Paris"}')
    stream.tool_call("c2", "lookup", '{"q": ')  # never completed: kept as it came
    stream.tool_call("c3", "ping")  # no arguments: {}
    stream.text(" here.", id="m2")
    stream.tool_result("c1", {"sky": "sunny"})
    stream.tool_result("c2", "bad arguments", "failed")
    stream.tool_result("c1", "again")  # a second end of one call is ignored
    stream.tool_result("earlier", None, "rejected")  # a call started before a pause, in the turn before
    stream.text("It is sunny.")
    stream.usage(input_tokens=10, output_tokens=2)
    stream.usage(output_tokens=7)  # running totals: the latest wins
    turn = stream.turn()
    assert turn.status == "completed"
    assert [(type(event).__name__, getattr(event, "text", None) or getattr(event, "operation_id", None))
            for event in turn.events] == [
        ("Thinking", "Look it up."), ("Message", "Let me check."), ("OperationStarted", "c1"), ("Message", "Still here."),
        ("OperationStarted", "c2"), ("OperationStarted", "c3"), ("OperationFinished", "c1"),
        ("OperationFinished", "c2"), ("OperationFinished", "earlier"), ("Message", "It is sunny."),
    ]
    started = {event.operation_id: event.operation for event in turn.events if isinstance(event, OperationStarted)}
    assert (started["c1"].name, started["c1"].input) == ("get_weather", {"city": "Paris"})
    assert started["c2"].input == '{"q": ' and started["c3"].input == {}
    finished = [(event.operation_id, event.status, event.output) for event in turn.events
                if isinstance(event, OperationFinished)]
    assert finished == [("c1", "completed", {"sky": "sunny"}), ("c2", "failed", "bad arguments"),
                        ("earlier", "rejected", None)]
    assert turn.usage == Usage(input_tokens=10, output_tokens=7) and turn.evidence_coverage is None


def test_an_error_fails_the_turn_and_a_stream_without_usage_or_its_end_says_so():
    stream = DeltaStream(require_end=True)
    stream.text("I was say")
    with pytest.raises(FrameStreamError, match=r"ended after 0 frame\(s\) before its end; the partial text was 'I was say'"):
        stream.turn()
    stream.error("the model is overloaded")
    stream.end()
    turn = stream.turn()
    assert turn.status == "failed" and [type(event).__name__ for event in turn.events] == ["Message", "ErrorEvent"]
    assert turn.evidence_coverage["usage"].state == "unavailable"
    with pytest.raises(FrameStreamError, match="arguments for tool call 'nope', which the stream never started"):
        DeltaStream().tool_arguments("nope", "{}")
    with pytest.raises(TypeError, match="DeltaStream.feed needs a read function"):
        DeltaStream().feed({})


# -- drive, pause and resume without a server ------------------------------------------------------


class Frames:
    """An async iterator of frames that says whether it was closed."""

    def __init__(self, frames):
        self.frames = list(frames)
        self.closed = False

    def __aiter__(self):
        return self

    async def __anext__(self):
        if not self.frames:
            raise StopAsyncIteration
        return self.frames.pop(0)

    async def aclose(self):
        self.closed = True


def read(stream, frame):
    if frame["type"] == "text":
        stream.text(frame["delta"])
    elif frame["type"] == "call":
        stream.tool_call(frame["id"], frame["name"], json.dumps(frame["input"]))
    elif frame["type"] == "result":
        stream.tool_result(frame["id"], frame["output"])


def pause_on_approval(frame):
    return Pause(frame["id"], action="rm", options=("approve", "deny")) if frame["type"] == "approval" else None


PAUSING = [{"type": "text", "delta": "Removing."}, {"type": "call", "id": "c1", "name": "rm", "input": {"path": "x"}},
           {"type": "approval", "id": "ap-1"}, {"type": "result", "id": "c1", "output": "removed"},
           {"type": "text", "delta": "Done."}]


def test_a_pause_keeps_the_stream_open_and_the_answer_reads_on_from_where_it_paused():
    async def scenario():
        ctx, frames = context(), Frames(PAUSING)
        waiting = await drive_frame_stream(frames, DeltaStream(read), ctx, pause_on_approval)
        assert waiting.status == "waiting" and not frames.closed and len(frames.frames) == 2
        *_, requested = waiting.events
        assert isinstance(requested, InputRequested) and requested.request.id == "ap-1"
        assert [option.id for option in requested.request.options] == ["approve", "deny"]
        assert requested.request.action == "rm"
        resumed = await resume_frame_stream(TurnInput("approve", responses=(InputResponse("ap-1", "approve"),)), ctx)
        assert resumed.frames is frames and resumed.answer == "approve" and resumed.pause.id == "ap-1"
        assert await resume_frame_stream(TurnInput("again"), ctx) is None  # taken: nothing is paused any more
        done = await drive_frame_stream(resumed.frames, DeltaStream(read), ctx, pause_on_approval)
        assert done.status == "completed" and frames.closed
        assert [(type(event).__name__) for event in done.events] == ["OperationFinished", "Message"]

    asyncio.run(scenario())


def test_an_answer_to_another_request_closes_the_stream_and_fails_the_send():
    async def scenario():
        ctx, frames = context(), Frames(PAUSING)
        await drive_frame_stream(frames, DeltaStream(read), ctx, pause_on_approval)
        with pytest.raises(SendFailure) as caught:
            await resume_frame_stream(TurnInput("approve", responses=(InputResponse("ap-9", "approve"),)), ctx)
        assert str(caught.value) == (
            "the stream is paused on request 'ap-1', but the turn answered 'ap-9'; the paused stream takes one answer, "
            "to 'ap-1' (t.respond(...) right after the waiting turn), so it was closed")
        assert caught.value.acceptance == "rejected" and caught.value.retried and frames.closed

    asyncio.run(scenario())


def test_a_new_message_instead_of_an_answer_closes_the_paused_stream_with_a_warning():
    async def scenario():
        ctx, frames = context(), Frames(PAUSING)
        await drive_frame_stream(frames, DeltaStream(read), ctx, pause_on_approval)
        assert await resume_frame_stream(TurnInput("something else"), ctx) is None
        assert frames.closed
        [warning] = ctx.settings.feedback.diagnostics
        assert warning.code == "frame-stream-abandoned" and "'ap-1' was closed unanswered" in warning.message

    asyncio.run(scenario())


def test_a_paused_stream_dropped_with_its_session_is_closed():
    async def scenario():
        ctx = context()
        stream = sse_json_frames(_endless())
        waiting = await drive_frame_stream(stream, DeltaStream(read), ctx, pause_on_approval)
        assert waiting.status == "waiting" and not stream.closed
        del ctx  # the attempt's end: its session lines, and what they hold, are dropped
        await asyncio.sleep(0)
        assert stream.closed and _endless_closed == [True]

    asyncio.run(scenario())


def test_a_paused_stream_is_closed_when_its_session_ends_though_something_still_holds_it():
    """The attempt's end ends each session line (`AgentSession.end`): the stream is closed then, not when the garbage
    collector gets to it, which a reference kept elsewhere (a trace, a debugger, a cycle) would put off."""
    async def scenario():
        ctx = context()
        stream = sse_json_frames(_endless())
        await drive_frame_stream(stream, DeltaStream(read), ctx, pause_on_approval)
        still_held = list(ctx.session._values.values())
        ctx.session.end()
        await asyncio.sleep(0)
        assert stream.closed and still_held and ctx.session._values == {}

    asyncio.run(scenario())


_endless_closed: list[bool] = []


async def _endless():
    try:
        yield b'data: {"type": "approval", "id": "ap-1"}\n\n'
        await asyncio.Event().wait()
    finally:
        _endless_closed.append(True)


def test_drive_closes_the_frames_however_the_turn_ends_and_says_where_a_reducer_failed():
    async def scenario():
        frames = Frames([{"type": "text", "delta": "hi"}])
        assert (await drive_frame_stream(frames, DeltaStream(read), context())).events == [Message("hi")]
        assert frames.closed

        frames = Frames([{"type": "text", "delta": "hi"}, {"type": "mystery"}])

        def strict(stream, frame):
            stream.text({"text": frame["delta"]}[frame["type"]])

        with pytest.raises(KeyError) as caught:
            await drive_frame_stream(frames, DeltaStream(strict), context())
        assert caught.value.__notes__ == ["(while DeltaStream read frame 2: '{\"type\": \"mystery\"}')"]
        assert frames.closed

        with pytest.raises(SendFailure) as failed:
            await drive_frame_stream(sse_json_frames(b'data: {"type": "text", "delta": "hi"}\n\n', require_done=True),
                                     DeltaStream(read), context())
        assert str(failed.value) == "the stream ended after 1 frame(s) without [DONE]"
        assert (failed.value.code, failed.value.acceptance) == ("agent-stream-broken", "started")

        with pytest.raises(TypeError, match=r"on_frame returns Pause\(id, action, options\) to pause the turn, or None"):
            await drive_frame_stream(Frames([{"type": "text", "delta": "x"}]), DeltaStream(read), context(), lambda f: True)

    asyncio.run(scenario())


def test_pause_checks_its_request():
    with pytest.raises(TypeError, match="Pause id must be the request's non-empty id"):
        Pause("")
    request = Pause("a", "rm", ("approve",), prompt="Allow rm?").request()
    assert (request.id, request.action, request.prompt, [o.id for o in request.options]) == ("a", "rm", "Allow rm?", ["approve"])


# -- end to end: a real SSE server, `assay agent run` ----------------------------------------------


class ShopBackend:
    """An aiohttp SSE backend on 127.0.0.1, in a thread of its own. Every /chat request is a numbered stream; `log`
    holds what happened, in order: ("chat", n, message, [streams still open and waiting for a decision]), ("decision", id, decision), ("closed", n) for a stream
    the client closed while it waited for a decision, ("finished", n)."""

    def __init__(self) -> None:
        self.log: list[tuple] = []
        self.loop = asyncio.new_event_loop()
        self.decisions: dict[str, asyncio.Future] = {}
        self.waiting: dict[int, object] = {}  # stream number -> its request, while it waits for a decision
        started = threading.Event()
        threading.Thread(target=self._serve, args=(started,), daemon=True).start()
        started.wait(10)

    def _serve(self, started: threading.Event) -> None:
        from aiohttp import web

        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/chat", self.chat)
        app.router.add_post("/decisions/{id}", self.decide)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        started.set()
        self.loop.run_forever()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def decide(self, request):
        from aiohttp import web

        decision = (await request.json())["decision"]
        self.log.append(("decision", request.match_info["id"], decision))
        self.decisions[request.match_info["id"]].set_result(decision)
        return web.json_response({"ok": True})

    async def chat(self, request):
        from aiohttp import web

        message = (await request.json())["message"]
        number = sum(entry[0] == "chat" for entry in self.log) + 1
        still_open = sorted(n for n, waiting in self.waiting.items()
                            if waiting.transport is not None and not waiting.transport.is_closing())
        self.log.append(("chat", number, message, still_open))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def frame(value, raw=None):
            await response.write(raw if raw is not None else f"data: {json.dumps(value)}\n\n".encode())
            await asyncio.sleep(0.02)  # one write per frame, apart: the client reads a stream, not a body

        try:
            await self._reply(message, number, request, response, frame)
        except ConnectionResetError:  # (aiohttp's ClientConnectionResetError is one) the client closed the stream
            self.log.append(("reset", number))
        return response

    async def _reply(self, message, number, request, response, frame):
        if "weather" in message:
            await frame({"type": "reasoning", "delta": "The user wants "})
            await frame({"type": "reasoning", "delta": "the weather."})
            await frame({"type": "text", "delta": "Let me "})
            await frame({"type": "text", "delta": "look."})
            await frame({"type": "tool_call", "id": "c1", "name": "get_weather"})
            for piece in ('{"ci', 'ty": "Pa', 'ris"}'):
                await frame({"type": "tool_args", "id": "c1", "delta": piece})
            await frame(None, b': the tool runs\n\n')
            await frame({"type": "tool_result", "id": "c1", "output": {"sky": "sunny"}})
            await frame({"type": "tool_call", "id": "c2", "name": "lookup"})
            await frame({"type": "tool_args", "id": "c2", "delta": "{not json"})
            await frame({"type": "tool_result", "id": "c2", "output": "bad arguments", "error": True})
            await frame(None, b'event: delta\r\ndata: {"type": "text",\r\ndata:  "delta": "It is "}\r\n\r\n')
            await frame({"type": "text", "delta": "sunny."})
            await frame({"type": "usage", "input": 12, "output": 5})
        elif "delete" in message:
            await frame({"type": "text", "delta": "Deleting it."})
            await frame({"type": "tool_call", "id": "c3", "name": "delete_repo"})
            await frame({"type": "tool_args", "id": "c3", "delta": '{"repo": "demo"}'})
            approval = f"approval-{number}"
            decided = self.decisions[approval] = asyncio.get_running_loop().create_future()
            await frame({"type": "approval", "id": approval, "tool": "delete_repo", "input": {"repo": "demo"}})
            self.waiting[number] = request
            try:
                while not decided.done():  # the stream stays open until the decision, or until the client closes it
                    if request.transport is None or request.transport.is_closing():
                        self.log.append(("closed", number))
                        return
                    await asyncio.sleep(0.01)
            finally:
                del self.waiting[number]
            if decided.result() == "approve":
                await frame({"type": "tool_result", "id": "c3", "output": {"deleted": True}})
                await frame({"type": "text", "delta": "Deleted."})
            else:
                await frame({"type": "tool_denied", "id": "c3", "reason": "the user said no"})
                await frame({"type": "text", "delta": "I left it."})
            await frame({"type": "usage", "input": 30, "output": 9})
        elif "cut" in message:
            await frame({"type": "text", "delta": "I was say"})
            self.log.append(("finished", number))
            return  # the body ends here, without [DONE]
        elif "malformed" in message:
            await frame({"type": "text", "delta": "Hi"})
            await frame(None, b'data: {"type": "text", "delta": oops}\n\n')
        elif "overloaded" in message:
            await frame({"type": "error", "message": "the model is overloaded"})
        await response.write(b"data: [DONE]\n\n")
        self.log.append(("finished", number))


@pytest.fixture
def backend():
    served = ShopBackend()
    yield served
    served.stop()


EVALS = {
    "a_weather": """
        turn = await t.send("what is the weather in Paris?")
        t.check(turn.status, equals("completed"))
        t.check(turn.message, equals("It is sunny."))
    """,
    "b_approve": """
        turn = await t.send("delete the demo repo")
        t.check(turn.status, equals("waiting"))
        request = t.require_input_request(action="delete_repo")
        t.check(request.id, equals("approval-2"))
        done = await t.respond("approve")
        t.check(done.status, equals("completed"))
        t.check(done.message, equals("Deleted."))
    """,
    "c_deny": """
        await t.send("delete the demo repo")
        done = await t.respond("deny")
        t.check(done.message, equals("I left it."))
    """,
    "d_left_waiting": """
        turn = await t.send("delete the demo repo")
        t.check(turn.status, equals("waiting"))
    """,
    "e_new_message_instead": """
        await t.send("delete the demo repo")
        turn = await t.send("what is the weather in Paris?")
        t.check(turn.message, equals("It is sunny."))
    """,
    "f_cut": """
        await t.send("cut it short")
    """,
    "g_malformed": """
        await t.send("malformed")
    """,
    "h_overloaded": """
        turn = await t.send("overloaded")
        t.check(turn.status, equals("failed"))
    """,
}


def run_project(tmp_path: Path, url: str) -> dict[str, dict]:
    project = tmp_path / "project"
    for folder in ("evals", "experiments", "agents"):
        (project / folder).mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.assay]\ntimeout = 30\n")
    shutil.copy(AGENTS / "frames_shop.py", project / "agents" / "frames_shop.py")
    (project / "experiments" / "shop.py").write_text(
        "import os\n\nfrom agents.frames_shop import frames_shop_agent\n\nfrom assay.agent import Experiment\n\n"
        "shop = Experiment(agent=frames_shop_agent(os.environ['FRAMES_SHOP_URL']))\n")
    for name, body in EVALS.items():
        (project / "evals" / f"{name}_eval.py").write_text(
            "from assay.agent import *\n\n\n@define_eval()\nasync def test(t):\n"
            + textwrap.indent(textwrap.dedent(body).strip() + "\n", "    "))
    done = subprocess.run(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--concurrency", "1", "--json",
         "--quiet"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "ASSAY_STORE": str(tmp_path / "store"), "FRAMES_SHOP_URL": url},
    )
    assert "Traceback" not in done.stderr and "Unclosed" not in done.stderr, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return {line["attempt"]["eval_id"]: line["attempt"] for line in lines if line.get("type") == "attempt"}


def test_an_http_error_status_is_named_with_its_body_and_the_response_is_closed(backend):
    import aiohttp

    async def scenario():
        async with aiohttp.ClientSession() as http:
            response = await http.post(f"{backend.url}/nowhere", json={})
            frames = sse_json_frames(response)
            with pytest.raises(FrameStreamError) as caught:
                await frames.__anext__()
            assert response.closed and frames.closed
            return caught.value

    error = asyncio.run(scenario())
    assert (error.code, str(error)) == ("agent-http-error", "the stream's response is HTTP 404: '404: Not Found'")


def test_an_httpx_streamed_response_reads_the_same_and_is_closed(backend):
    import httpx

    async def scenario():
        async with httpx.AsyncClient() as http:
            request = http.build_request("POST", f"{backend.url}/chat", json={"message": "weather"})
            response = await http.send(request, stream=True)
            frames = sse_json_frames(response, require_done=True, events=True)
            read = [frame async for frame in frames]
            assert response.is_closed and frames.closed
            missing = await http.send(http.build_request("POST", f"{backend.url}/nowhere", json={}), stream=True)
            with pytest.raises(FrameStreamError, match="HTTP 404") as caught:
                await sse_json_frames(missing).__anext__()
            assert missing.is_closed and caught.value.code == "agent-http-error"
            return read

    read = asyncio.run(scenario())
    assert len(read) == 15 and read[0] == SSEFrame("message", {"type": "reasoning", "delta": "The user wants "})
    assert read[12] == SSEFrame("delta", {"type": "text", "delta": "It is "})  # the CRLF, two-line event


def shape(turn: dict) -> list[tuple]:
    return [(event["type"], event.get("text") or event.get("operation_id") or event["request"]["id"], event.get("status"))
            for event in turn["events"]]


def test_a_streaming_agent_built_from_frames_runs_end_to_end(backend, tmp_path):
    attempts = run_project(tmp_path, backend.url)
    log = backend.log
    chats = {entry[1]: entry for entry in log if entry[0] == "chat"}
    assert [(entry[2], entry[3]) for entry in chats.values()] == [
        ("what is the weather in Paris?", []), ("delete the demo repo", []), ("delete the demo repo", []),
        ("delete the demo repo", []),
        # d_left_waiting's stream (4) was closed when its attempt ended, before the next attempt's first request
        ("delete the demo repo", []),
        # e_new_message_instead's paused stream (5) was closed before its second message went out
        ("what is the weather in Paris?", []), ("cut it short", []), ("malformed", []), ("overloaded", []),
    ]
    assert ("closed", 4) in log and ("closed", 5) in log and ("finished", 4) not in log and ("finished", 5) not in log

    # text, reasoning and tool-call deltas assembled in the order they began, SSE comments and multi-line data read
    weather = attempts["a_weather"]
    assert weather["verdict"] == "passed", weather
    [turn] = weather["turns"]
    assert shape(turn) == [
        ("thinking", "The user wants the weather.", None), ("message", "Let me look.", None),
        ("operation.started", "c1", None), ("operation.finished", "c1", "completed"),
        ("operation.started", "c2", None), ("operation.finished", "c2", "failed"), ("message", "It is sunny.", None),
    ]
    assert turn["events"][2]["operation"] == {"kind": "tool", "name": "get_weather", "input": {"city": "Paris"}}
    assert turn["events"][4]["operation"]["input"] == "{not json"  # unparsable arguments kept as they came
    assert turn["usage"] == {"input_tokens": 12, "output_tokens": 5} and weather["coverage"]["usage"] == "complete"

    # the pause: a waiting turn with its request, and t.respond reading on from the same open stream
    approve = attempts["b_approve"]
    assert approve["verdict"] == "passed", approve
    waiting, answered = approve["turns"]
    assert waiting["status"] == "waiting" and shape(waiting) == [
        ("message", "Deleting it.", None), ("operation.started", "c3", None), ("input.requested", "approval-2", None)]
    assert waiting["events"][2]["request"] == {
        "id": "approval-2", "prompt": "Allow delete_repo?", "action": "delete_repo", "input": {"repo": "demo"},
        "options": [{"id": "approve"}, {"id": "deny"}]}
    assert "usage" not in waiting and approve["coverage"]["usage"] == "complete"  # the usage comes with the rest
    assert answered["usage"] == {"input_tokens": 30, "output_tokens": 9}
    assert answered["status"] == "completed" and shape(answered) == [
        ("operation.finished", "c3", "completed"), ("message", "Deleted.", None)]
    # one /chat request: the answer went to /decisions and the turn was read from stream 2, which then finished
    assert log.index(("decision", "approval-2", "approve")) < log.index(("finished", 2)) < log.index(chats[3])
    deny = attempts["c_deny"]
    assert deny["verdict"] == "passed" and shape(deny["turns"][1]) == [
        ("operation.finished", "c3", "rejected"), ("message", "I left it.", None)]

    assert attempts["d_left_waiting"]["verdict"] == "passed"
    instead = attempts["e_new_message_instead"]
    assert instead["verdict"] == "passed"
    assert [d["code"] for d in instead["diagnostics"]] == ["send-while-waiting", "frame-stream-abandoned"]

    cut, malformed = attempts["f_cut"], attempts["g_malformed"]
    assert cut["verdict"] == "errored" and cut["error"]["code"] == "agent-stream-broken"
    assert cut["error"]["message"] == "agent 'frames-shop' send failed: the stream ended after 1 frame(s) without [DONE]"
    assert malformed["verdict"] == "errored" and malformed["error"]["code"] == "agent-stream-broken"
    assert malformed["error"]["message"] == (
        "agent 'frames-shop' send failed: frame 2 of the stream is not JSON (Expecting value: line 1 column 27 "
        "(char 26)): '{\"type\": \"text\", \"delta\": oops}'")
    overloaded = attempts["h_overloaded"]
    assert overloaded["verdict"] == "passed"  # a failure the service reported is a failed turn, not a send failure
    assert overloaded["turns"][0]["events"] == [{"type": "error", "message": "the model is overloaded"}]


def test_a_session_value_that_fails_to_close_does_not_stop_the_others_nor_the_attempts_end():
    from assay.agent.session import AgentSession, create_session_slot

    closed = []

    class Holder:
        def __init__(self, name, fails=False):
            self.name, self.fails = name, fails

        def session_ended(self):
            closed.append(self.name)
            if self.fails:
                raise OSError("already closed")

    session = AgentSession()
    session.set(create_session_slot("a"), Holder("a", fails=True))
    session.set(create_session_slot("b"), Holder("b"))
    session.end()  # (raised OSError before, out of the attempt's release)
    assert closed == ["a", "b"]
