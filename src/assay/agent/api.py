"""Running agent evals from Python: a project as the CLI runs it, or evals and experiments built in code.

`run(...)` / `await run_async(...)` go through the same run pipeline as `assay agent run` (journal,
results store, carry, exit code) and return typed results; `plan(...)` is `--dry`; `run_evals(...)`
runs definitions made in code, with nothing written or carried. The CLI is a thin user of `run`.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agent.record import AttemptResult

__all__ = ["AgentResults", "plan", "run", "run_async", "run_evals", "run_evals_async"]


@dataclass(frozen=True)
class AgentResults:
    """Every attempt of a run, in discovery order (eval, experiment, attempt), and what they come to.

    A run that spooled its units (one with a journal, and every `run_evals`) gives `attempts` as a
    read-only sequence view: each attempt is read back from the spool when indexed or iterated, so
    100,000 attempts are never in memory at once; `summaries` (one small record per attempt: ids,
    verdict, outcome, usage) is what `failures`, `carried` and `attempt` search before reading back."""

    exit_code: int  # 0 all passed (or scored, skipped), 1 a failed or errored attempt, 2 an error, 130 interrupted
    attempts: Sequence[AttemptResult] = ()
    interrupted: bool = False
    error: str | None = None  # why the run could not run, when it could not
    run_id: str = ""
    checkpoint: Path | None = None
    usage: Mapping[str, Any] = field(default_factory=dict)
    estimated_cost_usd: float | None = None
    summaries: Sequence[Any] = field(default=(), repr=False, compare=False)  # `attempts` without transcripts

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def _where(self, keep: Any) -> list[AttemptResult]:
        """The attempts whose summary `keep` accepts, read back only those."""
        summaries = self.summaries or self.attempts
        return [self.attempts[index] for index, summary in enumerate(summaries) if keep(summary)]

    def failures(self) -> list[AttemptResult]:
        """Attempts that failed or errored, with their `failing` assertions and `error`."""
        return self._where(lambda attempt: attempt.verdict in ("failed", "errored"))

    def carried(self) -> list[AttemptResult]:
        """Slots that adopted a published attempt of an earlier run (`carried_from` names it)."""
        return self._where(lambda attempt: getattr(attempt, "carried_from", None) is not None)

    def attempt(self, eval_id: str, experiment_id: str | None = None, attempt: int = 1) -> AttemptResult:
        """One attempt by eval id (and experiment, when several ran it), numbered from 1."""
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
            # `ordinal` counts from 0, so attempt=0 and attempt="1" are likely slips: say how attempts are numbered.
            raise ValueError(f"attempt is a number from 1 (the first attempt), got {attempt!r}")
        summaries = self.summaries or self.attempts
        for index, result in enumerate(summaries):
            if result.eval_id == eval_id and result.ordinal == attempt - 1 and experiment_id in (None, result.experiment_id):
                return self.attempts[index]
        where = f" in {experiment_id!r}" if experiment_id else ""
        numbers = sorted({r.ordinal + 1 for r in summaries
                          if r.eval_id == eval_id and experiment_id in (None, r.experiment_id)})
        if numbers:
            raise KeyError(f"no attempt {attempt} of {eval_id!r}{where}; its attempts: {', '.join(map(str, numbers))}")
        ids = sorted({r.eval_id for r in summaries})
        from assay.core.format import did_you_mean

        if experiment_id is not None and eval_id in ids:  # the eval ran, not in that experiment: name the ones it ran in
            ran_in = sorted({r.experiment_id for r in summaries if r.eval_id == eval_id})
            raise KeyError(f"no attempt of {eval_id!r} in {experiment_id!r}{did_you_mean(experiment_id, ran_in)} "
                           f"(its experiments: {', '.join(ran_in)})")
        raise KeyError(f"no attempt of {eval_id!r}{where}{did_you_mean(eval_id, ids)} (eval ids: "
                       f"{', '.join(ids[:10])}{', …' if len(ids) > 10 else ''})")


def _results(outcome: Any, exit_code: int, *, run_id: str = "", checkpoint: Path | None = None,
             error: str | None = None) -> AgentResults:
    if outcome is None:
        return AgentResults(exit_code, error=error, run_id=run_id, checkpoint=checkpoint)
    # A spooled run's results are a view reading each attempt back when asked: kept as they are, not copied.
    attempts = outcome.results if getattr(outcome, "spool", None) is not None else tuple(outcome.results)
    return AgentResults(
        exit_code, attempts, outcome.interrupted, error, run_id, checkpoint, dict(outcome.usage),
        outcome.estimated_cost_usd, getattr(outcome, "summaries", ()),
    )


def _given(value: Any) -> str:
    """A wrong argument named by its type (and an agent by its name), not by a repr that can run to pages."""
    name = getattr(value, "name", None)
    if isinstance(name, str) and hasattr(value, "evidence_coverage"):
        return f"the agent {name!r}: bind it to an experiment, Experiment(agent=...)"
    return f"{value!r:.80}"


def _as_mapping(evals: Any) -> str:
    """What evals passed as one function (or eval) or a list of them are, and the dict they go in (`a list of evals,
    which have no ids: give each its id, run_evals({'greets': greets}, ...)`); "" for anything else."""
    items = list(evals) if isinstance(evals, (list, tuple)) else [evals]
    names = [getattr(getattr(item, "test", item), "__name__", None) for item in items[:3]]
    if not items or not all(isinstance(name, str) and name.isidentifier() for name in names):
        return ""
    shown = ", ".join(f"{name!r}: {name}" for name in names) + (", ..." if len(items) > 3 else "")
    if isinstance(evals, (list, tuple)):
        return f"a list of evals, which have no ids: give each its id, run_evals({{{shown}}}, ...)"
    return f"the eval {names[0]}, which has no id: give it one, run_evals({{{shown}}}, ...)"


def _checked(**given: Any) -> None:
    """The checks `assay agent run` makes of its options, made of the keyword arguments of the same names: a
    `UsageError` naming the argument (`attempts must be > 0`), not the flag, for a value the CLI refuses."""
    from assay.agent.request import check_run_options
    from assay.errors import UsageError

    try:
        check_run_options(**{name: value for name, value in given.items() if value is not None})
    except UsageError as error:
        if not error.option:
            raise
        name = error.option.lstrip("-").replace("-", "_")
        raise UsageError(str(error).replace(error.option, name, 1), name) from None


def _selectors(name: str, given: str | Sequence[str]) -> tuple[str, ...]:
    """Eval selectors or tags as given: one string is one selector (`evals="orders/"`), not its characters."""
    from assay.errors import UsageError

    chosen = (given,) if isinstance(given, str) else tuple(given) if isinstance(given, (list, tuple, set, frozenset)) else None
    if chosen is None or not all(isinstance(item, str) for item in chosen):
        raise UsageError(f"{name} must be a string or a sequence of strings, got {given!r}", name)
    if any(not item.strip() for item in chosen):
        # As on the command line: an empty selector (a variable left unset) would select every eval.
        raise UsageError(f"{name} holds an empty string (an unset variable?): leave it out to run every eval"
                         + (" whatever its tags" if name == "tags" else ""), name)
    return chosen


def _reporters(given: Any) -> list[Any]:
    from collections.abc import Iterable

    if given is None:
        return []
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        from assay.errors import UsageError

        raise UsageError(f"reporters must be a list of run-event reporters, got {given!r}", "reporters")
    return list(given)


def _request(project: str | Path, experiment: str | None, evals: str | Sequence[str], *,
             tags: str | Sequence[str] = (), **options: Any) -> Any:
    """The run's request; raises `AssayError` for a user error found before the run exists (`_refused`):
    what the CLI refuses of its options is refused here too."""
    from assay.agent.project import project_folder
    from assay.agent.request import AgentRunRequest
    from assay.errors import UsageError

    if not isinstance(project, (str, os.PathLike)):  # `Path(5)` says only "expected str, bytes or os.PathLike object"
        raise UsageError(f"project must be the project's folder, a str or Path, got {_given(project)}", "project")
    if experiment is not None and not isinstance(experiment, str):
        # A list or a Path failed deep in the selection, as "internal error: AttributeError: ... 'strip'".
        raise UsageError(f"experiment must be one experiment id (a str, as in experiments/<id>.py) or None for every "
                         f"experiment, got {_given(experiment)}", "experiment")
    _checked(**{name: options.get(name) for name in ("attempts", "concurrency", "timeout", "budget", "rerun", "shard")})
    return AgentRunRequest(project=project_folder(project, "project"), experiment=experiment,
                           evals=_selectors("evals", evals), tags=_selectors("tags", tags), **options)


def _refused(error: Exception, console: bool = False) -> AgentResults:
    """A request refused before the run started, as the result `run` promises (never an exception),
    with the reason in `error`; `console=True` also prints it, as the CLI does."""
    if console:
        print(f"Error: {error}", file=sys.stderr)
    return AgentResults(getattr(error, "exit_code", 2), error=str(error))


_ARGUMENT_OF_FLAG = {"--tag": "tags"}  # the planner's own refusals, which name the command line's flag


def _in_python_terms(error: BaseException) -> BaseException:
    """A refusal that names a command-line flag (`--tag 'order': no eval has this tag`), naming the keyword
    argument instead (`tags 'order': …`), as the checks `_checked` makes do."""
    from assay.errors import UsageError

    name = _ARGUMENT_OF_FLAG.get(getattr(error, "option", None) or "")
    if not isinstance(error, UsageError) or name is None:
        return error
    return UsageError(str(error).replace(error.option, name, 1), name)


def _keywords_checked(function: Any) -> Any:
    """`function` whose misspelt keyword (`tag=`, `recrod=`) is a `TypeError` naming the one meant, or the ones it
    takes when none is close (`executor=`), where Python's own says only that it was unexpected."""
    import functools
    import inspect

    names = [name for name in inspect.signature(function).parameters]

    def refused(given: dict[str, Any]) -> None:
        from assay.core.format import did_you_mean

        unknown = next((name for name in given if name not in names), None)
        if unknown is not None:
            hint = did_you_mean(unknown, names) or f"; it takes {', '.join(names)}"
            raise TypeError(f"{function.__name__}() got an unexpected keyword argument {unknown!r}{hint}")

    if inspect.iscoroutinefunction(function):
        @functools.wraps(function)
        async def checked_async(*args: Any, **given: Any) -> Any:
            refused(given)
            return await function(*args, **given)

        return checked_async

    @functools.wraps(function)
    def checked(*args: Any, **given: Any) -> Any:
        refused(given)
        return function(*args, **given)

    return checked


