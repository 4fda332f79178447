"""`assay video seed` end to end: drafts filled from a real adapter over a real video, the case file
rewritten in place keeping every byte that did not change, checkpoints, resume, and SIGKILL survival."""

from __future__ import annotations

import difflib
import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from media import GREEN, RED, make_color_sequence_video
from typer.testing import CliRunner

from assay.cli.video import seed_command

# Frames at 2 fps: red for the first 4 s, green for the next 4 s (8 s in all).
COLOURS = [RED] * 8 + [GREEN] * 8

# Reads the colour of the frame it was given. Steered by adapter.yaml:
#   marker: write this file when the factory runs        calls: append "<pid> <target> <index>" per call
#   fail_file: raise for sample indexes listed in it      wrap: return {"result": {"colour": ...}}
#   edit_case: append a comment to this file on the first call        delay: seconds to sleep per call
ADAPTER = '''
import os, time

def create_evaluator(config):
    settings = dict(config.config)
    if settings.get("marker"):
        with open(settings["marker"], "a") as handle:
            handle.write("constructed\\n")
    return Colours(settings)


class Colours:
    def __init__(self, settings):
        self.settings = settings

    def evaluate(self, sample, target):
        settings = self.settings
        if settings.get("delay"):
            time.sleep(settings["delay"])
        fail_file = settings.get("fail_file")
        if fail_file and os.path.exists(fail_file):
            with open(fail_file) as handle:
                if str(sample.sample_index) in handle.read().split():
                    raise RuntimeError("lens cap on")
        red, green, _ = sample.image.getpixel((4, 4))
        colour = "red" if red > green else "green"
        value = {"result": {"colour": colour}} if settings.get("wrap") else colour
        edit = settings.get("edit_case")
        if edit and not os.path.exists(edit + ".edited"):
            with open(edit, "a") as handle:
                handle.write("# edited by someone else\\n")
            open(edit + ".edited", "w").close()
        if settings.get("calls"):
            # Written once the result exists, just before it is returned: the last moment a
            # kill can make the call happen again.
            with open(settings["calls"], "a") as handle:
                handle.write(f"{os.getpid()} {target.id} {sample.sample_index}\\n")
        return value
'''

# The wrapper the subprocess tests run until `seed` is registered under `assay video`.
CLI_WRAPPER = """
import typer
from assay.cli.video import seed_command
app = typer.Typer(add_completion=False)
@app.callback()
def root() -> None:
    pass
app.command("seed")(seed_command)
app()
"""

app = typer.Typer(add_completion=False)


@app.callback()
def _root() -> None:
    pass


app.command("seed")(seed_command)


@pytest.fixture(scope="module")
def video_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_color_sequence_video(tmp_path_factory.mktemp("video") / "clip.mp4", COLOURS, fps=2, width=16, height=16)


def make_eval(root: Path, video: Path, cases: dict[str, str], adapter: str = ADAPTER, **settings: Any) -> Path:
    eval_dir = root / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    (eval_dir / "cases" / "clip.mp4").write_bytes(video.read_bytes())
    for name, text in cases.items():
        (eval_dir / "cases" / f"{name}.yaml").write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    (eval_dir / "adapter.py").write_text(adapter, encoding="utf-8")
    (eval_dir / "adapter.yaml").write_text(json.dumps(settings), encoding="utf-8")
    return eval_dir


def seed(eval_dir: Path, *args: str) -> Any:
    result = CliRunner().invoke(app, ["seed", "--eval-dir", str(eval_dir), *args], catch_exceptions=False)
    result.flat = re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", result.output))
    # Usage-error panels may break a long path anywhere; compare those without whitespace.
    result.compact = re.sub(r"\s+", "", re.sub(r"[│╭╮╰╯─]", "", result.output))
    return result


def compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


def resume(eval_dir: Path, checkpoint: Path) -> Any:
    return seed(eval_dir, "--resume", str(checkpoint))


def checkpoints(eval_dir: Path) -> list[Path]:
    root = eval_dir / "runs" / "checkpoints"
    return sorted(path for path in root.iterdir() if not path.name.startswith(".")) if root.exists() else []


def manifest_of(checkpoint: Path) -> dict[str, Any]:
    return json.loads((checkpoint / "manifest.json").read_text())


