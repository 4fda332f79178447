"""Command-line options declared once, and commands built from them.

An option is a `Param`: the name a command reads it by, its type and its typer declaration. A run
request's fields declare their options already (`core.run.request.option`: flag, default, help,
check), so `params(...)` makes their params; options many commands share are declared here once.
`command(...)` registers a body taking one `Given` (every option by name, and the request and
`Outputs` built from them) with exactly these params, in their order, as its `--help` shows them:

    @command(video_app, "seed", *params(SeedRequest, "adapter adapter_command case targets", RESUME,
                                        VERBOSE.but(help="Print each seeded value."), "adapter_timeout"))
    def seed_command(given: Given) -> None:
        # (its docstring is the command's help)
        request, outputs = given.request(SeedRequest), given.outputs(quiet=True)
        common.run_and_exit(seed, request, outputs)
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import shlex
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import typer

from assay.core.run.request import Outputs, at_least, between, field_types, from_options

__all__ = [
    "EXECUTOR", "JSON", "JUNIT", "JUNIT_PATH", "LIMIT", "NO_OPEN", "OUTPUT_JSON", "PORT", "PRINT_JSON",
    "PROJECT", "QUIET", "RAY_ADDRESS", "RESUME", "VERBOSE", "Command", "Given", "Param", "argument", "command", "group",
    "near_options", "no_such_option", "option", "params",
]


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter of a command: `name` (what the body reads), its type, and typer's declaration."""

    name: str
    annotation: Any
    info: Any  # typer.Option(...) or typer.Argument(...)

    def but(self, *, name: str | None = None, annotation: Any = None, check: Any = None, **settings: Any) -> Param:
        """This option as one command has it: another help, default, name, type or `check`."""
        info = copy.copy(self.info)
        for setting, value in settings.items():
            setattr(info, setting, value)
        if check is not None:
            info.callback = _callback(check)
        return Param(name or self.name, annotation or self.annotation, info)


def _callback(check: Callable[[Any], None] | None) -> Callable[[Any], Any] | None:
    """typer's callback for a `check` raising ValueError: the value, or click's bad-value message."""
    if check is None:
        return None

    def callback(value: Any) -> Any:
        try:
            check(value)
        except ValueError as error:
            raise typer.BadParameter(str(error)) from None
        return value

    return callback


def option(name: str, annotation: Any, default: Any, *names: str, check: Any = None, **settings: Any) -> Param:
    """An option `names` (`--flag`, `-f`) read as `name`; `check` raises ValueError for a value it refuses."""
    return Param(name, annotation, typer.Option(default, *names, callback=_callback(check), **settings))


def argument(name: str, annotation: Any, default: Any, **settings: Any) -> Param:
    return Param(name, annotation, typer.Argument(default, **settings))


def params(*items: type | str | Param) -> list[Param]:
    """A command's params in `--help` order: each `Param` as it is, and the fields each string names
    (space-separated) of the request types given first, as their `option(...)` declares them; a
    tuple field is a repeatable option."""
    types = [item for item in items if isinstance(item, type)]
    declared = {spec.name: (spec, request_type) for request_type in reversed(types) for spec in dataclasses.fields(request_type)}
    made: list[Param] = []
    for item in items:
        if isinstance(item, Param):
            made.append(item)
        elif isinstance(item, str):
            made.extend(_field_param(*declared[name]) for name in item.split())
    return made


def _field_param(spec: dataclasses.Field[Any], request_type: type) -> Param:
    hint = field_types(request_type)[spec.name]
    repeated = None
    if typing.get_origin(hint) is tuple:
        repeated = typing.get_args(hint)[0]
        hint = list[repeated] | None  # type: ignore[valid-type]
    if spec.default is not dataclasses.MISSING:
        default = None if spec.default == () else spec.default
    else:  # a factory's value is made by the request; no factory: the option is required
        default = None if spec.default_factory is not dataclasses.MISSING else ...
    meta = spec.metadata
    extra = {"metavar": meta["metavar"]} if meta.get("metavar") else {}
    if repeated is not None and not extra and not meta.get("argument"):
        extra = {"metavar": f"<{getattr(repeated, '__name__', repeated)}>"}  # one value per use, not typer's <list[str]>
    if meta.get("argument"):
        return argument(spec.name, hint, default, help=meta["help"], **extra)
    return option(spec.name, hint, default, *meta["names"], check=meta["check"], help=meta["help"], **extra)


class Given(SimpleNamespace):
    """What a command was given, by parameter name, and the request and `Outputs` made of it."""

    def pick(self, *names: str) -> dict[str, Any]:
        return {name: getattr(self, name) for name in names}

    def request(self, request_type: type, **changes: Any) -> Any:
        """`request_type` from the given values named like its fields, then `changes` (`from_options`)."""
        return from_options(request_type, vars(self), **changes)

    def outputs(self, **changes: Any) -> Outputs:
        return self.request(Outputs, **changes)  # type: ignore[no-any-return]


def group(help_text: str) -> typer.Typer:
    """A command group: plain help (flags shown as flags, options as `--name <type>`), its help when called bare."""
    return typer.Typer(rich_markup_mode=None, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                       help=help_text)


