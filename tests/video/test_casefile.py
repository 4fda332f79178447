"""Rewriting case files: only the rewritten `samples` lists change; everything else keeps its bytes."""

from __future__ import annotations

import datetime
import difflib

import pytest
import yaml

from assay.video.casefile import load_roundtrip, rewrite_target_samples, set_block_expectations

COMMENTED_CASE = """\
# Case: kitchen door — top-of-file comment
# second header line

video: "clips/door.mp4"   # quoted on purpose
description: 'Door opens, light turns green'
sampling:
  every_s: 0.5  # default cadence

sample_defaults:
  field: state

targets:
  # The light above the door.
  light:
    label: Lumière ✓  # unicode label
    samples:  # comment on the samples key
      # before the first block
      - range: [0, 2]  # warm-up
        expect: red
        comment: "door closed"
      # before the second block
      - at: [3, 4]
        expect: {colour: green, "odd key": 1}

    # after the samples, still inside light
    config: {zone: 7}

  # An untouched target keeps everything.
  door:
    samples:
    - at: 1   # inline on untouched
      expect: closed   # another inline
    # between untouched blocks
    - range: [2, 3]
      expect: open
# trailing comment
"""

REWRITTEN_LIGHT = [
    {"range": [0.0, 1.0], "expect": "red", "comment": "door closed"},
    {"range": [1.0, 2.0], "expect": "amber", "comment": "door closed"},
    {"at": [3.0, 4.0], "expect": {"colour": "green", "odd key": 1}},
]


def changed_line_numbers(before: str, after: str) -> list[int]:
    """0-based line numbers of `before` that were replaced or removed, plus insertion points."""
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    changed: list[int] = []
    for tag, first, last, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed.extend(range(first, max(last, first + 1)))
    return changed


def line_range_of(text: str, first_marker: str, last_marker: str) -> range:
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if first_marker in line)
    last = next(i for i, line in enumerate(lines) if last_marker in line)
    return range(first, last + 1)


def test_rewriting_one_target_changes_only_its_samples_lines():
    after = rewrite_target_samples(COMMENTED_CASE, {"light": REWRITTEN_LIGHT})
    samples_lines = line_range_of(COMMENTED_CASE, "- range: [0, 2]", "expect: {colour")
    changed = changed_line_numbers(COMMENTED_CASE, after)
    assert changed, "the rewrite changed nothing"
    assert set(changed) <= set(samples_lines)
    for kept in ("# Case: kitchen door", "# quoted on purpose", "# comment on the samples key",
                 "# before the first block", "# after the samples, still inside light",
                 "# An untouched target keeps everything.", "- at: 1   # inline on untouched",
                 "# between untouched blocks", "# trailing comment", 'video: "clips/door.mp4"',
                 "label: Lumière ✓  # unicode label"):
        assert kept in after


def test_rewritten_case_reparses_to_the_intended_blocks():
    after = rewrite_target_samples(COMMENTED_CASE, {"light": REWRITTEN_LIGHT})
    reread = yaml.safe_load(after)
    assert reread["targets"]["light"]["samples"] == REWRITTEN_LIGHT
    assert reread["targets"]["door"] == yaml.safe_load(COMMENTED_CASE)["targets"]["door"]
    assert reread["targets"]["light"]["config"] == {"zone": 7}


def test_new_blocks_use_flow_lists_for_range_and_at_and_float_reprs():
    after = rewrite_target_samples(COMMENTED_CASE, {"light": REWRITTEN_LIGHT})
    assert "      - range: [1.0, 2.0]\n        expect: amber\n        comment: door closed\n" in after


def test_an_unchanged_block_keeps_its_text_and_comments():
    after = rewrite_target_samples(COMMENTED_CASE, {"light": REWRITTEN_LIGHT})
    assert "      # before the second block\n      - at: [3, 4]\n" in after
    assert '        expect: {colour: green, "odd key": 1}\n' in after


def test_a_split_block_passes_its_inline_comment_to_its_first_part():
    after = rewrite_target_samples(COMMENTED_CASE, {"light": REWRITTEN_LIGHT})
    assert "      - range: [0.0, 1.0]  # warm-up\n" in after
    assert after.count("# warm-up") == 1


