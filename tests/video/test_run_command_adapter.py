"""The same eval through the Python adapter and a JavaScript command adapter gives the same results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from video_evals import invoke, make_eval, read_report, run_eval

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

ADAPTER = Path(__file__).resolve().parent / "fixtures" / "number_adapter.mjs"

CASE = """
video: clip.mp4
targets:
  number:
    samples:
      - range: [0.0, 2.0]
        every_s: 0.25
        expect: 4
      - at: [2.5, 2.2]
        expect: 25
  second:
    label: Second target
    samples:
      - range: [1.0, 2.9]
        every_s: 0.3
        expect: 13
"""


def comparable(report):
    return [
        {key: result[key] for key in ("case", "target", "sample_index", "timestamp_s", "status", "observed", "reason")}
        for result in report["trials"][0]["results"]
    ]


@pytest.mark.parametrize("mode", ["single", "many"])
def test_javascript_adapter_matches_the_python_adapter(tmp_path, mode):
    eval_dir = make_eval(tmp_path, CASE)
    python_report = tmp_path / "python.json"
    assert run_eval(eval_dir, "--concurrency", "3", "--output-json", python_report).exit_code == 0
    node_report = tmp_path / "node.json"
    result = invoke(
        "video", "run", "--eval-dir", eval_dir, "--adapter-command", f"node {ADAPTER} {mode}",
        "--concurrency", "3", "--output-json", node_report,
    )
    assert result.exit_code == 0, result.output
    expected = comparable(read_report(python_report))
    assert comparable(read_report(node_report)) == expected
    assert [r["observed"] for r in expected][:3] == [0, 2, 5]
    timing = {r["evaluation_timing_mode"] for r in read_report(node_report)["trials"][0]["results"]}
    assert timing == {"batch_amortized" if mode == "many" else "individual"}


def test_frames_for_a_command_adapter_are_converted_by_its_png_encoders_not_ahead(tmp_path, monkeypatch):
    import threading

    from assay.video import decode

    threads = []
    real = decode._rgb_pixels

    def recording(frame):
        threads.append(threading.current_thread().name)
        return real(frame)

    monkeypatch.setattr(decode, "_rgb_pixels", recording)
    eval_dir = make_eval(tmp_path, CASE)
    result = invoke("video", "run", "--eval-dir", eval_dir, "--adapter-command", f"node {ADAPTER} single",
                    "--concurrency", "3")
    assert result.exit_code == 0, result.output
    assert threads and all(name.startswith("assay-png") for name in threads), sorted(set(threads))
    threads.clear()
    assert run_eval(eval_dir, "--concurrency", "3").exit_code == 0  # a Python adapter: converted ahead
    assert threads and all(name.startswith("assay-convert") for name in threads), sorted(set(threads))


@pytest.mark.parametrize("transport", ["png", "shared memory"])
def test_targets_that_sample_the_same_frame_share_one_png_or_one_shared_slot(tmp_path, monkeypatch, transport):
    import threading

    from assay.video import command_adapter, shared_frames

    encoded = []
    lock = threading.Lock()
    real_png, real_write = command_adapter.png_view, shared_frames.SharedFrameSegment._write

    def counting_png(pixels, compression):
        with lock:
            encoded.append(compression)
        return real_png(pixels, compression)

    def counting_write(segment, slot, pixels):
        with lock:
            encoded.append("shared")
        return real_write(segment, slot, pixels)

    monkeypatch.setattr(command_adapter, "png_view", counting_png)
    monkeypatch.setattr(shared_frames.SharedFrameSegment, "_write", counting_write)
    if transport == "png":
        monkeypatch.setenv("ASSAY_SHARED_FRAMES", "0")
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          first:
            samples:
              - range: [0.0, 2.0]
                every_s: 0.25
                expect: 4
          second:
            samples:
              - range: [0.0, 2.0]
                every_s: 0.25
                expect: 4
          third:
            samples:
              - at: [0.5, 1.0]
                expect: 4
        """,
    )
    report = tmp_path / "r.json"
    result = invoke("video", "run", "--eval-dir", eval_dir, "--adapter-command", f"node {ADAPTER} single",
                    "--concurrency", "4", "--output-json", report)
    assert result.exit_code == 0, result.output
    results = read_report(report)["trials"][0]["results"]
    observed = {(r["target"], r["timestamp_s"]): r["observed"] for r in results}
    times = sorted(t for target, t in observed if target == "first")
    assert len(times) == 8 and len(results) == 8 + 8 + 2
    assert [observed[("second", t)] for t in times] == [observed[("first", t)] for t in times]
    assert [observed[("third", t)] for t in (0.5, 1.0)] == [observed[("first", t)] for t in (0.5, 1.0)]
    # one PNG (or one write to shared memory) per distinct frame, not one per request
    assert encoded == (["auto"] if transport == "png" else ["shared"]) * 8


