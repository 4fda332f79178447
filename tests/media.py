"""Test-time video factory: small real videos encoded with PyAV, so tests need no binary fixtures.

Frames can carry a readable frame number, solid colours or the four-colour quadrant pattern;
clips can have variable frame rates, a non-zero first timestamp and a display matrix.

Display matrices: this PyAV (18.1+) writes them with `VideoStream.set_display_matrix`. Where
that API is missing, `make_video` writes the MP4 plainly and then patches the video track's
`tkhd` box, whose 3×3 matrix (nine big-endian int32 in FFmpeg's display-matrix order, 16.16
fixed point except the last column, 2.30) FFmpeg's mov demuxer turns into the display matrix
(`patch_mp4_track_matrix`, usable on its own).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

RED = (255, 0, 0)
GREEN = (0, 255, 0)
BLUE = (0, 0, 255)
YELLOW = (255, 255, 0)

# FFmpeg's 16.16 fixed-point one, and the 2.30 one of the projective column.
FIXED_ONE = 1 << 16
PROJECTIVE_ONE = 1 << 30
HFLIP_MATRIX = (-FIXED_ONE, 0, 0, 0, FIXED_ONE, 0, 0, 0, PROJECTIVE_ONE)

NUMBER_BITS = 8
NUMBER_BAR_WIDTH = 8


def display_matrix(rotation_degrees: float, hflip: bool = False) -> tuple[int, ...]:
    """The display matrix that rotates a frame counter-clockwise by `rotation_degrees`, then mirrors it.

    Same convention as `frame.rotation` and `VideoStream.set_display_rotation`: the linear part
    maps a source point (p, q) (y pointing down) to (a*p + c*q, b*p + d*q).
    """
    radians = math.radians(rotation_degrees)
    cos, sin = math.cos(radians), math.sin(radians)
    a, b, c, d = cos, -sin, sin, cos
    if hflip:
        a, c = -a, -c
    return (
        round(a * FIXED_ONE), round(b * FIXED_ONE), 0,
        round(c * FIXED_ONE), round(d * FIXED_ONE), 0,
        0, 0, PROJECTIVE_ONE,
    )  # fmt: skip


def solid_frame(color: Sequence[int], width: int, height: int) -> np.ndarray:
    frame = np.empty((height, width, 3), dtype=np.uint8)
    frame[:, :] = color
    return frame


def quadrant_frame(width: int = 96, height: int = 64) -> np.ndarray:
    """Red top-left, green top-right, blue bottom-left, yellow bottom-right."""
    frame = np.empty((height, width, 3), dtype=np.uint8)
    half_w, half_h = width // 2, height // 2
    frame[:half_h, :half_w] = RED
    frame[:half_h, half_w:] = GREEN
    frame[half_h:, :half_w] = BLUE
    frame[half_h:, half_w:] = YELLOW
    return frame


def quadrant_colors(pixels: np.ndarray) -> tuple[tuple[int, int, int], ...]:
    """The colours at the centres of the four quadrants: TL, TR, BL, BR (rounded to 0/255)."""
    height, width = pixels.shape[:2]
    points = (
        (height // 4, width // 4),
        (height // 4, 3 * width // 4),
        (3 * height // 4, width // 4),
        (3 * height // 4, 3 * width // 4),
    )
    return tuple(tuple(255 if channel > 127 else 0 for channel in pixels[y, x]) for y, x in points)  # type: ignore[misc]


def numbered_frame(number: int, width: int = NUMBER_BITS * NUMBER_BAR_WIDTH, height: int = 16) -> np.ndarray:
    """A grey frame whose vertical bars spell `number` in binary (most significant bit left).

    Black and white bars survive lossy H.264 and chroma subsampling, unlike close colours.
    """
    if not 0 <= number < 2**NUMBER_BITS:
        raise ValueError(f"frame number out of range: {number}")
    frame = np.zeros((height, width, 3), dtype=np.uint8)
    for bit in range(NUMBER_BITS):
        if number >> (NUMBER_BITS - 1 - bit) & 1:
            frame[:, bit * NUMBER_BAR_WIDTH : (bit + 1) * NUMBER_BAR_WIDTH] = 255
    return frame


def read_frame_number(pixels: np.ndarray) -> int:
    """Decode the number `numbered_frame` drew (pixels must not be rotated)."""
    middle = pixels.shape[0] // 2
    number = 0
    for bit in range(NUMBER_BITS):
        value = int(pixels[middle, bit * NUMBER_BAR_WIDTH + NUMBER_BAR_WIDTH // 2].mean())
        number = number << 1 | (1 if value > 127 else 0)
    return number


def make_video(
    path: Path,
    frames: Sequence[np.ndarray] | None = None,
    *,
    count: int | None = None,
    frame_for_index: Callable[[int], np.ndarray] | None = None,
    fps: int = 30,
    codec: str = "libx264",
    pix_fmt: str | None = None,
    lossless: bool = False,
    frame_times: Sequence[float] | None = None,
    start_pts: int = 0,
    time_base: Fraction | None = None,
    display_rotation: float | None = None,
    display_hflip: bool = False,
    matrix: Sequence[int] | None = None,
    patch_tkhd: bool = False,
    gop: int | None = None,
) -> Path:
    """Encode RGB frames (arrays, or `count` frames from `frame_for_index`) and return `path`.

    Timestamps: by default frame i has pts `i` in a 1/fps time base. `frame_times` (seconds)
    gives explicit, possibly variable, times in `time_base` (default 1/1000); `start_pts` is
    added to every pts so the clip does not start at 0 (the MP4 muxer keeps that offset as an
    edit list; MKV keeps it in the timestamps).

    Orientation: `display_rotation`/`display_hflip` (rotate counter-clockwise, then mirror) or
    an explicit nine-int `matrix`. `patch_tkhd=True` forces the `tkhd` patch even when PyAV can
    write the matrix itself.

    `lossless=True` encodes libx264 with qp 0 in yuv444p so colours survive almost exactly.
    """
    path = Path(path)
    if frames is None:
        if count is None or frame_for_index is None:
            raise ValueError("give frames, or count and frame_for_index")
        frames = [frame_for_index(index) for index in range(count)]
    if not frames:
        raise ValueError("a video needs at least one frame")
    height, width = frames[0].shape[:2]
    if matrix is None and (display_rotation is not None or display_hflip):
        matrix = display_matrix(display_rotation or 0.0, display_hflip)
    if frame_times is not None and len(frame_times) != len(frames):
        raise ValueError("frame_times must give one time per frame")

    if frame_times is not None:
        codec_time_base = time_base or Fraction(1, 1000)
        pts_values = [round(Fraction(time) / codec_time_base) + start_pts for time in frame_times]
    else:
        codec_time_base = time_base or Fraction(1, fps)
        step = Fraction(1, fps) / codec_time_base
        pts_values = [round(index * step) + start_pts for index in range(len(frames))]

    use_pyav_matrix = (
        matrix is not None and not patch_tkhd and hasattr(av.video.stream.VideoStream, "set_display_matrix")
    )
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width = width
        stream.height = height
        stream.pix_fmt = pix_fmt or ("yuv444p" if lossless else "yuv420p")
        stream.codec_context.time_base = codec_time_base
        options: dict[str, str] = {}
        if lossless:
            options["qp"] = "0"
        if gop is not None:
            options["g"] = str(gop)
        if codec == "libx264":
            options.setdefault("preset", "ultrafast" if lossless else "veryfast")
        stream.options = options
        if use_pyav_matrix:
            stream.set_display_matrix(list(matrix))  # type: ignore[arg-type]
        for pixels, pts in zip(frames, pts_values):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(pixels, dtype=np.uint8), format="rgb24")
            frame.pts = pts
            frame.time_base = codec_time_base
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    if matrix is not None and not use_pyav_matrix:
        patch_mp4_track_matrix(path, matrix)
    return path


def patch_mp4_track_matrix(path: Path, matrix: Sequence[int]) -> None:
    """Overwrite the matrix of every `tkhd` box in an MP4/MOV file with `matrix` (nine int32).

    A `tkhd` box is size(4) type(4) version(1) flags(3), then times/ids whose length depends on
    the version (20 bytes for v0, 32 for v1), reserved(8) layer(2) group(2) volume(2)
    reserved(2), then the 36-byte matrix.
    """
    if len(matrix) != 9:
        raise ValueError("a display matrix has nine entries")
    data = bytearray(Path(path).read_bytes())
    patched = 0
    for box_start in _find_boxes(data, 0, len(data), ("moov", "trak"), b"tkhd"):
        version = data[box_start + 8]
        matrix_offset = box_start + 12 + (32 if version == 1 else 20) + 16
        data[matrix_offset : matrix_offset + 36] = struct.pack(">9i", *matrix)
        patched += 1
    if not patched:
        raise ValueError(f"no tkhd box found in {path}")
    Path(path).write_bytes(bytes(data))


def _find_boxes(data: bytearray, start: int, end: int, parents: tuple[str, ...], wanted: bytes) -> list[int]:
    found = []
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack(">I4s", data[position : position + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[position + 8 : position + 16])[0]
            header = 16
        elif size == 0:
            size = end - position
        if size < header:
            break
        if not parents and kind == wanted:
            found.append(position)
        elif parents and kind == parents[0].encode():
            found.extend(_find_boxes(data, position + header, position + size, parents[1:], wanted))
        position += size
    return found


def make_quadrant_video(
    path: Path, *, width: int = 96, height: int = 64, count: int = 3, fps: int = 8, **options
) -> Path:
    """A lossless quadrant clip (see `quadrant_frame`); `options` go to `make_video`."""
    options.setdefault("lossless", True)
    return make_video(path, [quadrant_frame(width, height)] * count, fps=fps, **options)


def make_color_sequence_video(
    path: Path, colors: Sequence[Sequence[int]], fps: int = 30, *, width: int = 32, height: int = 32, **options
) -> Path:
    """One solid frame per colour, encoded losslessly so each frame's colour can be recognised."""
    options.setdefault("lossless", True)
    return make_video(path, [solid_frame(color, width, height) for color in colors], fps=fps, **options)


def nearest_color_index(pixels: np.ndarray, colors: Sequence[Sequence[int]]) -> int:
    """Which of `colors` a (solid) frame shows: the one nearest its mean colour."""
    mean = pixels.reshape(-1, 3).mean(axis=0)
    return int(np.argmin([np.abs(mean - np.asarray(color, dtype=float)).sum() for color in colors]))


def make_numbered_video(path: Path, count: int, fps: int = 30, **options) -> Path:
    """`count` frames, frame i showing the number i (read it back with `read_frame_number`)."""
    return make_video(path, count=count, frame_for_index=numbered_frame, fps=fps, **options)


def numbered_review_eval(root: Path, case_yaml: str) -> Path:
    """`root/eval`, an eval directory for the review editor: `cases/numbers.yaml` (`case_yaml`, dedented) over
    `cases/clip.mp4`, 3 s of numbered frames at 10 fps."""
    import textwrap

    cases = root / "eval" / "cases"
    cases.mkdir(parents=True)
    make_numbered_video(cases / "clip.mp4", 30, fps=10)
    (cases / "numbers.yaml").write_text(textwrap.dedent(case_yaml), encoding="utf-8")
    return root / "eval"
