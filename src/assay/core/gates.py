"""Quality gates: thresholds turned into named pass/fail results, and the exit code they imply.

Kind-independent primitives; each kind decides which gates exist and in what order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


__all__ = [
    "Gate",
    "all_passed",
    "errors_gate",
    "max_count_gate",
    "min_pass_rate_gate",
    "pass_rate",
]


@dataclass(frozen=True, slots=True)
class Gate:
    name: str
    passed: bool
    message: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "passed": self.passed, "message": self.message}


def pass_rate(passed: int, failed: int, errors: int = 0, *, when_empty: float | None = 0.0) -> float | None:
    """passed / (passed + failed + errors), the one pass rate of every kind: errors count against it,
    skipped and ignored units are not in it. Nothing judged gives `when_empty` (GlassKit's gates and
    reports say 0.0; tables and the store say None, shown as "-")."""
    total = passed + failed + errors
    return passed / total if total else when_empty


def min_pass_rate_gate(name: str, passed: int, failed: int, errors: int, threshold: float) -> Gate:
    """Fails when nothing was evaluated: an empty selection must not pass a rate gate."""
    rate = pass_rate(passed, failed, errors)
    return Gate(
        name=name,
        passed=passed + failed + errors > 0 and rate >= threshold,
        message=f"{rate:.1%} pass rate (gate: >= {threshold:.1%})",
    )


def max_count_gate(name: str, count: int, maximum: int, noun: str = "failures", prefix: str = "") -> Gate:
    """`<prefix><count> <noun> (gate: <= <maximum>)`, e.g. prefix `"case: "` for a case gate."""
    return Gate(name=name, passed=count <= maximum, message=f"{prefix}{count} {noun} (gate: <= {maximum})")


def errors_gate(name: str, count: int, noun: str) -> Gate:
    """Passes only without errors: `no <noun>` / `<count> <noun>`."""
    if count == 0:
        return Gate(name=name, passed=True, message=f"no {noun}")
    return Gate(name=name, passed=False, message=f"{count} {noun}")


def all_passed(gates: Iterable[Gate]) -> bool:
    return all(gate.passed for gate in gates)

