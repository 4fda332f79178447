"""Reading JSON out of model text: fences, surrounding prose, and the failures that must stay failures."""

from __future__ import annotations

import pytest

from assay.judge import JudgeError, parse_json_output


def test_bare_json_object_is_parsed():
    assert parse_json_output('  {"a": 1}  ') == {"a": 1}


@pytest.mark.parametrize(
    "text",
    ['```json\n{"a": 1}\n```', '```JSON\n{"a": 1}\n```', '```\n{"a": 1}\n```', '```json{"a": 1}```'],
)
def test_leading_and_trailing_fences_are_removed(text):
    assert parse_json_output(text) == {"a": 1}


def test_fenced_block_inside_prose_is_found():
    text = 'Here is my verdict:\n```json\n{"winner": "tie"}\n```\nLet me know if you need more.'
    assert parse_json_output(text) == {"winner": "tie"}


def test_object_surrounded_by_prose_is_found():
    assert parse_json_output('Sure! {"ok": true, "n": [1, 2]} Hope this helps.') == {"ok": True, "n": [1, 2]}


def test_prose_with_stray_braces_after_the_object_still_yields_the_object():
    text = 'Result: {"ok": true} (note: {not json} here)'
    assert parse_json_output(text) == {"ok": True}


@pytest.mark.parametrize("text", ["", "   \n", None])
def test_empty_output_is_an_error(text):
    with pytest.raises(JudgeError, match="^model output was empty$"):
        parse_json_output(text)


@pytest.mark.parametrize("text", ["I cannot answer that.", "{not json}", '{"a": NaN}'])
def test_text_without_json_is_an_error(text):
    with pytest.raises(JudgeError, match="^model output was not valid JSON$"):
        parse_json_output(text)