def _no_running_loop(name: str, in_a_loop: str) -> None:
    """UsageError when called inside a running event loop (a notebook, an async function), before anything is
    built: asyncio.run would refuse there, and leave a coroutine never awaited."""
    from assay.errors import UsageError

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UsageError(f"{name} runs its own event loop, and this code already runs in one (a notebook, an async "
                     f"function): use `results = await {in_a_loop}(...)`, with the same arguments")


def _from_result(result: Any) -> AgentResults:
    finished = result.finished
    error = str(_in_python_terms(finished.error)) if finished.error is not None else None
    return _results(finished.outcome, result.exit_code, run_id=finished.run_id, checkpoint=finished.checkpoint,
                    error=error)


@_keywords_checked
def run(
    project: str | Path = ".", experiment: str | None = None, evals: Sequence[str] = (), *,
    tags: Sequence[str] = (), attempts: int | None = None, concurrency: int | None = None,
    timeout: float | None = None, budget: float | None = None, journal: bool = True, record: bool = True,
    console: bool = False, reporters: Sequence[Any] | None = None, rerun: str | None = None,
    early_exit: bool | None = None, shard: str | None = None,
) -> AgentResults:
    """Run a project's evals as `assay agent run` does and return the results (never raises for a
    failing eval or a user error: look at `exit_code` and `error`).

    Published attempts whose execution identity is unchanged are carried, as on the command line:
    `rerun="failed"` carries only passed ones, `rerun="all"` none. `journal=False` keeps no checkpoint
    (nothing to resume); `record=False` keeps the run out of the results store; `console=True` prints
    what the CLI prints; `reporters` are your own run-event reporters (see `assay.core.run_events`);
    `shard="2/4"` runs one shard, as `--shard` does (`assay runs merge` joins the shards' runs)."""
    from assay.core.run import pipeline
    from assay.core.run.kinds import kind_named
    from assay.core.run.request import Outputs

    from assay.errors import AssayError

    try:
        _no_running_loop("run", "run_async")
        request = _request(project, experiment, evals, tags=tags, attempts=attempts,
                           concurrency=concurrency, timeout=timeout, budget=budget, journal=journal, record=record,
                           rerun=rerun, early_exit=early_exit, shard=shard)
        chosen = _reporters(reporters)
    except AssayError as error:
        return _refused(error, console)
    outputs = Outputs(quiet=True)
    if console and chosen:  # what the CLI prints, and your reporters too (they were dropped, silently)
        chosen = [*pipeline.reporters_for(kind_named("agent"), outputs), *chosen]
    elif console:
        chosen = None  # the pipeline's own console reporters
    return _from_result(pipeline.run("agent", request, outputs=outputs, reporters=chosen))


