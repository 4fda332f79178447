"""Progress for every kind, on stderr: a bar on a terminal, a plain line every few seconds elsewhere.

On a terminal: counts, passed and failed so far, and the time left, as a transient rich bar. In a
CI log or behind a pipe a bar is noise, so a plain line (`[412/1800] 398 passed · 14 failed ·
ETA 35s`) is written every `interval` seconds while units finish, and once at the end.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from assay.core.format import format_duration

__all__ = ["ProgressReporter"]



class ProgressReporter:
    name = "progress"

    def __init__(
        self, stream: TextIO | None = None, *, interval: float = 10.0, terminal: bool | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.terminal = terminal if terminal is not None else _is_terminal(self.stream)
        self.clock = clock
        self.total = self.done = self.passed = self.failed = self.errored = self.scored = 0
        self._ran = 0  # units finished by this run (reused ones take no time)
        self._started = 0.0
        self._bar: Any = None
        self._task: Any = None
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        self._last_line = ""

    # -- events ----------------------------------------------------------------------------------
    def run_started(self, event: Any) -> None:
        self.total, self.done = event.total, event.reused
        # A resumed run's counts start from what it reused, as its done count does ([5/5] 0 passed · 0 failed
        # · 3 errored left out the 2 failed attempts the checkpoint held).
        reused = getattr(event, "reused_verdicts", None) or {}
        self.passed, self.failed = reused.get("passed", 0), reused.get("failed", 0)
        self.errored, self.scored = reused.get("errored", 0), reused.get("scored", 0)
        self._started = self.clock()
        if not self.total:
            return
        if self.terminal:
            self._start_bar()
        else:
            self._ticker = threading.Thread(target=self._tick, name="assay-progress", daemon=True)
            self._ticker.start()

    def unit_durable(self, event: Any) -> None:
        verdict = event.verdict
        with self._lock:
            self.done += 1
            self._ran += 1
            if verdict == "passed":
                self.passed += 1
            elif verdict == "failed":
                self.failed += 1
            elif verdict == "errored":  # the eval could not be judged: not the same news as a failure
                self.errored += 1
            elif verdict == "scored":  # a score eval: neither a pass nor a failure
                self.scored += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, counts=self._counts())

    def run_finished(self, event: Any) -> None:
        self.close()
        # The closing line of a log; an interrupted or failed run says so in its own words instead.
        finished = event.outcome is not None and not event.interrupted and event.error is None
        if finished and not self.terminal and self.total and self._ran:
            self._write(self.line(final=True))

    def close(self) -> None:
        self._stop.set()
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    # -- text ------------------------------------------------------------------------------------
    def _counts(self) -> str:
        errored = f" · {self.errored} errored" if self.errored else ""
        scored = f" · {self.scored} scored" if self.scored else ""
        return f"{self.passed} passed · {self.failed} failed{errored}{scored}"

    def line(self, *, final: bool = False) -> str:
        """`[6/10] 2 passed · 1 failed · ETA 8.0s`; at the end of a finished run, the units it left undispatched
        (an early exit, a spent budget) as `· 4 not run`, not an ETA for units that will never come."""
        with self._lock:
            done, total, ran = self.done, self.total, self._ran
            text = f"[{done}/{total}] {self._counts()}"
        left = total - done
        if left and final:
            text += f" · {left} not run"
        elif left and ran:
            elapsed = self.clock() - self._started
            text += f" · ETA {format_duration(elapsed / ran * left)}"
        return text

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is not worth failing over
            pass

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            text = self.line()
            if text != self._last_line:  # nothing finished since the last line: stay quiet
                self._last_line = text
                self._write(text)

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        # When results (stdout) share the screen with the bar, they are printed above it rather than
        # through it; when stdout goes elsewhere (a file, a pipe) it is left alone.
        self._bar = Progress(
            BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[counts]}"), TextColumn("· ETA"),
            TimeRemainingColumn(), console=Console(file=self.stream), transient=True,
            redirect_stdout=_is_terminal(sys.stdout), redirect_stderr=False,
        )
        self._bar.start()
        self._task = self._bar.add_task("units", total=self.total, completed=self.done, counts=self._counts())


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
