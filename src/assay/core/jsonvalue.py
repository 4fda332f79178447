"""JSON-like values: validation with located messages, canonical encoding and hashing, and the one
conversion of anything an adapter returns into strict JSON.

A JSON-like value is None, bool, int (any size), finite float, str (valid Unicode), list/tuple, or a
dict with string keys. Expectations, observations, event payloads and journal records all use it.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any
from uuid import UUID

from assay.errors import JsonValueError

__all__ = ["check_json_like", "canonical_json", "is_json_like", "jsonable"]


def _child_path(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{key!r}]"


def check_json_like(value: Any, label: str = "value", *, tuples: bool = True) -> None:
    """Raise `JsonValueError` naming the first offending location, e.g. `expect[2].a must be finite`. With
    `tuples=False` only a list is an array (a tuple is `… must be JSON-like; got tuple`, as GlassKit refuses an
    observation holding one)."""
    active: set[int] = set()
    arrays = (list, tuple) if tuples else (list,)

    def visit(item: Any, path: str) -> None:
        if item is None or isinstance(item, (bool, int)):
            return
        if isinstance(item, float):
            if not math.isfinite(item):
                raise JsonValueError(f"{path} must be finite")
            return
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise JsonValueError(f"{path} must contain valid Unicode scalar values") from None
            return
        if isinstance(item, dict) or isinstance(item, arrays):
            marker = id(item)
            if marker in active:
                raise JsonValueError(f"{path} must not contain cycles")
            active.add(marker)
            try:
                if isinstance(item, dict):
                    for key, child in item.items():
                        if not isinstance(key, str):
                            not_text = JsonValueError(f"{path} keys must be strings")
                            not_text.key = key
                            raise not_text
                        try:
                            key.encode("utf-8")
                        except UnicodeEncodeError:
                            raise JsonValueError(
                                f"{path} keys must contain valid Unicode scalar values"
                            ) from None
                        visit(child, _child_path(path, key))
                else:
                    for position, child in enumerate(item):
                        visit(child, _child_path(path, position))
            finally:
                active.discard(marker)
            return
        raise JsonValueError(f"{path} must be JSON-like; got {type(item).__name__}")

    visit(value, label)


def is_json_like(value: Any) -> bool:
    try:
        check_json_like(value)
    except JsonValueError:
        return False
    return True


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, ASCII: equal values give equal text (but `1` and `1.0` differ)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)



def jsonable(value: Any, *, non_finite_as_null: bool = False, fallback: Callable[[Any], Any] = repr) -> Any:
    """`value` as strict JSON: non-finite floats become their names (null with `non_finite_as_null`,
    as `JSON.stringify` writes them), an Enum member its value, a UUID its text, a pydantic model its
    JSON, a dataclass its fields, a date or time its ISO text, anything else `fallback(it)` (its repr).
    Adapters return what they like; records, the viewer and transcripts must still be valid JSON."""

    def convert(item: Any) -> Any:
        if item is None or isinstance(item, (bool, int, str)):
            return item
        if isinstance(item, float):
            return item if math.isfinite(item) else (None if non_finite_as_null else repr(item))
        if isinstance(item, Mapping):
            return {str(key): convert(child) for key, child in item.items()}
        if isinstance(item, (list, tuple)):
            return [convert(child) for child in item]
        if isinstance(item, Enum):
            return convert(item.value)
        if isinstance(item, UUID):
            return str(item)
        dump = getattr(item, "model_dump", None)
        if callable(dump):
            return convert(dump(mode="json"))
        if dataclasses.is_dataclass(item) and not isinstance(item, type):  # (a framework's message or output type)
            return {field.name: convert(getattr(item, field.name)) for field in dataclasses.fields(item)}
        if isinstance(item, (datetime.date, datetime.time)):
            return item.isoformat()
        return fallback(item)

    return convert(value)
