"""What a command does when its reader goes away (`assay … | head -3`): stop as on Ctrl-C.

A closed pipe turns every later write into `BrokenPipeError`, raised wherever output happens
(a reporter callback on the journal thread, a rich render inside the event loop) and so able to
wedge a run halfway. The guard stands in for `sys.stdout`: the first failed write points fd 1 at
/dev/null, so nothing else fails, and interrupts the main thread once, so the command leaves by
the path Ctrl-C takes (checkpoint kept, adapters stopped, exit 130). A command that writes
nothing for a while (an agent run between its plan and its summary) would only find out at its
next write, so the guard also watches the pipe itself and acts the moment its reader is gone.
Text the stream cannot encode (a lone surrogate in a label) is written as backslash escapes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import stat
import sys
import threading
from typing import Any, TextIO
from collections.abc import Iterator, Sequence

from assay.core.console import write_escaped

_PIECE = 1 << 16  # characters written at a time (see `StdoutGuard.write`)
_WATCH_INTERVAL_MS = 1000  # how often the watcher looks at whether the command is done with it
_READER_GONE = BrokenPipeError(errno.EPIPE, "the reader of standard output is gone")  # as the watcher reports it


class StdoutGuard:
    """A transparent stand-in for a text stream whose writes never raise `BrokenPipeError`, nor
    `UnicodeEncodeError`: what the stream cannot encode is written as backslash escapes."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.closed_by_reader = False
        # Only a command's own body is stopped: help and usage errors, printed before it starts, just
        # lose their output when the reader goes early (`assay --help | head`), as any tool's would.
        self.interrupts = False
        self.resume_lines: list[str] = []  # how to continue the run, said on stderr when stdout is gone
        # True once a command that makes results has started (see `results_kept`); help, usage errors and
        # commands that only read or check leave nothing to speak of.
        self.keeps_results = False
        # The watcher saw the reader go while the command only reads (or had not started): its next write fails
        # and stops it then, so a command whose output was all written keeps its exit code (see `_watch`).
        self.reader_left = False
        self.stops_at_once = False  # a server, which writes nothing after its address (`stop_when_the_reader_leaves`)
        self.made_results = False  # the command's results exist (`results_made`): a reader leaving loses only output
        # Why stdout could not be written when it was not a reader leaving (a full disk, a device error): the
        # command stops as it does then, and the process says this error and exits 2 (`failed_write_message`).
        self.write_error: OSError | None = None

    def write(self, text: str) -> int:
        if self.closed_by_reader:
            return len(text)
        try:
            if len(text) <= _PIECE:
                return write_escaped(self._stream, text)
            # In pieces: Python's buffered writer reports one large write into a pipe whose reader leaves halfway
            # (`assay labels export | head -1`) as written whole, the rest lost without an error; only the next
            # write fails. So the command did not stop, and exited 0 with its output cut short.
            for start in range(0, len(text), _PIECE):
                write_escaped(self._stream, text[start : start + _PIECE])
            return len(text)
        except OSError as error:
            self._reader_gone(error)
            return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.closed_by_reader:
            return
        try:
            self._stream.flush()
        except OSError as error:
            self._reader_gone(error)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Around a command: a reader that goes away stops it as a failed write would, the moment it
        goes, even if the command writes nothing more. Once left, nothing interrupts the main thread
        (an interrupt sent just before is raised inside, where the caller handles it)."""
        self.watch_reader()
        try:
            yield
        finally:
            with self._lock:
                self.interrupts = False

    def watch_reader(self) -> None:
        """Watch the pipe (or socket) behind the stream from a daemon thread (see `watching`)."""
        try:
            descriptor = self._stream.fileno()
            mode = os.fstat(descriptor).st_mode
        except (OSError, ValueError, AttributeError):
            return
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):  # a terminal or a file never loses its reader
            threading.Thread(target=self._watch, args=(descriptor,), name="assay-stdout-reader", daemon=True).start()

    def _watch(self, descriptor: int) -> None:
        poller = select.poll()
        poller.register(descriptor, 0)  # no events asked: poll reports POLLERR and POLLHUP anyway
        while not self.closed_by_reader:
            for _, events in poller.poll(_WATCH_INTERVAL_MS):  # returns at once when the reader leaves
                if events & select.POLLNVAL:
                    return  # the descriptor was closed here: nothing left to watch
                if events & (select.POLLERR | select.POLLHUP):
                    with self._lock:
                        self.reader_left = True
                        stops_now = self.interrupts and (self.keeps_results or self.stops_at_once)
                    if stops_now:  # a run or a server, which may write nothing for long: stopped the moment it goes
                        self._reader_gone(_READER_GONE)
                    # A command that only reads is stopped by its next write instead (which fails): one that has
                    # written all it had to say (`| head -1` of a one-line answer, the reader leaving as the
                    # process closes) loses nothing and keeps its exit code, as any tool would.
                    return

    def _stop_if_the_reader_left(self) -> None:
        """What the watcher did not do when it saw the reader go (the command then only read): do it now."""
        if self.reader_left and self.interrupts and not self.closed_by_reader:
            self._reader_gone(_READER_GONE)

    def _reader_gone(self, error: OSError) -> None:
        """The stream cannot be written any more: its reader left (a pipe closed), or, for any other error, the
        file or device behind it failed (`> /dev/full`, a full disk): the same stop either way, not a traceback
        from wherever the write was."""
        with self._lock:
            if self.closed_by_reader:
                return
            if error.errno not in (errno.EPIPE, errno.EINVAL) and not isinstance(error, BrokenPipeError):
                self.write_error = error
            self.closed_by_reader = True
            _discard_descriptor(self._stream)
            if self.interrupts:  # under the lock: `watching` cannot end between the check and the signal
                # A real SIGINT to the main thread: it also wakes a blocking wait (the event loop's
                # select, a thread join) the way Ctrl-C does.
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def _discard_descriptor(stream: TextIO) -> None:
    """Point the stream's descriptor at /dev/null; what is still buffered is dropped with it."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, descriptor)
    finally:
        os.close(null)
    buffer = getattr(stream, "buffer", None)
    try:  # the bytes stuck in the buffer now go to /dev/null instead of failing again
        stream.flush()
        if buffer is not None:
            buffer.flush()
    except OSError:
        pass


