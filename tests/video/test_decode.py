"""Frame selection, display orientation and probing against real PyAV-encoded clips."""

from __future__ import annotations

import gc
import struct
from pathlib import Path
from types import SimpleNamespace

import av
import numpy as np
import pytest
from av.sidedata.sidedata import Type as SideDataType
from media import (
    BLUE,
    GREEN,
    HFLIP_MATRIX,
    RED,
    YELLOW,
    make_color_sequence_video,
    make_numbered_video,
    make_quadrant_video,
    make_video,
    nearest_color_index,
    quadrant_colors,
    read_frame_number,
)
from PIL import Image, ImageOps

from assay.errors import VideoError
from assay.video import decode
from assay.video.decode import (
    DisplayTransform,
    FrameCursor,
    display_transform,
    probe_video,
    select_frame_at,
    select_frames,
)


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("videos")


@pytest.fixture(scope="module")
def clip_30fps(videos: Path) -> Path:
    """3 s, 90 frames; frame i shows the number i."""
    return make_numbered_video(videos / "thirty.mp4", 90, fps=30)


@pytest.fixture(scope="module")
def clip_8fps(videos: Path) -> Path:
    """3 s, 24 frames at exact binary times k/8."""
    return make_numbered_video(videos / "eight.mp4", 24, fps=8)


def chosen(path: Path, times: list[float]) -> list[int]:
    frames = select_frames(path, times)
    for frame in frames:
        assert frame.index == read_frame_number(frame.pixels)
    return [frame.index for frame in frames]  # type: ignore[misc]


# --- §7.3 selection rule -------------------------------------------------------------------


def test_times_around_two_seconds_at_30fps_all_map_to_frame_60(clip_30fps: Path) -> None:
    assert chosen(clip_30fps, [1.99, 2.0, 2.0166666]) == [60, 60, 60]


def test_time_after_the_last_frame_but_within_duration_maps_to_last_frame(clip_30fps: Path) -> None:
    # The 3 s clip's last frame is at 2.9667 s, as 19.99 s is past frame 599 of a 20 s clip.
    assert chosen(clip_30fps, [2.99, 3.0, 3.04]) == [89, 89, 89]


def test_exact_tie_between_two_frames_goes_to_the_earlier_frame(clip_8fps: Path) -> None:
    assert chosen(clip_8fps, [0.0625, 0.1875, 1.0625, 1.07]) == [0, 1, 8, 9]


def test_times_past_the_end_of_an_8fps_clip_map_to_its_last_frame(clip_8fps: Path) -> None:
    assert chosen(clip_8fps, [2.875, 2.9, 3.04, 50.0]) == [23, 23, 23, 23]


def test_seeding_every_quarter_second_at_30fps_picks_82_for_the_2_75_tie(clip_30fps: Path) -> None:
    times = [round(index * 0.25, 9) for index in range(12)]
    assert chosen(clip_30fps, times)[-1] == 82
    assert chosen(clip_30fps, times) == [0, 7, 15, 22, 30, 37, 45, 52, 60, 67, 75, 82]


def test_time_zero_and_negative_times_map_to_the_first_frame(clip_30fps: Path) -> None:
    assert chosen(clip_30fps, [-1.0, 0.0, 0.016]) == [0, 0, 0]


@pytest.mark.parametrize("suffix", [".mp4", ".mkv"])
def test_times_are_measured_from_the_first_frame_when_its_pts_is_not_zero(videos: Path, suffix: str) -> None:
    path = make_numbered_video(videos / f"late-start{suffix}", 10, fps=10, start_pts=7)
    with av.open(str(path)) as container:
        assert next(container.decode(video=0)).time == pytest.approx(0.7)
    frames = select_frames(path, [0.0, 0.1, 0.34, 0.36])
    assert [frame.index for frame in frames] == [0, 1, 3, 4]
    assert [frame.media_time for frame in frames] == pytest.approx([0.0, 0.1, 0.3, 0.4])


