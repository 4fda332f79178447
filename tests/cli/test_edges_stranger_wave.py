"""The edges a CI user hits, met as a stranger would: a reader that is gone once a command has done its work, and
an argument left empty by a script. Real processes, real pipes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from reader_pipes import reader_leaves
from servers.otlp_receiver import receiver

from cli_examples import EXAMPLES, assay

CLOSED_MESSAGE = "assay: standard output was closed, so the command stopped as on Ctrl-C"

JUNIT = """<?xml version="1.0"?>
<testsuites>
  <testsuite name="suite" tests="3">
    <testcase classname="pkg.mod" name="test_one" time="0.01"/>
    <testcase classname="pkg.mod" name="test_two" time="0.01"><failure message="boom">trace</failure></testcase>
    <testcase classname="pkg.mod" name="test_three" time="0.01"/>
  </testsuite>
</testsuites>
"""


def _environment(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}


@pytest.fixture
def imported_run(tmp_path: Path) -> dict[str, str]:
    """A store holding one run (a JUnit file imported with `assay runs import`); the environment naming it."""
    env = _environment(tmp_path)
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT, encoding="utf-8")
    done = subprocess.run(assay("runs", "import", str(report)), env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return env


def _said_nothing_stopped(code: int, stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert CLOSED_MESSAGE not in stderr, stderr  # nothing was stopped: the work was all done
    assert code == 0, stderr


def test_export_frames_whose_reader_is_gone_writes_every_frame_and_exits_0(tmp_path: Path) -> None:
    """`assay video export-frames … | head -1` wrote every frame, then exited 130 saying the command "stopped as on
    Ctrl-C" (the wrapper of a command that only reads made any lost output an interrupt, though the frames were all
    written and the command had said so: `results_made`)."""
    eval_dir = tmp_path / "video"
    shutil.copytree(EXAMPLES / "video", eval_dir, ignore=shutil.ignore_patterns("*.mp4", "__pycache__", "runs"))
    sys.path.insert(0, str(eval_dir))
    try:
        from make_video import make_demo_video
    finally:
        sys.path.pop(0)
    make_demo_video(eval_dir / "cases" / "traffic-light.mp4")
    frames = tmp_path / "frames"
    times = [argument for at in ("0.5", "1.0", "1.5", "2.0") for argument in ("--at", at)]
    _, code, stderr = reader_leaves(
        assay("video", "export-frames", "--eval-dir", str(eval_dir), "--case", "traffic-light", *times,
              "--output-dir", str(frames)),
        lines=0, env=_environment(tmp_path),
    )
    _said_nothing_stopped(code, stderr)
    assert sorted(path.name for path in frames.glob("*.png")) == ["at-0.5s.png", "at-1.0s.png", "at-1.5s.png", "at-2.0s.png"]


def test_view_export_whose_reader_is_gone_leaves_the_site_and_exits_0(tmp_path: Path, imported_run) -> None:
    """`assay view --export site | head -0` (or a log reader that died) put the whole site in place, then exited 130
    saying it "stopped as on Ctrl-C": a CI step treating 130 as cancelled threw away a finished export."""
    site = tmp_path / "site"
    _, code, stderr = reader_leaves(assay("view", "--export", str(site)), lines=0, env=imported_run)
    _said_nothing_stopped(code, stderr)
    assert (site / "index.html").is_file()


def test_runs_export_whose_reader_is_gone_after_sending_exits_0(imported_run) -> None:
    """`assay runs export … --json | jq …` whose reader went early: every event was sent, yet it exited 130, "stopped as
    on Ctrl-C", against the command's own `results_made` ("sent: a reader leaving now does not make it exit 130")."""
    with receiver() as (collector, received):
        _, code, stderr = reader_leaves(assay("runs", "export", "latest", "--otlp", collector, "--json"), lines=0,
                                        env=imported_run)
    _said_nothing_stopped(code, stderr)
    assert [span["name"] for span in received.spans] == ["assay.run"] and len(received.events) == 3, received  # all sent


def test_runs_export_of_an_empty_run_reference_says_it_is_empty(imported_run) -> None:
    """`assay runs export "$RUN" --otlp …` with RUN unset said "a run reference is a run id, … ; got ''", where
    `runs show`, `compare` and `trend` name the argument and the likely cause."""
    done = subprocess.run(assay("runs", "export", "", "--otlp", "http://127.0.0.1:4318"), env=imported_run,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == ("Error: RUN is empty (an unset variable in a script?); give a run id, a unique prefix of one, "
                           "latest or latest~N, or leave RUN out for the latest run\n")
    assert done.stdout == ""


def test_a_misspelt_video_resume_id_names_the_checkpoint_meant(tmp_path: Path) -> None:
    """`assay video run --resume run-…5e6` (one character off the id the interrupted run printed) said only
    `[Errno 2] No such file or directory`, naming the missing manifest twice; the id meant is named now."""
    eval_dir = tmp_path / "eval"
    checkpoint = eval_dir / "runs" / "checkpoints" / "run-20261206T090835Z-adeff5e5"
    checkpoint.mkdir(parents=True)
    (checkpoint / "manifest.json").write_text("{}", encoding="utf-8")
    typo = "run-20261206T090835Z-adeff5e6"
    done = subprocess.run(assay("video", "run", "--eval-dir", str(eval_dir), "--resume", typo),
                          env=_environment(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    message = " ".join(done.stderr.split())
    assert (f"Invalid value for --resume: could not read checkpoint manifest {checkpoint.parent / typo / 'manifest.json'}: "
            f"no checkpoint '{typo}' in {checkpoint.parent}; did you mean {checkpoint.name}?") in message, done.stderr
    assert "Traceback" not in done.stderr and "Errno" not in done.stderr


@pytest.mark.parametrize("command", [
    ("agent", "init", "{root}/project"),
    ("video", "init", "{root}/eval"),
    ("doc", "init"),
])
def test_an_init_whose_reader_is_gone_writes_its_files_and_exits_0(tmp_path: Path, command: tuple[str, ...]) -> None:
    """`assay agent init x | head -1` wrote every file, then exited 130 "…stopped as on Ctrl-C": only the lines naming
    the files were lost."""
    argv = assay(*(part.format(root=tmp_path) for part in command))
    _, code, stderr = reader_leaves(argv, lines=1, cwd=tmp_path, env=_environment(tmp_path))
    _said_nothing_stopped(code, stderr)
    written = [path for path in tmp_path.rglob("*") if path.is_file() and "store" not in path.parts]
    assert len(written) >= 3, written


def test_a_misspelt_agent_run_option_is_not_offered_a_hidden_one(tmp_path: Path) -> None:
    """`assay agent run --atempts 3` offered "--agent, --attempts": `--agent` is hidden (`-h` does not list it)."""
    done = subprocess.run(assay("agent", "run", "--project", str(tmp_path), "--atempts", "3"), capture_output=True,
                          text=True, timeout=60, env=_environment(tmp_path))
    assert done.returncode == 2 and done.stderr.rstrip().endswith(
        "Error: No such option: --atempts (Possible options: --attempts)"), done.stderr
