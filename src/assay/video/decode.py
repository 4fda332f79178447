"""Video probing and frame selection: which decoded frame answers a requested time, display-oriented.

Run, seed and export read frames through one sequential `FrameCursor` per pass (GlassKit §7.3);
the review server uses `select_frame_at` for random access. Both yield identical pixels.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterator, Sequence
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import av
import numpy as np
from av.video.reformatter import VideoReformatter
from PIL import Image

from assay.errors import VideoError

DEFAULT_FRAME_RATE = 30
DISPLAY_MATRIX_SIZE = 36

try:  # where PyAV 18 keeps the side-data enum; a name lookup stands in if it moves
    from av.sidedata.sidedata import Type as _SideDataType

    _DISPLAY_MATRIX_KEY: Any = _SideDataType.DISPLAYMATRIX
except (ImportError, AttributeError):  # pragma: no cover - depends on the installed PyAV
    _DISPLAY_MATRIX_KEY = "DISPLAYMATRIX"


@dataclass(frozen=True, slots=True)
class VideoInfo:
    """What a probe learns: duration in seconds and display-oriented dimensions."""

    path: Path
    duration_s: float
    width: int
    height: int
    frame_count: int | None


@dataclass(frozen=True, slots=True)
class DisplayTransform:
    """How a decoded frame is shown: rotate counter-clockwise by `rotation` degrees, then mirror."""

    rotation: int = 0  # degrees in [0, 360), PIL `Image.rotate` semantics
    mirrored: bool = False

    def apply(self, pixels: np.ndarray) -> np.ndarray:
        if self.rotation == 0 and not self.mirrored:
            return pixels
        if self.rotation % 90 == 0:
            # Quarter turns are exact index shuffles: identical to PIL's rotate, far cheaper.
            pixels = np.rot90(pixels, self.rotation // 90)
        else:
            pixels = np.array(Image.fromarray(pixels).rotate(self.rotation, expand=True))
        if self.mirrored:
            pixels = np.fliplr(pixels)
        return np.ascontiguousarray(pixels)

    def displayed_size(self, width: int, height: int) -> tuple[int, int]:
        if self.rotation in (90, 270):
            return height, width
        if self.rotation % 90 == 0:
            return width, height
        # PIL's expanded bounding box has its own rounding; ask PIL rather than re-derive it.
        return Image.new("L", (width, height)).rotate(self.rotation, expand=True).size


class DecodedFrame:
    """One selected frame, converted once and shared by every request that picked it.

    Conversion to RGB is deferred to `prepare()` (or the first use of `pixels`/`to_image`), so a
    pipeline can convert in another thread while decoding goes on. `pixels` is a read-only
    (height, width, 3) uint8 RGB array, display-oriented. `index` is the decode ordinal
    (0-based), or None when the frame was reached by seeking.
    """

    __slots__ = (
        "_derived", "_derived_lock", "_image", "_lock", "_pixels", "_source", "_transform", "index", "media_time"
    )

    def __init__(
        self, index: int | None, media_time: float, source: Any, transform: DisplayTransform | None = None
    ) -> None:
        self.index = index
        self.media_time = media_time
        self._source = source  # an av.VideoFrame until converted
        self._transform = transform
        self._pixels: np.ndarray | None = None
        self._image: Image.Image | None = None
        self._lock = threading.Lock()
        self._derived: dict[Any, Any] = {}
        self._derived_lock = threading.Lock()

    @classmethod
    def from_pixels(cls, index: int | None, media_time: float, pixels: np.ndarray) -> DecodedFrame:
        frame = cls(index, media_time, None)
        frame._set_pixels(pixels)
        return frame

    def _set_pixels(self, pixels: np.ndarray) -> None:
        pixels = np.ascontiguousarray(pixels)
        pixels.flags.writeable = False  # shared by every target that selected this frame
        self._pixels = pixels

    def prepare(self) -> DecodedFrame:
        """Convert to RGB now (idempotent, thread-safe) and let the decoder's buffer go."""
        if self._pixels is None:
            with self._lock:
                if self._pixels is None:
                    source, self._source = self._source, None
                    pixels = _rgb_pixels(source)
                    if self._transform is not None:
                        pixels = self._transform.apply(pixels)
                    self._set_pixels(pixels)
        return self

    def derived(self, key: Any, make: Callable[[], Any]) -> Any:
        """`make()`, computed once per key for this frame and shared by every request that picked
        it (a command adapter's PNG for each target that samples the frame); dropped with the frame.
        A second thread asking for a key being computed waits for it."""
        with self._derived_lock:
            if key not in self._derived:
                self._derived[key] = make()
            return self._derived[key]

    @property
    def pixels(self) -> np.ndarray:
        self.prepare()
        assert self._pixels is not None
        return self._pixels

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])

    def to_image(self) -> Image.Image:
        """A new RGB image object each call, sharing this frame's pixels copy-on-write.

        Closing it does not affect other holders, and any PIL operation that would modify it
        (drawing, pasting, putpixel) first gives it a private copy (`readonly` images). The PIL
        image behind the views is built on the first call (~0.5 ms at 720p), so a frame no
        adapter looks at never pays for it."""
        base = self._image
        if base is None:
            pixels = self.pixels
            with self._lock:
                if self._image is None:
                    self._image = Image.frombuffer("RGB", (pixels.shape[1], pixels.shape[0]), pixels, "raw", "RGB", 0, 1)
                base = self._image
        image = base._new(base.im)
        image.readonly = 1
        return image


