"""Frames through shared memory (assay's extension to the protocol): the pixels PNG would carry,
a private segment that no exit path leaves behind, a slot reused only once its request was answered."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from media import make_video
from PIL import Image
from video_evals import invoke, read_report, write

from assay.adapters.ndjson import EncodedJson, start_ndjson_process
from assay.errors import AdapterRuntimeError
from assay.video import command_adapter, shared_frames
from assay.video.adapters import AdapterConfig, FrameSample, TargetContext
from assay.video.command_adapter import start_command_evaluator
from assay.video.decode import select_frames

pytestmark = pytest.mark.skipif(
    not shared_frames.SHM_DIRECTORY.is_dir() or subprocess.run(["node", "--version"], capture_output=True).returncode,
    reason="needs /dev/shm and node",
)

FIXTURES = Path(__file__).resolve().parents[1] / "adapters" / "fixtures"
PROBE = FIXTURES / "png_probe_adapter.mjs"
PYTHON_PROBE = FIXTURES / "python_probe_adapter.py"
SHARED = FIXTURES / "shared_frames_adapter.mjs"
TARGET = TargetContext(id="t", index=0, label=None, config={})
STALE_READ = (
    "this frame came through shared memory and its slot was handed back when its request was answered: "
    "read sample.image.rgb (or .bytes) before evaluate returns"
)


def sha256(pixels: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(pixels).tobytes()).hexdigest()


def textured_frame(index: int, width: int = 96, height: int = 80) -> np.ndarray:
    """Noise on the left (sent as stored PNG blocks), a gradient on the right (deflated)."""
    ys, xs = np.mgrid[0:height, 0:width]
    pixels = np.stack([xs * 2 + index * 9, ys * 3, (xs + ys) * 2], axis=-1).astype(np.uint8)
    pixels[:, : width // 2] = np.random.default_rng(index).integers(0, 256, (height, width // 2, 3), dtype=np.uint8)
    return pixels


def textured_eval(root: Path, samples: int = 12, **orientation) -> tuple[Path, Path]:
    eval_dir = root / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    video = make_video(eval_dir / "cases" / "clip.mp4", count=samples, frame_for_index=textured_frame, fps=10, **orientation)
    write(
        eval_dir / "cases" / "clip.yaml",
        f"""
        video: clip.mp4
        targets:
          t:
            samples:
              - range: [0.0, {samples / 10}]
                every_s: 0.1
                expect: true
        """,
    )
    return eval_dir, video


def observations(eval_dir: Path, command: str, *extra: str) -> list:
    report = eval_dir.parent / "report.json"
    result = invoke("video", "run", "--eval-dir", eval_dir, "--adapter-command", command, "--output-json", report, *extra)
    assert result.exit_code in (0, 1), result.output  # every sample was observed
    return [result["observed"] for result in read_report(report)["trials"][0]["results"]]


def expected_hashes(video: Path, count: int) -> list[str]:
    return [sha256(frame.pixels) for frame in select_frames(video, [round(0.1 * index, 9) for index in range(count)])]


@pytest.fixture
def frame_writes(monkeypatch):
    """Every frame written to a shared segment, as (segment path, slot number, slots in the segment)."""
    writes: list[tuple[Path, int, int]] = []
    real = shared_frames.SharedFrameSegment._write

    def recording(segment, slot, pixels):
        writes.append((segment.path, slot.number, segment.slot_count))
        return real(segment, slot, pixels)

    monkeypatch.setattr(shared_frames.SharedFrameSegment, "_write", recording)
    return writes


def segment_names(pid: int) -> list[str]:
    return sorted(name for name in os.listdir(shared_frames.SHM_DIRECTORY) if name.startswith(f"assay-frames-{pid}-"))


def open_segments(pid: int | str = "self") -> list[str]:
    """The segments a process holds open (by descriptor), named or already unlinked."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if "assay-frames-" in target:
            found.append(target)
    return found


def nothing_left_by_this_process() -> None:
    assert segment_names(os.getpid()) == []
    assert open_segments() == []


