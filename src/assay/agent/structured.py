"""Structured output: lowering an eval's `output=` declaration to JSON Schema and validating `Turn.data`.

A pydantic model gives a model instance back, a TypeAdapter its validated value, a JSON Schema
dict the data itself; a mismatch is a list of located differences.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.agent.control import AuthoringError


class OutputSchemaError(AuthoringError, TypeError):
    """An `output=` (or `matches()`) that is no schema: the eval's authoring error, at its line."""


def _is_model_class(schema: Any) -> bool:
    return isinstance(schema, type) and hasattr(schema, "model_json_schema") and hasattr(schema, "model_validate")


def _is_type_adapter(schema: Any) -> bool:
    return hasattr(schema, "json_schema") and hasattr(schema, "validate_python")


def lower_schema(schema: Any) -> dict[str, Any]:
    """The JSON Schema an adapter may forward (e.g. as `response_format`)."""
    if _is_model_class(schema):
        return schema.model_json_schema()
    if _is_type_adapter(schema):
        return schema.json_schema()
    if isinstance(schema, Mapping):
        import jsonschema

        validator_class = jsonschema.validators.validator_for(schema)
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as error:
            raise OutputSchemaError(f"output schema is not a valid JSON Schema: {error.message}") from None
        _refuse_misspelt_keywords(schema, set(validator_class.VALIDATORS) | _ANNOTATIONS, "$")
        return dict(schema)
    from typing import get_origin

    if get_origin(schema) is not None:  # `list[int]`, `dict[str, float]`: a type, though no class
        got = f"the type {schema} (for a plain type, TypeAdapter({schema}))"
    elif isinstance(schema, type):
        got = f"the class {schema.__name__} (for a plain type, TypeAdapter({schema.__name__}))"
    else:
        got = type(schema).__name__
    raise OutputSchemaError(f"output must be a pydantic model class, a TypeAdapter or a JSON Schema dict, got {got}")


# Keywords that check nothing but are valid JSON Schema (and OpenAPI's `example`): never read as misspelt.
_ANNOTATIONS = {
    "$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary", "$comment", "$defs", "definitions", "title",
    "description", "default", "examples", "example", "deprecated", "readOnly", "writeOnly", "then", "else",
    "contentMediaType", "contentEncoding", "contentSchema",
}
_SUBSCHEMA = {"items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
              "propertyNames", "unevaluatedItems", "unevaluatedProperties"}
_SUBSCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
_SUBSCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems", "items"}


def _refuse_misspelt_keywords(schema: Any, known: set[str], where: str) -> None:
    """JSON Schema ignores a keyword it does not know, so `requried` or `propertes` would check nothing and
    every reply would match: a key close to a keyword is the author's typo, named at the call site."""
    from assay.core.format import did_you_mean

    if not isinstance(schema, Mapping):
        return
    for key, value in schema.items():
        if key == "schema" and isinstance(value, Mapping) and where == "$":
            raise OutputSchemaError(
                "output schema: $ has a 'schema' field: give the JSON Schema itself (the value of 'schema'), "
                "not the response_format wrapper around it"
            )
        if key not in known:
            hint = did_you_mean(key, known, cutoff=0.8)
            if hint:
                raise OutputSchemaError(
                    f"output schema: {where} has no keyword {key!r}{hint} (JSON Schema ignores a keyword it does "
                    "not know, so this one would check nothing)"
                )
        elif key in _SUBSCHEMA:
            _refuse_misspelt_keywords(value, known, f"{where}.{key}")
        if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            for name, subschema in value.items():
                _refuse_misspelt_keywords(subschema, known, f"{where}.{key}.{name}")
        if key in _SUBSCHEMA_LISTS and isinstance(value, (list, tuple)):
            for position, subschema in enumerate(value):
                _refuse_misspelt_keywords(subschema, known, f"{where}.{key}[{position}]")


def _pydantic_problems(error: Any) -> list[str]:
    problems = []
    for item in error.errors():
        location = "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in item.get("loc", ()))
        problems.append(f"{location}: {item.get('msg')}")
    return problems


def validate_against(schema: Any, data: Any) -> tuple[Any, list[str]]:
    """(typed value, []) when `data` conforms, else (None, differences)."""
    if _is_model_class(schema) or _is_type_adapter(schema):
        from pydantic import ValidationError

        try:
            if _is_model_class(schema):
                if isinstance(data, schema):
                    return data, []
                return schema.model_validate(data), []
            return schema.validate_python(data), []
        except ValidationError as error:
            return None, _pydantic_problems(error)
    import jsonschema

    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema)
    if hasattr(data, "model_dump"):
        data = data.model_dump(mode="json")
    problems = []
    for error in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path)):
        location = "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
        problems.append(f"{location}: {error.message}")
    return (data, []) if not problems else (None, problems)


__all__ = ["lower_schema", "validate_against"]
