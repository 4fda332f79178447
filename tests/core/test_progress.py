"""Progress on stderr for every kind: plain lines in a CI log (periodic and at the end), nothing with --quiet."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

from assay.core.report.progress import ProgressReporter
from assay.core.run_events import RunFinished, RunStarted, UnitDurable


class Verdict:
    def __init__(self, verdict: str) -> None:
        self.verdict = verdict


def durable(verdict: str) -> UnitDurable:
    return UnitDurable(Verdict(verdict), lambda: None)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_plain_log_gets_a_line_every_interval_while_units_finish_and_one_at_the_end():
    stream, clock = io.StringIO(), Clock()
    progress = ProgressReporter(stream, interval=0.05, terminal=False, clock=clock)
    progress.run_started(RunStarted("video", "r", total=10, reused=2))
    for verdict in ("passed", "failed", "passed", "errored"):
        progress.unit_durable(durable(verdict))
    clock.now += 8.0  # 4 units in 8 s, 4 left
    deadline = time.monotonic() + 5
    while not stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.getvalue().splitlines()[0] == "[6/10] 2 passed · 1 failed · 1 errored · ETA 8.0s"
    time.sleep(0.2)  # nothing finished meanwhile: no new line
    assert len(stream.getvalue().splitlines()) == 1
    for verdict in ("passed",) * 4:
        progress.unit_durable(durable(verdict))
    progress.run_finished(RunFinished("video", "r", 0, outcome="done"))
    assert stream.getvalue().splitlines()[-1] == "[10/10] 6 passed · 1 failed · 1 errored"
    assert "\x1b" not in stream.getvalue()  # no ANSI in a log


def test_a_resumed_run_counts_the_units_it_reused():
    """`[5/5] 0 passed · 0 failed · 3 errored` after a resume that reused 2 failed attempts: the done count
    took them in, the verdict counts did not."""
    stream = io.StringIO()
    progress = ProgressReporter(stream, interval=60, terminal=False)
    progress.run_started(RunStarted("agent", "r", total=5, reused=2, reused_verdicts={"failed": 2}))
    for verdict in ("errored",) * 3:
        progress.unit_durable(durable(verdict))
    progress.run_finished(RunFinished("agent", "r", 1, outcome="done"))
    assert stream.getvalue().splitlines()[-1] == "[5/5] 0 passed · 2 failed · 3 errored"


def test_score_evals_are_counted_as_scored_not_left_out():
    stream = io.StringIO()
    progress = ProgressReporter(stream, interval=60, terminal=False)
    progress.run_started(RunStarted("agent", "r", total=2, reused=0))
    for verdict in ("scored", "passed"):
        progress.unit_durable(durable(verdict))
    progress.run_finished(RunFinished("agent", "r", 0, outcome="done"))
    assert stream.getvalue().splitlines()[-1] == "[2/2] 1 passed · 0 failed · 1 scored"


def test_a_run_that_reused_everything_prints_no_progress():
    stream = io.StringIO()
    progress = ProgressReporter(stream, interval=60, terminal=False)
    progress.run_started(RunStarted("agent", "r", total=3, reused=3))
    progress.run_finished(RunFinished("agent", "r", 0))
    assert stream.getvalue() == ""


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_video_and_agent_runs_put_progress_on_stderr_and_quiet_silences_it(tmp_path):
    import shutil

    shutil.copytree(EXAMPLES / "agent", tmp_path / "agent", ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    run = [sys.executable, "-m", "assay", "agent", "run", "--project", str(tmp_path / "agent")]
    loud = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert loud.returncode == 1, loud.stdout + loud.stderr
    assert loud.stderr.splitlines()[-1] == "[8/8] 7 passed · 1 failed"
    assert "passed ·" not in loud.stdout  # results stay on stdout, progress on stderr
    quiet = subprocess.run([*run, "--quiet"], capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 1 and quiet.stderr == ""


def test_the_closing_line_counts_the_units_a_finished_run_left_undispatched_instead_of_an_eta():
    """An early exit or a spent budget leaves slots that never start: the last line of the log read `[2/4] 2 passed ·
    0 failed · ETA 0.2s`, an estimate for units that would never come."""
    stream, clock = io.StringIO(), Clock()
    progress = ProgressReporter(stream, interval=60, terminal=False, clock=clock)
    progress.run_started(RunStarted("agent", "r", total=4, reused=0))
    for verdict in ("passed", "passed"):
        progress.unit_durable(durable(verdict))
    clock.now += 1.0
    progress.run_finished(RunFinished("agent", "r", 0, outcome="done"))
    assert stream.getvalue().splitlines()[-1] == "[2/4] 2 passed · 0 failed · 2 not run"