def test_variable_frame_rate_clip_uses_each_frames_own_timestamp(videos: Path) -> None:
    path = make_numbered_video(videos / "vfr.mp4", 5, fps=10, frame_times=[0.0, 0.1, 0.5, 0.55, 1.2])
    assert chosen(path, [0.3, 0.31, 0.52, 0.8, 0.9, 2.0]) == [1, 2, 2, 3, 4, 4]


def test_frame_index_is_the_decode_ordinal(clip_30fps: Path) -> None:
    frames = select_frames(clip_30fps, [index / 30 for index in range(0, 90, 7)])
    assert [frame.index for frame in frames] == list(range(0, 90, 7))
    assert [read_frame_number(frame.pixels) for frame in frames] == list(range(0, 90, 7))


def test_results_come_back_in_request_order_from_one_pass(clip_30fps: Path) -> None:
    assert chosen(clip_30fps, [2.0, 0.5, 1.0, 0.5, 0.0]) == [60, 15, 30, 15, 0]


def test_color_sequence_clip_delivers_each_colour_within_one_level(videos: Path) -> None:
    colors = [RED, GREEN, BLUE, YELLOW, (10, 200, 30), (128, 64, 250)]
    path = make_color_sequence_video(videos / "colors.mp4", colors, fps=10)
    frames = select_frames(path, [index / 10 for index in range(len(colors))])
    assert [nearest_color_index(frame.pixels, colors) for frame in frames] == list(range(len(colors)))
    for frame, color in zip(frames, colors, strict=True):
        assert np.abs(frame.pixels.astype(int) - color).max() <= 1


# --- cursor mechanics ----------------------------------------------------------------------


