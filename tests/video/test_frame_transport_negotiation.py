"""An adapter that speaks only GlassKit's protocol gets exactly the messages it got before assay
could share frames through memory: pinned by transcripts recorded before that extension existed."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
from media import make_video
from video_evals import invoke, write

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RECORDER = Path(__file__).resolve().parents[1] / "adapters" / "fixtures" / "glasskit_recorder.py"

CASE = """
video: clip.mov
targets:
  first:
    samples:
      - at: [0.0, 0.1, 0.2]
        expect: true
  second:
    samples:
      - at: 0.1
        expect: true
"""


def lossless_noise_eval(root: Path) -> Path:
    """Noise frames in a lossless (PNG-in-MOV) video: the frames decode to exactly these pixels
    on any FFmpeg, and noise is sent as stored PNG blocks, whose bytes assay alone decides."""
    eval_dir = root / "eval"
    generator = np.random.default_rng(35)
    frames = [generator.integers(0, 256, (72, 24, 3), dtype=np.uint8) for _ in range(4)]
    (eval_dir / "cases").mkdir(parents=True)
    make_video(eval_dir / "cases" / "clip.mov", frames, fps=10, codec="png", pix_fmt="rgb24")
    write(eval_dir / "cases" / "clip.yaml", CASE)
    return eval_dir


def record_transcript(root: Path, mode: str, *extra: str, env: dict[str, str] | None = None) -> str:
    """What the recorder adapter received during one `assay video run`, paths made portable."""
    eval_dir = lossless_noise_eval(root)
    log = root / "received.ndjson"
    command = shlex.join([sys.executable, str(RECORDER), str(log), mode])
    result = invoke("video", "run", "--eval-dir", eval_dir, "--adapter-command", command, "--concurrency", "1", *extra)
    assert result.exit_code == 0, result.output
    return log.read_text(encoding="ascii").replace(str(eval_dir.resolve()), "<eval>")


@pytest.mark.parametrize("mode", ["evaluate", "evaluateMany"])
def test_a_glasskit_adapter_gets_exactly_the_messages_it_always_got(tmp_path, mode):
    expected = (FIXTURES / f"glasskit_transcript_{mode}.ndjson").read_text(encoding="ascii")
    assert record_transcript(tmp_path, mode) == expected
