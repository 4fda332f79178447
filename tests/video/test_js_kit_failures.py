"""An adapter built on the node kit that crashes, or answers with what JSON cannot carry, fails the run
with what happened: it neither hangs the run nor turns the answer into a silent null."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from video_evals import make_eval, write

from assay.video import js_kit_path

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

CASE = """
video: clip.mp4
targets:
  number:
    samples:
      - at: [0.0, 0.5]
        expect: 0
"""

# `crash`: the evaluator's code throws from a timer, outside the kit's hands (node's uncaught exception).
ADAPTER = """
import {{ runAdapter }} from {kit};
const mode = process.argv[2];
await runAdapter(() => ({{
  evaluate() {{
    if (mode === "crash") {{
      setTimeout(() => {{ throw new Error("late crash in the model client"); }}, 20);
      return new Promise(() => {{}});
    }}
    if (mode === "bigint") return 10n;
    if (mode === "nan") return {{ brightness: NaN }};
    return 0;
  }},
}}));
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> tuple[subprocess.CompletedProcess[str], float]:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    eval_dir = make_eval(tmp_path, CASE)
    adapter = write(eval_dir / "adapter.mjs", ADAPTER.format(kit=repr(js_kit_path().as_uri())))
    started = time.monotonic()
    # A real process: the hang this is about is the assay process waiting on node's stdout.
    completed = subprocess.run(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "-q",
         "--adapter-command", f"node {adapter} {mode}"],
        capture_output=True, text=True, timeout=20,
    )
    return completed, time.monotonic() - started


def test_an_adapter_that_crashes_while_the_kit_waits_for_requests_ends_the_run(tmp_path, monkeypatch):
    completed, took = _run(tmp_path, monkeypatch, "crash")
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert "exited unexpectedly (exit code 1)" in completed.stdout
    assert "late crash in the model client" in completed.stdout
    assert took < 15  # it hung until stdin closed, which assay only does when the answer came


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("bigint", "the answer cannot be sent as JSON: Do not know how to serialize a BigInt"),
        ("nan", "the answer cannot be sent as JSON: NaN at key 'brightness' is not a JSON number"),
    ],
)
def test_an_answer_json_cannot_carry_is_that_requests_error(tmp_path, monkeypatch, mode, reason):
    completed, _ = _run(tmp_path, monkeypatch, mode)
    assert completed.returncode == 2, completed.stdout + completed.stderr
    flat = " ".join(completed.stdout.split())
    assert f"Eval failed: adapter command evaluate failed: {reason}" in flat
    assert "Node.js v" not in completed.stderr  # the adapter did not crash
