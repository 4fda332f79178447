"""What a video adapter sees and the one evaluator interface the runner drives.

Python adapters (`python_adapter.py`) and command adapters (`command_adapter.py`) both produce a
`VideoEvaluator`; run, seed and validate only talk to that interface.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence


@dataclass(frozen=True, slots=True)
class AdapterConfig:
    """The factory config: GlassKit's `AdapterConfig` field for field."""

    eval_dir: Path
    config: Mapping[str, Any]
    artifacts_dir: Path | None
    verbose: bool


class FrameSample:
    """One frame handed to an adapter; `image` is closed when the call returns.

    `image` is an RGB, display-oriented PIL image. A sample the runner makes from a decoded frame
    builds it on first access, so adapters that never look at the pixels do not pay for it."""

    __slots__ = ("_frame", "_image", "case_name", "frame_index", "sample_index", "timestamp_s", "video_path")

    def __init__(
        self, image: Any, timestamp_s: float, frame_index: int, sample_index: int, video_path: str, case_name: str
    ) -> None:
        self._image = image
        self._frame: Any = None
        self.timestamp_s = timestamp_s  # the requested time (rounded to 9 decimals), not the frame's media time
        self.frame_index = frame_index  # decode ordinal of the chosen frame
        self.sample_index = sample_index  # case-wide
        self.video_path = video_path
        self.case_name = case_name

    @classmethod
    def of_frame(
        cls, frame: Any, timestamp_s: float, sample_index: int, video_path: str, case_name: str
    ) -> FrameSample:
        """A sample whose image is `frame.to_image()` (a `DecodedFrame`), made when first read."""
        sample = cls(None, timestamp_s, frame.index, sample_index, video_path, case_name)
        sample._frame = frame
        return sample

    def _shared(self, key: Any, make: Callable[[], Any]) -> Any:
        # For assay's own transports: `make()` once per key for the decoded frame behind this
        # sample, shared with the other targets' samples of that frame.
        if self._frame is None:
            return make()
        return self._frame.derived(key, make)

    @property
    def image(self) -> Any:
        if self._image is None and self._frame is not None:
            self._image = self._frame.to_image()
        return self._image

    def pixels(self) -> Any:
        """The frame as a (height, width, 3) uint8 RGB numpy array, treat it as read-only.

        For a sample the runner made from a decoded frame this is the frame's own array, shared
        with every target and never copied (no PIL image is built); otherwise it is read from
        `image`."""
        if self._frame is not None and self._image is None:
            return self._frame.pixels
        import numpy as np

        image = self.image
        return np.asarray(image if image.mode == "RGB" else image.convert("RGB"))

    def release(self) -> None:
        """Close the image the sample made from its frame, if it made one (the runner calls this)."""
        if self._frame is not None and self._image is not None:
            self._image.close()

    def __repr__(self) -> str:
        return (
            f"FrameSample(timestamp_s={self.timestamp_s!r}, frame_index={self.frame_index!r}, "
            f"sample_index={self.sample_index!r}, video_path={self.video_path!r}, case_name={self.case_name!r})"
        )


@dataclass(frozen=True, slots=True)
class TargetContext:
    id: str
    index: int
    label: str | None
    config: Mapping[str, Any]


class VideoEvaluator(Protocol):
    """An adapter ready to evaluate; `batch` says which strategy the runner must use.

    An evaluator may also set `converts_frames = True`: it reads every frame's pixels in its own
    worker threads, so the runner hands frames over unconverted instead of converting ahead."""

    @property
    def batch(self) -> bool: ...

    async def evaluate(self, sample: FrameSample, target: TargetContext) -> Any: ...

    async def evaluate_many(self, samples: Sequence[FrameSample], target: TargetContext) -> list[Any]: ...

    async def close(self) -> None: ...
