"""Serve the video NDJSON adapter protocol from a Python program (the adapter side of spec §24).

Lets an app run its adapter in its own interpreter or virtual environment via `--adapter-command`.

Example (`eval/serve_adapter.py`, run with `--adapter-command "app-venv/bin/python eval/serve_adapter.py"`):

    from assay.video.serve import serve
    from myapp import VisionClient

    class Evaluator:
        def __init__(self, config):            # config: assay.video.adapters.AdapterConfig
            self.client = VisionClient(**config.config)
        def evaluate(self, sample, target):    # sample.image is an RGB PIL image
            return self.client.check(sample.image, target.config)
        def close(self):
            self.client.close()

    serve(Evaluator)

The factory and its methods get the same objects as in-process Python adapters (`AdapterConfig`,
`FrameSample` with the frame's RGB image, `TargetContext`); `evaluate_many(samples, target)` takes
precedence when present; each method may be sync (run in a thread) or async. Frames come from
assay through shared memory (assay's extension, `shared_frames.py`), from any other host as PNG.
While serving, `print()` and anything else written to stdout goes to stderr, so the protocol stays clean.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import io
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from assay.adapters.ndjson import MESSAGE_LIMIT_BYTES
from assay.video.shared_frames import CAPABILITY as SHARED_FRAMES_CAPABILITY, SETUP_METHOD as SHARED_FRAMES_SETUP

__all__ = ["serve", "serve_async"]


_ABSENT = object()


def _as_javascript_shows(value: Any) -> str:
    """A JSON value as the JavaScript kit's message shows it (`${value}`), so both kits say the same."""
    if value is _ABSENT:
        return "undefined"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list):
        return ",".join("" if item is None else _as_javascript_shows(item) for item in value)
    return str(value)


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    if inspect.iscoroutinefunction(function):
        result = await function(*args)
    else:
        result = await asyncio.to_thread(function, *args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _frame_sample(payload: dict[str, Any], shared_frames: Any = None) -> Any:
    from PIL import Image

    from assay.video.adapters import FrameSample

    image_payload = payload["image"]
    if "sharedFrame" in image_payload:
        return _shared_frame_sample(payload, shared_frames)
    image = Image.open(io.BytesIO(base64.b64decode(image_payload["dataBase64"])))
    image.load()
    if image.mode != "RGB":
        image = image.convert("RGB")
    return FrameSample(
        image=image,
        timestamp_s=payload["timestampS"],
        frame_index=payload["frameIndex"],
        sample_index=payload["sampleIndex"],
        video_path=payload["videoPath"],
        case_name=payload["caseName"],
    )


def _shared_frame_sample(payload: dict[str, Any], shared_frames: Any) -> Any:
    """A sample whose pixels were copied out of assay's shared segment (on arrival, so the slot is
    free to reuse once the request is answered); its PIL image is made when first read."""
    from assay.video.adapters import FrameSample
    from assay.video.decode import DecodedFrame

    if shared_frames is None:
        raise RuntimeError("a shared frame arrived, but no shared-frames segment was set up")
    image = payload["image"]
    pixels = shared_frames.read(image["sharedFrame"], image["width"], image["height"])
    frame = DecodedFrame.from_pixels(payload["frameIndex"], 0.0, pixels)
    return FrameSample.of_frame(frame, payload["timestampS"], payload["sampleIndex"], payload["videoPath"], payload["caseName"])


def _release(sample: Any, payload: dict[str, Any]) -> None:
    if "sharedFrame" in payload["image"]:
        sample.release()  # closes its image only if one was made
    else:
        sample.image.close()


def _target_context(payload: dict[str, Any]) -> Any:
    from assay.video.adapters import TargetContext

    return TargetContext(
        id=payload["id"], index=payload["index"], label=payload.get("label"), config=payload.get("config") or {}
    )


def _adapter_config(payload: dict[str, Any]) -> Any:
    from assay.video.adapters import AdapterConfig

    artifacts_dir = payload.get("artifactsDir")
    return AdapterConfig(
        eval_dir=Path(payload["evalDir"]),
        config=payload.get("config") or {},
        artifacts_dir=None if artifacts_dir is None else Path(artifacts_dir),
        verbose=bool(payload.get("verbose")),
    )


def _error_payload(error: BaseException) -> dict[str, Any]:
    if isinstance(error, asyncio.CancelledError):
        return {"message": "cancelled"}
    if isinstance(error, SystemExit):  # the adapter's code ended: that call failed, the server goes on
        message = f"the adapter called sys.exit({error.code!r}); raise an exception instead to report a failure"
        return {"message": message, "type": "SystemExit"}
    from assay.video.observe import error_text

    return {"message": error_text(error), "type": type(error).__name__}  # (a KeyError named as one, as in a run)


class _AdapterServer:
    def __init__(self, create_evaluator: Callable[..., Any], output: asyncio.StreamWriter) -> None:
        self._create_evaluator = create_evaluator
        self._output = output
        self._write_lock = asyncio.Lock()
        self._evaluator: Any = None
        self._active: dict[Any, asyncio.Task[None]] = {}
        self._shared_frames: Any = None  # a SharedFrameReader once assay's offer was accepted

    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, separators=(",", ":"), ensure_ascii=True, allow_nan=False) + "\n"
        async with self._write_lock:
            self._output.write(line.encode("ascii"))
            await self._output.drain()

    async def answer(self, request_id: Any, work: Callable[[], Any]) -> None:
        try:
            reply = {"id": request_id, "result": await work()}
        except BaseException as error:  # noqa: BLE001 - every failure becomes an error reply
            reply = {"id": request_id, "error": _error_payload(error)}
        try:
            await self.send(reply)
        except (ValueError, TypeError, RecursionError) as error:  # a result that is not JSON (NaN, a set, a cycle)
            # (a TypeError left unanswered here ended the task quietly, and assay waited for the answer for ever)
            await self.send({"id": request_id, "error": {"message": f"result is not JSON: {error}"}})

    async def initialize(self, request_id: Any, params: dict[str, Any]) -> None:
        async def work() -> dict[str, Any]:
            version = params.get("protocolVersion", _ABSENT)
            # As the JavaScript kit reads it: the number 1 (`1.0` too), not `true` or `"1"`.
            if type(version) not in (int, float) or version != 1:
                raise ValueError(f"unsupported protocol version: {_as_javascript_shows(version)}")
            evaluator = await _call(self._create_evaluator, _adapter_config(params.get("config") or {}))
            self._evaluator = evaluator
            capabilities = {
                "evaluate": callable(getattr(evaluator, "evaluate", None)),
                "evaluateMany": callable(getattr(evaluator, "evaluate_many", None)),
            }
            if not any(capabilities.values()):
                raise TypeError("adapter must implement evaluate or evaluate_many")
            # assay then offers a shared-memory segment (a GlassKit host ignores the key).
            return {"protocolVersion": 1, "capabilities": {**capabilities, SHARED_FRAMES_CAPABILITY: True}}

        await self.answer(request_id, work)

    async def accept_shared_frames(self, request_id: Any, params: dict[str, Any]) -> None:
        from assay.video.shared_frames import SharedFrameReader

        async def work() -> dict[str, Any]:
            self.close_shared_frames()
            self._shared_frames = SharedFrameReader(params)
            return {"version": 1}

        await self.answer(request_id, work)

    def close_shared_frames(self) -> None:
        reader, self._shared_frames = self._shared_frames, None
        if reader is not None:
            reader.close()

    def start_evaluation(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        async def work() -> Any:
            if self._evaluator is None:
                raise RuntimeError("adapter is not initialized")
            target = _target_context(params["target"])
            shared = self._shared_frames
            if method == "evaluate":
                sample = await asyncio.to_thread(_frame_sample, params["sample"], shared)
                try:
                    return await _call(self._evaluator.evaluate, sample, target)
                finally:
                    _release(sample, params["sample"])
            samples = await asyncio.to_thread(lambda: [_frame_sample(payload, shared) for payload in params["samples"]])
            try:
                return list(await _call(self._evaluator.evaluate_many, samples, target))
            finally:
                for sample, payload in zip(samples, params["samples"]):
                    _release(sample, payload)

        task = asyncio.create_task(self.answer(request_id, work))
        self._active[request_id] = task
        task.add_done_callback(lambda _: self._active.pop(request_id, None))

    async def close_evaluator(self) -> None:
        self.close_shared_frames()
        evaluator, self._evaluator = self._evaluator, None
        close = getattr(evaluator, "close", None)
        if callable(close):
            await _call(close)

    async def run(self, reader: asyncio.StreamReader) -> int:
        while True:
            line = await reader.readline()
            if not line:
                break
            try:
                request = json.loads(line)
                request_id, method = request.get("id"), request["method"]
                params = request.get("params") or {}
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                print(f"malformed protocol request: {error}", file=sys.stderr)
                await self.abandon()
                return 1
            if method == "cancel":
                task = self._active.get(params.get("id"))
                if task is not None:
                    task.cancel()
            elif method == "initialize":
                await self.initialize(request_id, params)
            elif method == SHARED_FRAMES_SETUP:
                await self.accept_shared_frames(request_id, params)
            elif method in ("evaluate", "evaluateMany"):
                self.start_evaluation(request_id, method, params)
            elif method == "close":
                await asyncio.gather(*self._active.values(), return_exceptions=True)

                async def close_work() -> None:
                    await self.close_evaluator()

                await self.answer(request_id, close_work)
                return 0
            else:
                await self.send({"id": request_id, "error": {"message": f"unknown method: {method}"}})
        await self.abandon()  # stdin closed without `close`
        return 0

    async def abandon(self) -> None:
        for task in self._active.values():
            task.cancel()
        await asyncio.gather(*self._active.values(), return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.close_evaluator()


async def serve_async(create_evaluator: Callable[..., Any]) -> int:
    """Serve until `close` or stdin EOF; returns the exit status (1 after a malformed request)."""
    loop = asyncio.get_running_loop()
    # Keep the protocol on a private copy of stdout and send fd 1 (print, C libraries) to stderr.
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    previous_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        reader = asyncio.StreamReader(limit=MESSAGE_LIMIT_BYTES)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(protocol_fd, "wb", buffering=0)
        )
        output = asyncio.StreamWriter(transport, protocol, None, loop)
        try:
            return await _AdapterServer(create_evaluator, output).run(reader)
        finally:
            transport.close()
    finally:
        sys.stdout = previous_stdout


def serve(create_evaluator: Callable[..., Any]) -> None:
    """Run the protocol loop for `create_evaluator(config)` and exit the process when it ends."""
    raise SystemExit(asyncio.run(serve_async(create_evaluator)))
