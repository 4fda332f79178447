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
    sandbox: Any = None  # a SandboxLayer this eval contributes (template-bearing or command-only)
    diff: Mapping[str, Sequence[str]] | None = None  # {include, ignore}: which workdir paths count as the agent's
    early_exit: bool | None = None  # stop dispatching this eval's attempts once one passes (None: the experiment's)


@dataclass(frozen=True, slots=True)
class EvalDescriptor:
    """The read-only view an experiment's `evals` predicate and `--tag` see."""

    id: str
    description: str | None
    tags: tuple[str, ...]
    kind: str
    metadata: Mapping[str, Any] | None = field(default=None, compare=False)


def _check_diff(diff: Any) -> dict[str, tuple[str, ...]] | None:
    if diff is None:
        return None
    if not isinstance(diff, Mapping):
        raise ConfigError('eval diff must be a mapping with "include" and/or "ignore" lists of glob patterns')
    unknown = [key for key in diff if key not in ("include", "ignore")]
    if unknown:
        from assay.core.format import did_you_mean

        meant = did_you_mean(unknown[0], ("include", "ignore"))
        raise ConfigError(f'eval diff has an unknown key {unknown[0]!r}{meant} (it takes "include" and/or "ignore" '
                          "lists of glob patterns)")
    checked = {}
    for name, patterns in diff.items():
        if isinstance(patterns, str) or not isinstance(patterns, Sequence) or not all(
            isinstance(pattern, str) and pattern.strip() for pattern in patterns
        ):
            raise ConfigError(f"eval diff {name!r} must be a list of non-empty glob patterns")
        checked[name] = tuple(patterns)
    return checked


def _build(
    test: Any, kind: str, description: Any, tags: Any, timeout: Any, metadata: Any, judge: Any,
    sandbox: Any = None, diff: Any = None, early_exit: Any = None,
) -> Eval:
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
        if not isinstance(metadata, Mapping):  # check_json_like takes any JSON value: `metadata=["x"]` went through
            raise ConfigError("eval metadata must be a mapping of JSON values, like metadata={\"owner\": \"support\"}; "
                              f"got {type(metadata).__name__}")
        check_json_like(metadata, "eval metadata")
    if judge is not None and not isinstance(judge, (bool, Mapping)):
        raise ConfigError("eval judge must be True or a judge configuration mapping")
    if isinstance(judge, Mapping):
        from assay.agent.judging import check_judge_settings

        if not judge:
            # `judge={}` is falsy, as `judge=False` is: it declared no judge, and every judge assertion errored at
            # run time asking to "declare judge=True (or a judge config)", which it seemed to have done.
            raise ConfigError("eval judge is empty, which declares no judge; write judge=True to take the settings "
                              "from the experiment and [tool.assay.judge]")
        check_judge_settings(judge, "eval judge")
    if sandbox is not None:
        from assay.agent.sandbox.layers import check_layer

        check_layer(sandbox, "eval")
    if early_exit is not None and not isinstance(early_exit, bool):
        raise ConfigError("eval early_exit must be True or False")
    if early_exit and kind == "score":
        raise ConfigError("a score eval runs every attempt: early_exit is for pass/fail evals (define_eval)")
    return Eval(
        test, description, tuple(tags), float(timeout) if timeout else None, metadata, judge, kind,
        sandbox=sandbox, diff=_check_diff(diff), early_exit=early_exit,
    )


def define_eval(
    test: Callable[[Any], Awaitable[None]] | None = None,
    *,
    description: str | None = None,
    tags: Sequence[str] = (),
    timeout: float | None = None,
    metadata: Mapping[str, Any] | None = None,
    judge: bool | Mapping[str, Any] | None = None,
    sandbox: Any = None,
    diff: Mapping[str, Sequence[str]] | None = None,
    early_exit: bool | None = None,
) -> Any:
    """`define_eval(test, …)` or `@define_eval(description=…)` over `async def test(t)`.

    `sandbox` is a sandbox layer (`local_sandbox()`, `docker_sandbox(...)`, `sandbox_layer()`); `diff`
    adjusts which workdir paths count as the agent's changes (`{"include": [...], "ignore": [...]}`);
    `early_exit=True` stops dispatching the eval's remaining attempts once one passes (the rest are
    recorded not-dispatched; an experiment's or the command line's setting wins)."""
    if test is None:
        return lambda function: _build(
            function, "pass", description, tags, timeout, metadata, judge, sandbox, diff, early_exit
        )
    return _build(test, "pass", description, tags, timeout, metadata, judge, sandbox, diff, early_exit)


def define_score_eval(
    test: Callable[[Any], Awaitable[None]] | None = None,
    *,
    description: str | None = None,
    tags: Sequence[str] = (),
    timeout: float | None = None,
    metadata: Mapping[str, Any] | None = None,
    judge: bool | Mapping[str, Any] | None = None,
    sandbox: Any = None,
    diff: Mapping[str, Sequence[str]] | None = None,
) -> Any:
    """Like `define_eval`, but the eval earns points (`.score(points)`, `t.score(n)`) instead of passing."""
    if test is None:
        return lambda function: _build(function, "score", description, tags, timeout, metadata, judge, sandbox, diff)
    return _build(test, "score", description, tags, timeout, metadata, judge, sandbox, diff)


@dataclass(frozen=True, slots=True)
class EvalGroup:
    """An explicit set of evals (by id) that run one after another in one sandbox, reset between them.

    A group is not a dependency graph: a member that fails does not stop the next one."""

    evals: tuple[str, ...]
    description: str | None = None


def define_eval_group(evals: Sequence[str], *, description: str | None = None) -> EvalGroup:
    """`group = define_eval_group(["repo/add_flag", "repo/fix_bug"])` in `evals/**/*_group.py`.

    Members are named by eval id (what `assay agent list` shows): an eval gets its id from its file's
    path when it is discovered, so an eval object has none to refer to. The group's id is its file's path
    without `_group.py`; members run in id order whatever order they are listed in."""
    import os
    import sys

    caller = os.path.basename(sys._getframe(1).f_code.co_filename)
    if caller.endswith("_eval.py") or caller == "eval.py":
        # Only `*_group.py` files are read for groups: one made in an eval file was silently no group at all.
        raise ConfigError(f"define_eval_group(...) is in the eval file {caller}, where it makes no group: a group is "
                          "declared in a file of its own under evals/, named after the group, like "
                          "evals/flow_group.py for the group 'flow'")
    if isinstance(evals, str) or not isinstance(evals, Sequence):
        raise ConfigError(f"define_eval_group takes a list of eval ids (as `assay agent list` shows them), like "
                          f"define_eval_group([\"flow/login\", \"flow/checkout\"]); got {type(evals).__name__} {evals!r}")
    wrong = [member for member in evals if not (isinstance(member, str) and member)]
    if wrong:
        raise ConfigError(f"define_eval_group takes a list of eval ids (as `assay agent list` shows them); "
                          f"{wrong[0]!r} is not one")
    if not evals:
        raise ConfigError("an eval group needs at least one member eval id")
    if len(set(evals)) != len(evals):
        twice = sorted({member for member in evals if list(evals).count(member) > 1})
        raise ConfigError(f"an eval group lists {', '.join(twice)} more than once")
    if description is not None and not isinstance(description, str):
        raise ConfigError("eval group description must be a string")
    return EvalGroup(tuple(sorted(evals)), description)


__all__ = ["Eval", "EvalDescriptor", "EvalGroup", "define_eval", "define_eval_group", "define_score_eval"]
