"""What a run is asked: the kind's frozen request (at once the checkpoint's invocation, the record's
options and what `--resume` restores), and beside it the `Outputs` and `Execution` every kind shares.

Fields are declared once with `option(...)`: the name stored in the checkpoint (GlassKit's names,
where they differ from ours), whether an empty tuple is stored as null, whether an unset value is
left out. `to_invocation` and `from_invocation` are exact inverses for every value a request holds.
`Outputs` (where results go and how much is said) is given afresh by every invocation and never part
of a request; a kind whose checkpoint format stores some of it (GlassKit's) writes and reads those keys.
A field's command-line option is declared here too (its flag, help and value check): the command
line builds its parameters from these declarations (`assay.cli.options.params`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from assay.errors import CheckpointError, UsageError

__all__ = [
    "MAX_CONCURRENCY", "MAX_REPEAT", "Execution", "Outputs", "above", "at_least", "between", "field_types", "flag_of",
    "from_invocation", "from_options", "not_empty", "option", "option_of", "to_invocation", "with_defaults",
]

Request = TypeVar("Request")

# The most a count option accepts: far above what one machine runs, low enough that a slip (a few
# extra zeros) is refused at once instead of allocating until the process dies. Experiments'
# `attempts` and `[tool.assay] concurrency` have the same limits.
MAX_CONCURRENCY = 10_000
MAX_REPEAT = 10_000  # video --repeat, agent --attempts


def option(
    default: Any = dataclasses.MISSING, *, key: str | None = None, empty_as_null: bool = False,
    omit_when_none: bool = False, default_factory: Any = dataclasses.MISSING, flag: str | None = None,
    stored: bool = True, help: str | None = None, check: Callable[[Any], None] | None = None,
    names: tuple[str, ...] = (), metavar: str | None = None, argument: bool = False,
) -> Any:
    """A request field: `key` names it in the invocation; `empty_as_null` stores `()` as null;
    `omit_when_none` leaves an unset value out (so older checkpoints keep their plan hash);
    `flag` is the command-line option that sets it (for messages); a field that is not `stored`
    (where output goes, how wide to run) is given afresh by every invocation, resumed or not.
    On the command line: `help`, `check` (raises ValueError for a value the option refuses), `names`
    (the option's names when more than `flag`: `("--quiet", "-q")`), `metavar`, and `argument` for a
    positional argument (named after the field)."""
    metadata = {
        "key": key, "empty_as_null": empty_as_null, "omit_when_none": omit_when_none, "flag": flag, "stored": stored,
        "help": help, "check": check, "names": names or ((flag,) if flag else ()), "metavar": metavar,
        "argument": argument,
    }
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def option_of(request_type: type, name: str) -> Any:
    """The field `name` of `request_type` declared again, for another request that shares it."""
    spec = next(spec for spec in dataclasses.fields(request_type) if spec.name == name)
    return dataclasses.field(default=spec.default, default_factory=spec.default_factory, metadata=spec.metadata)


def at_least(minimum: float, *, maximum: float | None = None) -> Callable[[Any], None]:
    """An option `check`: every value given is at least `minimum` (and at most `maximum`)."""

    def check(value: Any) -> None:
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item is not None and item < minimum:
                raise ValueError(f"Input should be greater than or equal to {minimum}")
            if item is not None and maximum is not None and item > maximum:
                raise ValueError(f"Input should be less than or equal to {maximum}")

    return check


def above(minimum: float) -> Callable[[Any], None]:
    """An option `check`: a finite number above `minimum`."""

    def check(value: Any) -> None:
        if value is not None and not (math.isfinite(value) and value > minimum):
            raise ValueError(f"Input should be greater than {minimum:g}")

    return check


def between(low: float, high: float) -> Callable[[Any], None]:
    """An option `check`: a number from `low` to `high` (never NaN, which no comparison would refuse)."""

    def check(value: Any) -> None:
        if value is not None and not math.isfinite(value):
            raise ValueError(f"Input should be a number from {low:g} to {high:g}")
        if value is not None and value < low:
            raise ValueError(f"Input should be greater than or equal to {low:g}")
        if value is not None and value > high:
            raise ValueError(f"Input should be less than or equal to {high:g}")

    return check


def not_empty(everything: str) -> Callable[[str | None], None]:
    """An option `check`: an empty value (a script's unset variable) is refused, not read as the option left
    out, which means `everything`."""

    def check(value: str | None) -> None:
        if value is not None and not value.strip():
            raise ValueError(f"needs a value, and the value given is empty (an unset variable in a script?); leave the "
                             f"option out for {everything}")

    return check


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


@functools.cache
def field_types(request_type: type) -> dict[str, Any]:
    """A request type's field types, evaluated once (every option built from it and every request read them)."""
    return typing.get_type_hints(request_type)


def from_options(request_type: type[Request], given: Mapping[str, Any], **changes: Any) -> Request:
    """`request_type` from the command line's values named like its fields (a list as a tuple, a path as a
    string where the field is a string), then `changes`."""
    hints, values = field_types(request_type), {}
    for spec in dataclasses.fields(request_type):  # type: ignore[arg-type]
        if spec.init and spec.name not in changes and spec.name in given:
            value, hint = given[spec.name], hints[spec.name]
            if typing.get_origin(hint) is tuple:
                value = tuple(value or ())
            elif isinstance(value, Path) and str in typing.get_args(hint):
                value = str(value)
            values[spec.name] = value
    return request_type(**values, **changes)


def from_invocation(request_type: type[Request], invocation: Any, manifest_path: Path, **given: Any) -> Request:
    """The request a checkpoint was made with (fields that are not stored come from `given`); a
    malformed invocation is a bad checkpoint."""

    def bad(detail: str) -> CheckpointError:
        return CheckpointError(f"invalid checkpoint manifest {manifest_path}: {detail}")

    if not isinstance(invocation, dict):
        raise bad("invocation must be an object")
    hints = field_types(request_type)
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


def with_defaults(request: Request) -> Request:
    """`request` with every stored field that has a default set to it (what a command line that
    gave none of those options would have asked)."""
    defaults = {}
    for spec in dataclasses.fields(request):  # type: ignore[arg-type]
        if not spec.init or not spec.metadata.get("stored", True):
            continue
        if spec.default is not dataclasses.MISSING:
            defaults[spec.name] = spec.default
        elif spec.default_factory is not dataclasses.MISSING:
            defaults[spec.name] = spec.default_factory()
    return dataclasses.replace(request, **defaults)  # type: ignore[type-var]


def flag_of(key: str, *request_types: type) -> str:
    """The command-line flag of the field stored under `key` in the first of `request_types` that
    declares it (`key` itself when none names a flag)."""
    for request_type in request_types:
        for spec in dataclasses.fields(request_type):
            if _key(spec) == key:
                return spec.metadata.get("flag") or spec.name
    return key


@dataclass(frozen=True)
class Outputs:
    """Where a run's results go and how much is said, for every kind: declared once, chosen by the
    command line, read by the pipeline to choose its reporters (progress, NDJSON, JUnit, the kind's
    console and files). The option metadata names GlassKit's checkpoint keys for the few a video
    checkpoint stores."""

    # The help of --json and --verbose is each kind's own (its console and its stream differ).
    json: bool = option(False, stored=False, flag="--json")  # NDJSON on stdout instead of the console
    # as given; not one of GlassKit's checkpoint keys, so a video checkpoint stores it only when given
    junit: str | None = option(None, omit_when_none=True, flag="--junit", help="Also write a JUnit XML report here.")
    quiet: bool = option(
        False, stored=False, flag="--quiet", names=("--quiet", "-q"), help="No progress on stderr (results and errors still print)."
    )
    verbose: bool = option(False, flag="--verbose")  # every unit on the console, not only failures
    output_json: str | None = option(None, flag="--output-json", metavar="<path>", help="Write the JSON report here.")  # the kind's own (video)

    @property
    def shows_progress(self) -> bool:
        return not (self.quiet or self.json)  # NDJSON owns stdout and keeps stderr for errors


@dataclass(frozen=True)
class Execution:
    """Where units run: here, or on a Ray cluster. Not part of a request: a run may resume elsewhere.
    Checked when made, so every command refuses a bad `--executor` in the same words."""

    executor: str = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        if self.executor not in ("local", "ray"):
            from assay.core.format import did_you_mean

            meant = did_you_mean(self.executor, ("local", "ray"))
            raise UsageError(f"--executor must be local or ray{meant}", "--executor")
        if self.ray_address is not None and self.executor != "ray":
            raise UsageError("--ray-address needs --executor ray", "--ray-address")
