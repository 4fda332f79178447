"""What a video adapter sees and the one evaluator interface the runner drives.

Python adapters (`python_adapter.py`) and command adapters (`command_adapter.py`) both produce a
`VideoEvaluator`; run, seed and validate only talk to that interface.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence


@dataclass(frozen=True, slots=True)
class AdapterConfig:
    """The factory config: GlassKit's `AdapterConfig` field for field."""

    eval_dir: Path
    config: Mapping[str, Any]
    artifacts_dir: Path | None
    verbose: bool


@dataclass(frozen=True, slots=True)
class FrameSample:
    """One frame handed to an adapter; `image` is closed when the call returns."""

    image: Any  # PIL.Image.Image, RGB, display-oriented
    timestamp_s: float  # the requested time (rounded to 9 decimals), not the frame's media time
    frame_index: int  # decode ordinal of the chosen frame
    sample_index: int  # case-wide
    video_path: str
    case_name: str


@dataclass(frozen=True, slots=True)
class TargetContext:
    id: str
    index: int
    label: str | None
    config: Mapping[str, Any]


class VideoEvaluator(Protocol):
    """An adapter ready to evaluate; `batch` says which strategy the runner must use."""

    @property
    def batch(self) -> bool: ...

    async def evaluate(self, sample: FrameSample, target: TargetContext) -> Any: ...

    async def evaluate_many(self, samples: Sequence[FrameSample], target: TargetContext) -> list[Any]: ...

    async def close(self) -> None: ...
