"""A real `assay video run` prints hostile text harmlessly: a target label carrying terminal escape
sequences and an adapter message carrying a lone surrogate come out escaped, and the run finishes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from media import make_numbered_video
from video_evals import write

ADAPTER = """
class Evaluator:
    async def evaluate(self, sample, target):
        if sample.sample_index == 1:
            raise RuntimeError("lens \\x1b[2J cap \\udcff on")
        return 1


def create_evaluator(config):
    return Evaluator()
"""

CASE = r"""
video: clip.mp4
targets:
  number:
    label: "red \e[31mlabel\e[0m \x9b"
    samples:
      - at: [0.5, 1.0]
        expect: 1
"""


def test_a_label_with_escape_sequences_and_a_lone_surrogate_print_escaped_and_the_run_finishes(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    make_numbered_video(eval_dir / "cases" / "clip.mp4", 20, fps=10)
    write(eval_dir / "cases" / "clip.yaml", CASE)
    write(eval_dir / "adapter.py", ADAPTER)

    done = subprocess.run(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "--keep-going", "--verbose"],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip

    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8", "replace")
    assert done.returncode == 1, out + err  # the adapter error fails the default gate
    assert "\x1b" not in out and "\x9b" not in out
    assert "PASSED red \\x1b[31mlabel\\x1b[0m \\x9b (number) @0.5s" in out
    assert "lens \\x1b[2J cap \\udcff on" in out
    assert "Samples: 2 evaluated, 1 passed, 0 failed, 1 errors" in out
    assert "Traceback" not in err and "UnicodeEncodeError" not in out
