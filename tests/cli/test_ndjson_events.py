"""`--json` on video and doc runs: NDJSON events on stdout, one object a line, the last one the outcome."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_json(*arguments: str, cwd: Path) -> tuple[int, list[dict], str]:
    done = subprocess.run([sys.executable, "-m", "assay", *arguments, "--json"], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_video_run_streams_run_started_units_and_run_finished(tmp_path):
    shutil.copytree(EXAMPLES / "video", tmp_path / "video", ignore=shutil.ignore_patterns("runs", "__pycache__"))
    sys.path.insert(0, str(tmp_path / "video"))
    try:
        from make_video import make_demo_video
    finally:
        sys.path.pop(0)
    make_demo_video(tmp_path / "video" / "cases" / "traffic-light.mp4")
    code, events, stderr = run_json("video", "run", "--eval-dir", "video", cwd=tmp_path)
    assert code == 0 and stderr == ""  # the demo's one wrong expectation does not fail its gates
    assert [event["type"] for event in (events[0], events[-1])] == ["run_started", "run_finished"]
    units = [event["unit"] for event in events if event["type"] == "unit"]
    assert len(units) == events[0]["total"] == 20
    finished = events[-1]
    assert finished["exit_code"] == 0 and finished["completion"] == "completed"
    assert finished["counts"] == {"passed": 18, "failed": 1, "errored": 0, "skipped": 0, "ignored": 1}
    assert all(key == key.lower() for event in events for key in event)  # snake_case throughout


def test_doc_run_case_streams_its_unit_and_a_red_verdict_exits_1(tmp_path):
    (tmp_path / ".git").mkdir()
    shutil.copytree(EXAMPLES / "doc", tmp_path / "doc", ignore=shutil.ignore_patterns("results"))
    (tmp_path / "doc" / "evals" / "results").mkdir()
    code, events, _ = run_json(
        "doc", "run-case", "--config", "doc/evals/eval-kit.config.json", "--case", "release-notes-v1",
        "--candidate", "doc/candidates/weak.md", cwd=tmp_path,
    )
    assert code == 1
    assert [event["type"] for event in events] == ["run_started", "unit", "run_finished"]
    assert events[1]["unit"]["verdict"] == "failed" and events[1]["unit"]["reason"].startswith("verdict red")
    assert events[2]["exit_code"] == 1 and events[2]["run_id"].startswith("deterministic-")
    assert events[0]["run_id"] == events[2]["run_id"]  # known from the start, as video's and agent's are
    assert (tmp_path / "doc" / "evals" / "results" / events[0]["run_id"] / "manifest.json").is_file()


def test_the_run_finished_error_carries_the_notes_the_console_shows(capsys):
    """An adapter that failed and then failed to close: the console said both, the NDJSON error only the first."""
    import io

    from assay.core.report.ndjson import NdjsonEvents
    from assay.core.run_events import RunFinished
    from assay.errors import VideoError

    error = VideoError("adapter crashed")
    error.add_note("adapter close failed while handling previous error: broken pipe")
    stream = io.StringIO()
    NdjsonEvents(stream).run_finished(RunFinished("video", "run-1", 2, error=error))
    finished = json.loads(stream.getvalue())
    assert finished["error"] == "adapter crashed\nadapter close failed while handling previous error: broken pipe"
    assert capsys.readouterr().err == f"Error: {finished['error']}\n"