def probe_video(path: Path | str) -> VideoInfo:
    """Duration, display-oriented size and frame count; decodes at most the first frame."""
    container, stream = _open_video(path)
    with container:
        duration = _stream_duration(container, stream)
        if not math.isfinite(duration) or duration <= 0:
            raise VideoError(f"video has no readable duration: {path}")
        codec = stream.codec_context  # None when the header names no codec (a file cut inside its index)
        if codec is None:
            raise VideoError(f"video has no readable dimensions: {path}: its video stream has no codec FFmpeg can "
                             "decode; the file may be truncated or damaged, so encode or copy it again")
        width, height = codec.width, codec.height
        if not width or not height or width <= 0 or height <= 0:
            raise VideoError(f"video has no readable dimensions: {path}")
        first_frame = _first_frame(container, stream, path)
        if first_frame is not None:
            width, height = display_transform(first_frame).displayed_size(width, height)
        return VideoInfo(
            path=Path(path),
            duration_s=duration,
            width=width,
            height=height,
            frame_count=stream.frames or None,
        )


def display_transform(frame: av.VideoFrame) -> DisplayTransform:
    """The orientation a frame's display matrix asks for (identity when it has none).

    A negative determinant means the matrix mirrors: it is read as "rotate, then mirror
    horizontally", whose rotation `frame.rotation` cannot express. Plain rotations are rounded
    to whole degrees; `frame.rotation` truncates, turning FFmpeg's 2° matrix into 1°.
    """
    matrix = _display_matrix(frame)
    if matrix is None:
        return DisplayTransform(rotation=int(getattr(frame, "rotation", 0) or 0) % 360)
    a, b, _, c, d = matrix[:5]
    column_x, column_y = math.hypot(a, c), math.hypot(b, d)
    if not column_x or not column_y:  # degenerate matrix: nothing sensible to apply
        return DisplayTransform()
    if a * d - b * c < 0:
        rotation = round(math.degrees(math.atan2(-b / column_y, -a / column_x)))
        return DisplayTransform(rotation=rotation % 360, mirrored=True)
    # FFmpeg's av_display_rotation_get, which `frame.rotation` reports.
    rotation = round(-math.degrees(math.atan2(b / column_y, a / column_x)))
    return DisplayTransform(rotation=rotation % 360)


