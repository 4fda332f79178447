"""Bad input run side by side with GlassKit Eval 0.1.12 (its real package): where assay printed other words,
another layout or another exit code. The expected text is GlassKit's, as it printed it."""

from __future__ import annotations

import pytest
from video_evals import invoke, make_eval, run_eval

CASE = """
video: clip.mp4
targets:
  t:
    samples:
      - at: [0.5, 1.0]
        %s
"""

ANSWERS = '''
def create_evaluator(config):
    return Evaluator(config.config.get("answer", "number"))


class Evaluator:
    def __init__(self, answer):
        self.answer = answer

    def evaluate(self, sample, target):
        if self.answer == "tuple":
            return (sample.frame_index,)
        if self.answer == "nested tuple":
            return {"seen": [1, {"frames": (sample.frame_index,)}]}
        return sample.frame_index

    def close(self):
        if self.answer == "close fails":
            raise RuntimeError("close boom")
'''

FAILING_FACTORY = '''
def create_evaluator(config):
    raise ValueError("bad key")
'''


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))


def _adapter(eval_dir):
    return f"{eval_dir}/adapter.py:create_evaluator"


def _seed(eval_dir, *extra):
    return invoke("video", "seed", "--eval-dir", eval_dir, "--adapter", _adapter(eval_dir), *extra)


@pytest.mark.parametrize("mode", ["''", "'  '"])
def test_a_blank_compare_mode_must_not_be_empty(tmp_path, mode):
    # GlassKit: `...compare.mode: Value error, must not be empty` (assay said `unsupported compare mode ''`).
    eval_dir = make_eval(tmp_path, CASE % f"expect: 5\n        compare: {{mode: {mode}}}", case_name="c", adapter=ANSWERS)
    result = run_eval(eval_dir)
    assert result.exit_code == 2
    assert result.stdout == (
        f"Eval failed: {eval_dir}/cases/c.yaml: invalid schema: targets.t.samples.0.compare.mode: "
        "Value error, must not be empty\n"
    )


@pytest.mark.parametrize("command", ["run", "validate", "seed"])
def test_both_adapter_options_name_adapter_command_unquoted(tmp_path, command):
    # GlassKit: `Invalid value for --adapter-command: cannot be used with --adapter` (no quotes round the option).
    eval_dir = make_eval(tmp_path, CASE % "expect: 5", case_name="c", adapter=ANSWERS)
    result = invoke("video", command, "--eval-dir", eval_dir, "--adapter", _adapter(eval_dir), "--adapter-command", "z")
    assert result.exit_code == 2
    assert "Invalid value for --adapter-command: cannot be used with --adapter" in result.flat
    assert "'--adapter-command'" not in result.flat


@pytest.mark.parametrize(("answer", "where"), [("tuple", "observation"), ("nested tuple", "observation.seen[1].frames")])
def test_a_tuple_observation_is_not_json_like(tmp_path, answer, where):
    # GlassKit takes lists only: a tuple fails the run (exit 2); assay compared it as a list.
    eval_dir = make_eval(tmp_path, CASE % "expect: 5", case_name="c", adapter=ANSWERS,
                         adapter_yaml=f"answer: {answer}\n")
    result = run_eval(eval_dir)
    assert result.exit_code == 2
    assert result.stdout.splitlines() == [
        "Case c (2 samples, video=clip.mp4)",
        "  target t: 2 samples",
        f"Eval failed: adapter returned non-JSON observation for c/t sample 0: {where} must be JSON-like; got tuple",
    ]


def test_a_tuple_observation_is_not_seeded(tmp_path):
    eval_dir = make_eval(tmp_path, CASE % "comment: draft", case_name="c", adapter=ANSWERS, adapter_yaml="answer: tuple\n")
    before = (eval_dir / "cases" / "c.yaml").read_text(encoding="utf-8")
    result = _seed(eval_dir)
    assert result.exit_code == 2
    assert result.stdout.splitlines()[-1] == (
        "Could not seed expectations: adapter returned non-JSON observation for c/t sample 0: "
        "observation must be JSON-like; got tuple"
    )
    assert (eval_dir / "cases" / "c.yaml").read_text(encoding="utf-8") == before


def test_validate_reports_a_close_failure_as_the_adapter_raised_it(tmp_path):
    # GlassKit: `- adapter validation failed: close boom` (assay added a run's `adapter close failed: `).
    eval_dir = make_eval(tmp_path, CASE % "expect: 5", case_name="c", adapter=ANSWERS, adapter_yaml="answer: close fails\n")
    result = invoke("video", "validate", "--eval-dir", eval_dir, "--adapter", _adapter(eval_dir))
    assert result.exit_code == 1
    assert result.stdout == "Validation failed\n- adapter validation failed: close boom\n"


def test_seed_loads_the_adapter_before_any_heading(tmp_path):
    # GlassKit builds the seed's one evaluator first: a factory that fails is all the seed prints.
    eval_dir = make_eval(tmp_path, CASE % "comment: draft", case_name="c", adapter=FAILING_FACTORY)
    result = _seed(eval_dir)
    assert result.exit_code == 2
    assert result.stdout == f"Could not seed expectations: adapter factory '{_adapter(eval_dir)}' failed: bad key\n"


def test_a_blank_line_comes_before_the_eval_summary(tmp_path):
    eval_dir = make_eval(tmp_path, CASE % "expect: 5", case_name="c", adapter=ANSWERS)
    result = run_eval(eval_dir)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[:5] == [
        "Case c (2 samples, video=clip.mp4)",
        "  target t: 2 samples",
        "    FAILED t @1s expected=5 observed=10 reason=numeric difference 5 exceeds tolerance 0",
        "",
        f"Eval: {eval_dir}",
    ]
    assert lines.count("") == 1


def test_a_blank_line_comes_before_each_trial_and_the_summary(tmp_path):
    eval_dir = make_eval(tmp_path, CASE % "expect: 5", case_name="c", adapter=ANSWERS)
    result = run_eval(eval_dir, "--repeat", "2")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[:11] == [
        "",
        "Trial 1/2",
        "Case c (2 samples, video=clip.mp4)",
        "  target t: 2 samples",
        "    [1/2] FAILED t @1s expected=5 observed=10 reason=numeric difference 5 exceeds tolerance 0",
        "",
        "Trial 2/2",
        "Case c (2 samples, video=clip.mp4)",
        "  target t: 2 samples",
        "    [2/2] FAILED t @1s expected=5 observed=10 reason=numeric difference 5 exceeds tolerance 0",
        "",
    ]
    assert lines[11] == f"Eval: {eval_dir}"
    assert lines.count("") == 3


def test_a_blank_line_comes_before_the_seed_summary(tmp_path):
    eval_dir = make_eval(tmp_path, CASE % "comment: draft", case_name="c", adapter=ANSWERS)
    result = _seed(eval_dir)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:4] == [
        "Case c (2 expectations, video=clip.mp4)",
        "  target t: 2 expectations",
        "",
        f"Seed: {eval_dir}",
    ]
    again = _seed(eval_dir)
    assert again.exit_code == 0
    assert again.stdout == f"\nSeed: {eval_dir}\nNothing to seed; 2 existing expectations were preserved.\n"
