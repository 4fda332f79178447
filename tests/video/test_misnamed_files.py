"""GlassKit reads `config.yaml`, `adapter.yaml` and `cases/*.yaml` by their exact names and skips any other file
without a word. A file one typo (or one letter case) away from a missing one is named on stderr: a misspelt
config.yaml would otherwise drop the eval's gates, and a run that must fail would exit 0."""

from __future__ import annotations

import shutil

from video_evals import make_eval, run_eval

CASE = """
video: clip.mp4
targets:
  number:
    samples:
      - at: [0.0, 0.5]
        expect: 0
"""

GATE = """
thresholds:
  min_pass_rate: 1.0
"""


def test_a_misspelt_config_yaml_is_named_so_its_lost_gates_show(tmp_path):
    eval_dir = make_eval(tmp_path, CASE, config_yaml=GATE)  # the sample at 0.5 s fails
    assert run_eval(eval_dir).exit_code == 1
    for wrong in ("confg.yaml", "config.YAML"):
        (eval_dir / "config.yaml").rename(eval_dir / wrong)
        result = run_eval(eval_dir)
        assert result.exit_code == 0  # as GlassKit: the file is not read, so no gate fails ...
        assert (  # ... but the user is told
            f"Warning: {eval_dir / wrong} is not read: the eval config must be named config.yaml or config.yml, "
            "so its thresholds and video stores do not apply; rename it"
        ) in result.flat
        (eval_dir / wrong).rename(eval_dir / "config.yaml")


def test_a_misspelt_adapter_yaml_is_named_unless_another_file_is_given(tmp_path):
    eval_dir = make_eval(tmp_path, CASE, adapter_yaml="marker: 1\n")
    (eval_dir / "adapter.yaml").rename(eval_dir / "adaptor.yaml")
    result = run_eval(eval_dir)
    assert (
        f"Warning: {eval_dir / 'adaptor.yaml'} is not read: the adapter config must be named adapter.yaml or "
        f"adapter.yml, so the adapter gets {{}}; rename it, or pass --adapter-config {eval_dir / 'adaptor.yaml'}"
    ) in result.flat
    assert result.flat.count("Warning") == 1  # adapter.py beside it is no misspelt adapter.yml
    assert "Warning" not in run_eval(eval_dir, "--adapter-config", str(eval_dir / "adaptor.yaml")).output


def test_a_case_file_with_an_upper_case_suffix_is_named(tmp_path):
    eval_dir = make_eval(tmp_path, CASE)
    shutil.copy(eval_dir / "cases" / "clip.yaml", eval_dir / "cases" / "second.YML")
    result = run_eval(eval_dir)
    assert (
        f"Warning: {eval_dir / 'cases' / 'second.YML'} is not read: a case file's name ends in .yaml or .yml "
        "(lower case); rename it to second.yaml"
    ) in result.flat


def test_files_of_other_names_are_left_alone(tmp_path):
    eval_dir = make_eval(tmp_path, CASE, config_yaml=GATE, adapter_yaml="marker: 1\n")
    for name in ("settings.yaml", "notes.txt", "config.yaml~", ".config.yml"):
        (eval_dir / name).write_text("x: 1\n")
    (eval_dir / "cases" / "clip.yaml~").write_text("x: 1\n")
    (eval_dir / "cases" / "readme.md").write_text("x\n")
    assert "Warning" not in run_eval(eval_dir).output
