"""A remote worker's side of an agent run (what `--executor ray` starts on each worker): the project
discovered once, each (experiment, eval) pair linked once, agents and the judge kept warm between attempts.

The scheduler (`assay.agent.runner`) sends it `AttemptRequest`s — names only — and keeps budgets, the
journal and the reporters at home.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from assay.agent.plan import AttemptRequest, PlannedAttempt, link_plan
from assay.agent.record import AttemptResult
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun


@dataclass(frozen=True)
class WorkerReply:
    """A worker's answer to one request: the attempt (None: interrupted before it started) and what the
    worker's judge spent since its previous reply (`assay.judge.usage`), so the run's summary counts the
    judge calls its workers made, each once, as it counts its own."""

    result: AttemptResult | None
    judge_usage: dict[str, dict[str, int]] = field(default_factory=dict)
    judge_retries: dict[str, int] = field(default_factory=dict)


class AgentWorker:
    """A remote worker's side of an agent run: the project discovered once, agents and judge kept warm."""

    def __init__(self, root: str | Path, options: RunOptions, judge_cache_dir: str | None = None,
                 keep_sandbox: str | None = None, sandbox: str | None = None) -> None:
        from assay.agent.discovery import discover_evals, discover_experiments
        from assay.agent.project import load_dotenv

        root = Path(root)
        load_dotenv(root)
        self._experiments = {entry.id: entry for entry in discover_experiments(root)}
        self._evals = {entry.id: entry for entry in discover_evals(root)}
        if judge_cache_dir is not None:
            from assay.judge.cache import DirectoryCallCache

            options = replace(options, judge_cache=DirectoryCallCache(judge_cache_dir))
        self._run = AgentRun([], options)
        self._keep_sandbox = keep_sandbox
        self._sandbox = sandbox  # --sandbox: the provider every sandbox pair's template is swapped for
        self._linked: dict[tuple[str, str], PlannedAttempt] = {}  # each pair linked (its sandbox bound) once
        self._said_usage: dict[str, dict[str, int]] = {}  # the judge's spend as of the previous reply
        self._said_retries: dict[str, int] = {}

    async def call(self, request: AttemptRequest) -> WorkerReply:
        return WorkerReply(await self._attempt(request), *self._judge_since_last_reply())

    def _judge_since_last_reply(self) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
        judge: Any = self._run._own_judge
        if judge is None or not (judge.usage or judge.retries):
            return {}, {}
        from assay.judge.usage import usage_since

        usage, retries = judge.usage, judge.retries
        added = usage_since(usage, self._said_usage)
        retried = {reason: count - self._said_retries.get(reason, 0) for reason, count in retries.items()
                   if count != self._said_retries.get(reason, 0)}
        self._said_usage, self._said_retries = usage, dict(retries)
        return added, retried

    async def _attempt(self, request: AttemptRequest) -> AttemptResult | None:
        key = (request.experiment_id, request.eval_id)
        linked = self._linked.get(key)
        if linked is None:
            [linked] = link_plan(
                [PlannedAttempt(0, self._experiments[request.experiment_id], self._evals[request.eval_id], 0)],
                self._keep_sandbox, self._sandbox,
            )
            self._linked[key] = linked
        return await self._run.run_one(replace(linked, ordinal=request.ordinal))

    async def close(self) -> None:
        await self._run.close()


__all__ = ["AgentWorker", "WorkerReply"]