def no_such_option() -> type[Exception]:
    try:  # recent typer ships its own copy of click; its errors are not click's classes
        from typer._click.exceptions import NoSuchOption
    except ImportError:  # pragma: no cover - typer releases that use click itself
        from click.exceptions import NoSuchOption
    return NoSuchOption  # type: ignore[no-any-return]


def near_options(command: Any, unknown: str) -> list[str]:
    """The options of `command` shown in its help whose names are close to `unknown`'s, both without their dashes:
    click compares them with the dashes, which all share, so `--eval` was offered `--help` and `--sourc` `--json`."""
    import difflib

    names = {name.lstrip("-"): name for param in command.params if not getattr(param, "hidden", False)
             for name in param.opts if name.startswith("-")}
    return [names[near] for near in difflib.get_close_matches(unknown.lstrip("-"), list(names), n=3, cutoff=0.6)]


def unquoted_value(command: Any, args: list[str]) -> str:
    """For words left over after parsing: ` (quote an option's value that has spaces: --adapter-command 'node
    adapter.mjs')` when an option that takes a value is followed by its value and then a word, as an unquoted
    command or title is; else ""."""
    takes_value = {name for param in command.params if not getattr(param, "is_flag", False)
                   and getattr(param, "param_type_name", "") == "option" for name in param.opts}
    for position, token in enumerate(args[:-2]):
        following = args[position + 2]
        if token in takes_value and not args[position + 1].startswith("-") and not following.startswith("-"):
            return f" (quote an option's value that has spaces: {token} {shlex.quote(args[position + 1] + ' ' + following)})"
    return ""


class Command(typer.core.TyperCommand):
    """Every command's class: an unknown option is offered the options close to it (`near_options`); words left
    over after an option's value are said to be its value's, unquoted (`unquoted_value`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        given = list(args)  # click's parser consumes the list it is given
        try:
            return super().parse_args(ctx, args)  # type: ignore[no-any-return]
        except no_such_option() as error:
            error.possibilities = near_options(self, error.option_name)  # type: ignore[attr-defined]
            raise
        except Exception as error:
            message = getattr(error, "message", None)
            if isinstance(message, str) and message.startswith("Got unexpected extra argument"):
                error.message = message + unquoted_value(self, given)  # type: ignore[attr-defined]
            raise


def command(
    group: typer.Typer | None, name: str, *params: Param, only_reads: bool | Callable[[Given], bool] = False,
    **settings: Any
) -> Callable[[Callable[[Given], Any]], Any]:
    """Register `body(given)` as the command `name` of `group` (None: nowhere yet) with `params`
    (typer's `settings`: `cls`, `help`, `hidden`). A command that `only_reads` (or checks; a function of
    what it was given when that depends on its options) leaves no finished results to speak of when its
    reader goes (`assay … | head`). Ctrl-C that reaches the body's caller is `Interrupted.` and exit 130
    (typer's own is silent). Returns the typer callback:
    a function of the options by name, which an app can register as it is."""

    def register(body: Callable[[Given], Any]) -> Any:
        def callback(**values: Any) -> Any:
            from assay.core.stdout_guard import nothing_to_keep, output_finished, results_kept

            given = Given(**values)
            reads = only_reads(given) if callable(only_reads) else only_reads
            nothing_to_keep() if reads else results_kept()
            try:
                value = body(given)
                if reads and not output_finished():  # its reader left before all of it was written
                    raise KeyboardInterrupt
                return value
            except KeyboardInterrupt:  # a command with more to say (a run: how to resume) says it and exits itself
                if not getattr(sys.stdout, "closed_by_reader", False):  # else the closed-stdout line says it
                    with contextlib.suppress(OSError):  # stderr may be a closed pipe too
                        print("Interrupted.", file=sys.stderr, flush=True)
                raise typer.Exit(130) from None

        callback.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.info, annotation=p.annotation) for p in params]
        )
        callback.__annotations__ = {p.name: p.annotation for p in params}
        callback.__name__, callback.__qualname__, callback.__doc__ = body.__name__, body.__qualname__, body.__doc__
        callback.__module__ = body.__module__
        if group is not None:
            group.command(name, **{"cls": Command, **settings})(callback)
        return callback

    return register


# Options many commands share, declared once; a command gives one its own help with `.but(help=...)`.
JSON, JUNIT, QUIET, VERBOSE, OUTPUT_JSON = params(Outputs, "json junit quiet verbose output_json")
JUNIT_PATH = JUNIT.but(annotation=Path | None)  # a run's --junit is shown as a <path>
PRINT_JSON = JSON.but(help="Print JSON.")
LIMIT = option("limit", int, 20, "--limit", check=at_least(0), help="How many to list.")
RESUME = option("resume", str | None, None, "--resume", help="Checkpoint directory or id to resume.")
EXECUTOR = option("executor", str, "local", "--executor", help="Where cases run: local (default) or ray.")
RAY_ADDRESS = option("ray_address", str | None, None, "--ray-address", help="Ray cluster to join (default: start a local one).")
PROJECT = option("project", Path | None, None, "--project",
                 help="Project folder (holds evals/, experiments/, pyproject.toml); default: the current folder.")
PORT = option("port", int, 0, "--port", check=between(0, 65535), help="Port on 127.0.0.1 (0 picks a free one).")
NO_OPEN = option("no_open", bool, False, "--no-open", help="Do not open a browser.")
