"""One registered assertion as the attempt records it (its status, reason, configuration and JSON form), and
the handle an eval configures it through.

Entries are created at the call site, configured through their handle, settled (now or once a pending
judge or async predicate resolves) and read by the verdict fold and the attempt's record.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Generator
from operator import attrgetter
from typing import Any

from assay.agent.control import AuthoringError, StopEval
from assay.agent.outcome import MATCHED, Matcher, Outcome

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


def _text_setting(name: str, value: Any, example: str) -> None:
    """A handle's text setting (`.key(3)`, `.label(None)` went into the report as they were): non-empty text."""
    if not isinstance(value, str) or not value.strip():
        raise AuthoringError(f"{name} takes a non-empty text, got {value!r:.60}: .{example}")


class AssertionHandle:
    """Configures the one entry it was returned for; `await handle.or_stop()` is the only barrier."""

    __slots__ = ("_entry", "_score_eval")

    def __init__(self, entry: AssertionEntry, score_eval: bool) -> None:
        self._entry = entry
        self._score_eval = score_eval

    status = property(attrgetter("_entry.status"), doc="matched | mismatched | unavailable | errored | pending")
    reason = property(attrgetter("_entry.reason"))

    def key(self, key: str) -> AssertionHandle:
        _text_setting("key", key, 'key("mentions-refund")')
        if self._entry.key is not None:
            raise AuthoringError(f"key is already set on {self._entry.text}")
        self._entry.key = key
        return self

    def label(self, label: str) -> AssertionHandle:
        _text_setting("label", label, 'label("Mentions the refund")')
        if self._entry.label is not None:
            raise AuthoringError(f"label is already set on {self._entry.text}")
        self._entry.label = label
        return self

    def group(self, title: str) -> AssertionHandle:
        _text_setting("group", title, 'group("Refunds")')
        self._entry.group = title
        return self

    def optional(self) -> AssertionHandle:
        """Unavailable stays visible but does not affect the verdict."""
        if self._score_eval:
            raise AuthoringError("optional() is for pass evals")
        self._entry.optional = True
        return self

    def gate(self, threshold: float | None = None) -> AssertionHandle:
        """A boolean enters the verdict; a measurement enters it with `threshold`."""
        entry = self._entry
        if threshold is None and entry.measurement:
            raise AuthoringError(f"gate() on the measurement {entry.text} needs a threshold")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                      or not (math.isfinite(threshold) and 0 <= threshold <= 1)):
            raise AuthoringError(f"gate threshold must be a number in [0, 1], got {threshold!r}")
        entry.gated = True
        entry.threshold = threshold
        return self

    def at_least(self, threshold: float) -> AssertionHandle:
        """A local threshold shown as met or below; it never enters the verdict."""
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (
                math.isfinite(threshold) and 0 <= threshold <= 1):
            # as gate()'s: a measurement lies in [0, 1], so 2 would read "below" for ever
            raise AuthoringError(f"at_least threshold must be a number in [0, 1], got {threshold!r}")
        self._entry.at_least = threshold
        return self

    def score(self, points: float) -> AssertionHandle:
        if not self._score_eval:
            raise AuthoringError("score(points) is for score evals (define_score_eval)")
        if isinstance(points, bool) or not isinstance(points, (int, float)) or not math.isfinite(points) or points <= 0:
            raise AuthoringError("score points must be a finite number greater than 0")
        self._entry.points = float(points)
        return self

    def or_stop(self) -> Awaitable[Any]:
        """End the test here unless the assertion held; awaited, the checked value when it did.

        A check decided when it was made (every one but a judge's) stops the test here, at the call: a
        forgotten `await` would otherwise leave a coroutine nobody runs and the test going on."""
        entry = self._entry
        if entry.pending is None and entry.status != PENDING:
            return _Ready(_held_or_stop(entry))
        return _resolved_or_stop(entry)


class _Ready:
    """An awaitable of a value already known (`or_stop` of a decided check)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Any]:
        return self.value
        yield  # a generator: awaiting it returns the value at once


def _held_or_stop(entry: AssertionEntry) -> Any:
    if entry.status != MATCHED or entry.below_threshold:
        entry.stop = True
        raise StopEval(entry.text)
    return entry.subject


async def _resolved_or_stop(entry: AssertionEntry) -> Any:
    await entry.resolve()
    return _held_or_stop(entry)


__all__ = ["AssertionEntry", "AssertionHandle", "ERRORED", "PENDING", "evaluate_matcher"]
