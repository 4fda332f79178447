"""Video evaluators backed by an adapter command speaking the NDJSON process protocol (spec §24).

Frames travel as lossless PNG in base64 (`png_encoding.py`), or, for an adapter that accepts assay's
extension, as RGB pixels in a shared-memory segment (`shared_frames.py`). Either way they are
prepared in worker threads, so frames encode in parallel.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


from assay.adapters.ndjson import (
    START_STDERR_HOLD_S,
    EncodedJson,
    NdjsonProcess,
    RequestTimedOut,
    RequestTimeout,
    start_ndjson_process,
    start_timeout,
)
from assay.errors import AdapterRuntimeError
from assay.video.adapters import AdapterConfig, FrameSample, TargetContext
from assay.video.png_encoding import png_view
from assay.video.shared_frames import (
    CAPABILITY as SHARED_FRAMES_CAPABILITY,
    SETUP_METHOD as SHARED_FRAMES_SETUP,
    SharedFrame,
    SharedFrameSegment,
    create_segment,
    shared_frames_enabled,
)

__all__ = [
    "CommandEvaluator",
    "encode_sample_json",
    "sample_payload",
    "start_command_evaluator",
    "target_payload",
]

PROTOCOL_VERSION = 1
def _select_base64() -> Any:
    # pybase64 (SIMD) encodes a 1 MB frame ~10x faster than the stdlib, which holds the GIL while it works.
    try:
        from pybase64 import b64encode  # type: ignore[import-not-found]
    except ImportError:
        return base64.b64encode
    return b64encode


_b64encode = _select_base64()


def _frame_base64(sample: FrameSample, compression: str) -> tuple[bytes, int, int]:
    """The sample's frame as base64 PNG, with its width and height. Targets that sample the same
    decoded frame share one encoding of it."""
    pixels = sample.pixels()
    height, width = pixels.shape[:2]
    data = sample._shared(("png-base64", compression), lambda: _b64encode(png_view(pixels, compression)))
    return data, width, height


def sample_payload(sample: FrameSample) -> dict[str, Any]:
    """The protocol's sample object: lower-camel fields, the frame as a base64 PNG."""
    data, width, height = _frame_base64(sample, "auto")
    return {
        "image": {"mimeType": "image/png", "dataBase64": data.decode("ascii"), "width": width, "height": height},
        **_sample_fields(sample),
    }


def _sample_fields(sample: FrameSample) -> dict[str, Any]:
    return {
        "timestampS": sample.timestamp_s,
        "frameIndex": sample.frame_index,
        "sampleIndex": sample.sample_index,
        "videoPath": sample.video_path,
        "caseName": sample.case_name,
    }


def encode_sample_json(sample: FrameSample, compression: str = "auto") -> tuple[bytes, ...]:
    """`sample_payload(sample)` as compact JSON parts (join them for the text), without escaping
    the base64 (it needs none) and without copying the megabytes of it once more."""
    data, width, height = _frame_base64(sample, compression)
    fields = _json_bytes(_sample_fields(sample))
    return (
        b'{"image":{"mimeType":"image/png","dataBase64":"',
        data,
        b'","width":%d,"height":%d},' % (width, height),
        fields[1:],
    )


def _shared_sample_json(shared: SharedFrame, sample: FrameSample) -> tuple[bytes, ...]:
    """The sample's JSON parts with its `image` naming the frame's slot in the shared segment."""
    return (b'{"image":', shared.image_json(), b",", _json_bytes(_sample_fields(sample))[1:])


@dataclass(frozen=True, slots=True)
class _EncodedSample:
    parts: tuple[bytes, ...]
    shared: SharedFrame | None  # the frame's slot, held until the adapter has answered

    @property
    def size(self) -> int:
        return sum(map(len, self.parts))


def _release_encoded(job: asyncio.Future[_EncodedSample | None]) -> None:
    if job.cancelled() or job.exception() is not None:
        return
    encoded = job.result()
    if encoded is not None and encoded.shared is not None:
        encoded.shared.release()


def _answered(encoded: Sequence[_EncodedSample]) -> Callable[[], None] | None:
    """What gives a request's slots back once the adapter has answered it."""
    shared = [item.shared for item in encoded if item.shared is not None]
    if not shared:
        return None

    def release() -> None:
        for frame in shared:
            frame.release()

    return release


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def target_payload(target: TargetContext) -> dict[str, Any]:
    return {"id": target.id, "index": target.index, "label": target.label, "config": dict(target.config)}


def _target_json(target: TargetContext) -> bytes:
    try:
        return _json_bytes(target_payload(target))
    except (TypeError, ValueError) as error:
        raise AdapterRuntimeError(f"target {target.id!r} config cannot be sent to the adapter command: {error}") from None


