"""The frame helpers as a new user meets them: the typos a user makes in `Pause`, `DeltaStream` calls and
`sse_json_frames`, each refused with one message naming the thing and the fix, never taken silently."""

from __future__ import annotations

import asyncio

import pytest

from assay.agent.adapters import DeltaStream, Pause, drive_frame_stream, sse_json_frames
from assay.agent.adapters.frames import FrameStreamError
from assay.agent.context import AgentContext, CancelSignal, Feedback
from assay.agent.model import InputOption, Message, OperationFinished, OperationStarted, ToolOperation
from assay.agent.session import AgentSession


def frames_of(body, **options):
    async def read():
        return [frame async for frame in sse_json_frames(body, **options)]

    return asyncio.run(read())


def test_pause_options_given_as_one_string_are_refused_not_split_into_letters():
    with pytest.raises(TypeError, match=r"Pause options takes a tuple of option ids .*options=\(\"approve\", \"deny\"\); "
                                        r"got str 'approve'"):
        Pause("ap-1", options="approve")
    with pytest.raises(TypeError, match="Pause options takes a tuple"):
        Pause("ap-1", options=InputOption("approve"))
    assert Pause("ap-1", options=["approve", "deny"]).options == (InputOption("approve"), InputOption("deny"))


def test_pause_action_and_prompt_must_be_text():
    with pytest.raises(TypeError, match=r"Pause action takes a str or None, got dict \{'tool': 'delete_repo'\}"):
        Pause("ap-1", action={"tool": "delete_repo"})
    with pytest.raises(TypeError, match="Pause prompt takes a str or None, got int 3"):
        Pause("ap-1", prompt=3)


def test_a_tool_call_id_that_is_missing_is_a_broken_frame_not_a_call_named_None():
    stream = DeltaStream()
    with pytest.raises(FrameStreamError, match="starts a tool call 'delete_repo' without an id"):
        stream.tool_call(None, "delete_repo")
    with pytest.raises(FrameStreamError, match="has arguments for a tool call without an id"):
        stream.tool_arguments(None, "{}")
    with pytest.raises(FrameStreamError, match="has a tool result without an id"):
        stream.tool_result(None, {"deleted": True})
    with pytest.raises(FrameStreamError, match="has an input for a tool call without an id"):
        stream.tool_input("", {})
    assert stream.turn().events == []


def test_a_whole_frame_given_as_a_delta_is_refused_not_written_as_its_repr():
    stream = DeltaStream()
    with pytest.raises(TypeError, match=r"DeltaStream.text takes the text of one delta \(a str\), got dict "
                                        r"'\{\"type\": \"text\", \"delta\": \"hi\"\}': pass the frame's text field"):
        stream.text({"type": "text", "delta": "hi"})
    with pytest.raises(TypeError, match="DeltaStream.reasoning takes"):
        stream.reasoning(["a"])
    stream.tool_call("c1", "lookup")
    with pytest.raises(TypeError, match=r"DeltaStream.tool_arguments takes .* got dict .*stream.tool_input\(id, value\)"):
        stream.tool_arguments("c1", {"q": 1})
    with pytest.raises(TypeError, match=r"DeltaStream.tool_call takes \(id, name, arguments=None\), its name a str; "
                                        r"got name dict"):
        stream.tool_call("c2", {"name": "lookup"})
    with pytest.raises(TypeError, match="DeltaStream.tool_call arguments takes"):
        stream.tool_call("c2", "lookup", {"q": 1})
    stream.tool_arguments("c1", '{"q": 1}')
    stream.text("ok")
    assert stream.turn().events == [OperationStarted("c1", ToolOperation("lookup", {"q": 1})), Message("ok")]


def test_a_parsed_json_body_is_refused_not_read_as_an_empty_stream():
    with pytest.raises(TypeError, match=r"not a parsed JSON body \(dict with keys type, delta\); pass the response "
                                        "itself, unread"):
        sse_json_frames({"type": "text", "delta": "hi"}, require_done=True)