@_keywords_checked
async def run_async(
    project: str | Path = ".", experiment: str | None = None, evals: Sequence[str] = (), *,
    tags: Sequence[str] = (), attempts: int | None = None, concurrency: int | None = None,
    timeout: float | None = None, budget: float | None = None, journal: bool = True, record: bool = True,
    reporters: Sequence[Any] | None = None, rerun: str | None = None, early_exit: bool | None = None,
    shard: str | None = None,
) -> AgentResults:
    """`run` inside your own event loop (Ctrl-C is then yours to handle: cancel the task); a user error is a
    result with `error`, as with `run`."""
    from assay.core.run import pipeline

    from assay.errors import AssayError

    try:
        request = _request(project, experiment, evals, tags=tags, attempts=attempts,
                           concurrency=concurrency, timeout=timeout, budget=budget, journal=journal, record=record,
                           sigint=False, rerun=rerun, early_exit=early_exit, shard=shard)
        chosen = _reporters(reporters)
    except AssayError as error:
        return _refused(error)
    return _from_result(await pipeline.run_async("agent", request, reporters=chosen))


@_keywords_checked
def plan(
    project: str | Path = ".", experiment: str | None = None, evals: Sequence[str] = (), *,
    tags: Sequence[str] = (), attempts: int | None = None, timeout: float | None = None, rerun: str | None = None,
    early_exit: bool | None = None, shard: str | None = None,
) -> Any:
    """`assay agent run --dry`: every slot's decision (carry, execute or not dispatched, with the
    reason), nothing run or written. `.lines()` is what the command prints, `.document()` its JSON;
    `.carry.decisions` holds one `SlotDecision` per slot of `.plan`. Raises for a user error."""
    from assay.agent.run_kind import dry_run
    from assay.errors import UsageError

    try:
        return dry_run(_request(project, experiment, evals, tags=tags, attempts=attempts, timeout=timeout,
                                rerun=rerun, early_exit=early_exit, shard=shard))
    except UsageError as error:
        named = _in_python_terms(error)
        if named is error:
            raise
        raise named from None


