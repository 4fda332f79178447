"""What `assay agent run` is asked (`AgentRunRequest`: the checkpoint's invocation, what `--resume`
restores), and the command line's checks of its options, in the order it has always made them.

The request is frozen and declared once with `option(...)`, each field with its command-line option
(`assay.cli.options` builds the command from them); where output goes is the shared `Outputs`, where
attempts run the shared `Execution` — neither is part of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from assay.agent.project import MAX_ATTEMPTS, MAX_CONCURRENCY
from assay.core.run.request import Execution, option
from assay.errors import UsageError

__all__ = ["AgentRunRequest", "check_run_options"]


@dataclass(frozen=True)
class AgentRunRequest:
    """Everything `assay agent run` was asked to do but where its output goes (the `Outputs`). The
    selection is the checkpoint's invocation (what `--resume` restores); how wide to run is given
    afresh each time."""

    kind: ClassVar[str] = "agent"

    project: Path = option(stored=False, flag="--project")
    experiment: str | None = option(None, flag="EXPERIMENT")
    evals: tuple[str, ...] = option((), flag="EVALS")
    tags: tuple[str, ...] = option((), flag="--tag", help="Only evals with this tag (repeatable: any of).")
    attempts: int | None = option(None, flag="--attempts", help="Attempts per eval (overrides experiments).")
    timeout: float | None = option(None, flag="--timeout", help="Seconds per attempt (wins over every file).")
    budget: float | None = option(None, flag="--budget", help="USD of estimated cost per experiment.")
    # Only stored when given: unsharded checkpoints keep their plan.
    shard: str | None = option(
        None, omit_when_none=True, flag="--shard", help="Run only shard i of n (e.g. 2/4); combine with `assay runs merge`."
    )
    rerun: str | None = option(  # failed | all: what is not carried
        None, omit_when_none=True, flag="--rerun", metavar="[failed|all]",
        help="Run again what earlier runs published: bare or `failed` reruns failed (and errored) attempts, "
             "carrying only passed ones; `all` carries nothing. Default: passed and failed attempts whose "
             "execution identity is unchanged are carried, not sent to the agent.",
    )
    early_exit: bool | None = option(
        None, omit_when_none=True, flag="--early-exit", names=("--early-exit/--no-early-exit",),
        help="Stop dispatching an eval's attempts once one passes (the rest are not dispatched); wins over "
             "the experiment and the eval.",
    )
    concurrency: int | None = option(
        None, stored=False, flag="--concurrency", names=("--concurrency", "--max-concurrency"),
        help="Attempts in flight overall (default: config, else 10).",
    )
    journal: bool = option(True, stored=False)  # off: nothing to resume (the Python API may choose)
    record: bool = option(True, stored=False)  # off: not put in the results store
    sigint: bool = option(True, stored=False)  # Ctrl-C ends the run cleanly (not inside a caller's loop)
    keep_sandbox: str | None = option(  # failed | all
        None, stored=False, flag="--keep-sandbox",
        help="Keep sandboxes after their attempts: all, or failed (failed and errored ones; a bare --keep-sandbox).",
    )
    # --sandbox local | docker:IMAGE: the provider of every sandbox pair's template (stored: a resume keeps it).
    sandbox: str | None = option(
        None, omit_when_none=True, flag="--sandbox", metavar="[local|docker:IMAGE]",
        help="Run every sandbox eval in this provider instead of the one its eval or experiment names "
             "(prepare steps and hooks stay): local (bubblewrap where it works), local:bubblewrap, local:none or "
             "docker:IMAGE; part of each attempt's execution identity.",
    )
    shared_state_wait: float | None = option(  # how long to wait for another run's shared-state lease
        None, stored=False, flag="--shared-state-wait", metavar="SECONDS",
        help="Wait at most this long for a shared-state lease another run holds (0: fail at once). Default: "
             "as long as that run runs; a lease whose owner died fails at once with how to recover it.",
    )
    telemetry_host: str | None = option(  # where the OTLP receiver binds
        None, stored=False, flag="--telemetry-host",
        help="Address the OTLP trace receiver listens on (default 127.0.0.1; another one exposes it, with a "
             "warning). Starts the receiver even without [tool.assay.telemetry].",
    )


def _positive(option: str, value: float | None, *, allow_zero: bool = False, maximum: int | None = None,
              integer: bool = False) -> None:
    if value is None:
        return
    # The CLI parses its flags, but the Python API passes values as given (`run(attempts="3")`).
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise UsageError(f"{option} must be {'an integer' if integer else 'a number'}, got {value!r}", option)
    if value != value or value in (float("inf"), float("-inf")):  # NaN passed every comparison below: a wait forever
        raise UsageError(f"{option} must be a finite number, got {value}", option)
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{option} must be {'>= 0' if allow_zero else '> 0'}", option)
    if maximum is not None and value > maximum:
        raise UsageError(f"{option} must be at most {maximum:,}", option)


# NiceEval's options whose value may be left out (`--rerun`, `--keep-sandbox`): the value a bare one means.
BARE_VALUES = {"--rerun": "failed", "--keep-sandbox": "failed"}


def with_bare_values(args: list[str]) -> list[str]:
    """`--rerun` and `--keep-sandbox` take an optional value (a bare one means failed, `BARE_VALUES`), which
    click cannot parse on its own: a bare one is given its value. A misspelt value (`--rerun faild`) is a
    `UsageError`, not an experiment named like one."""
    from assay.agent.carry import RERUN_CHOICES
    from assay.agent.sandbox.linking import KEEP_CHOICES
    from assay.core.format import did_you_mean

    choices = {"--rerun": RERUN_CHOICES, "--keep-sandbox": KEEP_CHOICES}
    cut = args.index("--") if "--" in args else len(args)  # after `--` everything is an argument
    head, given = args[:cut], []
    for position, token in enumerate(head):
        given.append(token)
        following = head[position + 1] if position + 1 < len(head) else None
        if token in BARE_VALUES and following not in choices[token]:
            hint = did_you_mean(following or "", choices[token])
            if hint:
                raise UsageError(f"{token} takes {' or '.join(choices[token])}, got {following!r}{hint}", token)
            given.append(BARE_VALUES[token])
    return given + list(args[cut:])


def refuse_selection_option(args: list[str], unknown: str) -> None:
    """An unknown option that is (or nearly is) `--eval` or `--experiment` is a `UsageError` saying that both
    are arguments, with the value it was given; click would only offer the options it knows, the hidden
    `--model` among them. Any other unknown option is left to click."""
    from assay.core.format import did_you_mean

    # Compared without the dashes, which would make any two options look alike.
    meant = did_you_mean(unknown.lstrip("-"), ("eval", "evals", "experiment", "experiments"), form="{}", shown=str)
    if not meant:
        return
    given = next((arg.split("=", 1)[1] for arg in args if arg.startswith(f"{unknown}=")), None)
    if given is None and unknown in args[:-1]:
        given = args[args.index(unknown) + 1]
    if not given or given.startswith("-"):
        given = None
    example = f"EXPERIMENT {given or 'EVAL'}" if meant.startswith("eval") else given or "EXPERIMENT"
    raise UsageError(
        f"{unknown} is not an option: the experiment and eval id prefixes are arguments, "
        f"`assay agent run {example}` (`assay agent list` shows both)", unknown,
    )


def check_run_options(
    *, agent: str | None = None, model: str | None = None, attempts: int | None = None,
    concurrency: int | None = None, timeout: float | None = None, budget: float | None = None,
    executor: str = "local", ray_address: str | None = None, shard: str | None = None, rerun: str | None = None,
    sandbox: str | None = None, dry: bool = False, resume: str | None = None, shared_state_wait: float | None = None,
    telemetry_host: str | None = None,
) -> Execution:
    """Refuse what `assay agent run` cannot be asked (each a `UsageError` naming its option), before
    anything is planned; returns where its attempts run. `agent` and `model` are options an
    experiment file binds, refused with the way to compare configurations."""
    if agent is not None or model is not None:
        flag = "--agent" if agent is not None else "--model"
        raise UsageError(
            f"{flag} is not an option: an experiment file binds the agent and model. To compare "
            "configurations, add a new file under experiments/ that differs in that one line.", flag,
        )
    _positive("--attempts", attempts, maximum=MAX_ATTEMPTS, integer=True)
    _positive("--concurrency", concurrency, maximum=MAX_CONCURRENCY, integer=True)
    _positive("--timeout", timeout)
    _positive("--budget", budget, allow_zero=True)
    _positive("--shared-state-wait", shared_state_wait, allow_zero=True)
    if telemetry_host is not None and not telemetry_host.strip():
        raise UsageError("--telemetry-host needs an address to listen on, like 127.0.0.1 (the default) or 0.0.0.0",
                         "--telemetry-host")
    execution = Execution(executor, ray_address)
    if shard is not None:
        from assay.core.shard import parse_shard

        parse_shard(shard)
    from assay.agent.carry import check_rerun

    check_rerun(rerun)
    from assay.agent.sandbox.linking import sandbox_override

    sandbox_override(sandbox)  # a misspelt --sandbox is a usage error before anything is planned
    if dry and resume is not None:
        raise UsageError("--dry plans a new invocation; a --resume continues its checkpoint's plan", "--dry")
    return execution
