"""Adapter output held at once is bounded by one budget for the run, not a protocol limit per message.

Each scenario runs in its own interpreter, so the peak RSS measured is that run's alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCENARIOS = Path(__file__).parent / "fixtures" / "memory_scenarios.py"
PEAK_RSS_LIMIT_MB = 500


def measured(scenario: str, size: int) -> dict:
    finished = subprocess.run(
        [sys.executable, str(SCENARIOS), scenario, str(size)], capture_output=True, text=True, timeout=90
    )
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout.splitlines()[-1])


def test_eight_agents_each_sending_a_gibibyte_line_error_clearly_in_bounded_memory():
    outcome = measured("agents", 1 << 30)
    assert outcome["verdicts"] == ["errored"] * 8
    (message,) = outcome["errors"]
    assert "stdout message exceeds the 256 MiB protocol limit" in message
    assert outcome["peak_rss_mb"] <= PEAK_RSS_LIMIT_MB, outcome


def test_eight_concurrent_200_mb_observations_are_read_one_at_a_time(tmp_path):
    outcome = measured("video", 200_000_000)
    assert outcome["errors"] == []
    assert outcome["lengths"] == [200_000_000] * 8  # every answer kept, none refused
    assert outcome["peak_rss_mb"] <= PEAK_RSS_LIMIT_MB, outcome
