"""Defects a new user hits with the video commands other than `review`, found by using them from the docs."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from video_evals import invoke, make_eval, number_eval, read_report, run_eval

TESTS = str(Path(__file__).resolve().parents[1])  # media.py, which the numbered eval's adapter imports


def test_output_json_into_a_pipe_writes_into_it_and_leaves_the_pipe(tmp_path, monkeypatch):
    # `--output-json /dev/stdout` (a CI idiom) replaced the name with a plain file: as root, /dev/stdout itself, for
    # every later process of the machine. A named pipe stands in for it here.
    eval_dir = number_eval(tmp_path, expect=0, until=0.2)
    monkeypatch.chdir(tmp_path)
    pipe = tmp_path / "report.pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = run_eval(eval_dir, "--output-json", str(pipe))
        received = b""
        while chunk := _read(reader):
            received += chunk
    finally:
        os.close(reader)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(pipe.lstat().st_mode)  # still the pipe, not a file put in its place
    report = json.loads(received)
    assert report["report_type"] == "eval_run" and report["summary"]["passed_attempts"] == 1


def test_output_json_through_a_link_keeps_the_link(tmp_path, monkeypatch):
    eval_dir = number_eval(tmp_path, expect=0, until=0.2)
    monkeypatch.chdir(tmp_path)
    kept = tmp_path / "shared" / "report.json"
    kept.parent.mkdir()
    kept.write_text("{}\n", encoding="utf-8")
    link = tmp_path / "report.json"
    link.symlink_to(kept)
    result = run_eval(eval_dir, "--output-json", "report.json")
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and link.resolve() == kept.resolve()
    assert read_report(kept)["report_type"] == "eval_run"


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return b""


def test_output_json_into_the_commands_own_stdout_comes_after_the_console_lines(tmp_path):
    # `assay video run --output-json /dev/stdout > run.log`: the report, written at its own offset, was overwritten
    # by the console summary printed after it (or, as root, replaced /dev/stdout with a file). /dev/fd/1 names the
    # same file here (and cannot be replaced, whatever the code under test does).
    eval_dir = number_eval(tmp_path, expect=0, until=0.2)
    log = tmp_path / "run.log"
    with log.open("wb") as stdout:
        process = subprocess.run(
            [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "--adapter",
             f"{eval_dir}/adapter.py:create_evaluator", "--output-json", "/dev/fd/1"],
            stdout=stdout, stderr=subprocess.PIPE, cwd=tmp_path, timeout=120,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")])},
        )
    assert process.returncode == 0, process.stderr
    text = log.read_text(encoding="utf-8")
    start = text.index("{\n")
    report, end = json.JSONDecoder().raw_decode(text, start)
    assert report["report_type"] == "eval_run"
    assert text.startswith("Case clip ") and "Samples: 2 evaluated" in text[:start] + text[end:]  # the console, whole


def test_eval_dir_given_as_the_cases_folder_says_which_folder_to_pass(tmp_path):
    # `--eval-dir eval/cases` (the folder the case files are in) said only "cases directory does not exist:
    # …/eval/cases/cases".
    eval_dir = number_eval(tmp_path)
    result = invoke("video", "validate", "--eval-dir", str(eval_dir / "cases"))
    assert result.exit_code == 1
    folder = eval_dir.resolve()
    assert (f"cases directory does not exist: {folder}/cases/cases; {folder}/cases is itself the cases folder: "
            f"pass --eval-dir {folder}, the folder that holds cases/") in result.flat


def test_case_files_written_into_the_eval_dir_are_told_where_they_go(tmp_path):
    # A case file saved beside config.yaml instead of in cases/: "cases directory does not exist" (or, with an empty
    # cases/, "no case files found under …/cases") did not say that the file was found, one folder up.
    eval_dir = number_eval(tmp_path)
    (eval_dir / "cases" / "clip.yaml").rename(eval_dir / "clip.yaml")
    (eval_dir / "config.yaml").write_text("{}\n", encoding="utf-8")
    cases = eval_dir.resolve() / "cases"
    result = invoke("video", "list-samples", "--eval-dir", str(eval_dir))
    assert result.exit_code == 2
    told = f"the case files (clip.yaml) go in {cases}/"
    assert f"Could not list samples: no case files found under {cases}; {told}" in result.flat
    (eval_dir / "cases" / "clip.mp4").rename(eval_dir / "clip.mp4")
    (eval_dir / "cases").rmdir()
    result = invoke("video", "list-samples", "--eval-dir", str(eval_dir))
    assert result.exit_code == 2
    assert f"Could not list samples: cases directory does not exist: {cases}; {told}" in result.flat


SLOW_ADAPTER = """
import pathlib, time

def create_evaluator(config):
    return Slow(pathlib.Path(config.config["started"]))

class Slow:
    def __init__(self, started):
        self.started = started

    def evaluate(self, sample, target):  # a sync call: a thread runs it, which a Ctrl-C cannot stop
        self.started.write_text("started")
        time.sleep(60)
        return 0
"""


def test_ctrl_c_during_a_slow_python_adapter_call_says_what_it_waits_for(tmp_path):
    # Ctrl-C while a sync `evaluate` runs: the run waits for the call to return (GlassKit's rule) and said nothing,
    # so a hung adapter looked like a Ctrl-C that did nothing. Now one line says so, and that a second one stops it.
    started = tmp_path / "started"
    eval_dir = make_eval(tmp_path, """
        video: clip.mp4
        targets:
          number:
            samples:
              - at: [0.0, 0.1]
                expect: 0
        """, adapter=SLOW_ADAPTER, adapter_yaml=f"started: {json.dumps(str(started))}\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")])},
    )
    said: list[bytes] = []  # stderr, read as it comes (the line is awaited, not a fixed time: CI may be loaded)
    reader = threading.Thread(target=lambda: said.extend(iter(process.stderr.readline, b"")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), process.communicate(timeout=30)
        process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 30  # the line comes a second after the Ctrl-C, while the call is under way
        while not any(line.startswith(b"Stopping:") for line in said) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None  # still waiting for the call, as GlassKit does
        process.send_signal(signal.SIGINT)
        stdout = process.stdout.read()
        process.wait(timeout=30)
        reader.join(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    stderr = b"".join(said)
    assert process.returncode == 130, (stdout, stderr)
    assert (b"Stopping: waiting for 1 adapter call under way to return (a Python adapter's call cannot be stopped "
            b"from outside); press Ctrl-C again to stop without waiting, finished results are kept") in stderr
    assert b"Eval interrupted" in stdout