def calls_of(path: Path) -> list[tuple[int, str, int]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        pid, target, index = line.split()
        rows.append((int(pid), target, int(index)))
    return rows


def case_path(eval_dir: Path, name: str = "door") -> Path:
    return eval_dir / "cases" / f"{name}.yaml"


def blocks_of(eval_dir: Path, target: str, name: str = "door") -> list[dict[str, Any]]:
    return yaml.safe_load(case_path(eval_dir, name).read_text())["targets"][target]["samples"]


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """Lines removed from `before` and lines added in `after`."""
    removed, added = [], []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


DOOR = """
# The door camera.
video: clip.mp4
sampling:
  every_s: 1.0
targets:
  light:
    label: Light
    samples:
      - at: [1, 2]
        expect: red
      - range: [5, 7]
  door:
    samples:
      - at: 0.5
"""


# ---------------------------------------------------------------------------------------------
# Filling drafts


def test_drafts_are_filled_and_existing_expectations_are_preserved(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    result = seed(eval_dir, "--verbose")
    assert result.exit_code == 0, result.output
    assert blocks_of(eval_dir, "light") == [
        {"at": [1, 2], "expect": "red"},
        {"range": [5, 7], "expect": "green"},
    ]
    assert blocks_of(eval_dir, "door") == [{"at": 0.5, "expect": "red"}]
    lines = result.output.splitlines()
    assert "    SEEDED Light (light) @5s expect='green'" in lines
    assert "    SEEDED door @0.5s expect='red'" in lines
    resolved = eval_dir.resolve()
    assert lines[-5:-1] == [
        f"Seed: {resolved}",
        "Cases updated: 1",
        "Expectations: 3 proposed, 2 preserved",
        lines[-2],
    ]
    assert re.fullmatch(r"Duration: \d+\.\ds", lines[-2])
    assert lines[-1] == f"Review the proposed expectations with `assay video review --eval-dir {resolved} --case door`."
    [checkpoint] = checkpoints(eval_dir)
    assert checkpoint.name.startswith("seed-")
    assert manifest_of(checkpoint)["status"] == "complete"
    assert manifest_of(checkpoint)["total"] == 3


def test_seeded_lines_appear_only_with_verbose(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    result = seed(eval_dir)
    assert result.exit_code == 0
    assert "SEEDED" not in result.output


def test_journal_records_each_seeded_value_with_its_timing(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    assert seed(eval_dir).exit_code == 0
    [checkpoint] = checkpoints(eval_dir)
    events = [json.loads(line) for line in (checkpoint / "events.jsonl").read_text().splitlines()]
    by_key = {event["key"]: event for event in events}
    key = "door\0light\x002\0" + float.hex(5.0)
    assert by_key[key]["type"] == "seed_result"
    payload = by_key[key]["payload"]
    assert payload["status"] == "success" and payload["expected"] == "green"
    assert payload["evaluation_timing_mode"] == "individual"
    assert payload["evaluation_duration_seconds"] >= 0
    assert len(by_key) == 3


def test_replace_proposes_new_values_for_existing_expectations(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR.replace("expect: red", "expect: blue")})
    result = seed(eval_dir, "--replace")
    assert result.exit_code == 0, result.output
    assert blocks_of(eval_dir, "light")[0] == {"at": [1.0, 2.0], "expect": "red"}
    assert "Expectations: 5 proposed, 0 preserved" in result.output


def test_without_replace_existing_expectations_are_not_asked_for(tmp_path: Path, video_file: Path) -> None:
    calls = tmp_path / "calls.txt"
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR.replace("expect: red", "expect: blue")}, calls=str(calls))
    assert seed(eval_dir).exit_code == 0
    assert blocks_of(eval_dir, "light")[0] == {"at": [1, 2], "expect": "blue"}
    assert sorted(index for _, _, index in calls_of(calls)) == [2, 3, 4]


def test_case_and_target_options_limit_what_is_seeded(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR, "hall": DOOR})
    hall_before = case_path(eval_dir, "hall").read_text()
    result = seed(eval_dir, "--case", "door", "--target", "door")
    assert result.exit_code == 0, result.output
    assert case_path(eval_dir, "hall").read_text() == hall_before
    assert blocks_of(eval_dir, "door") == [{"at": 0.5, "expect": "red"}]
    assert blocks_of(eval_dir, "light")[1] == {"range": [5, 7]}  # still a draft
    assert "Expectations: 1 proposed, 0 preserved" in result.output


def test_review_hint_names_no_case_when_several_were_updated(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR, "hall": DOOR})
    result = seed(eval_dir)
    assert result.exit_code == 0, result.output
    assert "Cases updated: 2" in result.output
    assert result.output.splitlines()[-1] == (
        f"Review the proposed expectations with `assay video review --eval-dir {eval_dir.resolve()}`."
    )


