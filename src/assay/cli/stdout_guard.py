"""What a command does when its reader goes away (`assay … | head -3`): stop as on Ctrl-C.

A closed pipe turns every later write into `BrokenPipeError`, raised wherever output happens
(a reporter callback on the journal thread, a rich render inside the event loop) and so able to
wedge a run halfway. The guard stands in for `sys.stdout`: the first failed write points fd 1 at
/dev/null, so nothing else fails, and interrupts the main thread once, so the command leaves by
the path Ctrl-C takes (checkpoint kept, adapters stopped, exit 130). Text the stream cannot
encode (a lone surrogate in a label) is written as backslash escapes, for the same reason.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from typing import Any, TextIO
from collections.abc import Sequence

from assay.core.console import write_escaped


class StdoutGuard:
    """A transparent stand-in for a text stream whose writes never raise `BrokenPipeError`, nor
    `UnicodeEncodeError`: what the stream cannot encode is written as backslash escapes."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.closed_by_reader = False
        self.interrupts = True
        self.resume_lines: list[str] = []  # how to continue the run, said on stderr when stdout is gone
        self.keeps_results = True  # False for a command that only reads or checks (see `nothing_to_keep`)

    def write(self, text: str) -> int:
        if self.closed_by_reader:
            return len(text)
        try:
            return write_escaped(self._stream, text)
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

    def _reader_gone(self, error: OSError) -> None:
        if error.errno not in (errno.EPIPE, errno.EINVAL) and not isinstance(error, BrokenPipeError):
            raise error
        with self._lock:
            if self.closed_by_reader:
                return
            self.closed_by_reader = True
            _discard_descriptor(self._stream)
        if self.interrupts:
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
    guard = StdoutGuard(sys.stdout)
    sys.stdout = guard  # type: ignore[assignment]
    return guard


def nothing_to_keep() -> None:
    """Said by a command that only reads or checks (`runs compare`, `doc doctor`): when its reader
    goes, there are no finished results to speak of in the closed-stdout line."""
    if isinstance(sys.stdout, StdoutGuard):
        sys.stdout.keeps_results = False


def closed_message(resume_lines: Sequence[str] = (), *, keeps_results: bool = True) -> str:
    """One line; with the run's resume lines (printed on the stdout nobody reads any more), it ends
    with the resume command."""
    text = "assay: standard output was closed, so the command stopped as on Ctrl-C"
    text += "; finished results are kept." if keeps_results else "."
    resume = [line for line in resume_lines if line.startswith("Resume with ")]
    return f"{text} {resume[-1]}" if resume else text
