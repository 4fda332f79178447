"""The `assay` command: the root Typer app and its groups (video, agent, doc).

Groups import their machinery lazily so `assay --version` and `assay video list-samples` start fast.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
from typing import Any, NoReturn

import typer

from assay import __version__
from assay.cli.examples import add_examples
from assay.cli.view import view_command

try:  # recent typer ships its own copy of click
    from typer.core import TyperGroup
except ImportError:  # pragma: no cover
    from typer.main import TyperGroup

try:  # pydantic is imported only for a value that needs it
    from assay.cli.plain_params import coerce_plain_values_without_pydantic
except ImportError:  # pragma: no cover - a typer before its pydantic adapters coerces with click's own types
    pass
else:
    coerce_plain_values_without_pydantic()

# The command groups, imported only when named (`assay --version` imports none of them): name ->
# (module, attribute, the help shown in `assay --help` and atop the group's own help).
GROUPS: dict[str, tuple[str, str, str]] = {
    "video": ("assay.cli.video", "video_app", "Video evals: GlassKit Eval-compatible eval directories."),
    "agent": ("assay.cli.agent", "agent_app", "Agent evals: drive conversations, assert on what the agent did."),
    "doc": ("assay.cli.doc", "doc_app", "Document evals: eval-kit-compatible suites."),
    "runs": ("assay.cli.runs", "runs_app", "Run history: list, show, compare, reindex."),
    "labels": ("assay.cli.labels", "labels_app", "Human labels of units: export and import them as JSONL."),
    "judge": ("assay.cli.judge", "judge_app", "Model judges: agreement with human labels, the judge cache."),
}


class _LazyGroups(TyperGroup):
    """The root group: its command groups are built from their module on first use."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*GROUPS, *super().list_commands(ctx)]

    def get_command(self, ctx: Any, name: str) -> Any:
        if name not in GROUPS:
            return super().get_command(ctx, name)
        module, attribute, help_text = GROUPS[name]
        group = getattr(importlib.import_module(module), attribute)
        add_examples(group, f"{name} ")
        command = typer.main.get_command(group)
        command.name, command.help = name, help_text
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """A mistyped group is suggested too (typer suggests only the commands it has built)."""
        built = self.commands
        self.commands = {**dict.fromkeys(GROUPS), **built}  # names only, for the suggestion
        try:
            return super().resolve_command(ctx, args)
        finally:
            self.commands = built


app = typer.Typer(
    rich_markup_mode=None,  # plain help: flags shown as flags, options as `--name <type>`
    name="assay", help="Evaluate AI-powered applications against recorded cases, locally and in CI.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, cls=_LazyGroups,
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
)


def _version(value: bool) -> None:
    if value:
        print(f"assay {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors (for bug reports)."),
) -> None:
    from assay.cli import common
    from assay.errors import show_tracebacks

    common.DEBUG = debug
    show_tracebacks(debug)


app.command("view", help="Open the local results viewer (or export it as a static site).")(view_command)
add_examples(app)


def main() -> None:
    """The console script (and `python -m assay`). Tests drive `app` in-process instead."""
    from assay.cli import stdout_guard

    guard = stdout_guard.install()
    _terminate_as_interrupt()
    try:
        with guard.watching():  # a reader that leaves stops the command, even one that writes nothing
            app()
    except KeyboardInterrupt:  # pragma: no cover - commands handle their own interrupts
        code: object = 130
    except SystemExit as leaving:
        code = leaving.code
    else:  # pragma: no cover - Typer's standalone mode always raises SystemExit
        code = 0
    guard.interrupts = False  # leaving already: a failed final flush only drops the output
    if guard.closed_by_reader and code == 130:
        print(stdout_guard.closed_message(guard.resume_lines, keeps_results=guard.keeps_results), file=sys.stderr)
    _leave(code)


def _terminate_as_interrupt() -> None:
    """SIGTERM (a CI job cancelled, `kill`, a container stopping) ends a command the way Ctrl-C
    does: progress kept, adapters and their descendants stopped. A second SIGTERM ends it at once."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # A background job of a non-interactive shell (`cmd &` in a CI script) starts with SIGINT
        # ignored, which would drop the SIGINT sent above. Python's own handler is put back before
        # any run starts, so asyncio installs its orderly one: an interrupt raised anywhere else
        # could leave a run's threads and tasks waiting on each other.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupt)


def _leave(code: object) -> NoReturn:
    """Exit without tearing the interpreter down.

    Everything a command writes is closed (and fsynced where it must be durable) before it
    returns, so what normal shutdown adds after that is module teardown and a final collection
    over numpy, PyAV and pydantic: ~0.1 s per command, a tenth of a short video run. Shutdown's
    observable steps still run, in CPython's order: non-daemon threads are joined (with the
    thread-pool exit hooks), then atexit handlers, then the standard streams are flushed."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed to stderr, status 1, as Python does
        print(code, file=sys.stderr)
        status = 1
    try:
        shutdown_threads = getattr(threading, "_shutdown", None)
        if shutdown_threads is not None:
            shutdown_threads()
        run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
        if run_exit_functions is not None:
            run_exit_functions()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except BrokenPipeError:  # the reader went away (`assay … | head`): nothing left to tell it
        pass
    except BaseException:  # noqa: BLE001 - anything unusual: fall back to the normal shutdown
        sys.exit(status)
    os._exit(status)