def test_field_extraction_seeds_the_selected_part_of_the_observation(tmp_path: Path, video_file: Path) -> None:
    case = """
    video: clip.mp4
    sample_defaults:
      field: result.colour
    targets:
      light:
        samples:
          - at: 1.0
          - at: 6.0
            field: result
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case}, wrap=True)
    result = seed(eval_dir)
    assert result.exit_code == 0, result.output
    # The inherited field is not written out; an explicit one stays.
    assert blocks_of(eval_dir, "light") == [
        {"at": 1.0, "expect": "red"},
        {"at": 6.0, "field": "result", "expect": {"colour": "green"}},
    ]


def test_a_missing_field_stops_the_seed_and_leaves_the_case_unchanged(tmp_path: Path, video_file: Path) -> None:
    case = """
    video: clip.mp4
    targets:
      light:
        samples:
          - at: 6.0
            field: result.size
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case}, wrap=True)
    before = case_path(eval_dir).read_bytes()
    result = seed(eval_dir)
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "Case door (1 expectations, video=clip.mp4)",
        "  target light: 1 expectations",
        (
            "Could not seed expectations: cannot seed door/light sample 0 at 6s: "
            "adapter observation is missing configured field: result.size"
        )
    ]
    assert case_path(eval_dir).read_bytes() == before
    assert checkpoints(eval_dir) == []  # nothing reusable: the checkpoint is discarded


BATCH_ADAPTER = """
def create_evaluator(config):
    return Batch()


class Batch:
    def evaluate_many(self, samples, target):
        return [("red" if s.image.getpixel((4, 4))[0] > 127 else "green") for s in samples]
"""


def test_a_batch_adapter_seeds_with_amortized_timing(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR}, adapter=BATCH_ADAPTER)
    result = seed(eval_dir)
    assert result.exit_code == 0, result.output
    assert blocks_of(eval_dir, "light")[1] == {"range": [5, 7], "expect": "green"}
    [checkpoint] = checkpoints(eval_dir)
    modes = {json.loads(line)["payload"]["evaluation_timing_mode"] for line in (checkpoint / "events.jsonl").read_text().splitlines()}
    assert modes == {"batch_amortized"}


# ---------------------------------------------------------------------------------------------
# Errors, keep-going, nothing to seed


def test_keep_going_reports_errors_exits_1_and_leaves_the_file_unchanged(tmp_path: Path, video_file: Path) -> None:
    fail_file = tmp_path / "fail.txt"
    fail_file.write_text("3")
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR}, fail_file=str(fail_file))
    before = case_path(eval_dir).read_bytes()
    result = seed(eval_dir, "--keep-going")
    assert result.exit_code == 1, result.output
    assert case_path(eval_dir).read_bytes() == before
    [checkpoint] = checkpoints(eval_dir)
    assert result.output.splitlines() == [
        "Case door (3 expectations, video=clip.mp4)",
        "  target Light (light): 2 expectations",
        "    ERROR Light (light) @6s reason=adapter failed for door/light sample 3 at 6s: lens cap on",
        "  target door: 1 expectations",
        "Seed incomplete: 1 expectation could not be seeded; the case YAML was not changed",
        f"Checkpoint: {checkpoint}",
        f"Resume with `assay video seed --resume {checkpoint}`.",
    ]
    assert manifest_of(checkpoint)["status"] == "in_progress"
    statuses = sorted(json.loads(line)["payload"]["status"] for line in (checkpoint / "events.jsonl").read_text().splitlines())
    assert statuses == ["error", "success", "success"]


def test_fail_fast_exits_2_with_a_resume_hint_once_something_was_checkpointed(tmp_path: Path, video_file: Path) -> None:
    fail_file = tmp_path / "fail.txt"
    fail_file.write_text("3")
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR}, fail_file=str(fail_file))
    before = case_path(eval_dir).read_bytes()
    result = seed(eval_dir)
    assert result.exit_code == 2
    assert case_path(eval_dir).read_bytes() == before
    [checkpoint] = checkpoints(eval_dir)
    assert result.output.splitlines() == [
        "Case door (3 expectations, video=clip.mp4)",
        "  target Light (light): 2 expectations",
        "Could not seed expectations: adapter failed for door/light sample 3 at 6s: lens cap on",
        f"Checkpoint: {checkpoint}",
        f"Resume with `assay video seed --resume {checkpoint}`.",
    ]
    # Errors are journaled only with --keep-going.
    events = (checkpoint / "events.jsonl").read_text()
    assert '"error"' not in events


