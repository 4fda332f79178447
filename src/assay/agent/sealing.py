"""Sealing one attempt: its runtime state folded into the `AttemptResult` that is journaled and reported.

The verdict, the coverage over every turn, summed usage, the price-table cost estimate and the turns' JSON
are computed here once; an interrupted attempt keeps what it did but has no verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.agent.assertion_entry import PENDING
from assay.agent.evidence import sum_usage
from assay.agent.model import MISSING, event_to_json, usage_to_json
from assay.agent.pricing import estimate_cost
from assay.agent.record import EXECUTED, INTERRUPTED, AttemptResult
from assay.agent.slot_result import SlotResult
from assay.agent.verdict import fold_verdict
from assay.core.jsonvalue import jsonable

if TYPE_CHECKING:
    from assay.agent.attempt_state import AttemptRuntime


def seal_attempt(
    runtime: AttemptRuntime, duration: float, error: dict[str, Any] | None, skipped: bool, position: int,
    *, interrupted: bool = False,
) -> AttemptResult:
    settings = runtime.settings
    verdict = fold_verdict(settings.kind, runtime.entries, errored=error is not None, skipped=skipped)
    turns = [turn for line in runtime.lines for turn in line.turns]
    coverage = runtime.default_coverage
    for turn in turns:
        coverage = coverage.combined(turn.coverage)
    usage, every_turn = sum_usage(turns)
    cost = None
    if turns and every_turn and settings.pricing:
        costs = [estimate_cost(settings.model, turn.usage, settings.pricing) for turn in turns]
        cost = None if any(value is None for value in costs) else sum(costs)  # type: ignore[arg-type]
    # A `SlotResult` from the start: the run adds the slot's identity and decision in place, not to a copy.
    return SlotResult(
        experiment_id=settings.experiment_id,  # type: ignore[arg-type]
        eval_id=settings.eval_id,  # type: ignore[arg-type]
        ordinal=settings.attempt,
        attempt_id=settings.attempt_id,
        outcome=INTERRUPTED if interrupted else EXECUTED,
        verdict=None if interrupted else verdict.state,
        agent=settings.agent.name,
        model=settings.model,
        duration_seconds=duration,
        failing=[] if interrupted else list(verdict.failing),
        unavailable=[] if interrupted else list(verdict.unavailable),
        score=None if interrupted else verdict.score,
        score_state=None if interrupted else verdict.score_state,
        error=error,
        assertions=[entry.to_json() for entry in runtime.entries if not interrupted or entry.status != PENDING],
        diagnostics=[diagnostic.to_json() for diagnostic in settings.feedback.diagnostics],
        usage=usage_to_json(usage) if turns else None,
        estimated_cost_usd=cost,
        coverage=coverage.to_json(),
        turns=turns_json(runtime),
        tags=list(settings.tags),
        retries=dict(settings.feedback.retries) or None,
        position=position,
        eval_group=settings.eval_group.to_json() if settings.eval_group is not None else None,
        skip_reason=_skip_reason(runtime) if verdict.state == "skipped" and not interrupted else None,
    )


def _skip_reason(runtime: AttemptRuntime) -> str | None:
    """What the eval gave `t.skip(reason)`, kept so `show`, `--json` and `--junit` say why it was skipped."""
    reason = runtime.skip_reason
    if reason is None:
        return None
    return reason if isinstance(reason, str) else repr(reason)


def turns_json(runtime: AttemptRuntime) -> list[dict[str, Any]]:
    rows = []
    for line in runtime.lines:
        for turn in line.turns:
            row: dict[str, Any] = {
                "session": turn.session, "turn": turn.ordinal, "input": turn.input_text, "status": turn.status,
                "events": [event_to_json(event) for event in turn.events],
            }
            if turn.usage is not None:
                row["usage"] = usage_to_json(turn.usage)
            if turn.output_error is not None:
                row["output_error"] = turn.output_error
            if turn.data is not MISSING:
                # JSON-like (checked when the turn arrived) or a pydantic model; as the record stores it.
                row["data"] = jsonable(turn.data, non_finite_as_null=True)
            if turn.coverage is not runtime.default_coverage:
                row["coverage"] = turn.coverage.to_json()
            rows.append(row)
    return rows


__all__ = ["seal_attempt", "turns_json"]
