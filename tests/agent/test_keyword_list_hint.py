"""A keyword like none of a callable's (`event_match("message", status="done")`) got Python's bare "unexpected
keyword argument 'status'", with no hint, as no keyword is near it: the message now lists the keywords there are.
A near one is still named alone."""

from __future__ import annotations

import pytest

from assay.agent import define_eval, event_match, tool_match
from assay.agent.misspelt import keyword_meant


def _hint(call) -> str:
    with pytest.raises(TypeError) as raised:
        call()
    return keyword_meant(raised.value)


def test_a_keyword_like_none_lists_the_keywords_there_are():
    assert _hint(lambda: event_match("message", status="done")) == "; its keywords are type, role, text, tool"
    assert _hint(lambda: tool_match("get_weather", colour="red")) == "; its keywords are name, input, output, status"


def test_a_near_keyword_is_still_named_alone():
    assert _hint(lambda: tool_match("get_weather", stauts="completed")) == "; did you mean 'status'?"


def test_an_eval_id_keyword_still_says_where_ids_come_from():
    async def body(t):
        pass

    assert _hint(lambda: define_eval(body, id="refund")).startswith("; an eval's id is not given but comes from its file")