def test_fail_fast_on_the_first_sample_leaves_no_checkpoint_and_no_hint(tmp_path: Path, video_file: Path) -> None:
    fail_file = tmp_path / "fail.txt"
    case = """
    video: clip.mp4
    targets:
      light:
        samples:
          - at: 5.0
    """
    fail_file.write_text("0")
    eval_dir = make_eval(tmp_path, video_file, {"door": case}, fail_file=str(fail_file))
    result = seed(eval_dir)
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "Case door (1 expectations, video=clip.mp4)",
        "  target light: 1 expectations",
        "Could not seed expectations: adapter failed for door/light sample 0 at 5s: lens cap on",
    ]
    assert checkpoints(eval_dir) == []


def test_nothing_to_seed_exits_0_without_adapter_or_checkpoint(tmp_path: Path, video_file: Path) -> None:
    marker = tmp_path / "constructed.txt"
    case = """
    video: clip.mp4
    targets:
      light:
        samples:
          - at: [1, 2]
            expect: red
          - at: 3
            ignore: blurry
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case}, marker=str(marker))
    result = seed(eval_dir)
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        "",  # GlassKit's blank line before the summary
        f"Seed: {eval_dir.resolve()}",
        "Nothing to seed; 2 existing expectations were preserved.",
    ]
    assert not marker.exists()
    assert not (eval_dir / "runs").exists()


def test_nothing_to_seed_still_removes_what_a_killed_seed_left(tmp_path: Path, video_file: Path) -> None:
    """A seed killed while sealing leaves a temporary manifest; the next seed of a fully seeded
    eval creates no checkpoint, so it must clear the leftover itself."""
    import os
    import time

    case = """
    video: clip.mp4
    targets:
      light:
        samples:
          - at: 1
            expect: red
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case})
    killed = eval_dir / "runs" / "checkpoints" / "seed-20261201T000000Z-0123abcd"
    killed.mkdir(parents=True)
    leftover = killed / ".manifest.json.0123456789ab.tmp"
    leftover.write_text("{")
    past = time.time() - 120
    os.utime(leftover, (past, past))
    assert seed(eval_dir).exit_code == 0
    assert not leftover.exists()


def _stop_after_the_first_case_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or a kill) while the seed replaces its case files: after the first, before the second."""
    from assay.core import fsutil

    real, written = fsutil.write_atomically, []

    def write(path: Path, data: Any, **options: Any) -> None:
        if Path(path).suffix == ".yaml" and written:
            raise KeyboardInterrupt
        real(path, data, **options)
        if Path(path).suffix == ".yaml":
            written.append(path)

    monkeypatch.setattr(fsutil, "write_atomically", write)


def test_a_seed_stopped_between_two_case_files_is_finished_by_resume(tmp_path: Path, video_file: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls.txt"
    eval_dir = make_eval(tmp_path / "stopped", video_file, {"door": DOOR, "hall": DOOR}, calls=str(calls))
    whole = make_eval(tmp_path / "whole", video_file, {"door": DOOR, "hall": DOOR})
    uninterrupted = seed(whole)
    assert uninterrupted.exit_code == 0
    _stop_after_the_first_case_file(monkeypatch)
    stopped = seed(eval_dir)
    monkeypatch.undo()
    assert stopped.exit_code == 130, stopped.output
    assert case_path(eval_dir, "door").read_text() == case_path(whole, "door").read_text()
    assert case_path(eval_dir, "hall").read_text() == textwrap.dedent(DOOR).lstrip("\n")  # not yet
    [checkpoint] = checkpoints(eval_dir)
    asked = len(calls_of(calls))
    resumed = resume(eval_dir, checkpoint)
    assert resumed.exit_code == 0, resumed.output
    assert len(calls_of(calls)) == asked  # nothing asked of the adapter again
    for name in ("door", "hall"):
        assert case_path(eval_dir, name).read_text() == case_path(whole, name).read_text()
    summary = [line for line in uninterrupted.output.splitlines() if line.startswith(("Cases", "Expectations"))]
    assert summary == ["Cases updated: 2", "Expectations: 6 proposed, 4 preserved"]
    assert [line for line in resumed.output.splitlines() if line.startswith(("Cases", "Expectations"))] == summary
    assert manifest_of(checkpoint)["status"] == "complete"
    assert sorted(path.name for path in checkpoint.iterdir()) == ["events.jsonl", "manifest.json"]


def test_a_case_edited_after_the_seed_stopped_between_files_is_not_overwritten(
    tmp_path: Path, video_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR, "hall": DOOR})
    _stop_after_the_first_case_file(monkeypatch)
    assert seed(eval_dir).exit_code == 130
    monkeypatch.undo()
    edited = case_path(eval_dir, "hall").read_text() + "# edited by hand\n"
    case_path(eval_dir, "hall").write_text(edited)
    [checkpoint] = checkpoints(eval_dir)
    resumed = resume(eval_dir, checkpoint)
    assert resumed.exit_code == 2
    assert resumed.output.splitlines()[0] == (
        "Could not seed expectations: case changed while expectations were being seeded; refusing to "
        f"overwrite: {case_path(eval_dir, 'hall').resolve()}"
    )
    assert case_path(eval_dir, "hall").read_text() == edited
    assert manifest_of(checkpoint)["status"] == "in_progress"


def test_ignored_drafts_are_neither_seeded_nor_counted(tmp_path: Path, video_file: Path) -> None:
    case = """
    video: clip.mp4
    targets:
      light:
        samples:
          - at: 3
            ignore: blurry
          - at: 6
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case})
    result = seed(eval_dir)
    assert result.exit_code == 0, result.output
    assert blocks_of(eval_dir, "light") == [{"at": 3, "ignore": "blurry"}, {"at": 6.0, "expect": "green"}]
    assert "Expectations: 1 proposed, 0 preserved" in result.output