def test_repeated_selection_of_one_frame_returns_the_same_object(
    clip_30fps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversions = []
    convert = decode._rgb_pixels
    monkeypatch.setattr(decode, "_rgb_pixels", lambda frame: conversions.append(frame) or convert(frame))
    with FrameCursor(clip_30fps) as cursor:
        first = cursor.frame_at(1.0)
        assert cursor.frame_at(1.0) is first
        assert cursor.frame_at(1.01) is first  # still nearest to frame 30
        later = cursor.frame_at(1.02)  # nearer to frame 31
    assert later is not first and later.index == 31
    assert conversions == []  # conversion is deferred until someone needs the pixels
    for frame in (first, first, later, later):
        frame.to_image()
        assert frame.pixels is frame.pixels
    assert len(conversions) == 2


def test_duplicate_times_in_select_frames_share_one_frame(clip_30fps: Path) -> None:
    first, _, again = select_frames(clip_30fps, [1.0, 0.0, 1.0])
    assert first is again


def test_only_selected_frames_are_converted_and_the_tail_is_not_decoded(
    clip_30fps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    converted = []
    convert = decode._rgb_pixels
    monkeypatch.setattr(decode, "_rgb_pixels", lambda frame: converted.append(frame) or convert(frame))
    decoded = []
    raw_time = decode._raw_frame_time
    monkeypatch.setattr(decode, "_raw_frame_time", lambda *args: decoded.append(args) or raw_time(*args))
    with FrameCursor(clip_30fps) as cursor:
        selected = [cursor.frame_at(t) for t in (0.5, 1.0)]
        assert [frame.index for frame in selected] == [15, 30]
        for frame in selected:
            frame.prepare()
    assert len(converted) == 2
    assert len(decoded) == 31  # frames 0..30: frame 30 answers 1.0 exactly


def test_selected_frames_are_freed_without_the_garbage_collector(clip_30fps: Path) -> None:
    # PyAV's side-data accessor makes frame reference cycles; reading it for every frame would
    # keep each decoded frame's buffer alive until a collection.
    # Counted by kind, not in all: with the collector off, another test's thread still running in this process
    # may make cyclic garbage of its own meanwhile (a count "< 20" once read 22 in a full run).
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        with FrameCursor(clip_30fps) as cursor:
            for index in range(0, 90, 3):
                cursor.frame_at(index / 30)
        gc.collect()
        frames_in_cycles = sum(1 for found in gc.garbage if isinstance(found, av.VideoFrame))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert frames_in_cycles <= 1  # the first frame, whose display matrix is read once for the stream


def test_cursor_refuses_to_go_backwards(clip_30fps: Path) -> None:
    with FrameCursor(clip_30fps) as cursor:
        cursor.frame_at(1.0)
        cursor.frame_at(1.0)
        with pytest.raises(ValueError, match="cannot go back"):
            cursor.frame_at(0.5)


def test_to_image_returns_a_new_independent_rgb_image_each_call(clip_30fps: Path) -> None:
    (frame,) = select_frames(clip_30fps, [1.0])
    first, second = frame.to_image(), frame.to_image()
    assert first is not second
    assert first.mode == "RGB" and first.size == (frame.width, frame.height) == (64, 16)
    first.paste((1, 2, 3), (0, 0, first.width, first.height))
    first.close()
    assert np.array_equal(np.asarray(second), frame.pixels)
    assert read_frame_number(np.asarray(frame.to_image())) == 30


def test_shared_pixels_are_read_only(clip_30fps: Path) -> None:
    (frame,) = select_frames(clip_30fps, [1.0])
    with pytest.raises(ValueError):
        frame.pixels[0, 0, 0] = 7


def test_rgb_pixels_are_identical_to_pyav_to_image_on_a_yuv420_h264_clip(videos: Path) -> None:
    # Odd-sized content in a width whose rows are padded in PyAV's buffers; noise defeats any
    # shortcut a flat colour would allow.
    generator = np.random.default_rng(7)
    frames = [generator.integers(0, 256, (60, 98, 3), dtype=np.uint8) for _ in range(4)]
    path = make_video(videos / "noise.mp4", frames, fps=10, pix_fmt="yuv420p")
    selected = select_frames(path, [0.0, 0.1, 0.2, 0.3])
    with av.open(str(path)) as container:
        references = [np.asarray(frame.to_image().convert("RGB")) for frame in container.decode(video=0)]
    for frame, reference in zip(selected, references, strict=True):
        assert frame.pixels.shape == (60, 98, 3) and frame.pixels.dtype == np.uint8
        assert np.array_equal(frame.pixels, reference)


# --- §7.4 display orientation --------------------------------------------------------------


UPRIGHT = (RED, GREEN, BLUE, YELLOW)


@pytest.mark.parametrize(
    ("rotation", "hflip", "size", "corners"),
    [
        (90, False, (64, 96), (GREEN, YELLOW, RED, BLUE)),  # upstream fixture
        (180, False, (96, 64), (YELLOW, BLUE, GREEN, RED)),
        (270, False, (64, 96), (BLUE, RED, YELLOW, GREEN)),
        (0, True, (96, 64), (GREEN, RED, YELLOW, BLUE)),  # upstream fixture (display_hflip)
        (90, True, (64, 96), (YELLOW, GREEN, BLUE, RED)),  # rotate, then mirror: anti-transpose
        (180, True, (96, 64), (BLUE, YELLOW, RED, GREEN)),  # = vertical flip
        (270, True, (64, 96), (RED, BLUE, GREEN, YELLOW)),  # = transpose
    ],
)
def test_display_matrix_orients_the_delivered_pixels(
    videos: Path, rotation: int, hflip: bool, size: tuple[int, int], corners: tuple
) -> None:
    path = make_quadrant_video(
        videos / f"quadrant-{rotation}-{hflip}.mp4", display_rotation=rotation, display_hflip=hflip
    )
    with av.open(str(path)) as container:
        reported = next(container.decode(video=0)).rotation
    if not hflip:  # the helper's matrices follow PyAV's counter-clockwise convention
        assert reported % 360 == rotation
    (frame,) = select_frames(path, [0.0])
    assert (frame.width, frame.height) == size
    assert quadrant_colors(frame.pixels) == corners
    info = probe_video(path)
    assert (info.width, info.height) == size


def test_hflip_matrix_is_mirrored_not_rotated_even_though_pyav_reports_minus_180(videos: Path) -> None:
    path = make_quadrant_video(videos / "hflip-tkhd.mp4", matrix=HFLIP_MATRIX, patch_tkhd=True)
    with av.open(str(path)) as container:
        assert next(container.decode(video=0)).rotation == -180
    (frame,) = select_frames(path, [0.0])
    assert quadrant_colors(frame.pixels) == (GREEN, RED, YELLOW, BLUE)


def test_rotation_written_by_patching_tkhd_is_read_back(videos: Path) -> None:
    path = make_quadrant_video(videos / "rot90-tkhd.mp4", display_rotation=90, patch_tkhd=True)
    (frame,) = select_frames(path, [0.0])
    assert quadrant_colors(frame.pixels) == (GREEN, YELLOW, RED, BLUE)


def test_unrotated_video_is_delivered_as_encoded(videos: Path) -> None:
    path = make_quadrant_video(videos / "upright.mp4")
    (frame,) = select_frames(path, [0.0])
    assert (frame.width, frame.height) == (96, 64)
    assert quadrant_colors(frame.pixels) == UPRIGHT


def test_non_quarter_rotation_expands_the_canvas_like_pil(videos: Path) -> None:
    path = make_quadrant_video(videos / "tilted.mp4", display_rotation=2)
    (frame,) = select_frames(path, [0.0])
    assert (frame.width, frame.height) == (100, 68)
    info = probe_video(path)
    assert (info.width, info.height) == (100, 68)
    with av.open(str(path)) as container:
        raw = next(container.decode(video=0))
        assert raw.rotation == 1  # PyAV truncates FFmpeg's 1.9998°; the matrix means 2°
        expected = raw.to_image().convert("RGB").rotate(2, expand=True)
    assert np.array_equal(frame.pixels, np.asarray(expected))


class _SideDataKeyedByType:
    """Side data shaped like PyAV 19's: iteration yields type keys, not SideData objects."""

    def __init__(self, entries: dict) -> None:
        self._entries = entries

    def get(self, key: object) -> None:
        raise TypeError("lookup by key unsupported in this fake")

    def __iter__(self):
        return iter(self._entries)

    def __getitem__(self, key: object) -> bytes:
        return self._entries[key]


@pytest.mark.parametrize("wrap", [dict, _SideDataKeyedByType])
def test_mirror_is_detected_when_side_data_iterates_as_type_keys(wrap: type) -> None:
    side_data = wrap({SideDataType.DISPLAYMATRIX: struct.pack("=9i", *HFLIP_MATRIX)})
    frame = SimpleNamespace(side_data=side_data, rotation=-180)
    assert display_transform(frame) == DisplayTransform(rotation=0, mirrored=True)  # type: ignore[arg-type]


def test_frame_without_display_matrix_falls_back_to_its_rotation() -> None:
    frame = SimpleNamespace(side_data={}, rotation=-90)
    assert display_transform(frame) == DisplayTransform(rotation=270)  # type: ignore[arg-type]


@pytest.mark.parametrize("rotation", [0, 90, 180, 270, 7])
@pytest.mark.parametrize("mirrored", [False, True])
def test_numpy_orientation_matches_pil_rotate_then_mirror(rotation: int, mirrored: bool) -> None:
    pixels = np.random.default_rng(rotation).integers(0, 256, (6, 10, 3), dtype=np.uint8)
    expected = Image.fromarray(pixels).rotate(rotation, expand=True)
    if mirrored:
        expected = ImageOps.mirror(expected)
    transform = DisplayTransform(rotation=rotation, mirrored=mirrored)
    oriented = transform.apply(pixels)
    assert np.array_equal(oriented, np.asarray(expected))
    assert oriented.flags.c_contiguous
    assert transform.displayed_size(10, 6) == expected.size


# --- probe ---------------------------------------------------------------------------------


def test_probe_reports_duration_dimensions_and_frame_count(clip_30fps: Path) -> None:
    info = probe_video(clip_30fps)
    assert info.duration_s == pytest.approx(3.0)
    assert (info.width, info.height, info.frame_count) == (64, 16, 90)


def test_probe_rejects_a_file_that_is_not_a_video(tmp_path: Path) -> None:
    path = tmp_path / "notes.mp4"
    path.write_text("not a video\n")
    with pytest.raises(VideoError, match=r"^could not open video .*notes\.mp4: .*Invalid data"):
        probe_video(path)


def test_probe_rejects_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match=r"^could not open video .*missing\.mp4: "):
        probe_video(tmp_path / "missing.mp4")


def test_probe_rejects_a_file_without_a_video_stream(tmp_path: Path) -> None:
    path = tmp_path / "sound.m4a"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("aac", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        frame.sample_rate = 8000
        frame.pts = 0
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)
    with pytest.raises(VideoError, match=r"^video file has no video stream$"):
        probe_video(path)
    with pytest.raises(VideoError, match=r"^video file has no video stream$"):
        select_frames(path, [0.0])


def test_undecodable_video_data_is_reported_as_a_decode_error(videos: Path, tmp_path: Path) -> None:
    data = bytearray(make_numbered_video(videos / "one.mp4", 1).read_bytes())
    box = data.find(b"mdat")
    size = int.from_bytes(data[box - 4 : box], "big")
    data[box + 4 : box - 4 + size] = bytes(size - 8)
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(bytes(data))
    with pytest.raises(VideoError, match=r"^could not decode video .*broken\.mp4: "):
        select_frames(broken, [0.0])


# --- §7.5 random access --------------------------------------------------------------------


@pytest.fixture(scope="module")
def clip_short_gop(videos: Path) -> Path:
    return make_numbered_video(videos / "short-gop.mp4", 90, fps=30, gop=10)


@pytest.mark.parametrize("t", [0.0, 0.3, 0.34, 1.0, 1.99, 2.0166666, 2.75, 2.99, 9.0])
def test_random_access_picks_the_same_pixels_as_the_sequential_pass(clip_short_gop: Path, t: float) -> None:
    (sequential,) = select_frames(clip_short_gop, [t])
    sought = select_frame_at(clip_short_gop, t)
    assert np.array_equal(sought.pixels, sequential.pixels)
    assert sought.media_time == sequential.media_time
    assert read_frame_number(sought.pixels) == sequential.index


def test_random_access_index_is_unknown_after_a_seek(clip_short_gop: Path) -> None:
    assert select_frame_at(clip_short_gop, 2.0).index is None
    assert select_frame_at(clip_short_gop, 0.0).index == 0


def test_random_access_applies_the_display_transform(videos: Path) -> None:
    path = make_quadrant_video(videos / "quadrant-random.mp4", display_rotation=90, display_hflip=True, count=20, gop=4)
    assert quadrant_colors(select_frame_at(path, 1.5).pixels) == (YELLOW, GREEN, BLUE, RED)


def test_images_handed_out_share_pixels_but_are_copy_on_write(tmp_path):
    from PIL import ImageDraw

    from assay.video.decode import FrameCursor

    path = make_color_sequence_video(tmp_path / "cow.mp4", [(255, 0, 0), (0, 0, 255)], fps=2)
    with FrameCursor(path) as cursor:
        frame = cursor.frame_at(0.0)
    first, second = frame.to_image(), frame.to_image()
    assert first is not second and first.mode == "RGB"
    ImageDraw.Draw(first).rectangle([0, 0, 4, 4], fill=(0, 255, 0))
    first.putpixel((10, 10), (1, 2, 3))
    assert first.getpixel((0, 0)) == (0, 255, 0)
    assert second.getpixel((0, 0)) == tuple(int(v) for v in frame.pixels[0, 0])
    assert frame.to_image().getpixel((10, 10)) == tuple(int(v) for v in frame.pixels[10, 10])
    first.close()
    assert second.getpixel((0, 0)) == tuple(int(v) for v in frame.pixels[0, 0])
    assert not frame.pixels.flags.writeable


def test_sample_pixels_are_the_frames_own_array_without_a_pil_image(tmp_path):
    from assay.video.adapters import FrameSample
    from assay.video.decode import FrameCursor

    path = make_color_sequence_video(tmp_path / "shared.mp4", [(255, 0, 0)], fps=2)
    with FrameCursor(path) as cursor:
        frame = cursor.frame_at(0.0)
    sample = FrameSample.of_frame(frame, 0.0, 0, str(path), "case")
    assert sample.pixels() is frame.pixels  # shared, not copied: command adapters encode from it
    assert frame._image is None
    drawn = FrameSample.of_frame(frame, 0.0, 1, str(path), "case")
    drawn.image.putpixel((0, 0), (1, 2, 3))  # an adapter's edit stays in its own copy ...
    assert tuple(drawn.pixels()[0, 0]) == (1, 2, 3)  # ... and that sample then reads its image
    assert tuple(frame.pixels[0, 0]) != (1, 2, 3)


def test_frame_samples_build_their_image_only_when_an_adapter_reads_it(tmp_path):
    from assay.video.adapters import FrameSample
    from assay.video.decode import FrameCursor

    path = make_color_sequence_video(tmp_path / "lazy.mp4", [(255, 0, 0)], fps=2)
    with FrameCursor(path) as cursor:
        frame = cursor.frame_at(0.0)
    untouched = FrameSample.of_frame(frame, 0.0, 0, str(path), "case")
    untouched.release()
    assert frame._image is None  # no PIL image was built for an adapter that never looked
    assert (untouched.timestamp_s, untouched.frame_index, untouched.sample_index) == (0.0, frame.index, 0)

    read = FrameSample.of_frame(frame, 0.0, 1, str(path), "case")
    image = read.image
    assert read.image is image and image.mode == "RGB"
    assert np.array_equal(np.asarray(image), frame.pixels)
    read.release()
    with pytest.raises(ValueError):
        image.getpixel((0, 0))  # closed once the call is over
    assert np.asarray(FrameSample.of_frame(frame, 0.0, 2, str(path), "case").image).shape == frame.pixels.shape


def test_rgb_conversion_keeps_one_swscale_context_per_thread(clip_30fps: Path) -> None:
    with av.open(str(clip_30fps)) as container:
        raw = [frame for _, frame in zip(range(3), container.decode(video=0))]
    converted = [decode._rgb_pixels(frame) for frame in raw]
    reformatter = decode._converters.reformatter
    assert decode._rgb_pixels(raw[0]) is not converted[0]
    assert decode._converters.reformatter is reformatter  # reused, not rebuilt per frame
    for frame, pixels in zip(raw, converted):
        assert np.array_equal(pixels, frame.to_ndarray(format="rgb24"))  # PyAV's own conversion


def test_rgb_conversion_works_with_pyav_before_17_without_a_threads_option(clip_30fps: Path, monkeypatch) -> None:
    class OldReformatter:  # PyAV < 17: reformat() takes no `threads`
        def __init__(self) -> None:
            self.inner = decode.VideoReformatter()

        def reformat(self, frame, format=None, **options):
            if options:
                raise TypeError(f"reformat() got an unexpected keyword argument {next(iter(options))!r}")
            return self.inner.reformat(frame, format=format)

    monkeypatch.setattr(decode, "_REFORMAT_OPTIONS", {"threads": 1})
    monkeypatch.setattr(decode._converters, "reformatter", OldReformatter(), raising=False)
    with av.open(str(clip_30fps)) as container:
        frame = next(container.decode(video=0))
    assert np.array_equal(decode._rgb_pixels(frame), frame.to_ndarray(format="rgb24"))
    assert decode._REFORMAT_OPTIONS == {}  # asked once, then converted without the option


@pytest.mark.parametrize("convert_ahead", [True, False])
def test_the_feed_converts_ahead_unless_its_consumer_converts_in_its_own_threads(
    clip_30fps: Path, monkeypatch: pytest.MonkeyPatch, convert_ahead: bool
) -> None:
    import asyncio
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from assay.video.feed import FrameFeed

    converted_in: list[str] = []
    real = decode._rgb_pixels

    def recording(frame):
        converted_in.append(threading.current_thread().name)
        return real(frame)

    monkeypatch.setattr(decode, "_rgb_pixels", recording)
    samples = [SimpleNamespace(timestamp_s=t) for t in (0.0, 1.0, 2.0)]
    consumer = ThreadPoolExecutor(1, thread_name_prefix="consumer")

    async def scenario() -> list[np.ndarray]:
        feed = FrameFeed(clip_30fps, samples, window=4, convert_ahead=convert_ahead)
        pixels = []
        try:
            async for _, frame in feed:
                converted_before_use = len(converted_in)
                pixels.append(await asyncio.get_running_loop().run_in_executor(consumer, lambda: frame.pixels))
                # (converted ahead, the next frame may be converting meanwhile: only who converted is certain)
                by_consumer = [name for name in converted_in[converted_before_use:] if name.startswith("consumer")]
                assert len(by_consumer) == (0 if convert_ahead else 1), converted_in
                feed.release()
        finally:
            await feed.close()
        return pixels

    pixels = asyncio.run(scenario())
    consumer.shutdown()
    assert len(converted_in) == 3
    expected_prefix = "assay-convert" if convert_ahead else "consumer"
    assert all(name.startswith(expected_prefix) for name in converted_in), converted_in
    monkeypatch.undo()
    reference = select_frames(clip_30fps, [0.0, 1.0, 2.0])
    assert all(np.array_equal(got, want.pixels) for got, want in zip(pixels, reference, strict=True))


def _cut_short(path: Path) -> Path:
    """A 4 s clip (red for 2 s, then green) written with its index first (faststart), cut to half its bytes, as
    an interrupted copy leaves it: its header still says 4 s."""
    whole = path.with_name("whole.mp4")
    with av.open(str(whole), "w", options={"movflags": "faststart"}) as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        rng = np.random.default_rng(1)
        for index in range(40):
            pixels = rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)
            pixels[30:90, 50:110] = (255, 0, 0) if index < 20 else (0, 255, 0)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")))
        container.mux(stream.encode())
    data = whole.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def test_a_video_cut_short_is_an_error_not_its_last_frame_for_every_later_time(tmp_path):
    """Threaded decoding ends quietly where a cut file's data ends, and every later time got that last frame:
    samples after the cut were judged on the wrong picture (the app blamed for a broken file)."""
    cut = _cut_short(tmp_path / "cut.mp4")
    with FrameCursor(cut) as cursor:
        assert cursor.frame_at(0.5).media_time == 0.5
        with pytest.raises(VideoError, match=r"decodes only to \d\.\d\ds but says it lasts 4\.00s: the file looks cut short"):
            cursor.frame_at(3.5)
        with pytest.raises(VideoError, match="cut short"):
            cursor.frame_at(3.9)  # and keeps saying so
    whole = tmp_path / "whole.mp4"
    with FrameCursor(whole) as cursor:  # the whole file: past its last frame is its last frame, as before
        assert cursor.frame_at(4.0).media_time == pytest.approx(3.9)
