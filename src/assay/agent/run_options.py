"""The options of an agent run's scheduler (`assay.agent.runner.AgentRun`), and its default concurrency."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.agent.silence import silence_warning_seconds

if TYPE_CHECKING:
    from assay.agent.judging import Judge

DEFAULT_CONCURRENCY = 10
PREFLIGHT_TIMEOUT_S = 3.0  # a judge that cannot answer a model list this fast is not worth waiting on


@dataclass(frozen=True)
class RunOptions:
    """How an agent run runs its attempts: concurrency, the timeout and budget layers, prices, the judge,
    retries, early exit (the project's and the command line's settings, resolved once per run)."""

    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float | None = None  # --timeout: wins over experiment, eval and config
    config_timeout: float | None = None  # [tool.assay] timeout: the last resort
    budget: float | None = None  # --budget: replaces each experiment's budget
    pricing: Mapping[str, Any] = field(default_factory=dict)
    judge: Judge | None = None  # None: the built-in LLM judge, configured per project / experiment / eval
    project_judge: Mapping[str, Any] | None = None  # [tool.assay.judge]: the lowest judge layer
    judge_cache: Any = None  # an assay.judge CallCache; None: cached in memory for this run
    run_id: str = "run"
    handle_sigint: bool = False  # the CLI turns Ctrl-C into a clean interruption
    retry_base_seconds: float = 5.0  # backoff before resending a send the agent provably rejected
    early_exit: bool | None = None  # --early-exit / --no-early-exit: wins over experiment and eval
    shard: tuple[str, int] | None = None  # --shard i/n and the whole plan's slots: named in the plan line
    judge_preflight_timeout: float = PREFLIGHT_TIMEOUT_S  # seconds for each judge endpoint's probe before dispatch
    # Seconds a send with no deadline may stay silent before the run warns once (ASSAY_SILENCE_WARNING_SECONDS).
    silence_warning_seconds: float | None = field(default_factory=silence_warning_seconds)


__all__ = ["DEFAULT_CONCURRENCY", "PREFLIGHT_TIMEOUT_S", "RunOptions"]
