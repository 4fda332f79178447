"""The CLI convention table (docs/cli.md), one row at a time, on the real CLI of every kind.

Rows pinned elsewhere: `-h` and help text (test_help.py), the store's home (test_store_home.py),
NDJSON event shapes (test_ndjson_events.py), progress lines (tests/core/test_progress.py), closed
stdout (test_closed_stdout.py), attempts numbered from 1 (tests/agent/test_cli.py).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest
from cli_examples import DOC_CONFIG, assay, environment


def run(workspace: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay(*arguments), cwd=workspace, env=environment(workspace), capture_output=True, text=True, timeout=120
    )


# Inputs that are wrong in a way a user causes: each kind's one clear message and exit 2.
BAD_INPUT = {
    "video": ("video", "run", "--eval-dir", "no-such-dir"),
    "agent": ("agent", "run", "--project", "no-such-dir"),
    "doc": ("doc", "run-case", "--config", "no-such.json", "--case", "c", "--candidate", "x.md"),
    "runs": ("runs", "show", "no-such-run"),
}


@pytest.mark.parametrize("kind", list(BAD_INPUT))
def test_an_input_error_is_one_line_exit_2_on_stderr_except_for_video_which_keeps_glasskits_stdout(workspace, kind):
    done = run(workspace, *BAD_INPUT[kind])
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    if kind == "video":
        assert done.stdout.strip().startswith("Eval failed: ") and done.stderr == ""
    else:
        assert done.stdout == ""
        assert "no-such" in done.stderr


RESULTS = {
    "video": ("video", "run", "--eval-dir", "examples/video", "--quiet"),
    "agent": ("agent", "run", "--project", "examples/agent", "--quiet"),
    "doc": ("doc", "run-case", *DOC_CONFIG, "--case", "release-notes-v1", "--candidate", "examples/doc/candidates/weak.md"),
}


@pytest.mark.parametrize("kind", list(RESULTS))
def test_results_go_to_stdout_and_exit_1_means_a_gate_or_verdict_failed(workspace, kind):
    done = run(workspace, *RESULTS[kind])
    expected = {"video": 0, "agent": 1, "doc": 1}[kind]  # the video demo's gates pass despite one failed sample
    assert done.returncode == expected, done.stdout + done.stderr
    # eval-kit also says a red verdict on stderr, in its words
    assert done.stdout.strip() and done.stderr == ("Deterministic grading failed (verdict red)\n" if kind == "doc" else "")


@pytest.mark.parametrize("kind", list(RESULTS))
def test_json_streams_ndjson_on_stdout_with_the_exit_code_last(workspace, kind):
    done = run(workspace, *RESULTS[kind], "--json")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    last = lines[-1]
    exit_code = last["receipt"]["exit_code"] if kind == "agent" else last["exit_code"]
    assert exit_code == done.returncode
    assert done.stderr == ""  # no progress or ANSI in machine mode


@pytest.mark.parametrize("kind", list(RESULTS))
def test_the_run_id_machine_output_names_finds_the_run_in_the_store(workspace, kind):
    """GlassKit's checkpoint id (`run-…`) and eval-kit's bundle id are what a video or doc run's --json (and its
    console) names; `runs show` did not know them ("no run 'run-…'")."""
    last = json.loads(run(workspace, *RESULTS[kind], "--json").stdout.splitlines()[-1])
    named = last["receipt"]["invocation_id"] if kind == "agent" else last["run_id"]
    shown = run(workspace, "runs", "show", named, "--json")
    assert shown.returncode == 0, shown.stderr
    stored = json.loads(shown.stdout)
    assert stored["kind"] == kind and stored["run_id"].startswith(f"{kind}-")
    assert named == stored["run_id"] or named in stored["aliases"]


@pytest.mark.parametrize("kind", list(RESULTS))
def test_junit_file_for_every_kind(workspace, tmp_path, kind):
    report = tmp_path / kind / "junit.xml"
    done = run(workspace, *RESULTS[kind], "--junit", str(report))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    root = ElementTree.parse(report).getroot()
    assert root.tag == "testsuites" and int(root.get("tests")) >= 1
    assert int(root.get("failures")) == {"video": 1, "agent": 1, "doc": 1}[kind]


def test_a_report_path_that_cannot_be_written_is_exit_2_and_refused_before_the_run(workspace, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    folder = tmp_path / "reports"
    folder.mkdir()
    for kind, arguments in RESULTS.items():
        for given, reason in ((blocker / "junit.xml", f"cannot be created: {blocker} is a file, not a folder"),
                              (folder, f"is a folder; give the report's file, e.g. --junit {folder / 'junit.xml'}")):
            done = run(workspace, *arguments, "--junit", str(given))
            output = done.stdout + done.stderr
            assert done.returncode == 2, output
            # Refused before any unit ran (an agent run used to run every eval and then fail writing it).
            assert f"--junit {given} {reason}" in output
            assert "Verdict" not in output and "Case traffic-light" not in output and "PLAN" not in output, output
            assert ".tmp" not in output


def test_a_report_path_naming_a_file_of_the_users_is_refused_before_the_run_and_the_file_kept(workspace, tmp_path):
    """`--junit pyproject.toml` (a slip of the shell's completion) replaced the user's file with the report, exit 0."""
    own = tmp_path / "notes.md"
    own.write_text("# my notes\n")
    placeholder, earlier = tmp_path / "empty.xml", tmp_path / "earlier.xml"
    placeholder.write_text("")
    earlier.write_text('<?xml version="1.0"?><testsuites tests="0"/>')  # another tool's report: replaced as before
    for kind, arguments in RESULTS.items():
        done = run(workspace, *arguments, "--junit", str(own))
        output = done.stdout + done.stderr
        assert done.returncode == 2, output
        assert (f"--junit {own} is a file that is not XML (a JUnit report), which the report would replace; give the "
                "report a file of its own, e.g. --junit junit.xml") in output
        assert "PLAN" not in output and "Case traffic-light" not in output and own.read_text() == "# my notes\n"
        for report in (placeholder, earlier):
            done = run(workspace, *arguments, "--junit", str(report))
            assert done.returncode in (0, 1) and "<testsuites" in report.read_text(), done.stdout + done.stderr
    done = run(workspace, *RESULTS["video"], "--output-json", str(own))
    assert done.returncode == 2 and "is a file that is not a JSON report" in done.stdout + done.stderr
    assert own.read_text() == "# my notes\n"


SLOW_AGENT = '''
import asyncio
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

async def send(turn_input, ctx):
    await asyncio.sleep(30)
    return Turn([message("late")])

slow = Experiment(agent=define_agent(name="slow", send=send, evidence_coverage=complete_evidence_coverage), model="m")
'''


def test_ctrl_c_of_an_agent_run_is_exit_130_with_a_message(workspace, tmp_path):
    # (video: tests/video/test_run_crash.py; doc: tests/doc/test_node_adapter.py)
    import shutil

    project = tmp_path / "slow"
    shutil.copytree(workspace / "examples" / "agent", project, ignore=shutil.ignore_patterns(".assay"))
    shutil.rmtree(project / "experiments")
    (project / "experiments").mkdir()
    (project / "experiments" / "slow.py").write_text(SLOW_AGENT)
    process = subprocess.Popen(
        assay("agent", "run", "--project", str(project), "--quiet"), cwd=workspace, env=environment(workspace),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    time.sleep(3)  # planned and sending
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout + stderr
    assert "interrupted" in (stdout + stderr).lower()


def test_ctrl_c_of_any_other_command_says_interrupted_and_exits_130(tmp_path, monkeypatch):
    """typer's own handling of Ctrl-C exits 130 without a word (`runs reindex`, `labels import`, `view --export` …)."""
    from typer.testing import CliRunner

    from assay.cli.app import app
    from assay.core import results_store

    def reindex(*arguments, **options):
        raise KeyboardInterrupt

    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    monkeypatch.setattr(results_store, "reindex", reindex)
    done = CliRunner().invoke(app, ["runs", "reindex"])
    assert (done.exit_code, done.stdout, done.stderr) == (130, "", "Interrupted.\n")


def test_a_usage_error_of_no_one_option_is_shown_plain_not_as_a_value_of_an_empty_option() -> None:
    """`common.checked` showed a `UsageError` that names no option as `Invalid value for '': …`."""
    import typer

    from assay.cli import common
    from assay.errors import UsageError

    plain_error = typer.BadParameter.__mro__[1]  # click's UsageError, as the installed Typer ships it

    def no_option() -> None:
        raise UsageError("the two files disagree")

    def with_option() -> None:
        raise UsageError("--at must be a number", "--at")

    with pytest.raises(plain_error) as plain:
        common.checked(no_option)
    assert type(plain.value) is plain_error and plain.value.format_message() == "the two files disagree"
    with pytest.raises(typer.BadParameter) as valued:
        common.checked(with_option)
    assert valued.value.format_message() == "Invalid value for '--at': must be a number"
