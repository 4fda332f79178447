"""Starter eval directories for `assay video init`: a case, a short clip made with PyAV and an
adapter (Python, or node with the shipped kit) whose expectations pass as written.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from assay.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ADAPTER_KINDS", "Starter", "make_lamp_clip", "write_starter"]

ADAPTER_KINDS = ("python", "js")

# The clip: a lamp that is red for two seconds, then green for two, seen by a small camera.
CLIP_NAME = "lamp.mp4"
WIDTH, HEIGHT, FPS, SECONDS = 160, 120, 10, 4
RED, GREEN = (220, 30, 30), (30, 200, 60)
LAMP_REGION = (30, 90, 50, 110)  # top, bottom, left, right


def _frame_pixels(index: int) -> "np.ndarray":
    import numpy as np  # with PyAV, only when a clip is made: `init` is the only caller

    top, bottom, left, right = LAMP_REGION
    pixels = np.full((HEIGHT, WIDTH, 3), 40, dtype=np.uint8)  # the dark housing
    pixels[top:bottom, left:right] = RED if index < 2 * FPS else GREEN
    x = (index * 4) % (WIDTH - 12)  # something moving below the lamp, so consecutive frames differ
    pixels[100:110, x : x + 12] = 255
    return pixels


def make_lamp_clip(path: Path) -> Path:
    """Write the starter's 4-second H.264 clip to `path` (MPEG-4 Part 2 if PyAV lacks libx264)."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial.mp4")
    with av.open(str(partial), mode="w") as container:
        try:
            stream = container.add_stream("libx264", rate=FPS)
        except ValueError:  # an FFmpeg build without x264
            stream = container.add_stream("mpeg4", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.time_base = Fraction(1, FPS)
        for index in range(FPS * SECONDS):
            frame = av.VideoFrame.from_ndarray(_frame_pixels(index), format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    partial.replace(path)
    return path


CASE_YAML = f"""\
# A lamp seen by a camera: red for the first two seconds, then green.
# Every target's samples are compared with what the adapter returns for that frame.
video: {CLIP_NAME}
description: The app must tell the lamp's colour and how bright it is.
sampling:
  every_s: 0.5                # one sample every half second inside each range
targets:
  color:
    label: Lamp colour
    sample_defaults:
      field: color            # compare this field of the adapter's answer
    samples:
      - range: [0.0, 2.0]     # half-open: 0.0, 0.5, 1.0, 1.5
        expect: red
      - range: [2.0, 4.0]
        expect: green
  brightness:
    samples:
      - at: [1.0]
        field: brightness
        expect: 0.28
        compare: {{mode: numeric, tolerance: 0.05}}
      - at: [3.0]
        field: brightness
        expect: 0.6
        compare: {{mode: numeric, tolerance: 0.05}}
"""

CONFIG_YAML = """\
# Gates for the whole eval: the run exits 1 when one is not met.
thresholds:
  min_pass_rate: 1.0          # every sample must pass
"""

ADAPTER_YAML = f"""\
# Handed to the adapter (config.config in Python, context.config in node): where the lamp is,
# as [top, bottom, left, right] pixel rows and columns.
lamp_region: [{", ".join(map(str, LAMP_REGION))}]
"""

PYTHON_ADAPTER = '''\
"""The starter's adapter: reads the lamp's pixels and reports its colour and brightness.

A real adapter calls your app (its model, its API) here and returns what the app answered;
the case file in cases/ says which field of the answer to compare with what.
"""

from __future__ import annotations

from typing import Any


def create_evaluator(config: Any) -> "LampReader":
    # config.config is adapter.yaml; config.eval_dir and config.artifacts_dir are paths.
    return LampReader(config.config.get("lamp_region", [30, 90, 50, 110]))


class LampReader:
    def __init__(self, region: list[int]) -> None:
        self.top, self.bottom, self.left, self.right = region

    async def evaluate(self, sample: Any, target: Any) -> dict[str, Any]:
        # sample.pixels() is the frame as a read-only (height, width, 3) RGB array, shared, not copied;
        # sample.image is the same frame as a PIL image (built on first use).
        lamp = sample.pixels()[self.top : self.bottom, self.left : self.right].reshape(-1, 3)
        red, green, blue = lamp.mean(axis=0)
        brightness = (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255
        return {"color": "red" if red > green else "green", "brightness": round(float(brightness), 3)}

    async def close(self) -> None:
        pass
'''

JS_ADAPTER = """\
// @ts-check
// The starter's adapter, in node: reads the lamp's pixels and reports its colour and brightness.
// A real adapter calls your app here and returns what it answered; the case file in cases/ says
// which field of the answer to compare with what. adapter-kit.mjs (shipped with assay, no npm
// packages) serves the protocol and decodes each frame; adapter-kit.d.mts has its types.
import { runAdapter } from "./adapter-kit.mjs";

await runAdapter(async (context) => {
  // context.config is adapter.yaml; context.evalDir and context.artifactsDir are paths.
  const [top, bottom, left, right] = /** @type {number[]} */ (context.config.lamp_region ?? [30, 90, 50, 110]);
  return {
    /** @param {import("./adapter-kit.mjs").EvaluateRequest} request */
    async evaluate({ sample }) {
      // image.rgb: the frame's pixels, row-major, 3 bytes each, decoded on first access.
      const { width, rgb } = sample.image;
      const sums = [0, 0, 0];
      for (let y = top; y < bottom; y++) {
        for (let x = left; x < right; x++) {
          for (let channel = 0; channel < 3; channel++) sums[channel] += rgb[(y * width + x) * 3 + channel];
        }
      }
      const [red, green, blue] = sums.map((sum) => sum / ((bottom - top) * (right - left)));
      const brightness = (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255;
      return { color: red > green ? "red" : "green", brightness: Math.round(brightness * 1000) / 1000 };
    },
  };
});
"""


@dataclass(frozen=True)
class Starter:
    directory: Path
    written: tuple[Path, ...]
    next_command: str

    def lines(self, shown_as: Path) -> list[str]:
        """What `assay video init` says: the files written (under `shown_as`, as given) and what to run next."""
        return [
            f"Wrote a starter eval in {shown_as}:", *(f"  {path.as_posix()}" for path in self.written),
            f"Next: {self.next_command}",
        ]


def _planned_files(adapter: str) -> list[str]:
    common = ["config.yaml", "adapter.yaml", f"cases/{CLIP_NAME.removesuffix('.mp4')}.yaml", f"cases/{CLIP_NAME}"]
    if adapter == "python":
        return ["adapter.py", *common]
    return ["adapter.mjs", "adapter-kit.mjs", "adapter-kit.d.mts", *common]


def _next_command(directory: Path, adapter: str) -> str:
    shown = directory.as_posix()
    command = f"assay video run --eval-dir {shlex.quote(shown)}"
    if adapter == "js":
        command += " --adapter-command " + shlex.quote(f"node {shlex.quote(shown + '/adapter.mjs')}")
    return command


def write_starter(directory: Path, adapter: str = "python", *, force: bool = False) -> Starter:
    """Write a runnable eval directory; refuses (UsageError) to replace existing files unless `force`."""
    from assay.core.fsutil import write_atomically
    from assay.video import js_kit_path, js_kit_types_path

    if adapter not in ADAPTER_KINDS:
        raise UsageError(f"--adapter must be one of {', '.join(ADAPTER_KINDS)}, not {adapter!r}", "--adapter")
    fix = "give a folder to write the eval into (it is created when missing)"
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} is a file, not a folder; {fix}")
    above = next((parent for parent in directory.parents if parent.exists()), None)
    if not directory.exists() and above is not None and not above.is_dir():
        raise UsageError(f"{directory} cannot be created: {above} is a file, not a folder; {fix}")
    planned = _planned_files(adapter)
    existing = [name for name in planned if (directory / name).exists()]
    if existing and not force:
        raise UsageError(
            f"{directory} already has {', '.join(existing)}; nothing was written. "
            "Pass --force to overwrite them, or choose another folder."
        )
    texts = {
        "config.yaml": CONFIG_YAML,
        "adapter.yaml": ADAPTER_YAML,
        f"cases/{CLIP_NAME.removesuffix('.mp4')}.yaml": CASE_YAML,
        "adapter.py": PYTHON_ADAPTER,
        "adapter.mjs": JS_ADAPTER,
    }
    (directory / "cases").mkdir(parents=True, exist_ok=True)
    for name in planned:
        path = directory / name
        if name in texts:
            write_atomically(path, texts[name])
        elif name == "adapter-kit.mjs":
            shutil.copyfile(js_kit_path(), path)
        elif name == "adapter-kit.d.mts":
            shutil.copyfile(js_kit_types_path(), path)
        else:
            make_lamp_clip(path)
    return Starter(directory, tuple(directory / name for name in planned), _next_command(directory, adapter))
