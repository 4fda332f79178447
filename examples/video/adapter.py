"""Demo adapter: reads the lamp's pixels and reports its colour, brightness and whether to go.

A real adapter would call the application's model here; this one is deterministic so the demo
runs offline, but its answers come from the frames assay decodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

LAMP_COLORS = {"red": (220, 30, 30), "green": (30, 200, 60), "amber": (235, 170, 20)}


def create_evaluator(config: Any) -> "LampReader":
    return LampReader(region=config.config.get("lamp_region", [20, 100, 50, 110]))


class LampReader:
    def __init__(self, region: list[int]) -> None:
        self.top, self.bottom, self.left, self.right = region

    async def evaluate(self, sample: Any, target: Any) -> Any:
        pixels = sample.pixels()[self.top : self.bottom, self.left : self.right]  # shared RGB array, no copy
        mean = pixels.reshape(-1, 3).mean(axis=0)
        color = min(LAMP_COLORS, key=lambda name: float(np.sum((mean - LAMP_COLORS[name]) ** 2)))
        brightness = round(float(mean @ [0.2126, 0.7152, 0.0722]) / 255, 3)
        return {"lamp": {"color": color, "brightness": brightness}, "go": color == "green"}

    async def close(self) -> None:
        pass