def test_adapter_and_adapter_command_together_are_a_usage_error(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    result = seed(eval_dir, "--adapter", "x:y", "--adapter-command", "z")
    assert result.exit_code == 2
    assert "Invalid value for --adapter-command: cannot be used with --adapter" in result.flat


def test_concurrency_below_one_is_a_usage_error(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    result = seed(eval_dir, "--concurrency", "0")
    assert result.exit_code == 2
    assert "Invalid value for '--concurrency': Input should be greater than or equal to 1" in result.flat


def test_a_sample_past_the_video_end_is_refused_before_the_adapter_runs(tmp_path: Path, video_file: Path) -> None:
    marker = tmp_path / "constructed.txt"
    case = """
    video: clip.mp4
    targets:
      light:
        samples:
          - at: 9.5
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case}, marker=str(marker))
    result = seed(eval_dir)
    assert result.exit_code == 2
    assert "Could not seed expectations: door/light sample 0 at 9.5s exceeds video duration 8s" in result.flat
    assert not marker.exists()
    assert checkpoints(eval_dir) == []


# ---------------------------------------------------------------------------------------------
# The rewrite


def test_a_range_whose_values_change_is_split_and_both_parts_keep_the_comment(tmp_path: Path, video_file: Path) -> None:
    case = """
    video: clip.mp4
    sampling:
      every_s: 1.0
    targets:
      light:
        samples:
          # the door opens here
          - range: [2, 6]  # opening
            comment: door
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case})
    assert seed(eval_dir).exit_code == 0
    assert case_path(eval_dir).read_text() == textwrap.dedent(
        """\
        video: clip.mp4
        sampling:
          every_s: 1.0
        targets:
          light:
            samples:
              # the door opens here
              - range: [2.0, 4.0]  # opening
                expect: red
                comment: door
              - range: [4.0, 6.0]
                expect: green
                comment: door
        """
    )


def test_an_at_list_with_mixed_values_becomes_several_at_blocks(tmp_path: Path, video_file: Path) -> None:
    case = """
    video: clip.mp4
    targets:
      light:
        samples:
          - at: [1, 2, 5, 6]
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case})
    assert seed(eval_dir).exit_code == 0
    assert blocks_of(eval_dir, "light") == [
        {"at": [1.0, 2.0], "expect": "red"},
        {"at": [5.0, 6.0], "expect": "green"},
    ]


def test_a_comment_ending_the_line_after_which_expect_goes_is_kept(tmp_path: Path, video_file: Path) -> None:
    case = """
    video: clip.mp4
    targets:
      light:
        samples:
          - at: [1, 2]
            field: result.colour    # white
            comment: porch
          - range: [5, 7]  # the door is open
            every_s: 1.0   # once a second
            # read the colour, not the brightness
            field: result.colour  # green light
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case}, wrap=True)
    before = case_path(eval_dir).read_text()
    result = seed(eval_dir)
    assert result.exit_code == 0, result.output
    after = case_path(eval_dir).read_text()
    # Nothing is removed or moved: each block only gains its expectation, after its `field` line.
    assert after == before.replace(
        "field: result.colour    # white\n", "field: result.colour    # white\n        expect: red\n"
    ).replace("field: result.colour  # green light\n", "field: result.colour  # green light\n        expect: green\n")
    assert blocks_of(eval_dir, "light")[1] == {"range": [5, 7], "every_s": 1.0, "field": "result.colour", "expect": "green"}