# ---- the same pixels ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "orientation",
    [{}, {"display_rotation": 90, "display_hflip": True}, {"display_rotation": 270}],
    ids=["upright", "rotated-and-mirrored", "rotated"],
)
def test_both_kits_see_through_shared_memory_exactly_the_pixels_png_carries(tmp_path, monkeypatch, frame_writes, orientation):
    eval_dir, video = textured_eval(tmp_path, **orientation)
    expected = expected_hashes(video, 12)
    seen = {}
    for kit, command in (("node", f"node {PROBE} single"), ("python", shlex.join([sys.executable, str(PYTHON_PROBE)]))):
        monkeypatch.delenv("ASSAY_SHARED_FRAMES", raising=False)
        seen[kit] = shared = observations(eval_dir, command)
        assert len(frame_writes) == 12
        frame_writes.clear()
        monkeypatch.setenv("ASSAY_SHARED_FRAMES", "0")
        png = observations(eval_dir, command)
        assert frame_writes == []
        assert shared == png
        assert [observation["sha256"] for observation in shared] == expected
    # the node kit's own PNG (`image.bytes` of a shared frame) holds the same pixels
    assert [observation["pngSha256"] for observation in seen["node"]] == expected
    nothing_left_by_this_process()


def test_a_batch_larger_than_the_segment_sends_the_rest_as_png(tmp_path, monkeypatch, frame_writes):
    frames = [textured_frame(index, 64, 48) for index in range(6)]
    samples = [FrameSample(Image.fromarray(pixels), index / 10, index, index, "/v.mp4", "clip") for index, pixels in enumerate(frames)]
    monkeypatch.setattr(shared_frames, "MAX_SEGMENT_BYTES", shared_frames.PAGE + 2 * 3 * shared_frames.PAGE)  # room for 2

    async def scenario():
        evaluator = await start_command_evaluator(f"node {PROBE} many", AdapterConfig(tmp_path, {}, None, False))
        try:
            return await evaluator.evaluate_many(samples, TARGET)
        finally:
            await evaluator.close()

    results = asyncio.run(scenario())
    assert [result["sha256"] for result in results] == [sha256(pixels) for pixels in frames]
    assert [result["pngSha256"] for result in results] == [sha256(pixels) for pixels in frames]  # deflated by the kit
    assert len(frame_writes) == 2
    nothing_left_by_this_process()


# ---- who gets the offer ---------------------------------------------------------------------------


def test_the_kit_accepts_the_offer_unless_assay_is_told_not_to_make_it(tmp_path, monkeypatch):
    async def transport():
        evaluator = await start_command_evaluator(f"node {SHARED} hash", AdapterConfig(tmp_path, {}, None, False))
        try:
            return evaluator.frames is not None
        finally:
            await evaluator.close()

    assert asyncio.run(transport()) is True
    monkeypatch.setenv("ASSAY_SHARED_FRAMES", "0")
    assert asyncio.run(transport()) is False


def test_a_misspelt_shared_frames_switch_is_refused_before_the_adapter_starts(tmp_path, monkeypatch):
    # "of" or "nope" used to leave shared memory on without a word; the usual words for off are read as off.
    started = tmp_path / "started"
    script = write(tmp_path / "adapter.py", f"open({str(started)!r}, 'w').close()\n")
    monkeypatch.setenv("ASSAY_SHARED_FRAMES", "of")
    with pytest.raises(AdapterRuntimeError, match=r"^ASSAY_SHARED_FRAMES must be 0 .* got 'of'$"):
        asyncio.run(start_command_evaluator(shlex.join([sys.executable, str(script)]), AdapterConfig(tmp_path, {}, None, False)))
    assert not started.exists()
    for off in ("off", "False", " no "):
        monkeypatch.setenv("ASSAY_SHARED_FRAMES", off)
        assert shared_frames.shared_frames_enabled() is False
    for on in ("", "1", "on", "TRUE"):
        monkeypatch.setenv("ASSAY_SHARED_FRAMES", on)
        assert shared_frames.shared_frames_enabled() is True


