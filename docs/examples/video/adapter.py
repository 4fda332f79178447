"""The adapter behind the case-file reference: it reads the starter's lamp clip and answers with a
few shapes of value (a string, a number, an object, lists) so every compare mode has something
to compare. Your adapter calls your app instead and returns what it answered."""

from __future__ import annotations


def create_evaluator(config):
    # config.config is adapter.yaml; config.eval_dir and config.artifacts_dir are paths.
    return LampReader(config.config["lamp_region"])


class LampReader:
    def __init__(self, region):
        self.top, self.bottom, self.left, self.right = region

    async def evaluate(self, sample, target):
        # sample.pixels(): the frame as a read-only (height, width, 3) RGB array.
        lamp = sample.pixels()[self.top : self.bottom, self.left : self.right].reshape(-1, 3)
        red, green, blue = (float(channel) for channel in lamp.mean(axis=0))
        color = "red" if red > green else "green"
        return {
            "color": color,
            "brightness": round((0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255, 3),
            "lamp": {"color": color, "lit": True},
            "labels": ["lamp", color],
            "target_config": dict(target.config),  # what the case file configured for this target
        }
