"""One registered assertion as the attempt records it: its status, reason, configuration and JSON form.

Entries are created at the call site, configured through their handle, settled (now or once a pending
judge or async predicate resolves) and read by the verdict fold and the attempt's record.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable
from typing import Any

from assay.agent.matchers import Matcher, Outcome

PENDING = "pending"
ERRORED = "errored"


class AssertionEntry:
    """One registered assertion; mutable only until the attempt is sealed."""

    __slots__ = (
        "index", "kind", "scope", "description", "status", "reason", "value", "measurement", "gated", "threshold",
        "optional", "at_least", "points", "key", "label", "group", "pending", "subject", "candidates", "stop",
        "details",
    )

    def __init__(self, index: int, kind: str, scope: str, description: str, *, measurement: bool = False) -> None:
        self.index = index
        self.kind = kind
        self.scope = scope
        self.description = description
        self.status = PENDING
        self.reason = ""
        self.value: float | None = None  # a measurement's score in [0, 1]
        self.measurement = measurement
        self.gated: bool | None = None  # None: the default for the eval kind
        self.threshold: float | None = None
        self.optional = False
        self.at_least: float | None = None
        self.points: float | None = None
        self.key: str | None = None
        self.label: str | None = None
        self.group: str | None = None
        self.pending: Awaitable[Outcome] | None = None
        self.subject: Any = None  # the checked value, returned by or_stop
        self.candidates: tuple[str, ...] = ()
        self.stop = False
        self.details: dict[str, Any] | None = None  # e.g. which judge model graded it, from cache or not

    def settle(self, outcome: Outcome) -> None:
        self.status = outcome.status
        self.reason = outcome.reason
        if outcome.score is not None:
            if not math.isfinite(outcome.score) or not 0.0 <= outcome.score <= 1.0:
                self.status = ERRORED
                self.reason = f"score {outcome.score!r} is outside [0, 1]"
            else:
                self.value = outcome.score
                self.measurement = True

    def fail_with(self, error: BaseException) -> None:
        self.status = ERRORED
        self.reason = f"{type(error).__name__}: {error}"

    async def resolve(self) -> None:
        pending, self.pending = self.pending, None
        if pending is None:
            return
        try:
            self.settle(await pending)
        except Exception as error:  # noqa: BLE001 - a broken predicate errors this entry, not the run
            self.fail_with(error)

    @property
    def below_threshold(self) -> bool:
        return self.threshold is not None and self.value is not None and self.value < self.threshold

    @property
    def text(self) -> str:
        """The call as written, e.g. `called_tool(tool_match('get_weather'))` (rendered lazily: it is only
        needed for reports)."""
        description = self.description
        if self.kind == "check":
            return f"check({description})"
        return description if isinstance(description, str) else str(description)

    @property
    def name(self) -> str:
        return self.label or self.key or self.text

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "kind": self.kind, "scope": self.scope, "description": self.text, "status": self.status,
        }
        if self.reason:
            document["reason"] = self.reason
        if self.value is not None:
            document["value"] = self.value
        for name in ("threshold", "at_least", "points", "key", "label", "group"):
            value = getattr(self, name)
            if value is not None:
                document[name] = value
        if self.optional:
            document["optional"] = True
        if self.gated is not None:
            document["gated"] = self.gated
        if self.candidates:
            document["candidates"] = list(self.candidates)
        if self.details:
            document["judge"] = self.details
        return document



def evaluate_matcher(entry: AssertionEntry, matcher: Matcher, value: Any) -> None:
    """Settle `entry` now, or leave it pending when the matcher is asynchronous."""
    try:
        outcome = matcher.evaluate(value)
    except Exception as error:  # noqa: BLE001 - a broken matcher errors this entry only
        entry.fail_with(error)
        return
    if inspect.isawaitable(outcome):
        entry.pending = outcome
    else:
        entry.settle(outcome)


__all__ = ["AssertionEntry", "ERRORED", "PENDING", "evaluate_matcher"]
