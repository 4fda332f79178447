import asyncio
import re

import pytest
from pydantic import BaseModel

from assay.agent.evidence import ToolOccurrence
from assay.agent.matchers import (
    MATCHED, MISMATCHED, UNAVAILABLE, Unavailable, and_, equals, event_match, excludes, includes, is_defined, is_false,
    is_true, json_match, matches, not_, or_, pattern, satisfies, similarity, tool_match,
)
from assay.agent.model import MISSING, Message, OperationStarted, ToolOperation


def status(matcher, value):
    return matcher.evaluate(value).status


class City(BaseModel):
    name: str
    population: int


def test_equals_is_deep_and_keeps_booleans_apart_from_numbers():
    assert status(equals({"a": [1, 2]}), {"a": (1, 2)}) == MATCHED
    assert status(equals(1), True) == MISMATCHED
    outcome = equals({"a": 1}).evaluate({"a": 2})
    assert outcome.reason == 'expected {"a": 1}, got {"a": 2}'


def test_equals_compares_a_pydantic_value_with_plain_json():
    assert status(equals({"name": "Oslo", "population": 700000}), City(name="Oslo", population=700000)) == MATCHED
    assert status(equals(City(name="Oslo", population=1)), City(name="Oslo", population=1)) == MATCHED


def test_text_matchers():
    assert status(includes("lo w"), "hello world") == MATCHED
    assert status(includes("x"), "hello") == MISMATCHED
    assert status(includes("x"), None) == MISMATCHED
    assert status(excludes("secret"), "all public") == MATCHED
    assert status(excludes("secret"), "a secret") == MISMATCHED
    assert status(pattern(r"\d{3}"), "call 555") == MATCHED
    assert status(pattern(re.compile("^no")), "yes") == MISMATCHED


def test_strip_comments_ignores_code_comments():
    code = "x = 1  # TODO remove\n/* TODO */ y = 2 // TODO"
    assert status(excludes("TODO", strip_comments=True), code) == MATCHED
    assert status(excludes("TODO"), code) == MISMATCHED


def test_every_matcher_reads_an_unobserved_value_as_unavailable():
    gone = Unavailable("messages evidence is partial")
    for matcher in (equals(1), includes("a"), pattern("a"), json_match({}), matches({"type": "object"}),
                    is_defined(), is_true(), satisfies("anything", lambda value: True), similarity("a")):
        assert status(matcher, gone) == UNAVAILABLE, matcher
        assert status(matcher, MISSING) == UNAVAILABLE, matcher


def test_json_match_is_partial_on_objects_and_positional_on_arrays_with_regex_and_predicates():
    actual = {"city": "Brooklyn", "days": [1, 2], "extra": True, "temp": 21}
    assert status(json_match({"city": re.compile("^Brook"), "days": [1, 2], "temp": lambda t: t > 20}), actual) == MATCHED
    assert status(json_match({"days": [2, 1]}), actual) == MISMATCHED
    assert status(json_match({"days": [1]}), actual) == MISMATCHED
    assert json_match({"city": "Paris"}).evaluate(actual).reason == '$.city: expected "Paris", got "Brooklyn"'
    assert json_match({"zip": "11201"}).evaluate(actual).reason == "$.zip: missing"
    assert status(json_match({"city": includes("lyn")}), actual) == MATCHED


def test_matches_validates_pydantic_models_type_adapters_and_json_schema():
    from pydantic import TypeAdapter

    assert status(matches(City), {"name": "Oslo", "population": 1}) == MATCHED
    outcome = matches(City).evaluate({"name": "Oslo", "population": "many"})
    assert outcome.status == MISMATCHED and "$.population" in outcome.reason
    assert status(matches(TypeAdapter(list[int])), [1, 2]) == MATCHED
    schema = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
    assert status(matches(schema), {"ok": True}) == MATCHED
    assert "'ok' is a required property" in matches(schema).evaluate({}).reason
    with pytest.raises(TypeError, match="not a valid JSON Schema"):
        matches({"type": "nonsense"})


