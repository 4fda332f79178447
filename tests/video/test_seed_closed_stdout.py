"""`assay video seed | head -1`: the seed stops as on Ctrl-C, keeps what it seeded, and the closed-stdout
line on stderr names the command that resumes it (its resume lines went to the stdout nobody reads)."""

from __future__ import annotations

import sys
from pathlib import Path

from reader_pipes import reader_leaves
from test_seed import KILL_CASE, checkpoints, make_eval, video_file  # noqa: F401 - `video_file` is a fixture

CLOSED = "assay: standard output was closed, so the command stopped as on Ctrl-C; finished results are kept."


def test_a_seed_whose_reader_leaves_names_the_resume_command_on_stderr(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": KILL_CASE}, delay=0.05)
    # The reader leaves at the first SEEDED line (after the case and target headings, as GlassKit prints them).
    read, code, stderr = reader_leaves(
        [sys.executable, "-m", "assay", "video", "seed", "--eval-dir", str(eval_dir), "--verbose"],
        until=lambda line: line.startswith(b"    SEEDED "),
    )
    assert read[0].startswith(b"Case door (")
    assert read[-1].startswith(b"    SEEDED ")  # one value is durable
    [checkpoint] = checkpoints(eval_dir)
    assert code == 130, stderr
    assert stderr.splitlines()[-1] == f"{CLOSED} Resume with `assay video seed --resume {checkpoint}`.", stderr