def test_rewriting_with_the_same_blocks_changes_nothing():
    same = [
        {"range": [0, 2], "expect": "red", "comment": "door closed"},
        {"at": [3, 4], "expect": {"colour": "green", "odd key": 1}},
    ]
    assert rewrite_target_samples(COMMENTED_CASE, {"light": same}) == COMMENTED_CASE


YAML_11_CASE = """\
video: clip.mp4
defaults: &shared
  zone: yes
  since: 2026-01-01
  octal: 010
targets:
  a:
    config: *shared
    samples:
      - at: 1
        expect: on
  b:
    config:
      <<: *shared
      flag: no
    samples: [{at: 2, expect: 'yes'}]
"""


def test_yaml_11_scalars_dates_and_anchors_elsewhere_stay_byte_identical():
    after = rewrite_target_samples(YAML_11_CASE, {"a": [{"at": 1.0, "expect": "on"}]})
    before_lines, after_lines = YAML_11_CASE.splitlines(), after.splitlines()
    assert before_lines[:9] == after_lines[:9]
    assert before_lines[11:] == after_lines[11:]
    assert after_lines[9:11] == ["      - at: 1.0", "        expect: 'on'"]
    assert yaml.safe_load(after)["targets"]["a"]["samples"] == [{"at": 1.0, "expect": "on"}]


def test_a_flow_samples_list_becomes_a_block_list_and_keeps_its_comment():
    text = "targets:\n  t:\n    samples: []  # nothing yet\n    label: x\n"
    after = rewrite_target_samples(text, {"t": [{"at": [1.0, 2.0], "expect": "yes"}]})
    assert after == "targets:\n  t:\n    samples:  # nothing yet\n      - at: [1.0, 2.0]\n        expect: 'yes'\n    label: x\n"


def test_a_flow_target_mapping_gets_a_flow_samples_list():
    text = "targets:\n  t: {samples: [], label: x}  # flow\n"
    after = rewrite_target_samples(text, {"t": [{"at": 1.0, "expect": "a b"}]})
    assert after == "targets:\n  t: {samples: [{at: 1.0, expect: a b}], label: x}  # flow\n"


def test_an_empty_rewrite_leaves_an_empty_flow_list():
    text = "targets:\n  t:\n    samples:  # keep me\n      - at: 1\n        expect: x\n    label: y\n"
    after = rewrite_target_samples(text, {"t": []})
    assert after == "targets:\n  t:\n    samples: []  # keep me\n    label: y\n"


def test_indentless_sequences_keep_their_indentation():
    text = "targets:\n  t:\n    samples:\n    - at: 1\n      expect: x\n"
    after = rewrite_target_samples(text, {"t": [{"at": 1.0, "expect": "y"}, {"at": 2.0, "expect": "z"}]})
    assert after == "targets:\n  t:\n    samples:\n    - at: 1.0\n      expect: y\n    - at: 2.0\n      expect: z\n"


def test_unicode_and_multiline_values_round_trip():
    text = "targets:\n  t:\n    samples:\n      - at: 1\n        expect: x\n"
    blocks = [{"at": 1.0, "expect": {"text": "café ☕", "lines": ["a", "b"]}, "comment": "first\nsecond"}]
    after = rewrite_target_samples(text, {"t": blocks})
    assert "café ☕" in after
    assert yaml.safe_load(after)["targets"]["t"]["samples"] == blocks


def test_windows_line_endings_are_kept():
    text = "# c\r\ntargets:\r\n  t:\r\n    samples:\r\n      - at: 1\r\n        expect: x\r\n"
    after = rewrite_target_samples(text, {"t": [{"at": 2.0, "expect": "y"}]})
    assert after == "# c\r\ntargets:\r\n  t:\r\n    samples:\r\n      - at: 2.0\r\n        expect: y\r\n"


def test_samples_that_are_an_alias_are_refused():
    text = "base: &s\n  - at: 1\n    expect: x\ntargets:\n  t:\n    samples: *s\n"
    with pytest.raises(ValueError, match="alias"):
        rewrite_target_samples(text, {"t": [{"at": 2.0, "expect": "y"}]})


def test_an_anchor_used_elsewhere_is_not_removed():
    text = "targets:\n  t:\n    samples:\n      - at: 1\n        expect: &e {a: 1}\n  u:\n    samples:\n      - at: 1\n        expect: *e\n"
    with pytest.raises(ValueError, match="anchor &e"):
        rewrite_target_samples(text, {"t": [{"at": 2.0, "expect": "y"}]})


