"""`assay video run --shard i/n` whose shard holds none of the eval's cases, as a CI job runs it: real processes.

The spec (GlassKit's) has no shards; a run of no samples is its §12 rule (a pass-rate gate fails on zero
results), which the unsharded run keeps. A suite split over more CI jobs than it has cases leaves some shards
empty, and failing those jobs for a 0.0% pass rate of nothing would fail every such pipeline; so an empty shard
passes (exit 0), says why on one line, and the gate is judged on the shards that hold cases and on the merged run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from video_evals import make_eval, write

TESTS = Path(__file__).resolve().parents[1]

CASE = """
video: clip.mp4
targets:
  number:
    samples:
      - range: [0.0, 1.0]
        every_s: 0.2
        expect: 0
"""
GATED = "thresholds:\n  min_pass_rate: 0.9\n"


def assay(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db"), "COLUMNS": "200",
                   "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True,
                          env=environment, timeout=120)


def video_run(tmp_path: Path, eval_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return assay(tmp_path, "video", "run", "--eval-dir", str(eval_dir), "--adapter",
                 f"{eval_dir}/adapter.py:create_evaluator", *extra)


def test_an_empty_shard_of_a_gated_eval_passes_saying_the_gate_is_judged_where_the_cases_are(tmp_path):
    eval_dir = make_eval(tmp_path, CASE, case_name="a", config_yaml=GATED)
    holding = video_run(tmp_path, eval_dir, "--shard", "1/2")
    # The one case (1 of 5 samples passes) is in shard 1, and its gate fails there.
    assert holding.returncode == 1, holding.stdout + holding.stderr
    assert "eval_min_pass_rate" in holding.stdout and "20.0% pass rate (gate: >= 90.0%)" in holding.stdout

    report = tmp_path / "empty.json"
    empty = video_run(tmp_path, eval_dir, "--shard", "2/2", "--output-json", str(report))
    assert empty.returncode == 0, empty.stdout + empty.stderr
    assert empty.stderr.splitlines().count(
        "Warning: shard 2/2 holds none of the eval's 1 case(s) (a case is never split between shards): nothing to "
        "run, so this shard passes; the gates are judged on the shards that hold cases, and on the run `assay runs "
        "merge` makes of them all"
    ) == 1, empty.stderr
    assert "Cases: 0" in empty.stdout and "Failed gates" not in empty.stdout and "Traceback" not in empty.stderr
    document = json.loads(report.read_text())
    assert document["success"] is True
    assert [gate["name"] for trial in document["trials"] for gate in trial["gates"]] == ["adapter_errors"]

    # The merged run is the whole eval: its gate is judged, and fails, as the unsharded run's would.
    merged = assay(tmp_path, "runs", "merge", "latest", "latest~1")
    assert merged.returncode == 1, merged.stdout + merged.stderr
    whole = video_run(tmp_path, eval_dir)
    assert whole.returncode == 1 and "20.0% pass rate (gate: >= 90.0%)" in whole.stdout


def test_an_unsharded_run_of_no_samples_fails_its_pass_rate_gate_as_the_spec_says(tmp_path):
    """§12: a pass-rate gate passes iff there is at least one result; only an empty shard is let off."""
    eval_dir = make_eval(tmp_path, CASE, case_name="a", config_yaml=GATED)
    write(eval_dir / "cases" / "a.yaml", "video: clip.mp4\ntargets:\n  number:\n    samples: []\n")
    refused = video_run(tmp_path, eval_dir)
    assert refused.returncode == 2 and "target 'number' has no samples" in refused.stdout + refused.stderr
    empty = video_run(tmp_path, eval_dir, "--allow-empty")
    assert empty.returncode == 1, empty.stdout + empty.stderr
    assert "0.0% pass rate (gate: >= 90.0%)" in empty.stdout and "holds none" not in empty.stderr