def test_an_adapter_that_cannot_open_the_segment_gets_png_frames(tmp_path):
    """A kit in a container or on another host declares the capability but cannot open the file."""
    log = tmp_path / "received.ndjson"
    script = write(
        tmp_path / "refuses.py",
        f"""
        import json, sys
        for line in sys.stdin:
            open({str(log)!r}, "a").write(line)
            request = json.loads(line)
            method, request_id = request["method"], request.get("id")
            if method == "initialize":
                reply = {{"result": {{"protocolVersion": 1, "capabilities": {{"evaluate": True, "assay.sharedFrames": True}}}}}}
            elif method == "assay.sharedFrames":
                reply = {{"error": {{"message": "no such file: " + request["params"]["path"]}}}}
            elif method == "evaluate":
                reply = {{"result": "image" in request["params"]["sample"] and "dataBase64" in request["params"]["sample"]["image"]}}
            else:
                reply = {{"result": None}}
            print(json.dumps({{"id": request_id, **reply}}), flush=True)
            if method == "close":
                break
        """,
    )
    eval_dir, _ = textured_eval(tmp_path, samples=3)
    assert observations(eval_dir, shlex.join([sys.executable, str(script)])) == [True, True, True]
    methods = [json.loads(line)["method"] for line in log.read_text().splitlines()]
    assert methods == ["initialize", "assay.sharedFrames", "evaluate", "evaluate", "evaluate", "close"]
    nothing_left_by_this_process()


# ---- the segment: private, and gone on every exit path ------------------------------------------------


def test_the_segment_is_private_and_its_name_is_gone_once_the_adapter_holds_it(tmp_path, monkeypatch):
    created = []
    real = command_adapter.create_segment

    def creating():
        segment = real()
        created.append((segment, os.stat(segment.path).st_mode & 0o777))
        return segment

    monkeypatch.setattr(command_adapter, "create_segment", creating)

    async def scenario():
        evaluator = await start_command_evaluator(f"node {SHARED} hash", AdapterConfig(tmp_path, {}, None, False))
        try:
            (segment, mode), = created
            assert evaluator.frames is segment and mode == 0o600
            assert not segment.path.exists()  # unlinked as soon as the adapter had opened it
            assert open_segments(evaluator.process.pid) == [f"{segment.path} (deleted)"]
            pixels = textured_frame(3)
            sample = FrameSample(Image.fromarray(pixels), 0.0, 0, 0, "/v.mp4", "clip")
            assert (await evaluator.evaluate(sample, TARGET))["sha256"] == sha256(pixels)
        finally:
            await evaluator.close()

    asyncio.run(scenario())
    nothing_left_by_this_process()


@pytest.fixture
def process_mark(monkeypatch):
    from adapters.hostile import mark_children, running_with

    mark = mark_children(monkeypatch)
    yield mark
    deadline = time.monotonic() + 10
    while running_with(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running_with(mark) == [], "the adapter left processes running"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (f"node {SHARED} hash", None),
        (f"node {SHARED} fail-at 2", "model timed out on sample 2"),
        (f"node {SHARED} sigkill-at 2", "exited unexpectedly (exit code -9)"),
    ],
    ids=["success", "adapter-error", "adapter-killed"],
)
def test_nothing_is_left_after_a_run_that_succeeds_fails_or_loses_its_adapter(tmp_path, process_mark, command, message):
    eval_dir, _ = textured_eval(tmp_path, samples=6)
    result = invoke("video", "run", "--eval-dir", eval_dir, "--adapter-command", command, "--concurrency", "2")
    if message is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2 and message in result.flat, result.output
    nothing_left_by_this_process()


def start_assay_run(eval_dir: Path) -> tuple[subprocess.Popen, int]:
    """`assay video run` in a process of its own, once its adapter is evaluating; and the adapter's pid."""
    assay = subprocess.Popen(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "--adapter-command", f"node {SHARED} slow"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in assay.stderr], daemon=True).start()
    while True:
        line = lines.get(timeout=30)
        if match := re.match(rb"evaluating 1 pid (\d+)", line):
            return assay, int(match.group(1))


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_nothing_is_left_when_assay_is_interrupted_or_killed(tmp_path, process_mark, stop):
    eval_dir, _ = textured_eval(tmp_path, samples=30)
    assay, adapter = start_assay_run(eval_dir)
    assert open_segments(adapter) != []  # the frames do go through a segment
    assay.send_signal(stop)
    assert assay.wait(timeout=30) == (130 if stop == signal.SIGINT else -9)
    assert segment_names(assay.pid) == []
    deadline = time.monotonic() + 10  # a killed assay's adapter sees its input end and exits
    while not gone(adapter) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(adapter)