# What a request line holds besides its samples and target: id, method, the params' keys.
_ENVELOPE_BYTES = 96

# Encoding is CPU-bound: more threads than cores only add transient frame copies (and malloc
# arenas) without finishing sooner.
ENCODER_THREADS = max(1, min(4, os.cpu_count() or 1))


@dataclass(slots=True)
class CommandEvaluator:
    """A `VideoEvaluator` whose calls are requests to one adapter process (one per trial)."""

    process: NdjsonProcess
    supports_evaluate: bool
    supports_evaluate_many: bool
    encoders: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(ENCODER_THREADS, thread_name_prefix="assay-png")
    )
    # The segment frames go through when the adapter accepted assay's shared-memory extension.
    frames: SharedFrameSegment | None = None

    # Its encoder threads turn each frame into RGB right before the PNG filter reads it (one thread
    # hop and one cache trip fewer than converting ahead in the feed: ~2% of a 600-frame run).
    converts_frames = True

    def _encode(self, sample: FrameSample, compression: str, stop: threading.Event) -> _EncodedSample | None:
        if stop.is_set():
            return None
        if self.frames is not None:
            shared = self.frames.share(sample)
            if shared is not None:
                return _EncodedSample(_shared_sample_json(shared, sample), shared)
        return _EncodedSample(encode_sample_json(sample, compression), None)

    async def _encode_all(self, samples: Sequence[FrameSample], other_bytes: int) -> list[_EncodedSample]:
        """Each sample as JSON parts, prepared in the encoder threads: its frame written to the
        shared segment, or as PNG (when there is no segment or no room in it). Stored PNG blocks
        save CPU but take ~2.4x the bytes of deflate on noisy frames: once they would push the
        request past the protocol's size limit, the PNG frames are deflated instead."""
        loop = asyncio.get_running_loop()
        room = self.process.message_limit - other_bytes
        stop = threading.Event()  # jobs not started yet return None (a running one cannot be stopped)
        jobs = [loop.run_in_executor(self.encoders, self._encode, sample, "auto", stop) for sample in samples]
        try:
            for finished in asyncio.as_completed(jobs):
                room -= (await finished).size  # type: ignore[union-attr]
                if room < 0:
                    break
            else:
                return [job.result() for job in jobs]  # type: ignore[misc]
        except BaseException:
            stop.set()
            for job in jobs:  # every job runs to its end: slots they took are given back then
                job.add_done_callback(_release_encoded)
            raise
        stop.set()
        first: list[_EncodedSample | None] = list(await asyncio.gather(*jobs))
        redo = [index for index, encoded in enumerate(first) if encoded is None or encoded.shared is None]
        deflating = [loop.run_in_executor(self.encoders, encode_sample_json, samples[index], "deflate") for index in redo]
        try:
            deflated = await asyncio.gather(*deflating)
        except BaseException:
            for encoded in first:
                if encoded is not None and encoded.shared is not None:
                    encoded.shared.release()
            raise
        for index, parts in zip(redo, deflated):
            first[index] = _EncodedSample(parts, None)
        return first  # type: ignore[return-value]

    @property
    def batch(self) -> bool:
        return self.supports_evaluate_many

    async def evaluate(self, sample: FrameSample, target: TargetContext) -> Any:
        target_json = _target_json(target)
        (encoded,) = await self._encode_all((sample,), len(target_json) + _ENVELOPE_BYTES)
        params = (b'{"sample":', *encoded.parts, b',"target":', target_json, b"}")
        return await self.process.request("evaluate", EncodedJson(params), on_answer=_answered((encoded,)))

    async def evaluate_many(self, samples: Sequence[FrameSample], target: TargetContext) -> list[Any]:
        target_json = _target_json(target)
        encoded = await self._encode_all(samples, len(target_json) + _ENVELOPE_BYTES + len(samples))
        joined: list[bytes] = []
        for position, item in enumerate(encoded):
            joined.extend((b",", *item.parts) if position else item.parts)
        params = (b'{"samples":[', *joined, b'],"target":', target_json, b"}")
        # GlassKit words a failed batch like a failed single call: `adapter command evaluate failed`.
        result = await self.process.request(
            "evaluateMany", EncodedJson(params), error_label="evaluate", on_answer=_answered(encoded)
        )
        if not isinstance(result, list):
            raise AdapterRuntimeError("adapter command evaluateMany result must be a list")
        return result

    async def close(self) -> None:
        try:
            await self.process.close()
        finally:
            self.encoders.shutdown(wait=False, cancel_futures=True)
            if self.frames is not None:
                self.frames.close()


def _initialize_params(config: AdapterConfig) -> dict[str, Any]:
    artifacts_dir = None if config.artifacts_dir is None else str(config.artifacts_dir.resolve())
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "config": {
            "evalDir": str(config.eval_dir.resolve()),
            "config": config.config,
            "artifactsDir": artifacts_dir,
            "verbose": bool(config.verbose),
        },
    }


