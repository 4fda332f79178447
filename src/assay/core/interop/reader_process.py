"""An imported log read in a process of its own, beside the one that records and indexes it.

Reading a log (inflating, decoding, converting each sample to a unit, encoding its line) and indexing
it (each line inserted into the results store) are each about half of an import's CPU, and neither
lets go of the GIL for long. Where a second core is free, the reader is forked once the log's header
has been read (`LogFormat.read` reads it; its units are a generator not yet started) and hands its
lines over a pipe, while this process hashes the file, writes the record and indexes each line as it
arrives: 100,000 Inspect samples in ~1.7 s instead of ~2.9 (docs/benchmarks.md).

What crosses the pipe: each unit's line as the record keeps it, then a NUL (never in a line: JSON
escapes it) and a pickle of how the reading ended: the log's `summary` as the importer filled it, or
the exception it raised (the same type and message here, its traceback in a note for `--debug`).
The reader ignores SIGINT: Ctrl-C reaches this process, whose cleanup kills it; if this process dies
first, the reader's next write fails and it exits.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.core.interop.log import ImportFormatError, ImportedLog
from assay.core.record import UnitLine

__all__ = ["ForkedReader", "read_beside"]

_END = b"\x00"
_PIPE_BYTES = 1 << 20  # the pipe's capacity asked for (Linux), and what is read from it at a time
_BATCH = 256  # lines the reader writes at once
_DRAINED_AT_MOST = 32 << 20  # bytes `drain` holds; past them the reader waits on the pipe, so memory stays flat


def _can_fork() -> bool:
    """Forking is safe and worth it: Linux (elsewhere Python spawns, or a forked child may not use the
    system's libraries), a second core this process may run on, and no other thread, whose locks the
    child would inherit held."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except OSError:
        cores = os.cpu_count() or 1
    return cores > 1 and threading.active_count() == 1


def read_beside(path: Path, log: ImportedLog) -> ForkedReader | None:
    """`log`'s units (of the file `path`) read in a forked process, or None where that is not done (`_can_fork`)."""
    if not _can_fork():
        return None
    try:
        return ForkedReader(path, log)
    except OSError:  # no process to be had (a limit on processes or memory): read it here
        return None


class ForkedReader:
    """The units of `log`, read by a child process; iterate once. When they are exhausted, `log.summary`
    holds what the child's importer put in it. `drain` takes in what the child has written so far
    without waiting (so that it does not wait on a full pipe while this process is busy elsewhere), up
    to `_DRAINED_AT_MOST` bytes in all; `close` stops the child wherever it is."""

    def __init__(self, path: Path, log: ImportedLog) -> None:
        self._path = path
        self._log = log
        self._pending: list[bytes] = []
        self._drained = 0
        read_end, write_end = os.pipe()
        try:
            import fcntl

            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        except (ImportError, AttributeError, OSError):
            pass  # the default capacity: more switches between the two, nothing else
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            raise
        if pid == 0:  # the reader: never returns
            os.close(read_end)
            _read_into(log, write_end)
        os.close(write_end)
        self._pid: int | None = pid
        self._fd: int | None = read_end
        self._exhausted = False

    def drain(self) -> None:
        fd = self._fd
        if fd is None or self._exhausted or self._drained >= _DRAINED_AT_MOST:
            return
        os.set_blocking(fd, False)
        try:
            while chunk := os.read(fd, _PIPE_BYTES):
                self._pending.append(chunk)
                self._drained += len(chunk)
                if self._drained >= _DRAINED_AT_MOST:
                    return
            self._exhausted = True  # end of file: the child has written everything
        except BlockingIOError:
            pass
        finally:
            os.set_blocking(fd, True)

    def _chunks(self) -> Iterator[bytes]:
        pending, self._pending = self._pending, []
        pending.reverse()
        while pending:
            yield pending.pop()  # each let go of once split
        while not self._exhausted and (chunk := os.read(self._fd, _PIPE_BYTES)):
            yield chunk

    def __iter__(self) -> Iterator[UnitLine]:
        parse = UnitLine.parse
        rest = b""
        chunks = self._chunks()
        for chunk in chunks:
            end = chunk.find(_END)
            if end >= 0:
                lines = (rest + chunk[:end]).split(b"\n")
                for raw in lines[:-1]:
                    yield parse(raw.decode())
                self._ended(b"".join([chunk[end + 1:], *chunks]), lines[-1])
                return
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for raw in lines:
                yield parse(raw.decode())
        self._ended(None, rest)

    def _ended(self, frame: bytes | None, rest: bytes) -> None:
        status = self._wait()  # it has written its last: it is exiting
        self.close()
        try:
            how, *what = pickle.loads(frame) if frame is not None and not rest else (None,)
        except Exception:  # noqa: BLE001 - anything a damaged frame may raise
            how = None
        if how is None:
            ended = (f"killed by signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status)
                     else f"exit status {os.waitstatus_to_exitcode(status)}")
            raise ImportFormatError(f"{self._path}: the process reading the log stopped before the log's end ({ended}); "
                                    "import it again")
        if how == "summary":
            self._log.summary.clear()
            self._log.summary.update(what[0])
            return
        error, child_traceback = what
        error.add_note(f"(raised while reading the log, in its reader process:)\n{child_traceback}")
        raise error

    def _wait(self) -> int:
        pid, self._pid = self._pid, None
        return os.waitpid(pid, 0)[1] if pid is not None else 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)  # ended already, or stopped mid-log: nothing of it is wanted
            except ProcessLookupError:
                pass
            os.waitpid(self._pid, 0)
            self._pid = None


def _read_into(log: ImportedLog, fd: int) -> None:
    """The child: every unit's line, then how the reading ended, into `fd`; then exit at once (no
    `atexit`, no flushing of buffers it inherited)."""
    status = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with open(fd, "wb", buffering=_PIPE_BYTES) as out:
            try:
                batch: list[str] = []
                for line in log.units:
                    batch.append(line.text)
                    if len(batch) == _BATCH:
                        batch.append("")
                        out.write("\n".join(batch).encode())
                        batch = []
                if batch:
                    batch.append("")
                    out.write("\n".join(batch).encode())
                ending: tuple[Any, ...] = ("summary", dict(log.summary))
            except BrokenPipeError:
                raise
            except BaseException as error:  # noqa: BLE001 - handed to the parent, which raises it
                ending = ("error", _picklable(error), traceback.format_exc())
            out.write(_END + pickle.dumps(ending))
    except BaseException:  # noqa: BLE001 - the parent is gone or stopped us: nothing to tell
        status = 1
    finally:
        os._exit(status)


def _picklable(error: BaseException) -> BaseException:
    """`error`, or a plain one with its message when it does not survive a round trip through pickle."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - whatever its class does
        return ImportFormatError(f"{type(error).__name__}: {error}")