def test_replace_changes_only_the_expectation_and_keeps_the_comments_around_it(tmp_path: Path, video_file: Path) -> None:
    case = """
    video: clip.mp4
    targets:
      light:
        samples:
          - at: 1.0
            expect: blue   # guessed
            comment: porch  # by hand
          - at: 6.0
            expect: green  # already right
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case})
    before = case_path(eval_dir).read_text()
    result = seed(eval_dir, "--replace")
    assert result.exit_code == 0, result.output
    removed, added = changed_lines(before, case_path(eval_dir).read_text())
    assert (removed, added) == (["        expect: blue   # guessed"], ["        expect: red   # guessed"])


def test_comments_inside_a_block_that_is_split_move_above_it(tmp_path: Path, video_file: Path) -> None:
    case = """
    video: clip.mp4
    sampling:
      every_s: 1.0
    targets:
      light:
        samples:
          # the door opens here
          - range: [2, 6]  # opening
            # both halves
            comment: door    # white
    """
    eval_dir = make_eval(tmp_path, video_file, {"door": case})
    assert seed(eval_dir).exit_code == 0
    assert case_path(eval_dir).read_text() == textwrap.dedent(
        """\
        video: clip.mp4
        sampling:
          every_s: 1.0
        targets:
          light:
            samples:
              # the door opens here
              # both halves
              # white
              - range: [2.0, 4.0]  # opening
                expect: red
                comment: door
              - range: [4.0, 6.0]
                expect: green
                comment: door
        """
    )


HEAVILY_COMMENTED = """\
# ============================================================
# Kitchen door: the light above it turns green when it opens.
# ============================================================
video: "clip.mp4"   # quoted on purpose
description: 'Door opens; light turns green'  # single quotes
sampling:
  every_s: 1.0   # one per second

sample_defaults:   # shared
  compare: {mode: exact}

targets:
  # --- the light -------------------------------------------
  light:
    label: "Lumière ✓"   # unicode label
    config: {zone: 7, hints: [a, b]}   # flow mapping
    samples:   # comment on the samples key
      # before the kept block
      - at: [1, 2]   # labelled by hand
        expect: 'red'   # quoted value stays quoted
        comment: "hand labelled"
      # before the draft block
      - range: [5, 7]   # to be seeded

      # a blank line above and a comment after the draft
  # --- the door (untouched target) --------------------------
  door:
    samples:
    - at: 0.5   # indentless list
      expect: red   # keep me
thresholds:
  min_pass_rate: 0.9   # gate
