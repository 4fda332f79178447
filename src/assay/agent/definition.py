"""Eval definitions: `define_eval` (pass/fail) and `define_score_eval` (earned points).

An eval has no id and never names its agent: its id comes from its file path and its agent from
the experiment that runs it.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.core.jsonvalue import check_json_like
from assay.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Eval:
    test: Callable[[Any], Awaitable[None]]
    description: str | None = None
    tags: tuple[str, ...] = ()
    timeout: float | None = None  # seconds per attempt
    metadata: Mapping[str, Any] | None = None
    judge: bool | Mapping[str, Any] | None = None  # must be declared before t.judge can be used
    kind: str = "pass"  # pass | score


@dataclass(frozen=True, slots=True)
class EvalDescriptor:
    """The read-only view an experiment's `evals` predicate and `--tag` see."""

    id: str
    description: str | None
    tags: tuple[str, ...]
    kind: str
    metadata: Mapping[str, Any] | None = field(default=None, compare=False)


def _build(test: Any, kind: str, description: Any, tags: Any, timeout: Any, metadata: Any, judge: Any) -> Eval:
    if not callable(test):
        raise ConfigError(f"an eval's test must be an async function taking `t`, got {type(test).__name__}")
    if description is not None and not isinstance(description, str):
        raise ConfigError("eval description must be a string")
    if isinstance(tags, str) or not isinstance(tags, Sequence) or not all(isinstance(tag, str) and tag for tag in tags):
        raise ConfigError("eval tags must be a list of non-empty strings")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0
    ):
        raise ConfigError("eval timeout must be a positive number of seconds")
    if metadata is not None:
        check_json_like(metadata, "eval metadata")
    if judge is not None and not isinstance(judge, (bool, Mapping)):
        raise ConfigError("eval judge must be True or a judge configuration mapping")
    return Eval(test, description, tuple(tags), float(timeout) if timeout else None, metadata, judge, kind)


def define_eval(
    test: Callable[[Any], Awaitable[None]] | None = None,
    *,
    description: str | None = None,
    tags: Sequence[str] = (),
    timeout: float | None = None,
    metadata: Mapping[str, Any] | None = None,
    judge: bool | Mapping[str, Any] | None = None,
) -> Any:
    """`define_eval(test, …)` or `@define_eval(description=…)` over `async def test(t)`."""
    if test is None:
        return lambda function: _build(function, "pass", description, tags, timeout, metadata, judge)
    return _build(test, "pass", description, tags, timeout, metadata, judge)


def define_score_eval(
    test: Callable[[Any], Awaitable[None]] | None = None,
    *,
    description: str | None = None,
    tags: Sequence[str] = (),
    timeout: float | None = None,
    metadata: Mapping[str, Any] | None = None,
    judge: bool | Mapping[str, Any] | None = None,
) -> Any:
    """Like `define_eval`, but the eval earns points (`.score(points)`, `t.score(n)`) instead of passing."""
    if test is None:
        return lambda function: _build(function, "score", description, tags, timeout, metadata, judge)
    return _build(test, "score", description, tags, timeout, metadata, judge)


__all__ = ["Eval", "EvalDescriptor", "define_eval", "define_score_eval"]
