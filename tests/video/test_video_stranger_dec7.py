"""Defects a team moving a GlassKit suite to `assay video` hits, found by running the docs and the spec (Dec 7)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from video_evals import number_eval

TESTS = str(Path(__file__).resolve().parents[1])  # media.py, which the numbered eval's adapter imports


def _run(eval_dir: Path, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "--adapter",
         f"{eval_dir}/adapter.py:create_evaluator", "-q", *extra],
        capture_output=True, text=True, cwd=cwd, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")])},
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
def test_output_json_that_cannot_be_written_fails_the_run(tmp_path):
    # `--output-json /dev/full` (a full disk) passed every gate and exited 0, with only a reporter warning on stderr:
    # CI that gates on the report found no report and a green job. `--junit` exits 2 for the same failure.
    eval_dir = number_eval(tmp_path, expect=0, until=0.1)
    process = _run(eval_dir, tmp_path, "--output-json", "/dev/full")
    assert process.returncode == 2, (process.stdout, process.stderr)
    assert "Error: could not write JSON report /dev/full: No space left on device" in process.stderr
    assert "Samples: 1 evaluated, 1 passed" in process.stdout  # the run itself finished and is shown


def test_output_json_whose_folder_cannot_be_made_fails_the_run(tmp_path):
    # The report's folder is made when missing; one that cannot be made (its parent is a file that appears only
    # once the run has started, so the start-up check cannot see it) was a warning and exit 0.
    eval_dir = number_eval(tmp_path, expect=0, until=0.1)
    adapter = eval_dir / "adapter.py"
    # The adapter's factory puts a file where the report's parent folder would go.
    adapter.write_text(
        adapter.read_text(encoding="utf-8").replace(
            "def create_evaluator(config):",
            "def create_evaluator(config):\n"
            f"    open({str(tmp_path / 'blocker')!r}, 'w').close()\n",
            1,
        ),
        encoding="utf-8",
    )
    report = tmp_path / "blocker" / "deep" / "report.json"
    process = _run(eval_dir, tmp_path, "--output-json", str(report))
    assert process.returncode == 2, (process.stdout, process.stderr)
    assert f"Error: could not write JSON report {report}:" in process.stderr
    assert not report.exists()


def test_output_json_written_normally_keeps_exit_code_zero(tmp_path):
    eval_dir = number_eval(tmp_path, expect=0, until=0.1)
    report = tmp_path / "out" / "report.json"
    process = _run(eval_dir, tmp_path, "--output-json", str(report))
    assert process.returncode == 0, (process.stdout, process.stderr)
    assert "could not write" not in process.stderr
    assert json.loads(report.read_text(encoding="utf-8"))["success"] is True


SLOW_FACTORY = '''
import time
from pathlib import Path

def create_evaluator(config):
    Path(config.config["started"]).write_text("started")
    time.sleep(4)  # loading a model
    return lambda sample, target: 0
'''


def test_ctrl_c_while_a_slow_factory_loads_says_the_run_waits_for_it(tmp_path):
    # A sync factory (a model loading) runs on the event loop's thread: the first Ctrl-C stops the run only once it
    # returns, as in GlassKit. That wait was silent (the run looked hung), while a call under way says so.
    eval_dir = number_eval(tmp_path, expect=0, until=0.1)
    (eval_dir / "adapter.py").write_text(SLOW_FACTORY, encoding="utf-8")
    started = tmp_path / "started"
    (eval_dir / "adapter.yaml").write_text(f"started: {json.dumps(str(started))}\n", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")])},
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, (stdout, stderr)
    assert "Eval interrupted" in stdout
    assert ("Stopping: waiting for the adapter's import and factory to return (a Python adapter's code cannot be "
            "stopped from outside); press Ctrl-C again to stop without waiting") in stderr
