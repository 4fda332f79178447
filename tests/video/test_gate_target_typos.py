"""A `thresholds.per_target` id that names no target keeps GlassKit's failing gate (`0.0% pass rate`), and a
warning on stderr says why: no target has that name, and which one was likely meant."""

from __future__ import annotations

from video_evals import make_eval, run_eval

CASE = """
video: clip.mp4
targets:
  number:
    samples:
      - at: 0.0
        expect: 0
thresholds:
  per_target:
    {case_id}:
      min_pass_rate: 1.0
"""

CONFIG = """
thresholds:
  per_target:
    {config_id}:
      min_pass_rate: 1.0
"""


def typo_eval(tmp_path, case_id="number", config_id="number"):
    return make_eval(tmp_path, CASE.format(case_id=case_id), config_yaml=CONFIG.format(config_id=config_id))


def test_a_misspelt_case_gate_target_is_named_with_the_one_meant(tmp_path):
    eval_dir = typo_eval(tmp_path, case_id="numbr")
    result = run_eval(eval_dir)
    assert result.exit_code == 1  # GlassKit's gate stays, and fails
    assert "clip_numbr_min_pass_rate │ 0.0% pass rate" in result.output
    assert (
        f"Warning: {eval_dir / 'cases' / 'clip.yaml'}: thresholds.per_target.numbr names no target of this case "
        "(did you mean 'number'?); its gate clip_numbr_min_pass_rate fails with no results (targets: 'number')"
    ) in result.flat


def test_a_misspelt_eval_gate_target_is_named_in_config_yaml(tmp_path):
    eval_dir = typo_eval(tmp_path, config_id="numbr")
    result = run_eval(eval_dir)
    assert result.exit_code == 1
    assert (
        f"Warning: {eval_dir / 'config.yaml'}: thresholds.per_target.numbr names no target of any case "
        "(did you mean 'number'?); its gate eval_numbr_min_pass_rate fails with no results (targets: 'number')"
    ) in result.flat
    assert result.flat.count("Warning:") == 1


def test_no_warning_for_declared_targets_or_gates_a_filter_skips(tmp_path):
    eval_dir = typo_eval(tmp_path)
    assert "Warning" not in run_eval(eval_dir).output
    typo = typo_eval(tmp_path / "typo", case_id="numbr", config_id="numbr")
    # --target skips the case gate; --case may leave out the case that declares config.yaml's id
    assert "Warning" not in run_eval(typo, "--case", "clip", "--target", "number").output
