"""Helpers for sandbox tests: run evals through link planning, and look for leftover processes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from assay.agent import (
    Experiment,
    Turn,
    complete_evidence_coverage,
    define_eval,
    define_sandbox_agent,
    message,
)
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan, link_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun


def sandbox_agent(send=None, *, name="worker", **hooks):
    """A sandbox agent whose send is `send(input, ctx)` (default: says done, changes nothing)."""

    async def default(turn_input, ctx):
        return Turn([message("done")])

    return define_sandbox_agent(name=name, send=send or default, evidence_coverage=complete_evidence_coverage, **hooks)


def run_linked(agent, tests: dict[str, Any], *, keep: str | None = None, options: RunOptions | None = None,
               **experiment_fields):
    """Like agent_helpers.run_evals, but the plan is linked to sandboxes as `assay agent run` links it."""
    experiment = ExperimentEntry("exp", Experiment(agent=agent, **experiment_fields))
    entries = [EvalEntry(eval_id, test if hasattr(test, "kind") else define_eval(test)) for eval_id, test in tests.items()]
    plan = link_plan(build_plan([experiment], {"exp": entries}), keep)
    return asyncio.run(AgentRun(plan, options or RunOptions()).run())


def run_one_linked(agent, test, **kwargs):
    return run_linked(agent, {"e": test}, **kwargs).results[0]


def processes_carrying(marker: str) -> list[int]:
    """Pids of live processes whose environment holds `marker` (e.g. `ASSAY_SANDBOX=<id>`)."""
    found = []
    needle = marker.encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as environ:
                if needle not in environ.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            found.append(int(entry.name))
    return found


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def no_sandbox_left(base: Path) -> bool:
    """Nothing under `base` but this process's template pack cache (which goes when the process exits)."""
    if not base.exists():
        return True
    return not any(not path.name.startswith(".ledger-packs-") for path in base.iterdir())


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def sandbox_dir(tmp_path, monkeypatch):
    """Every sandbox of the test under its own folder, so a test can see that none is left behind."""
    base = tmp_path / "sandboxes"
    monkeypatch.setenv("ASSAY_SANDBOX_DIR", str(base))
    return base