@pytest.mark.parametrize("chunks", [
    [b'\xef\xbb\xbfdata: {"a": 1}\n\ndata: [DONE]\n\n'],
    [b"\xef", b"\xbb", b'\xbfdata: {"a": 1}\n\n', b"data: [DONE]\n\n"],
    [b"\xef\xbb", b'\xbfdata: {"a": 1}\n\ndata: [DONE]\n\n'],
])
def test_a_leading_byte_order_mark_is_skipped_as_browsers_skip_it(chunks):
    assert frames_of(chunks, require_done=True) == [{"a": 1}]


def test_a_body_without_byte_order_mark_in_small_chunks_is_read_whole():
    assert frames_of([b"d", b"a", b'ta: {"a": 1}\n\n', b"data: [DONE]\n\n"], require_done=True) == [{"a": 1}]
    assert frames_of([b"da"]) == []
    with pytest.raises(FrameStreamError, match="without"):
        frames_of([b"d"], require_done=True)


def test_a_typo_in_read_is_the_reader_s_error_and_the_stream_is_closed():
    closed = []

    async def body():
        try:
            yield b'data: {"type": "text", "delta": "hi"}\n\n'
            yield b"data: [DONE]\n\n"
        finally:
            closed.append(True)

    def read(stream, frame):
        stream.text(frame)

    async def drive():
        ctx = AgentContext(session=AgentSession(), signal=CancelSignal(), feedback=Feedback())
        await drive_frame_stream(sse_json_frames(body()), DeltaStream(read), ctx)

    with pytest.raises(TypeError, match="DeltaStream.text takes") as raised:
        asyncio.run(drive())
    assert any("read frame 1" in note for note in raised.value.__notes__) and closed == [True]


def test_tool_result_of_a_call_started_before_a_pause_still_ends_it():
    stream = DeltaStream()
    stream.tool_result("c1", {"deleted": True})
    assert stream.turn().events == [OperationFinished("c1", "completed", {"deleted": True}, "tool")]


def test_a_request_not_awaited_is_refused_saying_so():
    async def post():
        return b""

    async def check():
        pending = post()
        with pytest.raises(TypeError, match=r"got coroutine, which was not awaited: write "
                                            r"sse_json_frames\(await http.post\(...\)\)"):
            sse_json_frames(pending)
        assert pending.cr_frame is None  # closed: Python does not warn that it was never awaited

    asyncio.run(check())


def test_an_aiohttp_request_not_awaited_is_refused_saying_so():
    aiohttp = pytest.importorskip("aiohttp")

    async def check():
        async with aiohttp.ClientSession() as http:
            with pytest.raises(TypeError, match="RequestContextManager, which was not awaited"):
                sse_json_frames(http.post("http://127.0.0.1:9/chat"))

    asyncio.run(check())


def test_an_async_read_is_refused_not_recording_nothing():
    async def read(stream, frame):
        stream.text(frame["delta"])

    with pytest.raises(TypeError, match=r"DeltaStream read must be a plain function \(def, not async def\).*"
                                        "read would record nothing"):
        DeltaStream(read)

    class Later:
        def __call__(self, stream, frame):
            return read(stream, frame)

    with pytest.raises(TypeError, match="DeltaStream read returned an awaitable"):
        DeltaStream(Later()).feed({"delta": "hi"})


def test_driving_the_resumed_stream_itself_says_to_pass_its_frames():
    from assay.agent.adapters.frames import ResumedStream
    from assay.agent.model import InputResponse

    async def drive():
        ctx = AgentContext(session=AgentSession(), signal=CancelSignal(), feedback=Feedback())
        resumed = ResumedStream(sse_json_frames(b""), Pause("ap-1"), InputResponse("ap-1", "approve"))
        await drive_frame_stream(resumed, DeltaStream(lambda stream, frame: None), ctx)

    with pytest.raises(TypeError, match="got ResumedStream: pass resumed.frames"):
        asyncio.run(drive())