async def _offer_shared_frames(
    process: NdjsonProcess, result: dict[str, Any], timeout: RequestTimeout
) -> SharedFrameSegment | None:
    """The segment the adapter accepted, if it declared assay's shared-frames capability; else None.
    Called only when ASSAY_SHARED_FRAMES allows the offer.

    An adapter that only speaks GlassKit's protocol never declares it and never sees the offer.
    One that declares it but cannot open the segment (it runs in a container, on another host, as
    another user) answers the offer with an error and gets PNG frames, as any other adapter."""
    if result["capabilities"].get(SHARED_FRAMES_CAPABILITY) is not True:
        return None
    segment = create_segment()
    if segment is None:
        return None
    try:
        await process.request(SHARED_FRAMES_SETUP, segment.setup_params(), timeout=timeout)
    except RequestTimedOut:
        segment.close()
        raise
    except AdapterRuntimeError:
        segment.close()
        if process.failure is not None:
            raise
        return None
    except BaseException:
        segment.close()
        raise
    # The adapter holds the file open now: its name can go, so no exit path can leave it behind.
    segment.remove_name()
    return segment


def _capabilities(result: Any) -> tuple[bool, bool]:
    if not isinstance(result, dict):
        raise AdapterRuntimeError("initialize result must be a JSON object")
    version = result.get("protocolVersion")
    # A JSON number, as GlassKit's JavaScript host reads it: `1.0` is the number 1, `true` is not.
    if not (type(version) in (int, float) and version == PROTOCOL_VERSION):
        raise AdapterRuntimeError("initialize result must declare protocolVersion 1")
    capabilities = result.get("capabilities")
    if not isinstance(capabilities, dict):
        raise AdapterRuntimeError("initialize result must contain capabilities")
    supports_evaluate = capabilities.get("evaluate") is True
    supports_evaluate_many = capabilities.get("evaluateMany") is True
    if not (supports_evaluate or supports_evaluate_many):
        raise AdapterRuntimeError("adapter command must support evaluate or evaluateMany")
    return supports_evaluate, supports_evaluate_many


def _file_beside_the_eval(command: str, eval_dir: Any) -> str:
    """A hint for a command whose file is named relative to the eval directory (`node adapter.mjs` run from the folder
    above it): the command runs in the current folder, so the runtime said only that it cannot find the file."""
    import shlex

    from assay.core.fsutil import shown_path

    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    for word in words[1:]:
        if word.startswith("-") or os.path.isabs(word) or os.path.exists(word):
            continue
        beside = os.path.join(eval_dir, word)
        if os.path.isfile(beside):
            shown = shown_path(beside)
            fixed = " ".join(shlex.quote(shown if part == word else part) for part in words)
            return (f"\n(the adapter command runs in the current folder, {os.getcwd()}; {word} is in the eval directory:"
                    f" --adapter-command {shlex.quote(fixed)})")
    return ""


async def start_command_evaluator(
    command: str, config: AdapterConfig, *, initialize_timeout: RequestTimeout | None = None, **process_options: Any
) -> CommandEvaluator:
    """Spawn the adapter command and initialize it; `process_options` go to `start_ndjson_process`
    (`call_timeout` for evaluate calls). `initialize` gets `start_timeout()` unless told otherwise.

    The adapter's stderr is mirrored once it has initialized: before that (up to a few seconds) it
    is held, so an adapter that dies at start shows its stderr once, in the error, not twice."""
    initialize_limit = initialize_timeout or start_timeout()
    try:
        offer_shared_frames = shared_frames_enabled()  # before the process starts: a bad value stops nothing
    except ValueError as error:
        raise AdapterRuntimeError(str(error)) from None
    process = await start_ndjson_process(command, hold_stderr_s=START_STDERR_HOLD_S, **process_options)
    try:
        try:
            result = await process.request("initialize", _initialize_params(config), timeout=initialize_limit)
        except AdapterRuntimeError as error:
            raise AdapterRuntimeError(
                f"adapter command '{process.display_command}' failed to initialize: {error}"
                f"{_file_beside_the_eval(command, config.eval_dir)}"
            ) from None
        supports_evaluate, supports_evaluate_many = _capabilities(result)
        try:
            frames = await _offer_shared_frames(process, result, initialize_limit) if offer_shared_frames else None
        except AdapterRuntimeError as error:
            raise AdapterRuntimeError(
                f"adapter command '{process.display_command}' failed to initialize: {error}"
            ) from None
    except BaseException:
        await asyncio.shield(process.force_stop())
        raise
    process.release_stderr()
    return CommandEvaluator(process, supports_evaluate, supports_evaluate_many, frames=frames)
