from __future__ import annotations

import datetime

import pytest

from assay.core.jsonvalue import canonical_json, check_json_like, is_json_like
from assay.errors import EXIT_ERROR, JsonValueError


def message_for(value, label="expect") -> str:
    with pytest.raises(JsonValueError) as caught:
        check_json_like(value, label)
    return str(caught.value)


def test_accepts_every_json_like_kind():
    check_json_like(
        {"none": None, "bool": True, "int": 10**40, "float": 1.5, "str": "é", "list": [1, (2, 3)], "dict": {}},
        "expect",
    )
    assert is_json_like([1, {"a": None}])


def test_shared_non_cyclic_references_are_fine():
    shared = [1]
    check_json_like([shared, shared, {"a": shared}], "expect")


def test_path_names_list_positions_and_identifier_keys():
    assert message_for([0, 1, {"a": float("nan")}]) == "expect[2].a must be finite"


def test_path_quotes_keys_that_are_not_identifiers():
    assert message_for({"weird key": float("inf")}) == "expect['weird key'] must be finite"


def test_non_string_keys_are_rejected_at_the_mapping():
    assert message_for({"a": {1: "x"}}) == "expect.a keys must be strings"


def test_lone_surrogates_are_rejected_in_values_and_keys():
    assert message_for(["\ud800"]) == "expect[0] must contain valid Unicode scalar values"
    assert message_for({"\udfff": 1}) == "expect keys must contain valid Unicode scalar values"


def test_cycles_are_rejected_where_they_close():
    looping: list = []
    looping.append(looping)
    assert message_for(looping) == "expect[0] must not contain cycles"
    mapping: dict = {}
    mapping["self"] = mapping
    assert message_for({"x": mapping}, "observation") == "observation.x.self must not contain cycles"


def test_other_types_name_their_type():
    assert message_for({"when": datetime.date(2026, 1, 1)}) == "expect.when must be JSON-like; got date"
    assert message_for({1, 2}) == "expect must be JSON-like; got set"


def test_error_is_an_exit_2_assay_error():
    assert JsonValueError.exit_code == EXIT_ERROR
    assert not is_json_like(float("nan"))


def test_canonical_json_sorts_keys_and_distinguishes_int_from_float():
    assert canonical_json({"b": 1, "a": [1.0, True, None, "é"]}) == '{"a":[1.0,true,null,"\\u00e9"],"b":1}'
    assert canonical_json(1) != canonical_json(1.0)

