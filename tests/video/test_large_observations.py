"""An adapter answering with huge observations: compared in full, kept as a summary, memory bounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from video_evals import make_eval

from peak_rss import run_with_peak_rss

TESTS = Path(__file__).resolve().parents[1]

HUGE_ADAPTER = '''
def create_evaluator(config):
    return Evaluator()

class Evaluator:
    async def evaluate(self, sample, target):
        return {"frame": sample.frame_index, "blob": "x" * 40_000_000}  # 40 MB per answer
'''


def test_huge_observations_are_compared_then_kept_as_a_summary_and_memory_stays_bounded(tmp_path):
    case = """
    video: clip.mp4
    targets:
      t:
        samples:
          - range: [0.0, 1.6]
            every_s: 0.1
            field: frame
            compare: {mode: exact}
            expect: 0
    """
    eval_dir = make_eval(tmp_path, case, frames=20, adapter=HUGE_ADAPTER)
    report = tmp_path / "report.json"
    done, peak_mib = run_with_peak_rss(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "--concurrency", "4",
         "--output-json", str(report), "--quiet"],
        timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])},
    )  # its own peak, not the largest child this test process ever had
    assert done.returncode in (0, 1), done.stdout + done.stderr  # frame 0 passes, the other 15 fail
    results = json.loads(report.read_text())["trials"][0]["results"]
    assert len(results) == 16 and results[0]["status"] == "passed"
    summary = results[1]["observed"]["assay_observation_not_kept"]
    assert summary["type"] == "dict" and "compared in full" in summary["reason"]
    assert results[1]["observed_value"] == 1  # the compared field is small: kept as it was
    assert report.stat().st_size < 1_000_000
    assert peak_mib < 500, f"peak RSS {peak_mib:.0f} MiB for 16 answers of 40 MB"


def test_the_peak_measured_is_the_runs_own_not_the_test_process_or_an_earlier_child():
    # An earlier test's big child (Ray, mkdocs, a browser) stays in RUSAGE_CHILDREN for the whole session,
    # and a child forked straight from a big test process starts out as big as it.
    subprocess.run([sys.executable, "-c", "b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096])"], check=True)
    ballast = bytearray(300 << 20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # this process holds 300 MiB more while it measures
    done, peak_mib = run_with_peak_rss([sys.executable, "-c", "print('small')"], timeout=60)
    del ballast
    assert done.returncode == 0 and done.stdout == "small\n"
    assert peak_mib < 100, peak_mib