def test_an_unknown_target_is_refused():
    with pytest.raises(ValueError, match="'ghost'"):
        rewrite_target_samples(COMMENTED_CASE, {"ghost": []})


def test_roundtrip_load_reads_scalars_like_pyyaml():
    document = load_roundtrip(YAML_11_CASE + "extra: 1e3\n")
    assert document["defaults"]["zone"] is True
    assert document["defaults"]["since"] == datetime.date(2026, 1, 1)
    assert document["defaults"]["octal"] == 8
    assert document["extra"] == "1e3"
    assert document["targets"]["b"]["config"]["flag"] is False
    assert document["targets"]["a"]["samples"][0]["expect"] is True


def test_roundtrip_load_keeps_comments():
    document = load_roundtrip(COMMENTED_CASE)
    assert list(document) == ["video", "description", "sampling", "sample_defaults", "targets"]
    assert document.ca is not None


def test_roundtrip_load_refuses_duplicate_keys_it_would_read_differently():
    with pytest.raises(ValueError, match="duplicate"):
        load_roundtrip("a: 1\na: 2\n")


IN_PLACE_CASE = """\
targets:
  light:
    samples:
      - at: [1, 2]  # porch
        field: result.colour    # white
        comment: porch
      # the door
      - range: [5, 7]
        expect: blue  # guessed
        # by hand
        comment: door  # open
"""


def test_setting_an_expectation_adds_one_line_and_keeps_every_other_byte():
    after, refused = set_block_expectations(IN_PLACE_CASE, {("light", 1): "red"})
    assert refused == frozenset()
    assert after == IN_PLACE_CASE.replace("# white\n", "# white\n        expect: red\n")


def test_replacing_an_expectation_changes_only_its_value():
    after, refused = set_block_expectations(IN_PLACE_CASE, {("light", 2): {"colour": "green"}})
    assert refused == frozenset()
    assert after == IN_PLACE_CASE.replace("expect: blue  # guessed", "expect:\n          colour: green  # guessed")
    assert set_block_expectations(IN_PLACE_CASE, {("light", 2): "blue"}) == (IN_PLACE_CASE, frozenset())


def test_a_comment_inside_a_replaced_value_moves_above_its_block():
    text = "targets:\n  t:\n    samples:\n      - at: 1\n        expect: [a,  # first\n          b]\n"
    after, _ = set_block_expectations(text, {("t", 1): "c"})
    assert after == "targets:\n  t:\n    samples:\n      # first\n      - at: 1\n        expect: c\n"


def test_blocks_to_rebuild_keep_their_inner_comments_above_them():
    after, refused = set_block_expectations(IN_PLACE_CASE, {}, rebuilding=[("light", 1), ("light", 2)])
    assert refused == frozenset()
    # `# porch` ends a first line, so it stays where the rewrite picks it up.
    assert after == IN_PLACE_CASE.replace("      - at: [1, 2]", "      # white\n      - at: [1, 2]").replace(
        "      # the door\n", "      # the door\n      # guessed\n      # by hand\n      # open\n"
    )


def test_blocks_that_cannot_be_edited_in_place_are_handed_back_for_a_rebuild():
    flow = "targets:\n  t:\n    samples: [{at: 1}]\n"
    assert set_block_expectations(flow, {("t", 1): "x"}) == (flow, frozenset({("t", 1)}))
    anchored = "targets:\n  t:\n    samples:\n      - at: 1\n        expect: &e a\n      - at: 2\n        expect: *e\n"
    assert set_block_expectations(anchored, {("t", 1): "b"}) == (anchored, frozenset({("t", 1)}))
    merged = "targets:\n  t:\n    samples:\n      - <<: {at: 1}\n"
    assert set_block_expectations(merged, {("t", 1): "b", ("ghost", 1): "c"})[1] == {("t", 1), ("ghost", 1)}


def test_an_alias_item_is_handed_back_rather_than_edited_where_its_anchor_is():
    text = "targets:\n  t:\n    samples:\n      - &b\n        at: 1\n  u:\n    samples:\n      - *b\n"
    after, refused = set_block_expectations(text, {("t", 1): "x", ("u", 1): "x"})
    assert refused == frozenset({("u", 1)})
    assert after.count("expect: x") == 1
