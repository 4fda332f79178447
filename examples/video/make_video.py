"""Make the demo's 6-second traffic-light clip with PyAV (H.264), if it is not there yet."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np

WIDTH, HEIGHT, FPS, SECONDS = 160, 120, 10, 6
# (start second, end second, RGB): red, then green, then amber, as a camera would see the lamp.
PHASES = [(0, 2, (220, 30, 30)), (2, 4, (30, 200, 60)), (4, 6, (235, 170, 20))]


def frame_pixels(index: int) -> np.ndarray:
    seconds = index / FPS
    color = next(rgb for start, end, rgb in PHASES if start <= seconds < end)
    pixels = np.full((HEIGHT, WIDTH, 3), 40, dtype=np.uint8)  # dark housing
    pixels[20:100, 50:110] = color  # the lit lamp
    x = (index * 3) % (WIDTH - 10)  # a passing car, so consecutive frames differ
    pixels[105:115, x : x + 10] = 255
    return pixels


def make_demo_video(path: Path) -> Path:
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial.mp4")
    with av.open(str(partial), mode="w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.time_base = Fraction(1, FPS)
        for index in range(FPS * SECONDS):
            frame = av.VideoFrame.from_ndarray(frame_pixels(index), format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    partial.replace(path)
    return path


if __name__ == "__main__":
    print(make_demo_video(Path(__file__).resolve().parent / "cases" / "traffic-light.mp4"))
