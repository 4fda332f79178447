"""The run's tracing, current for the run's tasks: `execute` sets it before any attempt task exists, so
each attempt (and an agent's span mapper) finds it without the scheduler carrying it."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

__all__ = ["ACTIVE"]

ACTIVE: ContextVar[Any] = ContextVar("assay_run_tracing", default=None)  # a tracing.RunTracing, or None
