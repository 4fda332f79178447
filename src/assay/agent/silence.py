"""One warning line when an agent with no time limit has sent nothing back for a long time.

An attempt without `timeout` waits for its agent as long as it takes (the default, as in NiceEval), so
an agent that stops answering after start-up would hold the run without a word. After five minutes
of silence in one send the run says so once per experiment, naming the agent, the eval and the option
that bounds the wait; it keeps waiting. ASSAY_SILENCE_WARNING_SECONDS changes the five minutes (0: off),
read by `core/silence.py` as for video adapters; the agent's sends overlap, so each has its own timer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from assay.core.silence import silence_warning_seconds

__all__ = ["SilenceWatch", "silence_warning_seconds"]


class SilenceWatch:
    """The run's watch over sends without a deadline: `start` when a send begins, cancel what it
    returns when the send settles. `warn(code, message, **fields)` is the run's warning event.

    One loop timer serves every send, armed for the oldest one still waiting: a timer per send would
    leave a cancelled handle in the loop's heap for each, and an instant agent never yields to the
    loop that prunes them (a 100,000-eval `run_evals` held 100,000, ~18 MiB)."""

    __slots__ = ("seconds", "_warn", "_warned", "_waiting", "_timer")

    def __init__(self, seconds: float, warn: Callable[..., Any]) -> None:
        self.seconds = seconds
        self._warn = warn
        self._warned: set[str] = set()  # experiments already named: one line each, not one per stalled send
        # Sends waiting, oldest first (insertion order is start order): each one's deadline, settings and label.
        self._waiting: dict[_Send, tuple[float, Any, str]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def start(self, settings: Any, label: str) -> _Send | None:
        """A watch on one send of the attempt `settings` describes; None when the attempt has a deadline."""
        if settings.timeout is not None or settings.experiment_id in self._warned:
            return None
        loop = asyncio.get_running_loop()
        send = _Send(self)
        self._waiting[send] = (loop.time() + self.seconds, settings, label)
        if self._timer is None:
            self._timer = loop.call_at(loop.time() + self.seconds, self._check)
        return send

    def _check(self) -> None:
        """The oldest sends are due: say so for those still silent, then wait for the next oldest."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self._waiting:
            send, (deadline, settings, label) = next(iter(self._waiting.items()))
            if deadline > now:
                self._timer = loop.call_at(deadline, self._check)
                return
            del self._waiting[send]
            self._say(settings, label)

    def _say(self, settings: Any, label: str) -> None:
        if settings.experiment_id in self._warned:
            return
        self._warned.add(settings.experiment_id)
        agent = getattr(settings.agent, "name", "agent")
        where = f"{settings.experiment_id}/{settings.eval_id} attempt {settings.attempt + 1}, {label}"
        self._warn(
            "agent_silent",
            f"agent {agent!r} has sent nothing back for {self.seconds:g}s ({where}) and has no time limit, so the "
            "run keeps waiting: set `timeout=` on the experiment or eval (or `[tool.assay] timeout`, `--timeout`) "
            "to stop waiting",
            agent=agent, experiment_id=settings.experiment_id, eval_id=settings.eval_id, seconds=self.seconds,
        )


class _Send:
    """One watched send; `cancel()` when it settles (as a timer handle would be)."""

    __slots__ = ("_watch",)

    def __init__(self, watch: SilenceWatch) -> None:
        self._watch = watch

    def cancel(self) -> None:
        self._watch._waiting.pop(self, None)
