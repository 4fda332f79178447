"""Folding an attempt's execution outcome and assertion results into one verdict.

errored (execution error, or a required assertion unavailable/errored) > failed (a gate not met)
> skipped (`t.skip`) > passed; a score eval reads `scored` with its earned points instead of passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assay.agent.assertion_entry import ERRORED, AssertionEntry
from assay.agent.outcome import MATCHED, MISMATCHED, UNAVAILABLE

VERDICTS = ("errored", "failed", "skipped", "passed", "scored")


@dataclass(frozen=True, slots=True)
class Verdict:
    state: str  # passed | failed | errored | skipped | scored
    failing: tuple[str, ...] = ()  # names of gates not met
    unavailable: tuple[str, ...] = ()  # required assertions without evidence (or errored)
    score: float | None = None  # score evals: earned points (a lower bound when errored)
    score_state: str | None = None  # complete | partial (errored: a lower bound) | unavailable (unrankable)


def is_gate(entry: AssertionEntry, score_eval: bool) -> bool:
    if entry.gated is not None:
        return entry.gated
    # Booleans gate pass evals by default; measurements and score-eval booleans are soft.
    return not score_eval and not entry.measurement and entry.kind != "score"


def gate_failed(entry: AssertionEntry) -> bool:
    if entry.measurement:
        return entry.status == MATCHED and entry.below_threshold
    return entry.status == MISMATCHED


def fold_verdict(
    kind: str, entries: Sequence[AssertionEntry], *, errored: bool = False, skipped: bool = False
) -> Verdict:
    score_eval = kind == "score"
    failing: list[str] = []
    unavailable: list[str] = []
    earned = 0.0
    unrankable = False
    for entry in entries:
        status = entry.status
        if status in (UNAVAILABLE, ERRORED) or status == "pending":
            if score_eval:
                if entry.points is not None or entry.stop or entry.gated:
                    unrankable = True
                if status == ERRORED:
                    unavailable.append(entry.name)
            elif not entry.optional:
                unavailable.append(entry.name)
            continue
        if is_gate(entry, score_eval) and gate_failed(entry):
            failing.append(entry.name)
        if score_eval and entry.points is not None and status == MATCHED:
            earned += entry.points * (entry.value if entry.measurement and entry.value is not None else 1.0)
    score = earned if score_eval else None
    score_state = None if not score_eval else ("unavailable" if unrankable else "complete")
    if score_state == "complete" and (errored or unavailable):
        score_state = "partial"  # what it earned before the error: a lower bound, not its score
    if errored or unavailable:
        state = "errored"
    elif failing:
        state = "failed"
    elif skipped:
        state = "skipped"
    else:
        state = "scored" if score_eval else "passed"
    return Verdict(state, tuple(failing), tuple(unavailable), score, score_state)


__all__ = ["VERDICTS", "Verdict", "fold_verdict", "gate_failed", "is_gate"]