def test_command_adapter_errors_carry_no_sample_context(tmp_path):
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          number:
            config: {fail_at: [1]}
            samples:
              - at: [0.0, 0.5]
                expect: 0
        """,
    )
    result = invoke("video", "run", "--eval-dir", eval_dir, "--adapter-command", f"node {ADAPTER}")
    assert result.exit_code == 2
    assert "Eval failed: adapter command evaluate failed: model timed out on frame 5" in result.flat
    report = tmp_path / "r.json"
    kept = invoke(
        "video", "run", "--eval-dir", eval_dir, "--adapter-command", f"node {ADAPTER} many", "--keep-going",
        "--output-json", report,
    )
    assert kept.exit_code == 1
    reasons = {r["reason"] for r in read_report(report)["trials"][0]["results"]}
    assert reasons == {"adapter_error: adapter command evaluate failed: model timed out on frame 5"}


def test_validate_starts_and_closes_a_command_adapter(tmp_path):
    eval_dir = make_eval(tmp_path, CASE)
    result = invoke("video", "validate", "--eval-dir", eval_dir, "--adapter-command", f"node {ADAPTER}")
    assert result.exit_code == 0, result.output
    broken = invoke("video", "validate", "--eval-dir", eval_dir, "--adapter-command", "node /nonexistent/adapter.mjs")
    assert broken.exit_code == 1
    assert "- adapter validation failed: adapter command 'node /nonexistent/adapter.mjs' failed to initialize" in broken.flat


def test_adapter_timeout_fails_a_call_that_never_answers_and_names_the_option(tmp_path):
    import time

    from adapters.hostile import hostile

    eval_dir = make_eval(tmp_path, "video: clip.mp4\ntargets:\n  t:\n    samples:\n      - at: [0.1, 0.2, 0.3]\n        expect: {seen: 0}\n")
    command = hostile("sleeps-mid-run", 2)  # answers initialize and one evaluate, then sleeps for 2 min
    started = time.monotonic()
    result = invoke(
        "video", "run", "--eval-dir", eval_dir, "--adapter-command", command,
        "--adapter-timeout", "0.5", "--keep-going", "--output-json", tmp_path / "report.json",
    )
    assert time.monotonic() - started < 20, "the run waited for the sleeping adapter"
    # The calls that never answered are adapter errors; the adapter, still asleep, then misses
    # GlassKit's 5 s close window too, which fails the run (exit 2) with the progress kept.
    assert result.exit_code == 2, result.output
    assert result.flat.count("did not answer evaluate within 0.5s (set by --adapter-timeout)") == 2
    assert "did not complete close within 5s" in result.flat
    bad = invoke("video", "run", "--eval-dir", eval_dir, "--adapter-command", command, "--adapter-timeout", "0")
    assert bad.exit_code == 2 and "greater than 0" in bad.output


MISBEHAVING = Path(__file__).resolve().parents[1] / "adapters" / "fixtures" / "misbehaving_adapter.mjs"


def test_a_protocol_error_is_printed_once(tmp_path):
    eval_dir = make_eval(tmp_path, CASE)
    result = invoke("video", "run", "--eval-dir", eval_dir, "--adapter-command", f"node {MISBEHAVING} non-json")
    assert result.exit_code == 2, result.output
    assert "Eval failed: adapter command protocol error: invalid JSON on stdout" in result.flat
    assert result.flat.count("invalid JSON on stdout") == 1, result.output
    assert "adapter close failed" not in result.flat


def test_an_adapter_that_dies_at_start_is_one_error_with_its_stderr_once(tmp_path):
    import subprocess
    import sys

    eval_dir = make_eval(tmp_path, CASE)
    missing = tmp_path / "nope.mjs"
    done = subprocess.run(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "--adapter-command", f"node {missing}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout  # stdout and stderr as a terminal shows them, together
    assert done.returncode == 2, output
    assert f"Eval failed: adapter command 'node {missing}' failed to initialize: " in output
    assert "exited unexpectedly (exit code 1); stderr tail: " in output
    assert output.count("Cannot find module") == 1, output  # node's stack trace, once
    assert "Case clip" not in output and "target number" not in output, "it looked like a started run"


SILENT_AFTER_ONE = '''
import asyncio

def create_evaluator(config):
    return Evaluator()

class Evaluator:
    async def evaluate(self, sample, target):
        if sample.sample_index > 0:
            await asyncio.sleep(120)
        return {"seen": 0}
'''


@pytest.mark.parametrize("kind", ["command", "python"])
def test_an_adapter_silent_for_long_is_named_once_with_what_to_do(tmp_path, kind):
    """No time limit by default (GlassKit has none), but a silent adapter is named, once."""
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    from adapters.hostile import hostile

    case = "video: clip.mp4\ntargets:\n  t:\n    samples:\n      - at: [0.1, 0.2, 0.3]\n        expect: {seen: 0}\n"
    eval_dir = make_eval(tmp_path, case, adapter=SILENT_AFTER_ONE)
    if kind == "command":  # answers initialize and one evaluate, then sleeps for 2 min
        adapter = ["--adapter-command", hostile("sleeps-mid-run", 2)]
        named = f"adapter command {hostile('sleeps-mid-run', 2)!r} has sent nothing back for 1s (case clip)"
        advice = "set --adapter-timeout SECONDS to fail a call that takes longer, or press Ctrl-C"
    else:
        adapter = ["--adapter", f"{eval_dir}/adapter.py:create_evaluator"]
        named = f"adapter '{eval_dir}/adapter.py:create_evaluator' has returned nothing for 1s (case clip)"
        advice = "press Ctrl-C to stop (finished results are kept for --resume)"
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), *adapter, "--quiet"],
        env={**os.environ, "ASSAY_SILENCE_WARNING_SECONDS": "1"}, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while not any(line.startswith("Warning:") for line in lines) and time.monotonic() < deadline:
        assert process.poll() is None, "".join(lines)
        time.sleep(0.05)
    time.sleep(2.5)  # more than twice the silence: the line is not repeated
    process.send_signal(signal.SIGINT)
    stdout, _ = process.communicate(timeout=60)
    reader.join(timeout=10)
    assert process.returncode == 130, stdout + "".join(lines)
    warnings = [line for line in lines if line.startswith("Warning:")]
    assert len(warnings) == 1, lines
    assert named in warnings[0] and advice in warnings[0]
    assert "Warning" not in stdout  # GlassKit's stdout stays as it was