# trailing comment
"""


def test_a_heavily_commented_file_changes_only_the_seeded_lines(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": HEAVILY_COMMENTED})
    result = seed(eval_dir)
    assert result.exit_code == 0, result.output
    after = case_path(eval_dir).read_text()
    removed, added = changed_lines(HEAVILY_COMMENTED, after)
    # The draft keeps its text; only its new expectation is added.
    assert removed == []
    assert added == ["        expect: green"]
    assert yaml.safe_load(after)["targets"]["light"]["samples"][1] == {"range": [5.0, 7.0], "expect": "green"}


def test_the_rewrite_keeps_the_file_permissions(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    os.chmod(case_path(eval_dir), 0o640)
    assert seed(eval_dir).exit_code == 0
    assert stat.S_IMODE(case_path(eval_dir).stat().st_mode) == 0o640
    assert [path.name for path in (eval_dir / "cases").iterdir() if path.name.startswith(".")] == []


def test_a_case_edited_during_the_seed_is_not_overwritten(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    path = case_path(eval_dir)
    eval_dir_settings = json.loads((eval_dir / "adapter.yaml").read_text())
    eval_dir_settings["edit_case"] = str(path)
    (eval_dir / "adapter.yaml").write_text(json.dumps(eval_dir_settings))
    result = seed(eval_dir)
    assert result.exit_code == 2
    assert result.flat.startswith("Case door (3 expectations, video=clip.mp4) target Light (light): 2 expectations ")
    assert (
        f"Could not seed expectations: case changed while expectations were being seeded; refusing to overwrite: {path}"
    ) in result.flat
    assert path.read_text().endswith("# edited by someone else\n")
    assert "expect: green" not in path.read_text()
    [checkpoint] = checkpoints(eval_dir)
    assert f"Resume with `assay video seed --resume {checkpoint}`." in result.output


# ---------------------------------------------------------------------------------------------
# Resume


def test_resume_after_errors_asks_again_only_for_the_failed_samples(tmp_path: Path, video_file: Path) -> None:
    calls = tmp_path / "calls.txt"
    fail_file = tmp_path / "fail.txt"
    fail_file.write_text("2 4")
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR}, calls=str(calls), fail_file=str(fail_file))
    assert seed(eval_dir, "--keep-going").exit_code == 1
    assert sorted(index for _, _, index in calls_of(calls)) == [3]  # the calls that succeeded
    fail_file.unlink()
    [checkpoint] = checkpoints(eval_dir)
    result = resume(eval_dir, checkpoint)
    assert result.exit_code == 0, result.output
    assert sorted(index for _, _, index in calls_of(calls)) == [2, 3, 4]
    assert "Expectations: 3 proposed, 2 preserved" in result.output
    assert manifest_of(checkpoint)["status"] == "complete"
    reference = make_eval(tmp_path / "reference", video_file, {"door": DOOR})
    assert seed(reference).exit_code == 0
    assert case_path(eval_dir).read_text() == case_path(reference).read_text()


def test_resume_by_id_after_fail_fast_reuses_the_checkpointed_values(tmp_path: Path, video_file: Path) -> None:
    calls = tmp_path / "calls.txt"
    fail_file = tmp_path / "fail.txt"
    fail_file.write_text("3")
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR}, calls=str(calls), fail_file=str(fail_file))
    assert seed(eval_dir, "--replace").exit_code == 2
    done_before = {index for _, _, index in calls_of(calls)}
    fail_file.unlink()
    [checkpoint] = checkpoints(eval_dir)
    result = resume(eval_dir, Path(checkpoint.name))  # a bare id, found under --eval-dir
    assert result.exit_code == 0, result.output
    indexes = [index for _, _, index in calls_of(calls)]
    assert sorted(indexes) == [0, 1, 2, 3, 4]  # --replace was restored; nothing asked twice
    assert done_before and done_before.isdisjoint(indexes[len(done_before):])


def test_resume_rejects_overrides(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    result = seed(eval_dir, "--resume", "seed-x", "--replace")
    assert result.exit_code == 2
    assert (
        "Invalid value for --resume: restores the original adapter and seed options and cannot be combined "
        "with overrides"
    ) in result.flat


def test_resume_of_a_run_checkpoint_is_refused(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    fake = eval_dir / "runs" / "checkpoints" / "run-1"
    fake.mkdir(parents=True)
    (fake / "manifest.json").write_text(json.dumps({"schema_version": 1, "kind": "run"}))
    result = seed(eval_dir, "--resume", str(fake))
    assert result.exit_code == 2
    assert compact(f"Invalid value for --resume: checkpoint {fake} is for 'run', not 'seed'") in result.compact


def test_resume_of_a_complete_seed_is_refused(tmp_path: Path, video_file: Path) -> None:
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR})
    assert seed(eval_dir).exit_code == 0
    [checkpoint] = checkpoints(eval_dir)
    result = resume(eval_dir, checkpoint)
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == f"Could not seed expectations: checkpoint is already complete: {checkpoint}"


def test_resume_after_the_case_changed_is_refused(tmp_path: Path, video_file: Path) -> None:
    fail_file = tmp_path / "fail.txt"
    fail_file.write_text("4")
    eval_dir = make_eval(tmp_path, video_file, {"door": DOOR}, fail_file=str(fail_file))
    assert seed(eval_dir, "--keep-going").exit_code == 1
    [checkpoint] = checkpoints(eval_dir)
    with case_path(eval_dir).open("a") as handle:
        handle.write("# a later edit\n")
    result = resume(eval_dir, checkpoint)
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == (
        f"Could not seed expectations: checkpoint inputs changed; start a new operation instead of resuming {checkpoint}"
    )


# ---------------------------------------------------------------------------------------------
# Killed at random points


KILL_CASE = """
video: clip.mp4
sampling:
  every_s: 0.5
targets:
  light:
    samples:
      # red, then green
      - range: [0.5, 7.5]  # the whole clip
        comment: light
      - at: 7.75
        expect: green
  door:
    samples:
      - at: [0.25, 3.75, 4.25, 6.0]
