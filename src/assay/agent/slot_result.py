"""An attempt as a run records it in its slot: the `AttemptResult` plus the slot's execution identity,
the plan's decision (why it was executed, carried or not dispatched) and, for a carried slot, the
reference to the published attempt it adopts instead of a copy of its transcript.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay.agent.record import NOT_DISPATCHED, AttemptResult

__all__ = ["CARRIED", "EARLY_EXIT", "SlotResult", "is_early_exit", "slot_result"]

CARRIED = "carried"  # an outcome: the slot adopts a published attempt of an earlier run
EARLY_EXIT = "early-exit"  # a decision code: not dispatched because another attempt of the eval passed

_BASE_FIELDS = tuple(spec.name for spec in dataclasses.fields(AttemptResult))


@dataclass(slots=True)
class SlotResult(AttemptResult):
    identity: dict[str, Any] | None = None  # ExecutionIdentity.to_json() the attempt ran (or was carried) under
    decision: dict[str, str] | None = None  # {action, code, message}: why the slot is what it is in this run
    carried_from: dict[str, str] | None = None  # {run_id, unit_id, attempt_id} of the adopted attempt

    def to_json(self) -> dict[str, Any]:
        document = AttemptResult.to_json(self)
        for name in ("identity", "decision", "carried_from"):
            value = getattr(self, name)
            if value is not None:
                document[name] = value
        return document

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> SlotResult:
        result = AttemptResult.from_json.__func__(cls, document)  # type: ignore[attr-defined]
        for name in ("identity", "decision", "carried_from"):
            value = document.get(name)
            if isinstance(value, Mapping):
                setattr(result, name, dict(value))
        return result


def slot_result(result: AttemptResult, **extra: Any) -> SlotResult:
    """`result` as a `SlotResult` (the same one when it already is), with `extra` fields set."""
    if not isinstance(result, SlotResult):
        result = SlotResult(**{name: getattr(result, name) for name in _BASE_FIELDS})
    for name, value in extra.items():
        setattr(result, name, value)
    return result


def is_early_exit(result: Any) -> bool:
    """A slot left undispatched because another attempt of its eval passed (not a failure, not incomplete)."""
    if result.outcome != NOT_DISPATCHED:
        return False
    decision = getattr(result, "decision", None)
    return bool(decision) and decision.get("code") == EARLY_EXIT
