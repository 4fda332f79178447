"""Scripted agents and a one-call runner for tests (imported as a top-level module)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any

from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, define_eval, define_score_eval
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun


def scripted_agent(turns: Sequence[Any] | Callable[[Any, Any], Any], *, coverage=complete_evidence_coverage, name="scripted", **hooks):
    """An agent answering with `turns` in order (or a function of (input, ctx)); records its inputs."""
    received = []
    queue = list(turns) if not callable(turns) else None

    async def send(turn_input, ctx):
        received.append((turn_input, ctx))
        if queue is None:
            result = turns(turn_input, ctx)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        return queue.pop(0) if queue else Turn()

    agent = define_agent(name=name, send=send, evidence_coverage=coverage, **hooks)
    return agent, received


def run_evals(
    agent,
    tests: dict[str, Any],
    *,
    score: bool = False,
    options: RunOptions | None = None,
    listener=None,
    **experiment_fields,
):
    experiment = ExperimentEntry("exp", Experiment(agent=agent, **experiment_fields))
    entries = []
    for eval_id, test in tests.items():
        definition = test if not callable(test) or hasattr(test, "kind") else (
            define_score_eval(test) if score else define_eval(test)
        )
        entries.append(EvalEntry(eval_id, definition))
    plan = build_plan([experiment], {"exp": entries})
    from assay.core.run_events import RunEvents

    events = RunEvents([listener]) if listener is not None else None
    return asyncio.run(AgentRun(plan, options or RunOptions(), events).run())


def run_one(agent, test, **kwargs):
    """The AttemptResult of one eval body run against `agent`."""
    return run_evals(agent, {"e": test}, **kwargs).results[0]


def statuses(result) -> list[str]:
    return [assertion["status"] for assertion in result.assertions]


def forget_modules_under(folder: Path) -> None:
    """Project modules imported by one test's evals must not answer another test's imports."""
    doomed = []
    for module_name, module in list(sys.modules.items()):
        try:
            paths = [getattr(module, "__file__", None) or "", *list(getattr(module, "__path__", None) or [])]
        except Exception:  # noqa: BLE001 - a namespace path that cannot recompute any more
            paths = []
        if any(str(path).startswith(str(folder)) for path in paths):
            doomed.append(module_name)
    for module_name in sorted(doomed, key=len, reverse=True):  # children before their packages
        sys.modules.pop(module_name, None)
