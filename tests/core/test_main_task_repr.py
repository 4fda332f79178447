"""A run's outcome is never formatted as text when its event loop ends. Python 3.11's `asyncio.run` formats
the main task's repr, its result included, as it puts the SIGINT handler back; a run's outcome of 2,000
attempts cost 0.15 s each time, growing with the run. The pipeline hands asyncio a result with a constant
repr, and an agent run's outcome has a short one."""

from __future__ import annotations

import asyncio

from assay.agent.run_outcome import RunOutcome
from assay.core.run.pipeline import _held


class Counted:
    reprs = 0

    def __repr__(self) -> str:
        Counted.reprs += 1
        return "Counted()"


async def outcome() -> Counted:
    return Counted()


def test_the_pipelines_main_task_result_is_never_formatted() -> None:
    Counted.reprs = 0
    value = asyncio.run(_held(outcome())).value
    assert isinstance(value, Counted) and Counted.reprs == 0


def test_without_the_holder_asyncio_formats_the_result_on_this_python() -> None:
    """What the holder is for (on Pythons whose asyncio.run does it; nothing to guard on others)."""
    Counted.reprs = 0
    asyncio.run(outcome())
    import sys

    if sys.version_info[:2] == (3, 11):
        assert Counted.reprs > 0


def test_an_agent_runs_outcome_has_a_short_repr_whatever_its_size() -> None:
    outcome = RunOutcome(results=[object()] * 100_000, interrupted=False, budget_exhausted=[], duration_seconds=1.0)
    assert repr(outcome) == "<RunOutcome: 100000 attempts>"