"""
KILL_SAMPLES = 14 + 4
KILL_COUNT = 12


def _start(eval_dir: Path, log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, "-c", CLI_WRAPPER, "seed", "--eval-dir", str(eval_dir), *args],
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def _kill_at_random_point(process: subprocess.Popen[bytes], calls: Path, rng: random.Random) -> bool:
    """SIGKILL the process when the call log reaches a random length, or after a random delay.

    Returns False when the process finished first."""
    started = time.monotonic()
    if rng.random() < 0.7:
        asked = calls_of(calls)
        not_yet_asked = KILL_SAMPLES - len({(target, index) for _, target, index in asked})
        target_lines = len(asked) + rng.randint(1, max(1, not_yet_asked))
        deadline = None
    else:
        target_lines = None
        deadline = started + rng.uniform(0.1, 1.5)
    while process.poll() is None:
        if target_lines is not None and len(calls_of(calls)) >= target_lines:
            break
        if deadline is not None and time.monotonic() >= deadline:
            break
        if time.monotonic() - started > 30:
            break
        time.sleep(0.002)
    if process.poll() is not None:
        return False
    process.kill()
    process.wait()
    return True


def _journaled_successes(checkpoint: Path | None) -> set[tuple[str, int]]:
    if checkpoint is None or not (checkpoint / "events.jsonl").exists():
        return set()
    done = set()
    for line in (checkpoint / "events.jsonl").read_bytes().splitlines(keepends=True):
        if not line.endswith(b"\n"):
            continue  # a torn tail was never durable
        event = json.loads(line)
        if event["payload"].get("status") == "success":
            _, target, index, _ = event["key"].split("\0")
            done.add((target, int(index)))
    return done


def _resumable_checkpoint(eval_dir: Path) -> Path | None:
    usable = [path for path in checkpoints(eval_dir) if (path / "manifest.json").exists()]
    assert len(usable) <= 1, usable
    return usable[0] if usable else None


def test_seed_killed_at_random_points_resumes_to_the_uninterrupted_result(tmp_path: Path, video_file: Path) -> None:
    reference = make_eval(tmp_path / "reference", video_file, {"door": KILL_CASE})
    assert seed(reference, "--verbose").exit_code == 0
    expected_text = case_path(reference).read_text()
    original_text = textwrap.dedent(KILL_CASE).lstrip("\n")
    assert expected_text != original_text

    rng = random.Random(20261129)
    log = tmp_path / "seed.log"
    kills = 0
    episode = 0
    while kills < KILL_COUNT:
        episode += 1
        calls = tmp_path / f"calls-{episode}.txt"
        eval_dir = make_eval(tmp_path / f"episode-{episode}", video_file, {"door": KILL_CASE}, calls=str(calls), delay=0.01)
        path = case_path(eval_dir)
        killed_pids: dict[int, set[tuple[str, int]]] = {}  # pid -> what was durable when it died
        for attempt in range(40):
            text = path.read_text()
            assert text in (original_text, expected_text), "an interrupted seed damaged the case file"
            if text == expected_text:
                break
            checkpoint = _resumable_checkpoint(eval_dir)
            args = ("--resume", str(checkpoint)) if checkpoint is not None else ()
            process = _start(eval_dir, log, *args)
            if kills < KILL_COUNT and _kill_at_random_point(process, calls, rng):
                kills += 1
                killed_pids[process.pid] = _journaled_successes(_resumable_checkpoint(eval_dir))
                continue
            assert process.wait(timeout=60) == 0, log.read_text()[-3000:]
        assert path.read_text() == expected_text

        # No completed call was repeated: a sample is asked again only when the process that
        # asked it died before its result was journaled, and never twice by one process.
        by_sample: dict[tuple[str, int], list[int]] = {}
        for pid, target, index in calls_of(calls):
            by_sample.setdefault((target, index), []).append(pid)
        assert len(by_sample) == KILL_SAMPLES
        for sample, pids in by_sample.items():
            assert len(pids) == len(set(pids)), (sample, pids)
            for earlier in pids[:-1]:
                assert earlier in killed_pids, (sample, pids)
                assert sample not in killed_pids[earlier], (sample, pids)
        repeats = sum(len(pids) - 1 for pids in by_sample.values())
        assert repeats <= len(killed_pids)
    assert kills == KILL_COUNT


def test_ctrl_c_saves_progress_and_leaves_the_case_unchanged(tmp_path: Path, video_file: Path) -> None:
    calls = tmp_path / "calls.txt"
    eval_dir = make_eval(tmp_path, video_file, {"door": KILL_CASE}, calls=str(calls), delay=0.05)
    before = case_path(eval_dir).read_bytes()
    log = tmp_path / "seed.log"
    process = _start(eval_dir, log)
    deadline = time.monotonic() + 30
    while len(calls_of(calls)) < 3 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130, log.read_text()
    [checkpoint] = checkpoints(eval_dir)
    assert [line for line in log.read_text().splitlines() if not line.startswith(("Case ", "  target "))] == [
        "Seeding interrupted: progress was saved",
        f"Checkpoint: {checkpoint}",
        f"Resume with `assay video seed --resume {checkpoint}`.",
    ]
    assert case_path(eval_dir).read_bytes() == before
    asked = len(calls_of(calls))
    journaled = len((checkpoint / "events.jsonl").read_text().splitlines())
    # A call that returned just as Ctrl-C arrived may not be journaled; only that one is asked again.
    assert 0 <= asked - journaled <= 1
    assert asked < KILL_SAMPLES
    assert resume(eval_dir, checkpoint).exit_code == 0
    assert len(calls_of(calls)) == KILL_SAMPLES + (asked - journaled)
