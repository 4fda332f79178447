"""Shared CLI plumbing: the one way a command fails (`fail`, or `failing` around a block), a bad option
value shown as click shows it, printing, handing a request to the pipeline, serving a local web app."""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NoReturn

import typer

from assay.core.console import stdout_lines
from assay.errors import AssayError, UsageError

DEBUG = False


def say(*lines: str) -> None:
    """Lines for a person on stdout, as written (no markup, no highlighting)."""
    writer = stdout_lines()
    for line in lines:
        writer.print(line)


def skipped_label_lines(lines: Iterable[str]) -> None:
    """Each line of `labels.jsonl` a command read and could not use, on stderr: skipped, and named."""
    for line in lines:
        # (read again by every command that reads labels: the warning says how to be rid of it)
        print(f"Skipped an unreadable label line: {line} (mend or delete that line of the file; it holds no label "
              "assay can read)", file=sys.stderr)


def show(as_json: bool, document: Any, lines: Iterable[str], **dumps: Any) -> None:
    """A read-back on stdout: `document` as indented JSON, or `lines` for a person."""
    if as_json:
        print(json.dumps(document, **{"indent": 2, "ensure_ascii": False, **dumps}))
    else:
        say(*lines)


@contextlib.contextmanager
def store(*, read_only: bool = True) -> Iterator[Any]:
    """The results store, open for the block; a store error (or any `AssayError` inside) is one `Error:` line."""
    from assay.core.results_store import open_store

    with failing(), open_store(read_only=read_only) as opened:
        yield opened


def fail(
    prefix: str, error: BaseException | str, *, stderr: bool = False, exit_code: int | None = None,
    internal: str | None = None,
) -> NoReturn:
    """The one way a command fails: `<prefix>: <message>` (then the error's notes), and exit.

    On stdout by default (GlassKit prints errors there), on stderr with `stderr`. A bug (not an
    `AssayError`) is named by its type after `internal` when given, else by its message alone
    (eval-kit's way); `--debug` adds the traceback. The exit code is the error's unless given."""
    if DEBUG and isinstance(error, BaseException):
        traceback.print_exception(error, file=sys.stderr)
    message = str(error)
    if internal is not None and isinstance(error, BaseException) and not isinstance(error, AssayError):
        message = f"{internal}{type(error).__name__}: {error}"
    lines = [f"{prefix}: {message}", *(getattr(error, "__notes__", None) or [])]
    for line in lines:
        if stderr:
            print(line, file=sys.stderr)
        else:
            say(line)
    code = exit_code if exit_code is not None else getattr(error, "exit_code", 2)
    raise typer.Exit(code)


@contextlib.contextmanager
def failing(prefix: str = "Error", *, catch: Any = AssayError, on_stdout: bool = False, **how: Any) -> Iterator[None]:
    """`fail(prefix, error, **how)` for an error of `catch` raised inside: assay's own way (on stderr, a
    bug named by its type), or `on_stdout` as GlassKit and the viewers fail."""
    try:
        yield
    except catch as error:
        fail(prefix, error, **{**({} if on_stdout else {"stderr": True, "internal": ""}), **how})


def refuse(error: UsageError | str | None, message: str = "", *, quoted: bool = True) -> NoReturn:
    """A usage error as click shows it (GlassKit's): a bad value of an option (`refuse("--at", "requires
    --case")`, or a `UsageError` naming its option, whose leading option name is dropped), or with no
    option (`refuse(None, "--time requires --case")`) a plain one."""
    if error is None:
        raise typer.BadParameter.__mro__[1](message)  # click's UsageError, as the installed Typer ships it
    if isinstance(error, UsageError):
        option, message = error.option or "", str(error)
        if error.option == "":  # a bad value of no option it names (GlassKit's adapter config): "Invalid value: …"
            raise typer.BadParameter(message)
        if not option:  # a usage error of no one option: click's plain one, not "Invalid value for ''"
            raise typer.BadParameter.__mro__[1](message)
        message = message[len(option) + 1:] if message.startswith(f"{option} ") else message
    else:
        option = error
    raise typer.BadParameter(message, param_hint=f"'{option}'" if quoted else option)


def checked(check: Callable[..., Any], *arguments: Any, quoted: bool = True) -> Any:
    """`check(*arguments)`, its usage error shown as a bad option value (see `refuse`)."""
    try:
        return check(*arguments)
    except UsageError as error:
        refuse(error, quoted=quoted)


def run_and_exit(kind: Any, request: Any, outputs: Any, *, resume: Any = None, execution: Any = None) -> NoReturn:
    """Hand the request to the pipeline and leave with its exit code; a run that kept its checkpoint
    leaves its resume lines with the stdout guard (said on stderr if stdout was closed)."""
    from assay.core.stdout_guard import keep_resume_lines, nothing_was_kept
    from assay.core.run import pipeline
    from assay.core.run.request import Execution

    result = pipeline.run(kind, request, outputs=outputs, resume=resume, execution=execution or Execution())
    keep_resume_lines(result.resume_lines)
    if result.finished.interrupted and not result.resume_lines:
        nothing_was_kept()  # stopped before its checkpoint held anything (or a kind that keeps no partial run)
    raise typer.Exit(result.exit_code)


def serve_locally(port: int, make_app: Callable[[Any], Any], url: Callable[[int], str], *, title: str, failure: str,
                  no_open: bool, lines: Sequence[str] = ()) -> NoReturn:
    """Serve `make_app(binding)` on 127.0.0.1:`port` until Ctrl-C, saying `<title>: <url>` (and `lines`) first,
    then exit 0; a port that cannot be bound is `<failure>: …` (exit 2)."""
    from assay.web.app import serve_locally

    with failing(failure, on_stdout=True):
        serve_locally(port, make_app, url, started=lambda address: say(f"{title}: {address}", *lines), say=say,
                      open_browser=not no_open)
    raise typer.Exit(0)
