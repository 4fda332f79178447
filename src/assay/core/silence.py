"""One line when a peer with no time limit has sent nothing back for a long time.

An adapter or agent without a deadline is waited for as long as it takes (GlassKit and NiceEval do
the same), so one that stops answering after start-up would hold a run without a word. After five
minutes of silence the run says so once, naming the peer and the option that bounds the wait, and
keeps waiting. ASSAY_SILENCE_WARNING_SECONDS changes the five minutes (0: never).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Callable, Mapping

from assay.errors import UsageError

__all__ = ["DEFAULT_SILENCE_SECONDS", "SILENCE_VARIABLE", "SilenceTimer", "silence_warning_seconds"]

SILENCE_VARIABLE = "ASSAY_SILENCE_WARNING_SECONDS"
DEFAULT_SILENCE_SECONDS = 300.0


def silence_warning_seconds(environment: Mapping[str, str] = os.environ) -> float | None:
    """Seconds of silence before the warning (ASSAY_SILENCE_WARNING_SECONDS, default 300); None: never."""
    text = environment.get(SILENCE_VARIABLE)
    if text is None or not text.strip():
        return DEFAULT_SILENCE_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise UsageError(f"{SILENCE_VARIABLE} must be a number of seconds (0: never warn), got {text!r}")
    return seconds or None


class SilenceTimer:
    """Says once (over all its watches) that `seconds` passed without `heard()` during a watch.

    `start(say)` begins a watch, `heard()` marks an answer, `stop()` ends the watch. `heard` only
    notes the time (it runs once per answer, hundreds a second): the timer, when it fires early,
    sleeps again until `seconds` after the last answer. With `seconds` None it never says anything."""

    __slots__ = ("seconds", "said", "_say", "_last", "_handle")

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.said = False
        self._say: Callable[[], None] = lambda: None
        self._last = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def start(self, say: Callable[[], None]) -> None:
        if self.seconds is None or self.said:
            return
        loop = asyncio.get_running_loop()
        self._say = say
        self._last = loop.time()
        self._handle = loop.call_at(self._last + self.seconds, self._check)

    def heard(self) -> None:
        if self._handle is not None:
            self._last = asyncio.get_running_loop().time()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        assert self.seconds is not None
        loop = asyncio.get_running_loop()
        due = self._last + self.seconds
        if loop.time() < due:
            self._handle = loop.call_at(due, self._check)
            return
        self._handle = None
        self.said = True
        self._say()