def install() -> StdoutGuard:
    """Stand the guard in for `sys.stdout`; run the command inside `guard.watching()`."""
    guard = StdoutGuard(sys.stdout)
    sys.stdout = guard  # type: ignore[assignment]
    return guard


def results_kept() -> None:
    """Said as a command that makes results (a run, a merge, an import) starts: when its reader goes,
    the closed-stdout line says its finished results are kept."""
    _command_starts(keeps_results=True)


def nothing_to_keep() -> None:
    """Said by a command that only reads or checks (`runs compare`, `doc doctor`): when its reader
    goes, there are no finished results to speak of in the closed-stdout line."""
    _command_starts(keeps_results=False)


def _command_starts(*, keeps_results: bool) -> None:
    """From here on the reader going stops the command (at once if it has gone already)."""
    guard = sys.stdout
    if not isinstance(guard, StdoutGuard):
        return
    with guard._lock:
        # A reader gone before the command began (`… | true`): it stops before making anything to keep.
        guard.keeps_results = keeps_results and not (guard.closed_by_reader or guard.reader_left)
        if guard.interrupts or threading.current_thread() is not threading.main_thread():
            return
        guard.interrupts = True
        gone = guard.closed_by_reader
    if keeps_results and not gone:
        guard._stop_if_the_reader_left()  # seen by the watcher before the run began
    if gone:
        raise KeyboardInterrupt


def results_made() -> None:
    """Said once a command's results exist (a run's units settled, an export sent, logs imported): from here
    on a reader that leaves only loses the rest of the output. Stopping then would skip what still records
    them (a run's results store hears it after the console) and turn the command's own exit code into 130;
    Ctrl-C still stops it."""
    guard = sys.stdout
    if isinstance(guard, StdoutGuard):
        with guard._lock:
            guard.interrupts = False
            guard.made_results = True


def output_finished() -> bool:
    """Said once a command that only reads has written all it has to say: its output is handed over (flushed)
    with the guard no longer interrupting, so a reader that leaves after that (`| head -1` of a one-line answer,
    as the process closes) loses nothing, and the command keeps its exit code, as any tool whose writes all
    succeeded does. False when the reader left first and some of it was lost: the command then stops as on
    Ctrl-C. (Before, a reader leaving during the process's last milliseconds made it 0 or 130 by chance.)
    True too once the command said its results exist (`results_made`: frames written, a run exported): what
    was lost is output only, so it keeps its exit code rather than saying it "stopped as on Ctrl-C"."""
    guard = sys.stdout
    if not isinstance(guard, StdoutGuard):
        return True
    with guard._lock:
        guard.interrupts = False
    guard.flush()
    return not guard.closed_by_reader or guard.made_results


def stop_when_the_reader_leaves() -> None:
    """Said by a command that only reads but then writes nothing for long (a server, once it has printed its
    address): its reader leaving stops it at once, as a run's does, not at a next write that never comes."""
    guard = sys.stdout
    if not isinstance(guard, StdoutGuard):
        return
    with guard._lock:
        guard.stops_at_once = True
    guard._stop_if_the_reader_left()  # it left already: the watcher has stopped watching


def nothing_was_kept() -> None:
    """Said by a run that stopped before it had any progress to keep (no checkpoint, no result): the
    closed-stdout line then does not claim finished results are kept."""
    guard = sys.stdout
    if isinstance(guard, StdoutGuard):
        with guard._lock:
            guard.keeps_results = False


def keep_resume_lines(lines: Sequence[str]) -> None:
    """A run's resume lines (printed on stdout, which may be gone), for `closed_message` to repeat."""
    if isinstance(sys.stdout, StdoutGuard):
        sys.stdout.resume_lines[:] = lines


def closed_message(resume_lines: Sequence[str] = (), *, keeps_results: bool = True, write_error: OSError | None = None) -> str:
    """One line; with the run's resume lines (printed on the stdout nobody reads any more), it ends
    with the resume command. `write_error`: stdout failed (a full disk), which the line names instead."""
    text = "assay: standard output was closed, so the command stopped as on Ctrl-C"
    if write_error is not None:
        reason = write_error.strerror or str(write_error)
        text = (f"Error: standard output could not be written ({reason}; free space or write it elsewhere), so the "
                "command stopped as on Ctrl-C")
    text += "; finished results are kept." if keeps_results else "."
    resume = [line for line in resume_lines if line.startswith("Resume with ")]
    return f"{text} {resume[-1]}" if resume else text
