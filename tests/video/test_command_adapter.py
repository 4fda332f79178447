"""Command adapters for video evals: initialize, frames as lossless PNG, evaluate and evaluateMany."""

from __future__ import annotations

import asyncio
import hashlib
import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from assay.adapters.ndjson import ProcessTimeouts
from assay.errors import AdapterRuntimeError
from assay.video.adapters import AdapterConfig, FrameSample, TargetContext
from assay.video.command_adapter import encode_sample_json, sample_payload, start_command_evaluator
from assay.video.png_encoding import encode_png

FIXTURES = Path(__file__).parents[1] / "adapters" / "fixtures"
PROBE = FIXTURES / "png_probe_adapter.mjs"
MISBEHAVING = FIXTURES / "misbehaving_adapter.mjs"
FAST = ProcessTimeouts(close_s=0.5, terminate_grace_s=0.3, kill_grace_s=0.5)


def quiet(chunk: bytes) -> None:
    pass


def adapter_config(tmp_path: Path, **overrides) -> AdapterConfig:
    values = dict(eval_dir=tmp_path, config={"model": "m1", "snake_key": {"x": 1}}, artifacts_dir=None, verbose=True)
    values.update(overrides)
    return AdapterConfig(**values)


def noisy_frame(seed: int, size=(96, 64)) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


def smooth_frame(seed: int, size=(96, 80)) -> Image.Image:
    columns = np.arange(size[0], dtype=np.uint16)[None, :, None]
    rows = np.arange(size[1], dtype=np.uint16)[:, None, None]
    pixels = (columns * np.array([2, 1, 0]) + rows * np.array([0, 1, 3]) + seed) % 256
    return Image.fromarray(pixels.astype(np.uint8), "RGB")


def frame_samples(count: int) -> list[FrameSample]:
    """Noisy frames (sent as stored PNG) alternating with smooth ones (sent deflated)."""
    return [
        FrameSample(
            noisy_frame(index, (96, 80)) if index % 2 == 0 else smooth_frame(index),
            round(0.5 * index, 9), 15 * index, index, "/videos/clip.mp4", "clip",
        )
        for index in range(count)
    ]


TARGET = TargetContext(id="door", index=2, label="Door open", config={"promptId": "p-7", "nested": {"a": [1]}})


def expected_probe(sample: FrameSample, target: TargetContext) -> dict:
    """What the JavaScript probe must report, computed here straight from the FrameSample."""
    width, height = sample.image.size
    return {
        "width": width,
        "height": height,
        "declared": [width, height, "image/png"],
        "decodedWidth": width,
        "pixel": list(sample.image.getpixel((0, 0))),
        "sha256": hashlib.sha256(np.asarray(sample.image).tobytes()).hexdigest(),
        "pngSha256": hashlib.sha256(np.asarray(sample.image).tobytes()).hexdigest(),
        "timestampS": sample.timestamp_s,
        "frameIndex": sample.frame_index,
        "sampleIndex": sample.sample_index,
        "caseName": sample.case_name,
        "videoPath": sample.video_path,
        "target": [target.id, target.index, target.label, dict(target.config)],
    }


def run(coroutine):
    return asyncio.run(coroutine)


