"""Build small eval directories for end-to-end tests: a numbered video, case YAML, an adapter file."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

from media import make_numbered_video
from typer.testing import CliRunner

from assay.cli.app import app

# An adapter that reads the frame number drawn into the pixels, so results depend on the frames
# assay really decoded. Behaviour is steered by the target config:
#   fail_at: [sample indexes]  -> raise for those samples
#   mode: "number" | "even" | "nan" | "dict"
#   calls_file: append "<trial>:<case>/<target>:<sample_index>" per call (counts calls)
NUMBER_ADAPTER = '''
import json, math, os
import numpy as np
from media import read_frame_number

FACTORY_CALLS = []

def create_evaluator(config):
    FACTORY_CALLS.append(1)
    marker = config.config.get("factory_marker")
    if marker:
        with open(marker, "a") as handle:
            handle.write("built\\n")
    return Evaluator(config)


class Evaluator:
    def __init__(self, config):
        self.config = config
        self.trial = len(FACTORY_CALLS)

    async def evaluate(self, sample, target):
        number = read_frame_number(np.asarray(sample.image))
        assert number == sample.frame_index, (number, sample.frame_index)
        settings = target.config
        calls = settings.get("calls_file")
        if calls:
            with open(calls, "a") as handle:
                handle.write(f"{sample.case_name}/{target.id}:{sample.sample_index}\\n")
        fail_file = settings.get("fail_while_exists")
        if sample.sample_index in settings.get("fail_at", []) and (not fail_file or os.path.exists(fail_file)):
            raise RuntimeError(f"model timed out on frame {number}")
        mode = settings.get("mode", "number")
        if mode == "even":
            return number % 2 == 0
        if mode == "nan":
            return math.nan
        if mode == "dict":
            return {"result": {"frame": number, "even": number % 2 == 0}}
        return number
'''


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def make_eval(
    root: Path,
    case_yaml: str,
    *,
    case_name: str = "clip",
    frames: int = 30,
    fps: int = 10,
    adapter: str = NUMBER_ADAPTER,
    config_yaml: str | None = None,
    adapter_yaml: str | None = None,
) -> Path:
    """An eval dir with `cases/<case_name>.yaml` over a `frames`-frame numbered video."""
    eval_dir = root / "eval"
    video = eval_dir / "cases" / "clip.mp4"
    if not video.exists():
        video.parent.mkdir(parents=True, exist_ok=True)
        make_numbered_video(video, frames, fps=fps)
    write(eval_dir / "cases" / f"{case_name}.yaml", case_yaml)
    write(eval_dir / "adapter.py", adapter)
    if config_yaml is not None:
        write(eval_dir / "config.yaml", config_yaml)
    if adapter_yaml is not None:
        write(eval_dir / "adapter.yaml", adapter_yaml)
    return eval_dir


def number_eval(tmp_path: Path, config: str = "{}", expect: int = 0, until: float = 0.5) -> Path:
    """Samples every 0.1 s from 0 to `until` (excluded) of a numbered video; with `expect: 0` all but the
    first fail. `config` is the target's adapter config (YAML flow mapping)."""
    return make_eval(
        tmp_path,
        f"""
        video: clip.mp4
        targets:
          number:
            config: {config}
            samples:
              - range: [0.0, {until}]
                every_s: 0.1
                expect: {expect}
        """,
    )


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, [str(arg) for arg in args], catch_exceptions=False)
    # Rich wraps long lines (and boxes usage errors); compare text with that layout taken out.
    result.flat = re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", result.output))
    return result


def run_eval(eval_dir: Path, *extra: str) -> Any:
    return invoke("video", "run", "--eval-dir", str(eval_dir), "--adapter", f"{eval_dir}/adapter.py:create_evaluator", *extra)


def read_report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
