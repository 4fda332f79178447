"""Sandboxes shared serially between attempts: an eval group's members, or the attempts of an experiment
with `sandbox_reuse=True` (spec §5.6). A pool keeps each opened sandbox between tasks; the next task gets
it with its workdir reset to the post-preparation tree, while `$HOME`, `/tmp` and global installs persist.

Only idle sandboxes are held here, so a pool never has more sandboxes than attempts running at once. One
is retired (its teardowns run, then it is stopped) when it is older than the pool's lifetime, when the
next task needs other layers, when it can no longer be trusted, and at the end of the run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

__all__ = ["SandboxPool", "WarmSandbox", "pool_key"]


@dataclass(slots=True)
class WarmSandbox:
    """An opened sandbox between tasks: what the next task adopts and what retiring it needs."""

    backend: Any
    handle: Any  # the `Sandbox` its setups ran with: its teardowns get the same one
    core: Any  # that handle's SandboxCore (its teardowns run with fresh time and no cancel signal)
    layers: tuple[Any, ...]  # the binding's layers it was prepared with
    git: Any  # its change ledger's git (the repository lives as long as the sandbox)
    reset: Any  # a ChangeLedger over its workdir with the default rules: `restore(baseline)` resets it
    baseline: str  # the post-preparation tree every task starts from
    created: float  # time.monotonic() when it was created
    experiment_id: str
    tasks: int = 1  # tasks it has served, counting the one running
    # What its prepare steps and setups left running (a server): the sandbox's, not a task's, so it is not
    # stopped between tasks (its setups do not run again to restart it), only when the sandbox is retired.
    prepared_processes: tuple[Any, ...] = ()


class SandboxPool:
    """The idle sandboxes of one sharing key (see `pool_key`); `lifetime` seconds, or None for no limit."""

    __slots__ = ("name", "lifetime", "_idle")

    def __init__(self, name: str, lifetime: float | None = None) -> None:
        self.name = name
        self.lifetime = lifetime
        self._idle: list[WarmSandbox] = []

    def take(self, layers: tuple[Any, ...]) -> tuple[WarmSandbox | None, list[WarmSandbox]]:
        """An idle sandbox prepared with `layers` and young enough to reuse (or None: make a fresh one),
        and the sandboxes to retire first: expired ones, and one prepared otherwise when none matches,
        so that a fresh one takes its place instead of adding to the pool."""
        now = time.monotonic()
        expired = [warm for warm in self._idle if self.lifetime is not None and now - warm.created >= self.lifetime]
        self._idle = [warm for warm in self._idle if warm not in expired]
        for warm in self._idle:
            if warm.layers == layers:
                self._idle.remove(warm)
                warm.tasks += 1
                return warm, expired
        if self._idle:
            expired.append(self._idle.pop(0))
        return None, expired

    def give_back(self, warm: WarmSandbox) -> None:
        self._idle.append(warm)

    def drain(self) -> list[WarmSandbox]:
        """Every idle sandbox, handed over for retiring (the run is ending)."""
        idle, self._idle = self._idle, []
        return idle


def pool_key(planned: Any) -> tuple[str, float | None] | None:
    """The pool a planned attempt shares sandboxes in, with its lifetime: its eval group's under its
    experiment, or its experiment's with `sandbox_reuse`; None for a sandbox of its own."""
    if planned.sandbox is None or planned.sandbox.keep is not None:
        return None  # --keep-sandbox: each attempt keeps a sandbox of its own (sandbox_reuse refuses it)
    group = planned.eval.group
    if group is not None:
        return f"{planned.experiment.id}: eval group {group.id}", None
    experiment = planned.experiment.experiment
    if getattr(experiment, "sandbox_reuse", False):
        return f"{planned.experiment.id}: sandbox_reuse", experiment.lifetime
    return None
