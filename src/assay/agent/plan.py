"""The plan of an agent run: which (experiment, eval, attempt) slots run, in what order, and the sandbox
each (experiment, eval) pair is linked to — decided before any attempt, as a value the scheduler runs.

`plan_for` selects from a project (experiment, eval prefixes, tags, attempts), `build_plan` orders the
slots, `link_plan` links every sandbox pair (a pair without exactly one template fails the plan),
`shard_plan` keeps one shard. What the scheduler and carry read of a slot is here too: its key, its
attempt id, whether its eval exits early.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.record import slot_key
from assay.agent.sandbox.linking import SandboxBinding, check_keep, link_pair, sandbox_override
from assay.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from assay.agent.request import AgentRunRequest

__all__ = [
    "AGENT_COMMANDS", "AttemptRequest", "PlannedAttempt", "RunPlan", "build_plan", "early_exit_enabled", "link_plan",
    "plan_for", "shard_plan",
]


@dataclass(frozen=True, slots=True)
class PlannedAttempt:
    """One slot: an attempt of an eval under an experiment, and the sandbox its pair is linked to
    (None for a direct agent's pair, and before `link_plan`)."""

    index: int  # position in discovery order: by eval, then experiment, then attempt
    experiment: ExperimentEntry
    eval: EvalEntry
    ordinal: int
    sandbox: SandboxBinding | None = None

    @property
    def key(self) -> str:
        return slot_key(self.experiment.id, self.eval.id, self.ordinal)

    def attempt_id(self, run_id: str) -> str:
        return f"{run_id}/{self.experiment.id}/{self.eval.id}/{self.ordinal + 1}"  # numbered from 1, as shown


@dataclass(frozen=True, slots=True)
class AttemptRequest:
    """One attempt as shipped to a remote worker: names only, the worker discovers the project itself."""

    experiment_id: str
    eval_id: str
    ordinal: int


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What `run_started` carries for the agent reporters: every slot, and how many need no dispatch."""

    slots: Sequence[PlannedAttempt]
    carried: int = 0  # adopted from published attempts of earlier runs
    reused: int = 0  # kept from the checkpoint being resumed
    skipped: int = 0  # known at the start not to be dispatched (an early exit already earned, a spent budget)
    shard: tuple[str, int] | None = None  # `--shard i/n` (the slots are that shard's) and the whole plan's slots

    def __len__(self) -> int:
        return len(self.slots)

    def __iter__(self) -> Iterator[PlannedAttempt]:
        return iter(self.slots)


def build_plan(
    experiments: Sequence[ExperimentEntry], selections: Mapping[str, Sequence[EvalEntry]], attempts: int | None = None,
    *, eval_order: Sequence[EvalEntry] = (),
) -> list[PlannedAttempt]:
    """Every slot in discovery order: evals in `eval_order` (default: as first selected), then
    experiments as given, then attempts. Results are shown in this order whatever finished first."""
    rank: dict[str, int] = {entry.id: position for position, entry in enumerate(eval_order)}
    slots: list[tuple[int, int, int, ExperimentEntry, EvalEntry]] = []
    for experiment_rank, experiment in enumerate(experiments):
        count = attempts or experiment.experiment.attempts
        for entry in selections[experiment.id]:
            eval_rank = rank.setdefault(entry.id, len(rank))
            for ordinal in range(count):
                slots.append((eval_rank, experiment_rank, ordinal, experiment, entry))
    slots.sort(key=lambda slot: slot[:3])
    return [
        PlannedAttempt(index, experiment, entry, ordinal)
        for index, (_, _, ordinal, experiment, entry) in enumerate(slots)
    ]


def link_plan(plan: Sequence[PlannedAttempt], keep: str | None = None, sandbox: str | None = None) -> list[PlannedAttempt]:
    """The plan with every sandbox pair linked (each pair checked once, all before any attempt);
    `keep` is `--keep-sandbox`'s value, `sandbox` is `--sandbox`'s."""
    check_keep(keep)
    override = sandbox_override(sandbox)
    bindings: dict[tuple[str, str], SandboxBinding | None] = {}
    linked = []
    for planned in plan:
        pair = (planned.experiment.id, planned.eval.id)
        if pair not in bindings:
            bindings[pair] = link_pair(
                planned.experiment.id, planned.experiment.experiment, planned.eval.id, planned.eval.eval, keep, override,
            )
        binding = bindings[pair]
        if binding is not None:
            _check_reuse(planned, keep)
        linked.append(planned if binding is None else dataclasses.replace(planned, sandbox=binding))
    return linked


def _check_reuse(planned: PlannedAttempt, keep: str | None) -> None:
    """`sandbox_reuse` shares one sandbox between many attempts: none can be kept as its attempt left it,
    and an eval group already shares its own. Refused here, before anything is created."""
    experiment = planned.experiment.experiment
    if not getattr(experiment, "sandbox_reuse", False):
        return
    where = f"experiment {planned.experiment.id} ({planned.experiment.path or 'not from a file'})"
    if keep is not None:
        raise ConfigError(
            f"{where} sets sandbox_reuse=True, which cannot be combined with --keep-sandbox: a shared sandbox "
            "serves many attempts, so none is left as one attempt had it. Run without --keep-sandbox, or set "
            "sandbox_reuse=False in the experiment to keep sandboxes"
        )
    group = planned.eval.group
    if group is not None:
        raise ConfigError(
            f"{where} sets sandbox_reuse=True, but eval {planned.eval.id} is in eval group {group.id!r} "
            f"({group.path}), whose members share one sandbox of their own. Leave the group's evals out of this "
            "experiment (evals=...), or set sandbox_reuse=False"
        )


def shard_plan(plan: list[PlannedAttempt], shard_text: str | None) -> list[PlannedAttempt]:
    """The plan narrowed to one shard: all attempts of an (experiment, eval) stay together, and all of an
    eval group's under an experiment (its members share one sandbox)."""
    if shard_text is None:
        return plan
    from assay.core.shard import parse_shard, shard_members

    keys = [
        f"{planned.experiment.id}/{planned.eval.id}" if planned.eval.group is None
        else f"{planned.experiment.id}/group:{planned.eval.group.id}"
        for planned in plan
    ]
    members = shard_members(keys, [1] * len(keys), parse_shard(shard_text))
    kept = [planned for planned, key in zip(plan, keys) if key in members]
    return [dataclasses.replace(planned, index=index) for index, planned in enumerate(kept)]


def early_exit_enabled(cli: bool | None, planned: PlannedAttempt) -> bool:
    """Whether the slot's eval stops dispatching once an attempt passes: --early-exit > experiment >
    eval > off. Score evals always run every attempt."""
    definition = planned.eval.eval
    if definition.kind == "score":
        return False
    for setting in (cli, getattr(planned.experiment.experiment, "early_exit", None), getattr(definition, "early_exit", None)):
        if setting is not None:
            return setting
    return False


AGENT_COMMANDS = ("init", "list", "run", "show")


def plan_for(root: Path, selection: AgentRunRequest) -> list[PlannedAttempt]:
    """Every slot the selection (experiment, evals, tags, attempts) names, in discovery order, linked."""
    from assay.agent.discovery import discover_evals, discover_experiments, select_evals, select_experiments

    all_evals = discover_evals(root)
    found = discover_experiments(root)
    try:
        experiments = select_experiments(found, selection.experiment)
    except UsageError as error:
        if selection.experiment in AGENT_COMMANDS:
            # `assay agent run show`: the command was given to `run` as an experiment name
            raise UsageError(f"{error}. Did you mean `assay agent {selection.experiment}`?") from None
        if selection.experiment and any(entry.id.startswith(selection.experiment) for entry in all_evals):
            # `assay agent run orders/`: the first argument is the experiment, the evals come after it
            experiment = found[0].id if len(found) == 1 else "EXPERIMENT"
            raise UsageError(f"{error}. {selection.experiment!r} starts eval ids, and evals are named after the "
                             f"experiment: `assay agent run {experiment} {selection.experiment}`") from None
        if selection.experiment:
            from assay.core.format import did_you_mean

            # `assay agent run wether`: a misspelt eval id where the experiment goes (unless it is close to one)
            close_to_eval = did_you_mean(selection.experiment, _prefix_choices(selection.experiment, all_evals),
                                         form="{}", shown=str)
            if close_to_eval and not did_you_mean(selection.experiment, [entry.id for entry in found]):
                experiment = found[0].id if len(found) == 1 else "EXPERIMENT"
                raise UsageError(f"{error}. Did you mean the eval {close_to_eval!r}? Evals are named after the "
                                 f"experiment: `assay agent run {experiment} {close_to_eval}`") from None
        raise
    _check_prefixes(selection.evals, all_evals)
    for entry in experiments:
        check_experiment_prefixes(entry, all_evals)
    check_tags(selection.tags, all_evals)
    selections = {
        entry.id: select_evals(entry, all_evals, list(selection.evals), list(selection.tags)) for entry in experiments
    }
    if not any(selections.values()):
        narrowed = " after narrowing by the given prefixes and tags" if selection.evals or selection.tags else ""
        raise UsageError(f"no evals selected{narrowed}; `assay agent list` shows the eval ids")
    # Linked here, before any attempt: a pair without exactly one sandbox template fails the plan.
    plan = build_plan(experiments, selections, selection.attempts, eval_order=all_evals)
    return link_plan(plan, selection.keep_sandbox, selection.sandbox)


def _prefix_choices(prefix: str, evals: Sequence[EvalEntry]) -> list[str]:
    """What a misspelt prefix may have meant: the eval ids and their folders (`orders` or `orders/`, as typed),
    so `ordrs/` is read as `orders/` rather than as one eval in it."""
    slash = "/" if prefix.endswith("/") else ""
    choices = {entry.id for entry in evals}
    for entry in evals:
        parts = entry.id.split("/")
        choices.update("/".join(parts[:end]) + slash for end in range(1, len(parts)))
    return sorted(choices)


def _check_prefixes(prefixes: Sequence[str], evals: Sequence[EvalEntry]) -> None:
    """An eval prefix no eval id starts with is a typo, not a narrower selection: name it."""
    from assay.core.format import did_you_mean

    for prefix in prefixes:
        if not any(entry.id.startswith(prefix) for entry in evals):
            hint = did_you_mean(prefix, _prefix_choices(prefix, evals))
            raise UsageError(f"no eval id starts with {prefix!r}{hint} (`assay agent list` shows the eval ids)")


def check_experiment_prefixes(experiment: ExperimentEntry, evals: Sequence[EvalEntry]) -> None:
    """An experiment's `evals=[...]` prefix that no eval id starts with is a typo too: left alone, that
    experiment would quietly run none of the evals it names while the others run."""
    from assay.core.format import did_you_mean

    selection = experiment.experiment.evals
    if selection == "*" or callable(selection):
        return
    for prefix in selection:
        if not any(entry.id.startswith(prefix) for entry in evals):
            hint = did_you_mean(prefix, _prefix_choices(prefix, evals))
            if "*" in prefix:  # a prefix is plain text: `*` is no wildcard inside the list
                stem = prefix.split("*", 1)[0]
                meant = f"evals=[{stem!r}]" if stem else 'evals="*" (the string, not in a list)'
                hint = f"; a prefix is plain text, not a pattern: write {meant}"
            where = f"experiment {experiment.id}" + (f" ({experiment.path})" if experiment.path else "")
            # (`assay agent list` refuses the same project, so the ids there are named here)
            starts = sorted({entry.id.split("/", 1)[0] + ("/" if "/" in entry.id else "") for entry in evals})
            known = ", ".join(starts[:8]) + (f" and {len(starts) - 8} more" if len(starts) > 8 else "")
            raise ConfigError(f"{where}: evals prefix {prefix!r} matches no eval id{hint} "
                              f"({f'eval ids start with {known}' if known else 'the project has no evals'})")


def check_tags(tags: Sequence[str], evals: Sequence[EvalEntry]) -> None:
    """A `--tag` no eval carries is a typo, not a narrower selection: name it, and the tags there are."""
    from assay.core.format import did_you_mean, join_first

    known = sorted({tag for entry in evals for tag in entry.eval.tags})
    for tag in tags:
        if tag not in known:
            hint = did_you_mean(tag, known)
            there = f"the evals' tags: {join_first(known, separator=', ')}" if known else "no eval has a tag"
            raise UsageError(f"--tag {tag!r}: no eval has this tag{hint} ({there})", "--tag")
