"""The `assay` command: the root Typer app and its groups (video, agent, doc).

Groups import their machinery lazily so `assay --version` and `assay video list-samples` start fast.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

import typer

from assay import __version__
from assay.cli.agent import agent_app
from assay.cli.doc import doc_app
from assay.cli.examples import add_examples
from assay.cli.judge import judge_app
from assay.cli.labels import labels_app
from assay.cli.runs import runs_app
from assay.cli.video import video_app
from assay.cli.view import view_command

app = typer.Typer(
    rich_markup_mode=None,  # plain help: flags shown as flags, options as `--name <type>`
    name="assay", help="Evaluate AI-powered applications against recorded cases, locally and in CI.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
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


app.add_typer(video_app, name="video", help="Video evals: GlassKit Eval-compatible eval directories.")
app.add_typer(agent_app, name="agent", help="Agent evals: drive conversations, assert on what the agent did.")
app.add_typer(doc_app, name="doc", help="Document evals: eval-kit-compatible suites.")
app.add_typer(runs_app, name="runs", help="Run history: list, show, compare, reindex.")
app.add_typer(labels_app, name="labels", help="Human labels of units: export and import them as JSONL.")
app.add_typer(judge_app, name="judge", help="Model judges: agreement with human labels, the judge cache.")
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
