"""Spec audit (spec/video.md), second half, run end to end: behaviours found to differ from GlassKit Eval 0.1.12."""

from __future__ import annotations

import re

import pytest
from video_evals import invoke, make_eval

# Answers the frame number; fails the targets whose config says so.
SEED_ADAPTER = '''
def create_evaluator(config):
    return Evaluator()


class Evaluator:
    def evaluate(self, sample, target):
        if target.config.get("fail"):
            raise RuntimeError(f"boom {target.id}")
        return {"n": sample.frame_index}
'''

# Target `late` is declared first but samples later in the video than `early`: assay asks the adapter
# in time order across targets, GlassKit target by target.
DRAFTS = """
video: clip.mp4
sample_defaults:
  field: n
targets:
  late:
    config: {fail: %s}
    samples:
      - at: [2.0, 1.0]
  early:
    samples:
      - at: 0.5
        field: %s
"""


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))


def _seed(eval_dir, *extra):
    return invoke("video", "seed", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator", *extra)


def _indented(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("    ")]


@pytest.mark.parametrize("concurrency", ["1", "3"])
def test_seed_verbose_lines_come_target_by_target_in_declaration_order(tmp_path, concurrency):
    # §18 step 5: seed evaluates per case/target exactly like run, so its SEEDED lines come as GlassKit
    # asks: every sample of `late` (declared first), then `early`, though `early`'s frame comes first.
    eval_dir = make_eval(tmp_path, DRAFTS % ("false", "n"), case_name="c", adapter=SEED_ADAPTER)
    result = _seed(eval_dir, "--verbose", "--concurrency", concurrency)
    assert result.exit_code == 0, result.output
    lines = _indented(result.output)
    assert sorted(lines[:2]) == ["    SEEDED late @1s expect=10", "    SEEDED late @2s expect=20"]
    assert lines[2:] == ["    SEEDED early @0.5s expect=5"]


def test_seed_keep_going_error_lines_come_target_by_target(tmp_path):
    eval_dir = make_eval(tmp_path, DRAFTS % ("true", "missing"), case_name="c", adapter=SEED_ADAPTER)
    result = _seed(eval_dir, "--keep-going")
    assert result.exit_code == 1, result.output
    assert _indented(result.output) == [
        "    ERROR late @1s reason=adapter failed for c/late sample 0 at 1s: boom late",
        "    ERROR late @2s reason=adapter failed for c/late sample 1 at 2s: boom late",
        "    ERROR early @0.5s reason=cannot seed c/early sample 2 at 0.5s: "
        "adapter observation is missing configured field: missing",
    ]
    assert "Seed incomplete: 3 expectations could not be seeded; the case YAML was not changed" in result.output


NO_USER = "~no-such-user-assay-audit"


@pytest.mark.parametrize("command", ["run", "list-samples", "seed", "validate"])
def test_eval_dir_under_a_tilde_naming_no_user_is_an_error_line_not_a_traceback(tmp_path, monkeypatch, command):
    # Path.expanduser raises RuntimeError for `~name` when no user has that name (GlassKit dies with a
    # traceback); assay leaves the path as written, as a shell does, and says the folder is missing.
    monkeypatch.chdir(tmp_path)
    result = invoke("video", command, "--eval-dir", f"{NO_USER}/eval")
    assert result.exit_code in (1, 2)
    assert f"eval directory does not exist: {tmp_path / NO_USER / 'eval'}" in result.flat


def test_export_frames_output_dir_under_a_tilde_naming_no_user_is_a_relative_folder(tmp_path, monkeypatch):
    eval_dir = make_eval(tmp_path, "video: clip.mp4\ntargets:\n  t:\n    samples:\n      - at: 1\n        expect: 1\n")
    monkeypatch.chdir(tmp_path)
    result = invoke("video", "export-frames", "--eval-dir", eval_dir, "--case", "clip", "--at", "1",
                    "--output-dir", f"{NO_USER}/frames")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [str(tmp_path / NO_USER / "frames" / "at-1.0s.png")]


# --- checked against GlassKit Eval 0.1.12 itself (its published wheel, run side by side) -------------

# Answers the frame number; in trial 2 (the factory counts its calls) fails sample 3.
TRIAL_ADAPTER = '''
CALLS = []


def create_evaluator(config):
    import os
    path = os.environ["TRIALS_FILE"]
    trial = int(open(path).read()) + 1 if os.path.exists(path) else 1
    open(path, "w").write(str(trial))
    return Evaluator(trial)


class Evaluator:
    def __init__(self, trial):
        self.trial = trial

    def evaluate(self, sample, target):
        if self.trial == 2 and sample.sample_index == 3:
            raise RuntimeError("boom")
        return sample.frame_index
'''

CONSOLE_CASE = """
video: clip.mp4
targets:
  num:
    label: Number
    samples:
      - at: 2.5
        ignore: lens flare
      - at: [0.5, 1.0]
        expect: 5
  other:
    samples:
      - at: 0.2
        expect: 2
"""


@pytest.fixture
def trials_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TRIALS_FILE", str(tmp_path / "trials.txt"))


def _run(eval_dir, *extra):
    return invoke("video", "run", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator", *extra)


def test_result_lines_ignored_included_have_one_shape_and_ignored_come_after_the_targets_evaluations(tmp_path, trials_file):
    # §15: `IGNORED ...` has the FAILED line's shape; GlassKit records a target's ignored samples after
    # its evaluations, so their lines follow the target's other lines.
    eval_dir = make_eval(tmp_path, CONSOLE_CASE, case_name="c", adapter=TRIAL_ADAPTER)
    result = _run(eval_dir)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:6] == [
        "Case c (4 samples, video=clip.mp4)",
        "  target Number (num): 3 samples",
        "    FAILED Number (num) @1s expected=5 observed=10 reason=numeric difference 5 exceeds tolerance 0",
        "    IGNORED Number (num) @2.5s expected=None observed=None reason=lens flare",
        "  target other: 1 samples",
        "",  # GlassKit's blank line before the summary
    ]
    assert lines[6] == f"Eval: {eval_dir.resolve()}"


def test_a_run_that_timed_nothing_has_no_timing_column_in_by_target(tmp_path):
    eval_dir = make_eval(tmp_path, "video: clip.mp4\ntargets:\n  t:\n    samples:\n      - at: 1\n        ignore: x\n")
    result = _run(eval_dir)
    assert result.exit_code == 0, result.output
    assert "Ignored" in result.flat
    assert "Avg latency" not in result.flat and "n/a" not in result.flat


def test_repeated_run_console_as_glasskit_prints_it(tmp_path, trials_file):
    eval_dir = make_eval(tmp_path, CONSOLE_CASE, case_name="c", adapter=TRIAL_ADAPTER)
    result = _run(eval_dir, "--repeat", "2", "--keep-going")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[:7] == [
        "",  # GlassKit's blank line before each trial's heading
        "Trial 1/2",
        "Case c (4 samples, video=clip.mp4)",  # headings carry no [i/N]; result lines do, after the indent
        "  target Number (num): 3 samples",
        "    [1/2] FAILED Number (num) @1s expected=5 observed=10 reason=numeric difference 5 exceeds tolerance 0",
        "    [1/2] IGNORED Number (num) @2.5s expected=None observed=None reason=lens flare",
        "  target other: 1 samples",
    ]
    assert "    [2/2] ERROR other @0.2s expected=2 observed=None reason=adapter_error: adapter failed for c/other " \
           "sample 3 at 0.2s: boom" in lines
    assert "Attempts: 6 evaluated, 3 passed, 2 failed, 1 errors" in lines  # no pass rate on this line
    assert any(line.startswith("Avg evaluation latency: ") and line.endswith("/attempt") for line in lines)
    assert any(line.startswith("Throughput: ") and line.endswith(" attempts/s") for line in lines)
    flat = re.sub(r"\s+", " ", re.sub(r"[│┃╭╮╰╯─━┏┓┗┛┡┩└┘┳┻╇┴┬┼╋]", " ", result.output))
    assert "By trial Trial Pass rate Passed Failed Errors Gates Duration 1 66.7% 2 1 0 passed" in flat
    assert "2 33.3% 1 1 1 failed" in flat
    assert "By target Target Pass min / mean / max Samples Pass all Fail all Flaky Errors" in flat
    assert "Number (num) 50.0/50.0/50.0% 2 1 1 0 0" in flat
    assert "other 0.0/50.0/100.0% 1 0 0 1 1" in flat
    assert "c other 0.2s P/E flaky, adapter/comparison errors" in flat  # every finding, joined
    assert "1 adapter error can be retried without rerunning completed samples." in lines  # singular


def test_list_samples_shows_none_for_an_ignored_block_without_expect(tmp_path):
    eval_dir = make_eval(tmp_path, CONSOLE_CASE, case_name="c", adapter=TRIAL_ADAPTER)
    result = invoke("video", "list-samples", "--eval-dir", eval_dir)
    assert result.exit_code == 0, result.output
    assert "c Number (num) 2.5s None lens flare at" in re.sub(r"\s+", " ", result.output.replace("│", " "))


def test_seed_prints_case_and_target_headings_and_a_singular_incomplete_line(tmp_path):
    eval_dir = make_eval(tmp_path, DRAFTS % ("false", "missing"), case_name="c", adapter=SEED_ADAPTER)
    result = _seed(eval_dir, "--keep-going")
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == [
        "Case c (3 expectations, video=clip.mp4)",
        "  target late: 2 expectations",
        "  target early: 1 expectations",
        "    ERROR early @0.5s reason=cannot seed c/early sample 2 at 0.5s: "
        "adapter observation is missing configured field: missing",
        "Seed incomplete: 1 expectation could not be seeded; the case YAML was not changed",
        *result.output.splitlines()[5:7],  # the resume hint (two values were seeded)
    ]
    assert result.output.splitlines()[5].startswith("Checkpoint: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--at", "1"], "Invalid value for --at: requires --case"),
        (["--case", "c", "--at", "1", "--until", "2"], "Invalid value for --at: cannot be combined with --from or --until"),
        (["--case", "c", "--from", "inf"], "Invalid value for --from: must be a finite, nonnegative number"),
        (["--case", "c", "--from", "2", "--until", "1"], "Invalid value for --until: must be greater than --from"),
        (["--case", "c", "--at", "nan"], "Invalid value for '--at': Input should be greater than or equal to 0"),
        (["--case", "c", "--until", "-1"], "Invalid value for '--until': Input should be greater than or equal to 0"),
    ],
)
@pytest.mark.parametrize("command", ["run", "list-samples"])
def test_time_option_errors_read_as_glasskit_words_them(tmp_path, command, args, message):
    result = invoke("video", command, "--eval-dir", tmp_path, *args)
    assert result.exit_code == 2
    assert message in result.flat


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["export-frames", "--case", "c", "--at", "nan"], "Invalid value for '--at': Input should be greater than or equal to 0"),
        (["export-frames", "--case", "c", "--at", "-2"], "Invalid value for '--at': Input should be greater than or equal to 0"),
        (["review", "--time", "1", "--no-open"], "Invalid value for --time: --time requires --case"),
        (["review", "--target", "t", "--no-open"], "Invalid value for --target: --target requires --case"),
        (["review", "--case", "c", "--time", "-1", "--no-open"], "Invalid value for --time: must be a finite, nonnegative number"),
    ],
)
def test_export_and_review_option_errors_read_as_glasskit_words_them(tmp_path, args, message):
    result = invoke("video", *args[:1], "--eval-dir", tmp_path, *args[1:])
    assert result.exit_code == 2
    assert message in result.flat
