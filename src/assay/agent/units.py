"""An agent run as a run record: one unit per (experiment, eval, attempt), transcript kept for the viewer.

Unit ids are `experiment/eval#attempt` (1-based), stable across runs of the same experiment files. A
carried slot's unit references the adopted attempt's run and unit instead of copying its transcript.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.agent.evidence import sum_counts
from assay.core.gates import Gate
from assay.core.record import (
    RunManifest,
    UnitResult,
    dumps_if_plain,
    dumps_storable,
    jsonable,
)

__all__ = ["agent_run_manifest", "agent_run_units", "agent_unit", "agent_unit_id", "agent_unit_text", "plain_text"]

# `scored` attempts carry a score, not a verdict: shown, but not counted in pass rates or compare.
_VERDICTS = {"passed": "passed", "failed": "failed", "errored": "errored", "skipped": "skipped", "scored": "ignored"}


def _reason(result: Any) -> str:
    if result.error:
        return f"{result.error.get('code', 'error')}: {result.error.get('message', '')}".strip()
    if result.failing:
        return "; ".join(str(item) for item in result.failing)
    if result.verdict is None:
        # Why it never ran (a budget spent, an early exit), as `agent show` says it; the outcome alone read
        # `not run (not_dispatched)` in the record, JUnit and the viewer.
        decision = getattr(result, "decision", None)
        if isinstance(decision, dict) and decision.get("message"):
            return f"not run: {decision['message']}"
        return f"not run ({result.outcome})"
    if result.verdict == "skipped" and getattr(result, "skip_reason", None):
        return f"skipped: {result.skip_reason}"
    if result.unavailable:
        return "unavailable: " + "; ".join(str(item) for item in result.unavailable)
    return ""


def agent_unit(result: Any) -> UnitResult:
    """`result` is an `AttemptResult` (read by attribute, so new fields never break the record)."""
    document = jsonable(result.to_json(), non_finite_as_null=True)
    locator = document["locator"] = result.locator
    usage = jsonable(result.usage, non_finite_as_null=True) if result.usage else None
    return _unit(result, document, usage, locator)


def agent_unit_text(result: Any, document: dict[str, Any], document_text: str | None = None) -> str:
    """The record line of `agent_unit(result)`; `document` is `result.to_json()`, given up by the
    caller (it becomes the detail). Most attempts hold nothing `jsonable` would change, and their
    line is encoded straight from the attempt, with no copy made first. `document_text` is
    `plain_text(document)`, made for the journal: the detail is then spliced in, not encoded again."""
    locator = result.locator
    if document_text not in (None, "{}"):
        head = _unit(result, None, result.usage or None, locator).to_json()
        reference = head.pop("carried_from", None)  # a carried unit's reference follows its detail
        head_text = dumps_if_plain(head)
        tail = dumps_if_plain(reference) if reference is not None else ""
        if head_text is not None and tail is not None:
            tail = f',"carried_from":{tail}' if tail else ""
            return f'{head_text[:-1]},"detail":{document_text[:-1]},"locator":{json.dumps(locator)}}}{tail}}}'
    document["locator"] = locator
    text = dumps_if_plain(_unit(result, document, result.usage or None, locator).to_json())
    return text if text is not None else dumps_storable(agent_unit(result).to_json())


def plain_text(document: dict[str, Any]) -> str | None:
    """`document` as compact JSON when `jsonable` would change nothing in it, else None: the one
    encoding both the journal line and the record line of an attempt can share. (An attempt's
    non-finite numbers are stored as null, as `JSON.stringify` writes them, on either path.)"""
    return dumps_if_plain(document)


def _unit(result: Any, detail: dict[str, Any], usage: Any, locator: str) -> UnitResult:
    from assay.agent.report import attempt_title, failure_lines

    carried_from = getattr(result, "carried_from", None)
    return UnitResult(
        unit_id=agent_unit_id(result.experiment_id, result.eval_id, result.ordinal),
        verdict=_VERDICTS.get(result.verdict or "", "skipped"),
        group=f"{result.experiment_id}/{result.eval_id}",
        title=attempt_title(result),
        details="\n".join(failure_lines(result)),
        expected=None,
        # A score is what a score eval measured: JUnit shows it, and shows the attempt as a case that ran.
        observed={"score": jsonable(result.score, non_finite_as_null=True)}
        if result.score is not None or result.verdict == "scored" else None,
        reason=_reason(result),
        duration_seconds=result.duration_seconds,
        usage=usage,
        cost_usd=result.estimated_cost_usd,
        # An eval group's member says its group, which JUnit shows as the case's `eval_group` property.
        artifacts={"locator": locator, "properties": {"eval_group": result.eval_group["id"]}}
        if getattr(result, "eval_group", None) else {"locator": locator},
        detail=detail,
        carried_from={"run_id": carried_from["run_id"], "unit_id": carried_from["unit_id"]} if carried_from else None,
    )


def agent_unit_id(experiment_id: str, eval_id: str, ordinal: int) -> str:
    """`experiment/eval#n`: the same attempt of the same eval pairs up across runs (n counts from 1)."""
    return f"{experiment_id}/{eval_id}#{ordinal + 1}"


def _total_usage(results: Sequence[Any]) -> dict[str, Any] | None:
    return sum_counts(result.usage for result in results) or None


def agent_run_units(outcome: Any) -> Iterable[UnitResult]:
    """The run's units in plan order: its spool when they were spooled during the run (read from
    disk as iterated), else built from its results."""
    spool = getattr(outcome, "spool", None)
    if spool is not None:
        return spool
    return [agent_unit(result) for result in outcome.results]


def agent_run_manifest(
    outcome: Any, invocation: Mapping[str, Any], root: Path, exit_code: int, checkpoint_path: Path | None = None,
    run_id: str | None = None,
) -> RunManifest:
    results = outcome.summaries
    costs = [result.estimated_cost_usd for result in results if result.estimated_cost_usd is not None]
    agents: dict[str, dict[str, Any]] = {}
    for result in results:
        agents.setdefault(result.experiment_id, {"agent": result.agent, "model": result.model})
    failed = sum(result.verdict == "failed" for result in results)
    errored = sum(result.verdict == "errored" for result in results)
    # What was found, as every gate's message says it (not the rule, which a FAIL line would contradict).
    found = f"{failed} failed and {errored} errored attempt(s)" if failed or errored else "no failed or errored attempts"
    gates = [Gate("attempts", not (failed or errored), found)]
    gates += [Gate(f"budget {experiment}", False, "budget exhausted") for experiment in outcome.budget_exhausted]
    counts: dict[str, int] = {}
    for result in results:
        key = result.verdict or result.outcome
        counts[key] = counts.get(key, 0) + 1
    return RunManifest.begin(
        "agent",
        root,
        run_id=run_id,
        title=f"{root.name}: {', '.join(agents) or 'no experiments'}",
        identity={"project": str(root), "experiments": agents},
        options=jsonable(dict(invocation)),
        gates=[gate.to_json() for gate in gates],
        summary={
            "attempts": counts, "checkpoint": str(checkpoint_path) if checkpoint_path else None,
            # Slots that adopted an earlier run's attempt: counted under their verdict, never sent to the agent.
            "carried": sum(1 for result in results if getattr(result, "carried_from", None)),
            # What this invocation's judge calls cost (`assay.agent.judging.judge_spend`): kept with the run.
            **({"judge_usage": outcome.judge_usage} if getattr(outcome, "judge_usage", None) else {}),
        },
        usage=_total_usage(results),
        cost_usd=sum(costs) if costs else None,
        success=exit_code == 0,
        exit_code=exit_code,
        duration_seconds=outcome.duration_seconds,
    )