class FrameCursor:
    """One sequential decode pass that answers non-decreasing request times (GlassKit §7.3).

    A request `t` is answered by the nearer of the last frame before it and the first frame at
    or after it (a tie goes to the earlier frame); requests past the end get the last frame.
    Decoding stops as soon as a request can be answered, and a frame is converted to RGB only
    when some request selects it. Going back needs a new cursor.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self._container: Any = None
        self._frames: Iterator[av.VideoFrame] | None = None
        self._time_base: Any = None
        self._frame_rate: float = DEFAULT_FRAME_RATE
        self._first_raw_time: float | None = None
        self._next_index = 0
        self._previous: _PendingFrame | None = None
        self._current: _PendingFrame | None = None
        self._exhausted = False
        self._declared_end: float | None = None  # what the video stream says it lasts, when it says
        self._decoded_end = 0.0  # the media time of the last frame decoded
        self._cut_short: VideoError | None = None  # said again to every later request
        self._last_request = -math.inf
        self._closed = False
        self._orientation = _OrientationCache()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        self._previous = self._current = None
        self._frames = None
        if self._container is not None:
            container, self._container = self._container, None
            container.close()

    def frame_at(self, t: float) -> DecodedFrame:
        if self._closed:
            raise ValueError("frame cursor is closed")
        if math.isnan(t):
            raise ValueError("frame time must be a number")
        if t < self._last_request:
            raise ValueError(f"frame cursor cannot go back from {self._last_request:g}s to {t:g}s; open a new cursor")
        self._last_request = t
        if self._container is None:
            self._open()
        while True:
            current = self._current
            if current is None:
                if self._exhausted:
                    break
                self._current = self._decode_next()
                continue
            if t <= current.media_time:
                previous = self._previous
                if previous is not None and t - previous.media_time <= current.media_time - t:
                    return previous.decoded()
                return current.decoded()
            self._previous, self._current = current, None
        if self._cut_short is not None:
            raise self._cut_short
        if self._previous is None:
            raise VideoError(f"video contains no frames: {self.path}")
        return self._previous.decoded()

    def _open(self) -> None:
        self._container, stream = _open_video(self.path)
        stream.thread_type = "AUTO"
        self._time_base = stream.time_base
        if stream.average_rate:
            self._frame_rate = float(stream.average_rate)
        if stream.duration and stream.time_base:
            self._declared_end = float(stream.duration * stream.time_base)
        self._frames = self._container.decode(stream)

    def _decode_next(self) -> _PendingFrame | None:
        assert self._frames is not None
        try:
            frame = next(self._frames)
        except StopIteration:
            self._exhausted = True
            self._check_whole()
            return None
        except (av.FFmpegError, OSError) as error:
            raise VideoError(f"could not decode video {self.path}: {error}") from error
        index = self._next_index
        self._next_index += 1
        raw_time = _raw_frame_time(frame, index, self._time_base, self._frame_rate)
        if self._first_raw_time is None:
            self._first_raw_time = raw_time
        pending = _PendingFrame(frame, index, max(0.0, raw_time - self._first_raw_time), self._orientation)
        self._decoded_end = pending.media_time
        return pending

    def _check_whole(self) -> None:
        """A file cut short decodes to where its data ends, and threaded decoding ends there quietly (the
        decoder's error is dropped): every later request would get that last frame, a wrong answer for each
        sample after the cut. Its video stream's declared duration says how far it should have gone."""
        declared = self._declared_end
        if declared is None or self._next_index == 0:
            return
        if declared - self._decoded_end > 2.0 / self._frame_rate + 0.1:
            self._cut_short = VideoError(f"video {self.path} decodes only to {self._decoded_end:.2f}s but says it "
                                         f"lasts {declared:.2f}s: the file looks cut short (copy or record it again)")
            raise self._cut_short


def select_frames(path: Path | str, times: Sequence[float]) -> list[DecodedFrame]:
    """The frame for each time, in request order, from one sequential pass."""
    if not times:
        return []
    order = sorted(range(len(times)), key=lambda position: (times[position], position))
    selected: list[DecodedFrame | None] = [None] * len(times)
    with FrameCursor(path) as cursor:
        for position in order:
            selected[position] = cursor.frame_at(times[position])
    return selected  # type: ignore[return-value]


def select_frame_at(path: Path | str, t: float) -> DecodedFrame:
    """The frame `FrameCursor` would pick for `t`, found by seeking (GlassKit §7.5, review server).

    Falls back to a sequential pass when seeking is unsupported or lands after the target.
    """
    container, stream = _open_video(path)
    with container:
        # No frame threading: for one seek it only adds pipeline latency (about 2x slower here).
        frame_rate = float(stream.average_rate) if stream.average_rate else DEFAULT_FRAME_RATE
        frames = container.decode(stream)
        first = _next_frame(frames, path)
        if first is None:
            raise VideoError(f"video contains no frames: {path}")
        if t <= 0:
            return _PendingFrame(first, 0, 0.0, _OrientationCache()).decoded()
        first_raw_time = _raw_frame_time(first, 0, stream.time_base, frame_rate)
        found = _seek_and_select(container, stream, path, t, first, first_raw_time)
        if found is not None:
            return found
    with FrameCursor(path) as cursor:
        return cursor.frame_at(t)


def _seek_and_select(
    container: Any, stream: Any, path: Path | str, t: float, first: av.VideoFrame, first_raw_time: float
) -> DecodedFrame | None:
    if first.pts is None or not stream.time_base:
        return None
    target_pts = first.pts + math.floor(t / stream.time_base)
    try:
        container.seek(target_pts, stream=stream, backward=True, any_frame=False)
    except (av.FFmpegError, OSError, ValueError):
        return None
    previous: _PendingFrame | None = None
    orientation = _OrientationCache()
    frames = container.decode(stream)
    while True:
        frame = _next_frame(frames, path)
        if frame is None:
            return previous.decoded() if previous is not None else None
        if frame.time is None:  # without timestamps the decode ordinal is needed
            return None
        current = _PendingFrame(frame, None, max(0.0, float(frame.time) - first_raw_time), orientation)
        if t <= current.media_time:
            if previous is None:
                return current.decoded() if current.media_time == t else None
            if t - previous.media_time <= current.media_time - t:
                return previous.decoded()
            return current.decoded()
        previous = current


class _PendingFrame:
    """A decoded frame not yet converted to RGB; converted at most once, on first selection."""

    __slots__ = ("_decoded", "_orientation", "frame", "index", "media_time")

    def __init__(
        self, frame: av.VideoFrame, index: int | None, media_time: float, orientation: _OrientationCache
    ) -> None:
        self.frame: av.VideoFrame | None = frame
        self.index = index
        self.media_time = media_time
        self._orientation = orientation
        self._decoded: DecodedFrame | None = None

    def decoded(self) -> DecodedFrame:
        if self._decoded is None:
            assert self.frame is not None
            transform = self._orientation.transform_for(self.frame)
            self._decoded = DecodedFrame(self.index, self.media_time, self.frame, transform)
            self.frame = None
        return self._decoded


class _OrientationCache:
    """Reads the display matrix again only when a frame reports a different rotation.

    Touching `frame.side_data` makes a reference cycle in PyAV that keeps the frame and its
    decoder buffer alive until the garbage collector runs; once per stream costs nothing,
    once per frame costs ~10% of the pass and memory. (A mid-stream switch between identity
    and a vertical flip reports the same rotation and goes unnoticed; no real video does that.)
    """

    __slots__ = ("_reported_rotation", "_transform")

    def __init__(self) -> None:
        self._reported_rotation: object = None
        self._transform: DisplayTransform | None = None

    def transform_for(self, frame: av.VideoFrame) -> DisplayTransform:
        reported = getattr(frame, "rotation", None)
        if self._transform is None or reported != self._reported_rotation:
            self._reported_rotation, self._transform = reported, display_transform(frame)
        return self._transform


_converters = threading.local()


def _rgb_pixels(frame: av.VideoFrame) -> np.ndarray:
    """Same swscale conversion as `to_image().convert("RGB")`, without PIL's per-row copy loop.

    Each thread keeps one reformatter, so swscale's context is built once rather than per frame
    (`to_ndarray(format=...)` builds one, and starts its worker threads, every call: twice the
    CPU of the conversion itself at 720p). One swscale thread each: frames are already converted
    in parallel."""
    reformatter = getattr(_converters, "reformatter", None)
    if reformatter is None:
        reformatter = _converters.reformatter = VideoReformatter()
    try:
        rgb = reformatter.reformat(frame, format="rgb24", **_REFORMAT_OPTIONS)
    except TypeError:  # PyAV < 17 has no `threads` (and converts single-threaded anyway)
        _REFORMAT_OPTIONS.clear()
        rgb = reformatter.reformat(frame, format="rgb24")
    return np.ascontiguousarray(rgb.to_ndarray())


_REFORMAT_OPTIONS: dict[str, Any] = {"threads": 1}


def _raw_frame_time(frame: av.VideoFrame, index: int, time_base: Any, frame_rate: float) -> float:
    if frame.time is not None:
        return float(frame.time)
    if frame.pts is not None and time_base:
        return float(frame.pts * time_base)
    return index / frame_rate


def _display_matrix(frame: av.VideoFrame) -> tuple[int, ...] | None:
    """The frame's DISPLAYMATRIX side data as nine native int32, or None.

    PyAV 18 iterates side data as `SideData` objects, PyAV 19 as type keys; lookup by key
    works in both.
    """
    try:
        side_data = frame.side_data
    except AttributeError:
        return None
    entry = None
    try:
        entry = side_data.get(_DISPLAY_MATRIX_KEY)
    except (KeyError, TypeError, ValueError):
        entry = None
    if entry is None:
        for item in side_data:
            kind = getattr(item, "type", item)  # a SideData (PyAV 18) or its type key (PyAV 19)
            if getattr(kind, "name", None) == "DISPLAYMATRIX":
                entry = item if kind is not item else side_data[item]
                break
    if entry is None:
        return None
    try:
        data = bytes(entry)
    except TypeError:
        return None
    if len(data) != DISPLAY_MATRIX_SIZE:
        return None
    return struct.unpack("=9i", data)


def _open_video(path: Path | str) -> tuple[Any, Any]:
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError) as error:
        raise VideoError(f"could not open video {path}: {error}") from error
    if not container.streams.video:
        container.close()
        raise VideoError("video file has no video stream")
    return container, container.streams.video[0]


def _stream_duration(container: Any, stream: Any) -> float:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / 1_000_000
    if stream.frames and stream.average_rate:
        return float(stream.frames / stream.average_rate)
    return 0.0


def _first_frame(container: Any, stream: Any, path: Path | str) -> av.VideoFrame | None:
    return _next_frame(container.decode(stream), path)


def _next_frame(frames: Iterator[av.VideoFrame], path: Path | str) -> av.VideoFrame | None:
    try:
        return next(frames)
    except StopIteration:
        return None
    except (av.FFmpegError, OSError) as error:
        raise VideoError(f"could not decode video {path}: {error}") from error
