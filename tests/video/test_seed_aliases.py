"""`seed` on case files whose targets share samples through YAML anchors and aliases: each target gets its own
answers, as GlassKit's rewrite (which writes the aliases out) leaves them, and a target `--target` left out
keeps what it said."""

from __future__ import annotations

import textwrap

import yaml
from video_evals import invoke, make_eval

# Answers the target's id, so a value that lands in the wrong target shows.
ADAPTER = """
def create_evaluator(config):
    return ById()


class ById:
    def evaluate(self, sample, target):
        return target.id
"""


def _seed(tmp_path, monkeypatch, case: str, *extra: str):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    eval_dir = make_eval(tmp_path, case, adapter=ADAPTER)
    adapter = f"{eval_dir}/adapter.py:create_evaluator"
    result = invoke("video", "seed", "--eval-dir", eval_dir, "--adapter", adapter, *extra)
    text = (eval_dir / "cases" / "clip.yaml").read_text(encoding="utf-8")
    return result, text, yaml.safe_load(text)


def test_seeding_one_target_does_not_write_into_a_target_that_aliases_its_block(tmp_path, monkeypatch):
    case = """
    video: clip.mp4
    targets:
      lamp:
        samples:
          - &schedule
            range: [0, 1]  # the lamp's schedule
      door:
        samples:
          - *schedule
    """
    result, text, data = _seed(tmp_path, monkeypatch, case, "--target", "lamp")
    assert result.exit_code == 0, result.output
    assert data["targets"]["lamp"]["samples"] == [{"range": [0, 1], "expect": "lamp"}]
    assert data["targets"]["door"]["samples"] == [{"range": [0, 1]}]  # still a draft, not the lamp's answers
    assert "# the lamp's schedule" in text


def test_targets_sharing_one_samples_list_are_seeded_each_with_its_own_answers(tmp_path, monkeypatch):
    case = """
    video: clip.mp4
    targets:
      lamp:
        samples: &schedule  # shared
          - range: [0, 1]
      door:
        samples: *schedule
    """
    result, text, data = _seed(tmp_path, monkeypatch, case)
    assert result.exit_code == 0, result.output
    assert "Expectations: 4 proposed, 0 preserved" in result.flat
    assert data["targets"]["lamp"]["samples"] == [{"range": [0, 1], "expect": "lamp"}]
    assert [block["expect"] for block in data["targets"]["door"]["samples"]] == ["door"]
    assert "# shared" in text
    assert "&" not in text and "*" not in text


def test_an_anchor_on_a_samples_list_does_not_break_its_rewrite(tmp_path, monkeypatch):
    # The answers differ inside the block (frame numbers), so the list is rebuilt, starting where the anchor stands.
    case = textwrap.dedent("""
    video: clip.mp4
    targets:
      number:
        samples: &unused
          - range: [0, 0.2]
            every_s: 0.1
    """)
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    eval_dir = make_eval(tmp_path, case)  # the numbered adapter: each sample answers its frame number
    result = invoke("video", "seed", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator")
    assert result.exit_code == 0, result.output
    data = yaml.safe_load((eval_dir / "cases" / "clip.yaml").read_text(encoding="utf-8"))
    assert [block["expect"] for block in data["targets"]["number"]["samples"]] == [0, 1]