@_keywords_checked
def run_evals(
    evals: Mapping[str, Any], experiments: Mapping[str, Any] | Any, *, attempts: int | None = None,
    concurrency: int | None = 10, timeout: float | None = None, reporters: Sequence[Any] = (),
) -> AgentResults:
    """Run evals and experiments built in code (no project, no journal, no store): `evals` maps an
    id to a `define_eval(...)` (or a plain `async def test(t)`), `experiments` maps an id to an
    `Experiment` (or is one Experiment, named `default`). Call it from sync code; inside a running
    event loop (a notebook, an async function), `await run_evals_async(...)`."""
    from assay.core.gcpolicy import collection_sized_for_runs

    _no_running_loop("run_evals", "run_evals_async")
    agent_run = _run_in_code(evals, experiments, attempts=attempts, concurrency=concurrency, timeout=timeout,
                             reporters=reporters)
    with collection_sized_for_runs():
        outcome = asyncio.run(agent_run.run())
    return _results(outcome, outcome.exit_code)


@_keywords_checked
async def run_evals_async(
    evals: Mapping[str, Any], experiments: Mapping[str, Any] | Any, *, attempts: int | None = None,
    concurrency: int | None = 10, timeout: float | None = None, reporters: Sequence[Any] = (),
) -> AgentResults:
    """`run_evals` inside your own event loop (a notebook, an async function). Ctrl-C is then yours to handle:
    cancelling the task stops the run as Ctrl-C does (the attempts in flight torn down) and raises
    CancelledError, as a cancelled task must."""
    from assay.core.gcpolicy import collection_sized_for_runs

    agent_run = _run_in_code(evals, experiments, attempts=attempts, concurrency=concurrency, timeout=timeout,
                             reporters=reporters)
    with collection_sized_for_runs():
        outcome = await agent_run.run()
    return _results(outcome, outcome.exit_code)


