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

        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as error:
            raise OutputSchemaError(f"output schema is not a valid JSON Schema: {error.message}") from None
        return dict(schema)
    raise OutputSchemaError(
        "output must be a pydantic model class, a TypeAdapter or a JSON Schema dict, got "
        + (f"the class {schema.__name__} (for a plain type, TypeAdapter({schema.__name__}))" if isinstance(schema, type)
           else type(schema).__name__)
    )


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
