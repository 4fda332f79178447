"""How much adapter output assay holds at once: one budget, shared by every adapter process of a run.

The process transport asks it before a message line grows past the size every process may hold freely.
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Protocol

__all__ = ["BudgetHolder", "DEFAULT_MESSAGE_BUDGET", "MessageBudget"]

MEBIBYTE = 1024 * 1024


class BudgetHolder(Protocol):
    def budget_granted(self) -> None:
        """It is this holder's turn (it was waiting); it may now grow its line up to the capacity."""

    def budget_stalled(self, idle_s: float) -> None:
        """This holder's line made no progress for `idle_s` while others waited; it must give up its turn."""


class MessageBudget:
    """Bytes of adapter messages being read at once, shared by the processes given the same instance.

    A line up to `free_line_bytes` is read without asking (each process reads one line at a time,
    so that is at most `free_line_bytes` per process). A longer line needs the budget's turn,
    which one line holds at a time, in the order they asked, until it is complete and parsed or
    refused for growing past `capacity`. Lines are never split between turns, so waiting cannot
    deadlock; the one way to block the others is to stop half way through a long line, and a
    holder that makes no progress for `stall_s` while others wait loses its turn (its process fails).
    So however many adapters send large messages at once, assay holds at most `capacity` bytes of
    them plus about two `free_line_bytes` per process (a short line and one read chunk), rather
    than a protocol limit's worth each; parsing the one large line briefly takes as much again."""

    def __init__(self, capacity: int, *, free_line_bytes: int = MEBIBYTE, stall_s: float = 5.0) -> None:
        if capacity < free_line_bytes:
            raise ValueError("a message budget must be at least free_line_bytes")
        self.capacity = capacity
        self.free_line_bytes = free_line_bytes
        self.stall_s = stall_s
        self._holder: BudgetHolder | None = None
        self._progress = 0.0
        self._waiters: collections.deque[BudgetHolder] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        self._loops: dict[int, asyncio.AbstractEventLoop] = {}  # the loop of each holder and waiter

    def try_take(self, holder: BudgetHolder) -> bool:
        """Take the turn if it is free and nobody is ahead in line."""
        self._forget_closed_loops()
        if self._holder is holder:
            return True
        if self._holder is not None or self._waiters:
            return False
        self._holder = holder
        self._loops[id(holder)] = asyncio.get_running_loop()
        self._progress = time.monotonic()
        return True

    def wait(self, holder: BudgetHolder) -> None:
        """Queue for the turn; `holder.budget_granted()` is called when it comes."""
        self._forget_closed_loops()
        if holder is not self._holder and holder not in self._waiters:
            self._waiters.append(holder)
            self._loops[id(holder)] = asyncio.get_running_loop()
        self._watch_for_stall()

    def _forget_closed_loops(self) -> None:
        # The default budget outlives event loops (one per asyncio.run); a process abandoned with
        # its loop can neither finish its line nor be told it stalled, so it holds nothing.
        def closed(holder: BudgetHolder) -> bool:
            loop = self._loops.get(id(holder))
            return loop is None or loop.is_closed()

        if self._timer is not None and self._timer_loop is not None and self._timer_loop.is_closed():
            self._timer = None
        for waiter in [waiter for waiter in self._waiters if closed(waiter)]:
            self._waiters.remove(waiter)
            self._loops.pop(id(waiter), None)
        if self._holder is not None and closed(self._holder):
            self._loops.pop(id(self._holder), None)
            self._holder = None

    def progressed(self, holder: BudgetHolder) -> None:
        if holder is self._holder:
            self._progress = time.monotonic()

    def release(self, holder: BudgetHolder) -> None:
        """Give up the turn (or the place in line)."""
        if holder is not self._holder:
            if holder in self._waiters:
                self._waiters.remove(holder)
                self._loops.pop(id(holder), None)
            return
        self._holder = None
        self._loops.pop(id(holder), None)
        self._forget_closed_loops()
        if self._waiters:
            self._holder = self._waiters.popleft()
            self._progress = time.monotonic()
            self._holder.budget_granted()
        self._watch_for_stall()

    def _watch_for_stall(self) -> None:
        if self._timer is not None or self._holder is None or not self._waiters:
            return
        delay = max(0.0, self._progress + self.stall_s - time.monotonic())
        self._timer_loop = asyncio.get_running_loop()
        self._timer = self._timer_loop.call_later(delay, self._check_stall)

    def _check_stall(self) -> None:
        self._timer = None
        holder = self._holder
        if holder is None or not self._waiters:
            return
        idle = time.monotonic() - self._progress
        if idle >= self.stall_s:
            holder.budget_stalled(idle)
            self.release(holder)  # in case the holder did not
        self._watch_for_stall()


# One budget for the whole run: every process started without its own shares it. Two lines this
# size in memory at once (the bytes and their decoded text) stay well inside what a run may take.
DEFAULT_MESSAGE_BUDGET = MessageBudget(256 * MEBIBYTE)