def _run_in_code(
    evals: Mapping[str, Any], experiments: Mapping[str, Any] | Any, *, attempts: int | None, concurrency: int | None,
    timeout: float | None, reporters: Sequence[Any],
) -> Any:
    """The run `run_evals` and `run_evals_async` start; UsageError for arguments they refuse."""
    from assay.agent.definition import define_eval
    from assay.agent.discovery import EvalEntry, ExperimentEntry
    from assay.agent.experiment import Experiment
    from assay.agent.plan import build_plan, link_plan
    from assay.agent.run_options import RunOptions
    from assay.agent.runner import AgentRun
    from assay.core.run_events import RunEvents

    from assay.errors import UsageError

    _checked(attempts=attempts, concurrency=concurrency, timeout=timeout)
    if isinstance(experiments, Experiment):
        experiments = {"default": experiments}
    for name, given in (("evals", evals), ("experiments", experiments)):
        if not isinstance(given, Mapping):
            shown = (_as_mapping(given) if name == "evals" else "") or _given(given)
            raise UsageError(f"{name} must map ids to what to run ({'define_eval(...)' if name == 'evals' else 'an Experiment'}),"
                             f" got {shown}", name)
        for key, value in given.items():
            if not isinstance(key, str) or not key:
                raise UsageError(f"{name[:-1]} ids must be non-empty strings, got {key!r}", name)
            if name == "experiments" and not isinstance(value, Experiment):
                # An agent (or anything else) here failed deep in the plan, as "'DefinedAgent' object has no
                # attribute 'attempts'".
                raise UsageError(f"experiments[{key!r}] must be an Experiment, got {_given(value)}", name)
            if name == "evals" and not hasattr(value, "kind") and not callable(value):
                # None went to define_eval(None), which is the decorator form: the run failed far from here, as
                # "'function' object has no attribute 'judge'".
                raise UsageError(f"evals[{key!r}] must be an eval (define_eval(...)) or an `async def test(t)`, "
                                 f"got {_given(value)}", name)
    chosen = _reporters(reporters)
    entries = [
        EvalEntry(eval_id, definition if hasattr(definition, "kind") else define_eval(definition))
        for eval_id, definition in evals.items()
    ]
    runs = [ExperimentEntry(experiment_id, experiment) for experiment_id, experiment in experiments.items()]
    plan = link_plan(build_plan(runs, {entry.id: entries for entry in runs}, attempts))  # sandbox evals get theirs
    # Spooled: each attempt is kept as a summary once reporters have heard of it, its transcript on disk.
    if concurrency is None:  # as `run` takes it: the default (it failed as "'<' not supported … 'NoneType'")
        from assay.agent.run_options import DEFAULT_CONCURRENCY

        concurrency = DEFAULT_CONCURRENCY
    return AgentRun(plan, RunOptions(concurrency=concurrency, timeout=timeout), RunEvents(list(chosen)), spool=True)
