"""A run request: one frozen dataclass per kind that is at once the checkpoint's invocation, the
record's options and what `--resume` restores.

Fields are declared once with `option(...)`: the name stored in the checkpoint (GlassKit's names,
where they differ from ours), whether an empty tuple is stored as null, whether an unset value is
left out. `to_invocation` and `from_invocation` are exact inverses for every value a request holds.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from assay.errors import CheckpointError

__all__ = ["changed_options", "from_invocation", "option", "to_invocation"]

Request = TypeVar("Request")


def option(
    default: Any = dataclasses.MISSING, *, key: str | None = None, empty_as_null: bool = False,
    omit_when_none: bool = False, default_factory: Any = dataclasses.MISSING, flag: str | None = None,
    stored: bool = True,
) -> Any:
    """A request field: `key` names it in the invocation; `empty_as_null` stores `()` as null;
    `omit_when_none` leaves an unset value out (so older checkpoints keep their plan hash);
    `flag` is the command-line option that sets it (for messages); a field that is not `stored`
    (where output goes, how wide to run) is given afresh by every invocation, resumed or not."""
    metadata = {
        "key": key, "empty_as_null": empty_as_null, "omit_when_none": omit_when_none, "flag": flag, "stored": stored,
    }
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _key(spec: dataclasses.Field[Any]) -> str:
    return spec.metadata.get("key") or spec.name


def _stored(value: Any, spec: dataclasses.Field[Any]) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return None if not value and spec.metadata.get("empty_as_null") else list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


def to_invocation(request: Any) -> dict[str, Any]:
    """The request as the JSON object a checkpoint stores, in field order."""
    invocation: dict[str, Any] = {}
    for spec in dataclasses.fields(request):
        if not spec.metadata.get("stored", True):
            continue
        value = getattr(request, spec.name)
        if value is None and spec.metadata.get("omit_when_none"):
            continue
        invocation[_key(spec)] = _stored(value, spec)
    return invocation


def _restored(value: Any, annotation: Any, where: str) -> Any:
    """`value` read back as `annotation`, or ValueError naming what it should be."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in arguments:
            return None
        for choice in (argument for argument in arguments if argument is not type(None)):
            try:
                return _restored(value, choice, where)
            except ValueError:
                continue
        raise ValueError(f"{where} must be {_describe(annotation)}")
    if annotation is Any:
        return value
    if annotation is Path:
        if not isinstance(value, str):
            raise ValueError(f"{where} must be a string")
        return Path(value)
    if annotation is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where} must be a boolean")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{where} must be an integer")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where} must be a number")
        return value
    if annotation is str:
        if not isinstance(value, str):
            raise ValueError(f"{where} must be a string")
        return value
    if origin is tuple:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list or null")
        item = arguments[0] if arguments else Any
        return tuple(_restored(entry, item, where) for entry in value)
    if origin in (Mapping, dict) or annotation in (Mapping, dict):
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be an object")
        return dict(value)
    raise TypeError(f"unsupported request field type {annotation!r}")  # a bug in a request, not a file


def _describe(annotation: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", Path: "a string"}
    choices = [names.get(argument, "a value") for argument in typing.get_args(annotation) if argument is not type(None)]
    return " or ".join(choices) + (" or null" if type(None) in typing.get_args(annotation) else "")


def from_invocation(request_type: type[Request], invocation: Any, manifest_path: Path, **given: Any) -> Request:
    """The request a checkpoint was made with (fields that are not stored come from `given`); a
    malformed invocation is a bad checkpoint."""

    def bad(detail: str) -> CheckpointError:
        return CheckpointError(f"invalid checkpoint manifest {manifest_path}: {detail}")

    if not isinstance(invocation, dict):
        raise bad("invocation must be an object")
    hints = typing.get_type_hints(request_type)
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(request_type):  # type: ignore[arg-type]
        if not spec.init:
            continue
        if not spec.metadata.get("stored", True):
            if spec.name in given:
                values[spec.name] = given[spec.name]
            continue
        key = _key(spec)
        if key not in invocation:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise bad(f"invocation.{key} is missing")
            continue
        try:
            values[spec.name] = _restored(invocation[key], hints[spec.name], f"invocation.{key}")
        except ValueError as error:
            raise bad(str(error)) from None
    return request_type(**values)


def changed_options(request: Any, *, ignore: tuple[str, ...] = ()) -> list[str]:
    """The command-line flags of the stored fields whose value differs from their default, in field
    order (what a `--resume` cannot be combined with)."""
    flags = []
    for spec in dataclasses.fields(request):
        if spec.name in ignore or not spec.metadata.get("stored", True):
            continue
        if spec.default is not dataclasses.MISSING:
            default = spec.default
        elif spec.default_factory is not dataclasses.MISSING:
            default = spec.default_factory()
        else:
            continue
        if getattr(request, spec.name) != default:
            flags.append(spec.metadata.get("flag") or spec.name)
    return flags
