"""A streaming shop assistant written with assay's frame helpers (tests/agent/test_frames.py serves its backend).

The backend streams typed JSON frames over SSE: `text`/`reasoning` deltas, `tool_call` + `tool_args` deltas,
`tool_result`/`tool_denied`, `usage`, `error`, and `approval`, after which it waits, stream open, for a POST to
`/decisions/{id}` before it goes on."""

from __future__ import annotations

from assay.agent import COMPLETE, EvidenceCoverage, define_agent, unavailable
from assay.agent.adapters.frames import DeltaStream, Pause, drive_frame_stream, resume_frame_stream, sse_json_frames


def read(stream, frame):
    kind = frame["type"]
    if kind == "text":
        stream.text(frame["delta"])
    elif kind == "reasoning":
        stream.reasoning(frame["delta"])
    elif kind == "tool_call":
        stream.tool_call(frame["id"], frame["name"])
    elif kind == "tool_args":
        stream.tool_arguments(frame["id"], frame["delta"])
    elif kind == "tool_result":
        stream.tool_result(frame["id"], frame["output"], "failed" if frame.get("error") else "completed")
    elif kind == "tool_denied":
        stream.tool_result(frame["id"], {"reason": frame["reason"]}, "rejected")
    elif kind == "usage":
        stream.usage(input_tokens=frame["input"], output_tokens=frame["output"])
    elif kind == "error":
        stream.error(frame["message"])


def approval(frame):
    if frame["type"] == "approval":
        return Pause(frame["id"], action=frame["tool"], options=("approve", "deny"),
                     prompt=f"Allow {frame['tool']}?", input=frame["input"])
    return None


def frames_shop_agent(url: str):
    http = None

    def client():
        import aiohttp

        nonlocal http
        if http is None or http.closed:
            http = aiohttp.ClientSession()
        return http

    async def send(turn_input, ctx):
        resumed = await resume_frame_stream(turn_input, ctx)
        if resumed is not None:  # t.respond(...): tell the backend, then read on where the stream paused
            async with client().post(f"{url}/decisions/{resumed.pause.id}", json={"decision": resumed.answer}) as answered:
                answered.raise_for_status()
            frames = resumed.frames
        else:
            response = await client().post(f"{url}/chat", json={"message": turn_input.text})
            frames = sse_json_frames(response, require_done=True)
        return await drive_frame_stream(frames, DeltaStream(read), ctx, on_frame=approval)

    async def close():
        if http is not None:
            await http.close()

    coverage = EvidenceCoverage(events=COMPLETE, actions=COMPLETE, messages=COMPLETE, usage=COMPLETE, status=COMPLETE,
                                data=unavailable("the shop streams no structured output"))
    return define_agent(name="frames-shop", send=send, evidence_coverage=coverage, close=close)
