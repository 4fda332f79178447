"""The lamp adapter served as a process, for an app that lives in its own virtual environment.

Run with that environment's interpreter (assay must be installed there too):
    assay video run --adapter-command "/path/to/app-venv/bin/python eval/serve_adapter.py"
"""

from assay.video.serve import serve


class LampReader:
    def __init__(self, config):  # config: AdapterConfig, as for in-process adapters
        self.top, self.bottom, self.left, self.right = config.config["lamp_region"]

    def evaluate(self, sample, target):  # a plain method runs in a thread
        lamp = sample.pixels()[self.top : self.bottom, self.left : self.right].reshape(-1, 3)
        red, green, blue = (float(channel) for channel in lamp.mean(axis=0))
        print("evaluated", sample.timestamp_s)  # sent to stderr while serving
        return {
            "color": "red" if red > green else "green",
            "brightness": round((0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255, 3),
        }


serve(LampReader)
