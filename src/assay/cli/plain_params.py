"""Command-line values coerced without pydantic when they are plain: an absent option, a str, a list of str, a Path,
an int, float or bool that already is one (a default), and a number typed in its usual spelling (`--concurrency 8`,
`--at 1.5`, `--alpha 1e-3`).

typer coerces every parameter a command has (given or not) through a pydantic TypeAdapter, and importing
pydantic alone costs ~0.07-0.1 s of CPU: a third of a one-eval `assay agent run`, and what `--concurrency 8` added
to it. The plain cases give exactly what typer's adapter gives; any other value (`4.0` or `1_000` for a whole
number, `inf`, a number that does not parse, a choice, a parser) is still coerced by typer's own adapter, built when
that value arrives, so its results and error messages are typer's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
from typer import core
from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
from typer._param_types import coerce_cli_path

__all__ = ["coerce_plain_values_without_pydantic"]

# Numbers as they are usually typed, read by Python exactly as pydantic's lax mode reads them (ASCII digits only:
# `str.isdigit` would let other scripts' digits through, which pydantic refuses).
_WHOLE = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_TYPED_NUMBER = {int: _WHOLE, float: _DECIMAL}


@dataclass(frozen=True)
class _PlainRuntimeParam(RuntimeParam):
    """typer's runtime coercion of one parameter, with the plain values done here (None is typer's own: `coerce`)."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        info, annotation = self.parameter_info, self.annotation
        if value == "" and type(value) is str and (_is_path(annotation) or info.metavar == "<path>"):
            # `--export "$SITE"` with SITE unset: Path("") is the current folder, which nobody meant. (A `<path>`
            # read as text, as video's `--output-json` is for GlassKit's checkpoint, is refused alike.)
            raise typer.BadParameter("needs a path, and the value given is empty (an unset variable in a script?)",
                                     ctx=ctx, param=param)
        # the number(s) typed: `--limit ''`, and `--at ''` alike (one value of a repeatable number option)
        numbers = ([value] if _is_number(annotation) else
                   value if _is_list_of_numbers(annotation) and isinstance(value, (list, tuple)) else [])
        if any(type(number) is str and not number.strip() for number in numbers):
            raise typer.BadParameter("needs a number, and the value given is empty (an unset variable in a script?)",
                                     ctx=ctx, param=param)
        if info.parser is None:
            if annotation is str and type(value) is str:
                return value
            if annotation in (int, float, bool) and type(value) is annotation:
                return value  # a default declared as what it is (`--alpha` 0.05, `--limit` 20, a flag's False)
            typed = _typed_number(annotation, value)
            if typed is not None:
                return typed
            if get_origin(annotation) is list and isinstance(value, (list, tuple)):  # one number per use (`--at`)
                numbers = [_typed_number(get_args(annotation)[0], item) for item in value]
                if None not in numbers:
                    return numbers
            if _is_list_of_str(annotation) and isinstance(value, (list, tuple)) and all(type(v) is str for v in value):
                return list(value)
            if annotation is Path and info.path_type in (None, Path) and not info.allow_dash and type(value) is str:
                # typer's adapter makes `Path(value)` first (its error messages still name `value` as typed)
                return Path(coerce_cli_path(value, info, path_type=None, param=param, ctx=ctx))
        typer_own = build_runtime_param(TypeDescriptor(annotation, info, file_annotation=None))
        try:
            return typer_own._coerce_value(value, param=param, ctx=ctx)
        except typer.BadParameter as error:
            refused = _number_refused(annotation, value, str(error.message))
            if refused is None:
                raise
            raise typer.BadParameter(refused, ctx=ctx, param=param) from None


def _number_refused(annotation: Any, value: Any, message: str) -> str | None:
    """A number option's value that does not parse: typer's (and GlassKit's) words, "Input should be a valid integer,
    unable to parse string as an integer", then the value they do not name (`(got 'abc')`: in a list of values,
    the one refused); None for any other refusal (a range, a choice), which keeps typer's words."""
    kind = next((number for number in (int, float) if number is annotation or number in get_args(annotation)
                 or any(get_args(inner) == (number,) for inner in (annotation, *get_args(annotation)))), None)
    if kind is None or "unable to parse" not in message:
        return None
    given = next((item for item in value if _typed_number(kind, item) is None), None) if isinstance(value, (list, tuple)) else value
    if type(given) is not str:
        return None
    return f"{message} (got {given!r})"


def _typed_number(annotation: Any, value: Any) -> int | float | None:
    """`value` as the int or float `annotation` asks for, when it is typed in the usual spelling; else None."""
    pattern = _TYPED_NUMBER.get(annotation)
    if pattern is None or type(value) is not str or not pattern.fullmatch(value):
        return None
    return annotation(value)  # type: ignore[no-any-return]


def _is_path(annotation: Any) -> bool:
    return annotation is Path or (Path in get_args(annotation) and type(None) in get_args(annotation))


def _is_number(annotation: Any) -> bool:
    return annotation in (int, float) or (type(None) in get_args(annotation) and any(
        kind in get_args(annotation) for kind in (int, float)))


def _is_list_of_numbers(annotation: Any) -> bool:
    lists = [annotation, *get_args(annotation)]  # `list[float]`, or `list[float] | None`
    return any(get_origin(kind) is list and get_args(kind) in ((int,), (float,)) for kind in lists)


def _is_list_of_str(annotation: Any) -> bool:
    return get_origin(annotation) is list and get_args(annotation) == (str,)


def _plain_first(descriptor: TypeDescriptor) -> RuntimeParam:
    """What typer builds when a parameter is first coerced: ours, but typer's own for files it opens."""
    if descriptor.file_annotation is not None:
        return build_runtime_param(descriptor)
    return _PlainRuntimeParam(descriptor.parameter_info, descriptor.annotation)


def coerce_plain_values_without_pydantic() -> None:
    """Every typer parameter of this process (help options included) coerces plain values here.

    A typer without the hook this relies on (`typer.core.build_runtime_param`) keeps its own coercion."""
    if getattr(core, "build_runtime_param", None) is build_runtime_param:
        core.build_runtime_param = _plain_first