def test_a_segment_left_by_a_killed_run_is_removed_by_the_next_run_and_a_live_one_is_kept(tmp_path):
    """kill -9 of assay between creating its segment and the adapter opening it leaves the name;
    the next run to create a segment removes it. A live run's segment is locked and stays."""
    holder = "from assay.video.shared_frames import create_segment\nimport sys, time\nprint(create_segment().path, flush=True)\ntime.sleep(60)\n"
    killed, alive = (subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE) for _ in range(2))
    try:
        killed_path, alive_path = (Path(process.stdout.readline().decode().strip()) for process in (killed, alive))
        killed.kill()
        killed.wait()
        assert killed_path.exists() and alive_path.exists()
        segment = shared_frames.create_segment()  # what the next run does first
        segment.close()
        assert not killed_path.exists()
        assert alive_path.exists()
    finally:
        alive.kill()
        alive.wait()
    shared_frames.remove_stale_segments()
    assert not alive_path.exists()


# ---- slots: reused only once answered, several adapters at once ----------------------------------------


def test_a_slot_is_reused_only_after_the_request_that_named_it_was_answered(tmp_path, frame_writes):
    eval_dir, video = textured_eval(tmp_path, samples=10)
    # sample 0 is held open until six others were answered, all through two slots
    results = observations(eval_dir, f"node {SHARED} hold-first 6", "--concurrency", "2")
    assert [result["sha256"] for result in results] == expected_hashes(video, 10)
    assert len(frame_writes) == 10 and max(slots for _, _, slots in frame_writes) == 2


def test_a_frame_first_read_after_its_request_was_answered_is_refused(tmp_path):
    eval_dir, video = textured_eval(tmp_path, samples=4)
    results = observations(eval_dir, f"node {SHARED} read-late")
    expected = expected_hashes(video, 4)
    assert [result.get("sha256") for result in results] == [expected[0], None, expected[2], None]
    # what a request read in time stays readable; what it did not read is gone with its answer
    assert [result.get("late") for result in results] == [None, expected[0], STALE_READ, expected[2]]


def test_a_reused_slot_is_detected_by_its_generation(tmp_path):
    """What protects a reader that ignores the kit's rule: each slot names the frame it holds."""
    segment = shared_frames.create_segment()
    first, second = (FrameSample(Image.fromarray(textured_frame(index, 32, 24)), 0.0, index, index, "/v.mp4", "c") for index in (1, 2))

    async def scenario():
        process = await start_ndjson_process(f"node {SHARED} hash")
        try:
            await process.request("initialize", {"protocolVersion": 1, "config": {}})
            await process.request("assay.sharedFrames", segment.setup_params())
            stale = segment.share(first)
            stale.release()  # answered: the slot is free for the next frame
            fresh = segment.share(second)
            assert (fresh.slot, fresh.generation) == (stale.slot, stale.generation + 1)
            reader = shared_frames.SharedFrameReader(segment.setup_params())
            reference = json.loads(stale.image_json())["sharedFrame"]
            with pytest.raises(shared_frames.StaleFrameError, match=f"no longer holds generation {stale.generation}"):
                reader.read(reference, 32, 24)
            reader.close()
            params = (b'{"sample":{"image":', stale.image_json(), b',"timestampS":0,"frameIndex":1,"sampleIndex":1,'
                      b'"videoPath":"/v.mp4","caseName":"c"},"target":{"id":"t","index":0,"label":null,"config":{}}}')
            with pytest.raises(AdapterRuntimeError, match=f"slot 0 no longer holds generation {stale.generation}"):
                await process.request("evaluate", EncodedJson(params))
        finally:
            await process.close()

    try:
        asyncio.run(scenario())
    finally:
        segment.close()


def test_several_adapters_at_once_each_read_their_own_frames(tmp_path):
    async def adapter(seed: int):
        frames = [textured_frame(seed * 10 + index, 48, 40) for index in range(6)]
        samples = [FrameSample(Image.fromarray(pixels), index / 10, index, index, "/v.mp4", "c") for index, pixels in enumerate(frames)]
        evaluator = await start_command_evaluator(f"node {SHARED} hash", AdapterConfig(tmp_path, {}, None, False))
        try:
            results = await asyncio.gather(*(evaluator.evaluate(sample, TARGET) for sample in samples))
            return evaluator.frames.path, [result["sha256"] for result in results], [sha256(pixels) for pixels in frames]
        finally:
            await evaluator.close()

    async def scenario():
        return await asyncio.gather(*(adapter(seed) for seed in range(3)))

    outcomes = asyncio.run(scenario())
    assert len({path for path, _, _ in outcomes}) == 3
    for _, seen, sent in outcomes:
        assert seen == sent
    nothing_left_by_this_process()