def png_chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """The chunks of a PNG, each CRC checked (Pillow does not check them all)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, offset = [], 8
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset : offset + 4])
        kind, data = png[offset + 4 : offset + 8], png[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", png[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(kind + data), kind
        chunks.append((kind, data))
        offset += 12 + length
    assert offset == len(png) and chunks[-1] == (b"IEND", b"")
    return chunks


@pytest.mark.parametrize("compression", ["auto", "deflate", "stored"])
def test_png_encoding_is_lossless(compression):
    # Stored blocks hold whole rows: (1, 32766) fills two blocks exactly, (700, 161) has a shorter
    # last block, (21844, 3) one row per block; rows of (21845, 2) do not fit one and are deflated.
    sizes = [(64, 48), (1, 1), (161, 97), (700, 161), (1, 32766), (21844, 3), (21845, 2)]
    for seed, size in enumerate(sizes):
        for image in (noisy_frame(seed, size), smooth_frame(seed, size)):
            png = encode_png(np.asarray(image), compression)
            idat = b"".join(data for kind, data in png_chunks(png) if kind == b"IDAT")
            zlib.decompress(idat)  # checks the stream's Adler-32 as well
            decoded = Image.open(io.BytesIO(png))
            assert decoded.mode == "RGB"
            assert decoded.size == size
            assert np.array_equal(np.asarray(decoded), np.asarray(image))


def deflate_block_type(png: bytes) -> int:
    """BTYPE of the first deflate block in the IDAT stream: 0 stored, 1 fixed, 2 dynamic Huffman."""
    idat = b"".join(data for kind, data in png_chunks(png) if kind == b"IDAT")
    return (idat[2] >> 1) & 3


def test_frames_that_deflate_poorly_are_stored_and_the_rest_deflated():
    width, height = 320, 240
    stored_size = 8 + 25 + 12 + (2 + height * (3 * width + 1) + 5 * 4 + 4) + 12  # four stored blocks
    noisy = np.asarray(noisy_frame(1, (width, height)))
    assert len(encode_png(noisy)) == len(encode_png(noisy, "stored")) == stored_size
    assert deflate_block_type(encode_png(noisy)) == 0
    assert deflate_block_type(encode_png(noisy, "deflate")) != 0
    smooth = np.asarray(smooth_frame(1, (width, height)))
    assert len(encode_png(smooth)) == len(encode_png(smooth, "deflate")) < stored_size / 20
    assert deflate_block_type(encode_png(smooth)) != 0
    # Every other row noise: the Up filter carries it into every row, deflate keeps ~all, so stored.
    half = smooth.copy()
    half[::2] = noisy[::2]
    assert deflate_block_type(encode_png(half)) == 0
    # Noise in one small corner only: deflate still pays.
    corner = smooth.copy()
    corner[:16, :16] = noisy[:16, :16]
    assert deflate_block_type(encode_png(corner)) != 0
    wide = np.asarray(noisy_frame(2, (21845, 2)))
    assert deflate_block_type(encode_png(wide, "stored")) != 0
    with pytest.raises(ValueError, match="compression must be"):
        encode_png(smooth, "fast")


def test_samples_with_other_image_modes_are_sent_as_rgb():
    import base64

    sample = FrameSample(Image.new("L", (8, 4), 200), 0.0, 0, 0, "/v.mp4", "case")
    assert sample.pixels().shape == (4, 8, 3)
    payload = sample_payload(sample)["image"]
    decoded = Image.open(io.BytesIO(base64.b64decode(payload["dataBase64"])))
    assert (payload["width"], payload["height"], decoded.mode) == (8, 4, "RGB")
    assert decoded.getpixel((3, 2)) == (200, 200, 200)


def test_sample_json_matches_the_protocol_payload():
    import json

    sample = frame_samples(2)[1]
    assert json.loads(b"".join(encode_sample_json(sample))) == sample_payload(sample)
    assert list(sample_payload(sample)) == ["image", "timestampS", "frameIndex", "sampleIndex", "videoPath", "caseName"]


def test_javascript_adapter_evaluate_sees_the_real_frame_and_context(tmp_path):
    artifacts = tmp_path / "artifacts"
    samples = frame_samples(4)

    async def scenario():
        evaluator = await start_command_evaluator(
            f"node {PROBE} single", adapter_config(tmp_path, artifacts_dir=artifacts), stderr_sink=quiet
        )
        assert evaluator.batch is False
        results = await asyncio.gather(*(evaluator.evaluate(sample, TARGET) for sample in samples))
        await evaluator.close()
        return results

    results = run(scenario())
    for sample, result in zip(samples, results):
        assert result.pop("via") == "evaluate"
        context = result.pop("context")
        assert result == expected_probe(sample, TARGET)
    assert context == {
        "evalDir": str(tmp_path.resolve()),
        "config": {"model": "m1", "snake_key": {"x": 1}},
        "artifactsDir": str(artifacts.resolve()),
        "verbose": True,
    }


def test_evaluate_many_is_preferred_and_gives_the_same_observations(tmp_path):
    samples = frame_samples(3)

    async def scenario(mode):
        evaluator = await start_command_evaluator(f"node {PROBE} {mode}", adapter_config(tmp_path), stderr_sink=quiet)
        try:
            if evaluator.batch:
                return "many", await evaluator.evaluate_many(samples, TARGET)
            return "single", [await evaluator.evaluate(sample, TARGET) for sample in samples]
        finally:
            await evaluator.close()

    strategy_both, batched = run(scenario("both"))
    strategy_single, single = run(scenario("single"))
    assert (strategy_both, strategy_single) == ("many", "single")
    assert [item.pop("via") for item in batched] == ["evaluateMany"] * 3
    assert [item.pop("via") for item in single] == ["evaluate"] * 3
    assert batched == single
    assert [item["pixel"] for item in batched] == [list(s.image.getpixel((0, 0))) for s in samples]
    assert batched[0]["context"]["artifactsDir"] is None


def test_evaluate_error_reply_has_no_sample_context(tmp_path):
    async def scenario():
        evaluator = await start_command_evaluator(
            f"node {MISBEHAVING} evaluate-error", adapter_config(tmp_path), stderr_sink=quiet
        )
        try:
            await evaluator.evaluate(frame_samples(1)[0], TARGET)
        finally:
            await evaluator.close()

    with pytest.raises(AdapterRuntimeError, match="^adapter command evaluate failed: model timed out$"):
        run(scenario())


def test_evaluate_many_result_must_be_a_list(tmp_path):
    async def scenario():
        evaluator = await start_command_evaluator(
            f"node {MISBEHAVING} many-not-list", adapter_config(tmp_path), stderr_sink=quiet
        )
        try:
            assert evaluator.batch
            await evaluator.evaluate_many(frame_samples(2), TARGET)
        finally:
            await evaluator.close()

    with pytest.raises(AdapterRuntimeError, match="^adapter command evaluateMany result must be a list$"):
        run(scenario())


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("no-capability", "adapter command must support evaluate or evaluateMany"),
        ("wrong-version", "initialize result must declare protocolVersion 1"),
        ("version-true", "initialize result must declare protocolVersion 1"),
        ("no-capabilities", "initialize result must contain capabilities"),
        ("array-result", "initialize result must be a JSON object"),
    ],
)
def test_invalid_initialize_results_are_unwrapped_load_errors(tmp_path, mode, message):
    async def scenario():
        await start_command_evaluator(
            f"node {MISBEHAVING} {mode}", adapter_config(tmp_path), stderr_sink=quiet, timeouts=FAST
        )

    with pytest.raises(AdapterRuntimeError) as caught:
        run(scenario())
    assert str(caught.value) == message


def test_protocol_version_written_as_1_0_is_the_number_1(tmp_path):
    # GlassKit's host reads the reply with JSON.parse, where `1.0` is the number 1 (an adapter
    # written in Python sends `1.0` for a float); only a value that is not the number 1 is refused.
    async def scenario():
        evaluator = await start_command_evaluator(
            f"node {MISBEHAVING} version-float", adapter_config(tmp_path), stderr_sink=quiet, timeouts=FAST
        )
        try:
            return evaluator.batch
        finally:
            await evaluator.close()

    assert run(scenario()) is False


def test_initialize_error_reply_is_wrapped(tmp_path):
    with pytest.raises(AdapterRuntimeError) as caught:
        run(start_command_evaluator(f"node {MISBEHAVING} init-error", adapter_config(tmp_path), stderr_sink=quiet))
    assert str(caught.value) == (
        f"adapter command 'node {MISBEHAVING} init-error' failed to initialize: "
        "adapter command initialize failed: missing API key"
    )


def test_crash_at_start_is_wrapped_with_the_stderr_tail(tmp_path):
    with pytest.raises(AdapterRuntimeError) as caught:
        run(start_command_evaluator(f"node {MISBEHAVING} crash-at-start", adapter_config(tmp_path), stderr_sink=quiet))
    command = f"node {MISBEHAVING} crash-at-start"
    assert str(caught.value) == (
        f"adapter command '{command}' failed to initialize: adapter command '{command}' exited unexpectedly "
        "(exit code 3); stderr tail: fatal: cannot load the app"
    )


def test_initialize_failure_stops_the_process(tmp_path):
    pids = []

    async def scenario():
        import assay.video.command_adapter as module

        original = module.start_ndjson_process

        async def spying(*args, **kwargs):
            process = await original(*args, **kwargs)
            pids.append(process)
            return process

        module.start_ndjson_process = spying
        try:
            await start_command_evaluator(
                f"node {MISBEHAVING} no-capability", adapter_config(tmp_path), stderr_sink=quiet, timeouts=FAST
            )
        finally:
            module.start_ndjson_process = original

    with pytest.raises(AdapterRuntimeError):
        run(scenario())
    assert pids[0].returncode is not None


def test_cancelled_evaluation_sends_cancel_then_close_still_works(tmp_path):
    received = bytearray()

    async def scenario():
        evaluator = await start_command_evaluator(
            f"node {MISBEHAVING} slow", adapter_config(tmp_path), stderr_sink=received.extend
        )
        tasks = [asyncio.create_task(evaluator.evaluate(sample, TARGET)) for sample in frame_samples(2)]
        while received.count(b"started") < 2:
            await asyncio.sleep(0.01)
        for task in tasks:
            task.cancel()  # what Ctrl-C or a fail-fast error does to in-flight work
        await asyncio.gather(*tasks, return_exceptions=True)
        await evaluator.close()

    run(scenario())
    assert b"cancel 2\n" in received and b"cancel 3\n" in received


def half_noise_samples(count: int, size=(320, 240)) -> list[FrameSample]:
    """Frames deflate keeps about half of (left half noise): sent as stored blocks unless that
    breaks the size limit."""
    samples = []
    for index in range(count):
        pixels = np.asarray(smooth_frame(index, size)).copy()
        pixels[:, : size[0] // 2] = np.asarray(noisy_frame(index, size))[:, : size[0] // 2]
        samples.append(FrameSample(Image.fromarray(pixels, "RGB"), index / 2, index, index, "/v.mp4", "clip"))
    return samples


@pytest.mark.parametrize("mode", ["single", "many"])
def test_frames_are_deflated_when_stored_blocks_would_exceed_the_message_limit(tmp_path, mode, monkeypatch):
    monkeypatch.setenv("ASSAY_SHARED_FRAMES", "0")  # PNG frames, as for any adapter without the extension
    samples = half_noise_samples(6)
    stored = sum(len(b"".join(encode_sample_json(sample))) for sample in samples)
    deflated = sum(len(b"".join(encode_sample_json(sample, "deflate"))) for sample in samples)
    assert deflated < 0.6 * stored
    # Between the two: a batch of stored frames would exceed it (so would one stored frame of six
    # with a sixth of it), deflated frames fit.
    limit = (stored + deflated) // 2 if mode == "many" else (stored + deflated) // 12

    async def scenario():
        evaluator = await start_command_evaluator(
            f"node {PROBE} {mode}", adapter_config(tmp_path), stderr_sink=quiet, message_limit=limit
        )
        try:
            if mode == "many":
                return await evaluator.evaluate_many(samples, TARGET)
            return [await evaluator.evaluate(sample, TARGET) for sample in samples]
        finally:
            await evaluator.close()

    results = run(scenario())
    assert [result["sha256"] for result in results] == [
        hashlib.sha256(np.asarray(sample.image).tobytes()).hexdigest() for sample in samples
    ]


# ---- adapters that hang or linger --------------------------------------------------------------


@pytest.fixture
def process_mark(monkeypatch):
    from adapters.hostile import mark_children, running_with

    mark = mark_children(monkeypatch)
    yield mark
    assert running_with(mark) == [], "the adapter left processes running"


def test_an_adapter_that_never_answers_initialize_times_out_naming_the_setting(tmp_path, monkeypatch, process_mark):
    """What `run`, `seed` and `validate --adapter-command` all go through: none of them can hang."""
    import time

    from adapters.hostile import hostile
    from assay.video.observe import TrialEvaluator

    monkeypatch.setenv("ASSAY_ADAPTER_START_TIMEOUT", "0.3")
    command = hostile("never-answers")

    async def scenario():
        async with TrialEvaluator(adapter=None, adapter_command=command, config=adapter_config(tmp_path), executor=None) as trial:
            await trial.get()

    started = time.monotonic()
    with pytest.raises(AdapterRuntimeError) as caught:
        run(scenario())
    assert str(caught.value) == (
        f"adapter command '{command}' failed to initialize: adapter command '{command}' did not answer "
        "initialize within 0.3s (set by ASSAY_ADAPTER_START_TIMEOUT)"
    )
    assert time.monotonic() - started < 0.3 + 1.0


def test_adapter_timeout_limits_each_evaluate_and_keeps_earlier_observations(tmp_path, process_mark):
    from adapters.hostile import hostile
    from assay.video.observe import create_evaluator

    async def scenario():
        evaluator = await create_evaluator(
            adapter=None, adapter_command=hostile("sleeps-mid-run", 2), config=adapter_config(tmp_path),
            executor=None, adapter_timeout=0.3,
        )
        try:
            samples = frame_samples(2)
            first = await evaluator.evaluate(samples[0], TARGET)
            with pytest.raises(AdapterRuntimeError) as caught:
                await evaluator.evaluate(samples[1], TARGET)
            return first, str(caught.value)
        finally:
            await evaluator.process.force_stop()

    first, message = run(scenario())
    assert first == {"seen": 0}
    assert message.endswith("did not answer evaluate within 0.3s (set by --adapter-timeout)")
