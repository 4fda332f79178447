"""What evaluating a matcher or an assertion finds (`Outcome`, its three statuses), a value that was not
observed (`Unavailable`), and the `Matcher` base: what the attempt engine, the judge and the verdict read.

Kept apart from the matchers themselves (`assay.agent.matchers`, which re-exports all of these), so a run
imports the matcher classes only when an eval uses one.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

MATCHED = "matched"
MISMATCHED = "mismatched"
UNAVAILABLE = "unavailable"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What evaluating a matcher or an assertion found: matched, mismatched or unavailable, and why.

    Unavailable is its own status, never a falsy pass: code reads `status`, not truthiness."""

    status: str
    reason: str = ""
    score: float | None = None  # measurements only, in [0, 1]
    candidates: tuple[str, ...] = ()  # assertions: where the evidence items it counted started
    channel: str | None = None  # assertions: the incomplete evidence channel that made it unavailable


MATCHED_OUTCOME = Outcome(MATCHED)


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A value that was not observed (the evidence is incomplete); every matcher reads it as unavailable."""

    reason: str

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Unavailable({self.reason!r})"


class Matcher:
    """Base of every matcher: `evaluate(value)` returns an Outcome (or an awaitable of one)."""

    __slots__ = ()

    def evaluate(self, value: Any) -> Outcome | Awaitable[Outcome]:
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        return self.describe()


__all__ = ["MATCHED", "MATCHED_OUTCOME", "MISMATCHED", "UNAVAILABLE", "Matcher", "Outcome", "Unavailable"]
