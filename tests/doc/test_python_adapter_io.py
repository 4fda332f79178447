"""A Python adapter's own code inside assay's process: what it prints goes to stderr (as a `.mjs`
adapter's does), and Ctrl-C stops a hook that blocks instead of letting the run go on to the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from doc_suites import invoke, make_suite

PRINTING = '''
import sys

print("printed at import")


def grade_candidate(grade):
    print("printed by the grader")
    sys.stdout.write("written by the grader\\n")
    return {"verdict": "green", "findings": []}


async def render_report(report):
    print("printed by the reporter")
    return "# Report"
'''

BLOCKING = '''
import pathlib
import time


def grade_candidate(grade):
    pathlib.Path({marker!r}).write_text("started")
    time.sleep(60)
    return {{"verdict": "green", "findings": []}}


def render_report(report):
    return "# Report"
'''


@pytest.fixture
def suite(tmp_path, monkeypatch):
    built = make_suite(tmp_path, adapter="")
    built.update_config(adapter="adapter.py")
    monkeypatch.chdir(built.repo)
    return built


def test_what_a_python_adapter_prints_goes_to_stderr_and_json_stays_ndjson(suite):
    (suite.evals / "adapter.py").write_text(PRINTING)
    result = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r1", "--json")
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [event["type"] for event in events] == ["run_started", "unit", "run_finished"]
    for line in ("printed at import", "printed by the grader", "written by the grader", "printed by the reporter"):
        assert line in result.stderr


def test_doctor_lines_are_not_mixed_with_what_the_adapter_prints(suite):
    (suite.evals / "adapter.py").write_text(PRINTING)
    result = invoke("doctor")
    assert result.exit_code == 0, result.stderr
    assert all(line.startswith(("ok - ", "Doctor passed")) for line in result.stdout.splitlines()), result.stdout
    assert "printed at import" in result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_a_blocking_python_hook_and_no_bundle_is_finished(suite, tmp_path):
    marker = tmp_path / "hook-started"
    (suite.evals / "adapter.py").write_text(BLOCKING.format(marker=str(marker)))
    assay = Path(sys.executable).parent / "assay"
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}
    process = subprocess.Popen(
        [str(assay), "doc", "run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r1"],
        cwd=suite.repo, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the hook never started"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert time.monotonic() - started < 20, "the hook ran on after Ctrl-C"
    assert process.returncode == 130, stderr
    assert "Interrupted: the result bundle was not finished" in stderr
    assert not (suite.results / "r1" / "manifest.json").exists()


def test_an_adapter_file_not_found_names_the_config_key_to_fix(suite):
    suite.update_config(adapter="adaptr.py")
    result = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r1")
    assert result.exit_code == 2
    assert result.stderr.startswith("Execution failed: failed to load adapter module from ")  # eval-kit's words
    fix = "(fix adapter in evals/eval-kit.config.json; it is relative to the suite root evals)"
    assert f"adaptr.py: file not found {fix}" in result.stderr
