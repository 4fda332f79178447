"""`evaluate_many` that returns text, a mapping or a set is an adapter error, not observations: GlassKit takes
`list()` of it, so a dict's keys or a string's characters were compared whenever their count matched."""

from __future__ import annotations

import pytest
from video_evals import make_eval, run_eval

CASE = """
video: clip.mp4
targets:
  label:
    samples:
      - at: 0.5
        expect: {expect}
"""

ADAPTER = """
def create_evaluator(config):
    return Batch()


class Batch:
    def evaluate_many(self, samples, target):
        return {returned}
"""


@pytest.mark.parametrize(
    ("returned", "expect", "kind"),
    [
        ('{"label": "red"}', "label", "dict"),  # one observation, not wrapped in a list
        ('"x"', "x", "str"),
        ('{"x"}', "x", "set"),
    ],
)
def test_evaluate_many_returning_one_value_not_a_list_is_an_adapter_error(
    tmp_path, monkeypatch, returned, expect, kind
):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    eval_dir = make_eval(tmp_path, CASE.format(expect=expect), adapter=ADAPTER.format(returned=returned))
    result = run_eval(eval_dir)
    assert result.exit_code == 2, result.output
    assert (f"Eval failed: adapter returned a {kind} for 1 samples in target 'label'; evaluate_many must return "
            "a list with one observation per sample, in order") in result.flat


def test_evaluate_many_may_return_any_ordered_iterable(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    adapter = ADAPTER.format(returned="(sample.frame_index for sample in samples)")
    eval_dir = make_eval(tmp_path, CASE.format(expect=5), adapter=adapter)  # frame 5 at 10 fps
    result = run_eval(eval_dir)
    assert result.exit_code == 0, result.output
    assert "1 evaluated, 1 passed" in result.flat
