"""How the `assay` process runs a command: its standard output guarded (a reader that leaves stops the
command as Ctrl-C does), SIGTERM taken as Ctrl-C, and its exit made without tearing the interpreter down."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from assay.core import stdout_guard


def run_as_process(command: Callable[[], object]) -> NoReturn:
    """Run the command line `command` (a click/typer app in standalone mode) as this process: stdout
    guarded, SIGTERM taken as Ctrl-C, and left without interpreter teardown with the command's status."""
    _open_closed_standard_streams()
    guard = stdout_guard.install()
    _terminate_as_interrupt()
    try:
        with guard.watching():  # a reader that leaves stops the command, even one that writes nothing
            command()
    except SystemExit as leaving:
        code: object = leaving.code
        if code == 130 and _typer_took_an_interrupt(leaving) and not guard.closed_by_reader:
            _say_on_stderr("Interrupted.")  # typer makes Ctrl-C while it parses the options a silent 130
    except BaseException as error:
        if not is_an_interrupt(error):
            raise
        # Before a command's own handling begins (typer parsing its options), or wrapped where the
        # command's handler could not see it: said here.
        code = 130
        if not guard.closed_by_reader:  # else the closed-stdout line below says it
            _say_on_stderr("Interrupted.")
    else:  # pragma: no cover - Typer's standalone mode always raises SystemExit
        code = 0
    guard.interrupts = False  # leaving already: a failed final flush only drops the output
    if guard.closed_by_reader and code == 130:
        _say_on_stderr(stdout_guard.closed_message(guard.resume_lines, keeps_results=guard.keeps_results,
                                                   write_error=guard.write_error))
        if guard.write_error is not None:
            code = 2  # an error writing the output, not an interruption
    _leave(code)


def _open_closed_standard_streams() -> None:
    """A standard stream the caller closed (`assay runs list >&-`, a daemon's cron job) is opened on the null
    device. Python leaves `sys.stdout` None then, so the first print was a traceback (exit 120); and the first
    file the command opened would take the free descriptor, so a process it started (an adapter, git) could
    write its standard output into that file. What the command prints is discarded, said once on stderr, and
    it keeps its exit code (a run is still recorded and gated)."""
    closed = []
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            closed.append(descriptor)
            os.open(os.devnull, os.O_RDWR)  # takes the lowest free descriptor: this one
    for descriptor, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if descriptor in closed or getattr(sys, name) is None:
            setattr(sys, name, open(descriptor, mode, encoding="utf-8", errors="backslashreplace", closefd=False))
    if 1 in closed:
        _say_on_stderr("Standard output is closed: what this command prints is discarded.")


def is_an_interrupt(error: BaseException) -> bool:
    """Whether `error` is Ctrl-C: a KeyboardInterrupt, or the RuntimeError Python 3.11 turns one into when
    it lands while a class is being made (`Error calling __set_name__ …`, raised from the interrupt; a
    lazily imported pydantic model, early in a run). Python 3.12 no longer wraps it."""
    return isinstance(error, KeyboardInterrupt) or (
        isinstance(error, RuntimeError) and isinstance(error.__cause__, KeyboardInterrupt)
    )


def _typer_took_an_interrupt(leaving: SystemExit) -> bool:
    """Whether `leaving` is typer's `Exit(130)` raised from a KeyboardInterrupt it caught itself (our
    commands that handle Ctrl-C say so and raise their `Exit` from None)."""
    exit_raised = leaving.__context__
    return exit_raised is not None and isinstance(exit_raised.__cause__, KeyboardInterrupt)


def _say_on_stderr(line: str) -> None:
    """A last line on stderr, which may be the closed pipe itself (`assay … 2>&1 | head`): then it is lost,
    and the exit code stays the command's (a failed write must not turn 130 into 1, a regression's code)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass


_SAME_SIGTERM_S = 1.0  # SIGTERMs this close to the first are the first one again


def _terminate_as_interrupt() -> None:
    """SIGTERM (a CI job cancelled, `kill`, a container stopping) ends a command the way Ctrl-C
    does: progress kept, adapters and their descendants stopped. A second SIGTERM ends it at once,
    unless it comes within `_SAME_SIGTERM_S` of the first: `timeout` (and some job runners) send one to
    the command and one more to its whole process group, which is the same request, not a second one."""
    import signal
    import time

    first: list[float] = []

    def interrupt(signum: int, frame: object) -> None:
        if not first:
            first.append(time.monotonic())
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        elif time.monotonic() - first[0] >= _SAME_SIGTERM_S:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

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