def test_and_or_not_are_three_valued():
    gone = Unavailable("no evidence")
    assert status(and_(includes("a"), includes("b")), "ab") == MATCHED
    assert status(and_(includes("a"), includes("z")), "ab") == MISMATCHED
    assert status(or_(includes("z"), includes("b")), "ab") == MATCHED
    assert status(or_(includes("z"), includes("y")), "ab") == MISMATCHED
    assert status(not_(includes("z")), "ab") == MATCHED
    assert status(not_(includes("a")), "ab") == MISMATCHED
    assert status(not_(includes("a")), gone) == UNAVAILABLE
    # or is unavailable only when nothing matched and some child was unavailable
    mixed = or_(satisfies("never", lambda v: False), satisfies("unknown", lambda v: Unavailable("x")))
    assert status(or_(includes("a"), equals(gone)), "a") == MATCHED
    assert status(and_(includes("a"), satisfies("gone", lambda v: False)), "a") == MISMATCHED
    assert mixed.evaluate("v").status == MISMATCHED  # a falsy Unavailable return is still "not satisfied"


def test_satisfies_accepts_async_predicates_and_combinators_await_them():
    async def slow_positive(value):
        await asyncio.sleep(0)
        return value > 0

    pending = and_(satisfies("positive", slow_positive), equals(3)).evaluate(3)
    assert asyncio.run(pending).status == MATCHED
    assert asyncio.run(satisfies("positive", slow_positive).evaluate(-1)).status == MISMATCHED


def test_refinements_and_similarity():
    assert status(is_defined(), 0) == MATCHED
    assert status(is_defined(), None) == MISMATCHED
    assert status(is_true(), True) == MATCHED
    assert status(is_true(), 1) == MISMATCHED
    assert status(is_false(), False) == MATCHED
    assert similarity("kitten").evaluate("sitting").score == pytest.approx(1 - 3 / 7)
    assert similarity("same").evaluate("same").score == 1.0


def occurrence(name="get_weather", input=None, status="completed", output=MISSING):
    return ToolOccurrence("0.1.0", 0, 1, 0, "c1", "tool", name, "unknown", input or {}, status, output)


def test_tool_match_ands_name_input_output_and_status_on_one_occurrence():
    call = occurrence(input={"city": "Paris"}, output={"temp": 21})
    assert status(tool_match("get_weather", input={"city": "Paris"}, output={"temp": 21}, status="completed"), call) == MATCHED
    assert status(tool_match("get_weather", input={"city": "Rome"}), call) == MISMATCHED
    assert status(tool_match("search"), call) == MISMATCHED
    assert status(tool_match(status="failed"), call) == MISMATCHED


def test_tool_match_on_a_pending_call_cannot_decide_status_or_output():
    pending = occurrence(status="pending")
    assert status(tool_match("get_weather"), pending) == MATCHED
    assert status(tool_match("get_weather", status="completed"), pending) == UNAVAILABLE
    assert status(tool_match("get_weather", output={"temp": 1}), pending) == UNAVAILABLE
    no_output = occurrence(status="completed", output=MISSING)
    assert status(tool_match("get_weather", output={}), no_output) == UNAVAILABLE


def test_tool_match_matches_canonical_names():
    shell_call = ToolOccurrence("0.1.0", 0, 1, 0, "c1", "tool", "Bash", "shell", {"command": "ls"})
    assert status(tool_match("shell"), shell_call) == MATCHED
    assert status(tool_match("Bash"), shell_call) == MATCHED


def test_event_match_selects_messages_and_operations_only():
    assert status(event_match("message", role="assistant", text="21"), (Message("It is 21C"), None)) == MATCHED
    assert status(event_match("message", role="user"), (Message("x"), None)) == MISMATCHED
    started = OperationStarted("c1", ToolOperation("get_weather", {}))
    assert status(event_match("operation.started", tool="get_weather"), (started, occurrence())) == MATCHED
    assert status(event_match("operation.finished"), (started, occurrence())) == MISMATCHED
    with pytest.raises(ValueError, match="event_match type must be one of"):
        event_match("thinking")
    with pytest.raises(ValueError):
        event_match("message", tool="x")
    with pytest.raises(ValueError):
        tool_match("x", status="done")


def test_a_misspelt_status_or_event_type_is_named_with_the_one_meant():
    # Both said only what they take, not what they got, so `status="complete"` read as a bug in the matcher.
    with pytest.raises(ValueError, match="rejected, got 'complete'; did you mean 'completed'\\?$"):
        tool_match("x", status="complete")
    with pytest.raises(ValueError, match="operation.finished, got 'mesage'; did you mean 'message'\\?$"):
        event_match("mesage")
