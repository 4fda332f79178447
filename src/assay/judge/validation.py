"""JSON Schema (2020-12) validation with short, located messages, and the API-safe schema variant.

Messages follow Ajv's wording (`/items/0 must have required property 'kind'`) so eval-kit users see
the errors they know; every error is reported, sorted by location.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry

from assay.core.format import join_first

__all__ = ["describe_errors", "schema_errors", "strip_all_of", "validation_message"]


def _pointer(path: Iterable[Any]) -> str:
    parts = [str(part).replace("~", "~0").replace("/", "~1") for part in path]
    return "/" + "/".join(parts) if parts else ""


def _plural(count: Any, noun: str) -> str:
    """Ajv's `{limit} {nouns}`: always the plural (`must NOT have fewer than 1 items`), as eval-kit prints it."""
    return f"{count} {noun}"


def _ajv_message(error: ValidationError) -> tuple[str, str]:
    """(instance path, message) in Ajv's words for the common keywords; jsonschema's words otherwise."""
    where = _pointer(error.absolute_path)
    keyword, expected = error.validator, error.validator_value
    if keyword == "required":
        missing = [name for name in expected if isinstance(error.instance, dict) and name not in error.instance]
        name = missing[0] if missing else expected[0]
        return where, f"must have required property '{name}'"
    if keyword == "additionalProperties":
        extras = (
            sorted(set(error.instance) - set(error.schema.get("properties", {})))
            if isinstance(error.instance, dict)
            else []
        )
        suffix = f" ({join_first(extras, separator=', ')})" if extras else ""
        return where, f"must NOT have additional properties{suffix}"
    if keyword == "type":
        types = expected if isinstance(expected, list) else [expected]
        return where, f"must be {','.join(types)}"
    if keyword == "enum":
        return where, "must be equal to one of the allowed values"
    if keyword == "const":
        return where, "must be equal to constant"
    if keyword == "minLength":
        return where, f"must NOT have fewer than {_plural(expected, 'characters')}"
    if keyword == "maxLength":
        return where, f"must NOT have more than {_plural(expected, 'characters')}"
    if keyword == "minItems":
        return where, f"must NOT have fewer than {_plural(expected, 'items')}"
    if keyword == "maxItems":
        return where, f"must NOT have more than {_plural(expected, 'items')}"
    if keyword == "pattern":
        return where, f'must match pattern "{expected}"'
    if keyword == "minimum":
        return where, f"must be >= {expected}"
    if keyword == "maximum":
        return where, f"must be <= {expected}"
    if keyword == "minProperties":
        return where, f"must NOT have fewer than {_plural(expected, 'properties')}"
    return where, error.message


def schema_errors(value: Any, schema: dict[str, Any], registry: Registry | None = None) -> list[tuple[str, str]]:
    """Every violation as (instance path, message), most specific first within a location."""
    validator = (
        Draft202012Validator(schema, registry=registry) if registry is not None else Draft202012Validator(schema)
    )
    found = []
    for error in validator.iter_errors(value):
        leaves = _leaf_errors(error)
        found.extend(_ajv_message(leaf) for leaf in leaves)
    unique = list(dict.fromkeys(found))
    return sorted(unique, key=lambda item: item[0])


def _leaf_errors(error: ValidationError) -> list[ValidationError]:
    # allOf/anyOf/$ref wrap the real problem; report what actually failed.
    if error.context and error.validator in {"allOf", "$ref"}:
        return [leaf for child in error.context for leaf in _leaf_errors(child)]
    return [error]


def describe_errors(errors: list[tuple[str, str]]) -> str:
    """`<path or <root>> <message>; ...`, the first few (`join_first`), then how many more."""
    return join_first(errors, shown=lambda error: f"{error[0] or '<root>'} {error[1]}")


def validation_message(label: str, errors: list[tuple[str, str]]) -> str:
    """`<label> failed schema validation: <path or <root>> <message>; ...` (eval-kit's format)."""
    return f"{label} failed schema validation: {describe_errors(errors)}"


def strip_all_of(schema: Any) -> Any:
    """A copy of `schema` with every `allOf` removed: structured-output APIs reject the keyword.

    The caller validates the answer against the full schema afterwards, so no rule is lost.
    """
    if isinstance(schema, dict):
        return {key: strip_all_of(value) for key, value in schema.items() if key != "allOf"}
    if isinstance(schema, list):
        return [strip_all_of(item) for item in schema]
    return copy.deepcopy(schema)
