"""Shared CLI plumbing: option validators with GlassKit's wording, and turning errors into exits."""

from __future__ import annotations

import math
import sys
import traceback
from typing import Any, Callable, NoReturn, Sequence

import typer

from assay.core.console import stdout_console

DEBUG = False

# The most a count option accepts: far above what one machine runs, low enough that a slip (a few
# extra zeros) is refused at once instead of allocating until the process dies. Experiments'
# `attempts` and `[tool.assay] concurrency` have the same limits.
MAX_CONCURRENCY = 10_000
MAX_REPEAT = 10_000  # video --repeat, agent --attempts


def at_least(minimum: int | float, *, maximum: int | float | None = None) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is not None:
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if item < minimum:
                    raise typer.BadParameter(f"Input should be greater than or equal to {minimum}")
                if maximum is not None and item > maximum:
                    raise typer.BadParameter(f"Input should be less than or equal to {maximum}")
        return value

    return check


def above(minimum: float) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is not None and not (math.isfinite(value) and value > minimum):
            raise typer.BadParameter(f"Input should be greater than {minimum:g}")
        return value

    return check


def between(low: float, high: float) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is not None:
            if value < low:
                raise typer.BadParameter(f"Input should be greater than or equal to {low:g}")
            if value > high:
                raise typer.BadParameter(f"Input should be less than or equal to {high:g}")
        return value

    return check


def bad_parameter(option: str, message: str, *, quoted: bool = True) -> NoReturn:
    raise typer.BadParameter(message, param_hint=f"'{option}'" if quoted else option)


def check_time_values(option: str, values: Any) -> None:
    items = values if isinstance(values, (list, tuple)) else [values]
    for item in items:
        if item is not None and (not math.isfinite(item) or item < 0):
            bad_parameter(option, "must be a finite, nonnegative number")


def check_time_filters(
    case: str | None, at: list[float] | None, from_s: float | None, until_s: float | None
) -> None:
    """GlassKit's CLI pre-checks for --at/--from/--until, in its order."""
    present = [name for name, value in (("--at", at), ("--from", from_s), ("--until", until_s)) if value]
    present = [
        name
        for name, value in (("--at", at), ("--from", from_s), ("--until", until_s))
        if (value is not None and value != [])
    ]
    if present and case is None:
        bad_parameter(present[0], "requires --case")
    if at and (from_s is not None or until_s is not None):
        bad_parameter("--at", "cannot be combined with --from or --until")
    check_time_values("--at", at or [])
    check_time_values("--from", from_s)
    check_time_values("--until", until_s)
    if from_s is not None and until_s is not None and from_s >= until_s:
        bad_parameter("--until", "must be greater than --from")


def fail(
    prefix: str, error: BaseException, *, console: Any = None, exit_code: int = 2, after: Sequence[str] = ()
) -> NoReturn:
    """Print `<prefix>: <message>` to stdout (GlassKit prints errors there) and exit."""
    if DEBUG:
        traceback.print_exception(error, file=sys.stderr)
    message = str(error)
    notes = getattr(error, "__notes__", None) or []
    (console or stdout_console()).print(f"{prefix}: {message}", markup=False, highlight=False)
    for line in [*notes, *after]:
        (console or stdout_console()).print(line, markup=False, highlight=False)
    raise typer.Exit(exit_code)
