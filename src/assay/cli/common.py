"""Shared CLI plumbing: option validators with GlassKit's wording, the one way a command fails, and
handing a request to the pipeline."""

from __future__ import annotations

import math
import sys
import traceback
from typing import Any, Callable, NoReturn, Sequence

import typer

from assay.core.console import stdout_console
from assay.errors import AssayError, UsageError

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


def say(*lines: str, console: Any = None) -> None:
    """Lines for a person on stdout, as written (no markup, no highlighting)."""
    for line in lines:
        (console or stdout_console()).print(line, markup=False, highlight=False)


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
    prefix: str, error: BaseException | str, *, console: Any = None, stderr: bool = False, exit_code: int | None = None,
    internal: str | None = None, after: Sequence[str] = (),
) -> NoReturn:
    """The one way a command fails: `<prefix>: <message>` (then the error's notes and `after`), and exit.

    On stdout by default (GlassKit prints errors there), on stderr with `stderr`. A bug (not an
    `AssayError`) is named by its type after `internal` when given, else by its message alone
    (eval-kit's way); `--debug` adds the traceback. The exit code is the error's unless given."""
    if DEBUG and isinstance(error, BaseException):
        traceback.print_exception(error, file=sys.stderr)
    message = str(error)
    if internal is not None and isinstance(error, BaseException) and not isinstance(error, AssayError):
        message = f"{internal}{type(error).__name__}: {error}"
    lines = [f"{prefix}: {message}", *(getattr(error, "__notes__", None) or []), *after]
    for line in lines:
        if stderr:
            print(line, file=sys.stderr)
        else:
            (console or stdout_console()).print(line, markup=False, highlight=False)
    code = exit_code if exit_code is not None else getattr(error, "exit_code", 2)
    raise typer.Exit(code)


def refuse(error: UsageError, *, quoted: bool = True) -> NoReturn:
    """A usage error shown as click shows a bad option value (GlassKit's usage errors), naming its option."""
    option = error.option or ""
    message = str(error)
    if option and message.startswith(f"{option} "):
        message = message[len(option) + 1:]
    raise typer.BadParameter(message, param_hint=f"'{option}'" if quoted else option)


def checked(check: Callable[..., Any], *arguments: Any, quoted: bool = True) -> Any:
    """`check(*arguments)`, its usage error shown as a bad option value (see `refuse`)."""
    try:
        return check(*arguments)
    except UsageError as error:
        refuse(error, quoted=quoted)


def run_and_exit(
    kind: Any, request: Any, outputs: Any, *, resume: Any = None, execution: Any = None
) -> NoReturn:
    """Hand the request to the pipeline and leave with its exit code; a run that kept its checkpoint
    leaves its resume lines with the stdout guard (said on stderr if stdout was closed)."""
    from assay.cli.stdout_guard import keep_resume_lines
    from assay.core.run import pipeline
    from assay.core.run.request import Execution

    result = pipeline.run(kind, request, outputs=outputs, resume=resume, execution=execution or Execution())
    keep_resume_lines(result.resume_lines)
    raise typer.Exit(result.exit_code)
