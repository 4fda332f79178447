"""Schema validation messages (Ajv's wording, eval-kit's format) and the allOf-stripped API schema."""

from __future__ import annotations

from assay.judge import schema_errors, strip_all_of, validation_message

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "items"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "items": {"type": "array", "minItems": 1, "items": {"enum": ["a", "b"]}},
    },
    "allOf": [
        {
            "if": {"required": ["id"], "properties": {"id": {"const": "x"}}},
            "then": {"properties": {"items": {"minItems": 2}}},
        }
    ],
}


def test_valid_value_has_no_errors():
    assert schema_errors({"id": "y", "items": ["a"]}, SCHEMA) == []


def test_errors_use_instance_paths_and_ajv_wording():
    errors = schema_errors({"id": "", "items": ["c"], "extra": 1}, SCHEMA)
    assert ("", "must NOT have additional properties (extra)") in errors
    assert ("/id", "must NOT have fewer than 1 characters") in errors  # Ajv always writes the plural
    assert ("/items/0", "must be equal to one of the allowed values") in errors


def test_missing_property_is_reported_at_the_parent():
    assert schema_errors({"items": ["a"]}, SCHEMA) == [("", "must have required property 'id'")]


def test_message_names_label_and_root():
    message = validation_message("grades", schema_errors({"items": ["a"]}, SCHEMA))
    assert message == "grades failed schema validation: <root> must have required property 'id'"


def test_all_of_rules_still_apply_in_full_validation():
    assert schema_errors({"id": "x", "items": ["a"]}, SCHEMA) == [("/items", "must NOT have fewer than 2 items")]


def test_strip_all_of_removes_every_all_of_and_leaves_the_original_alone():
    nested = {"properties": {"inner": dict(SCHEMA)}, "allOf": []}
    stripped = strip_all_of(nested)
    assert "allOf" not in stripped and "allOf" not in stripped["properties"]["inner"]
    assert "allOf" in nested["properties"]["inner"]


def test_a_value_with_thousands_of_problems_gives_a_short_message_naming_the_first_few():
    value = {"id": "y", "items": ["c"] * 20_000, **{f"extra_{index}": 1 for index in range(20_000)}}
    message = validation_message("grades", schema_errors(value, SCHEMA))
    assert len(message) < 1_000, len(message)
    assert message.startswith(
        "grades failed schema validation: <root> must NOT have additional properties "
        "(extra_0, extra_1, extra_10, extra_100, extra_1000, and 19,995 more); "
        "/items/0 must be equal to one of the allowed values; /items/1 must be equal to one of the allowed values;"
    )
    assert message.endswith("and 19,996 more")
