"""`assay agent …`: init a project, list evals and experiments, run them, show recorded results; the kept
sandboxes (`agent sandbox …`) and the shared-state leases (`agent shared-state …`).

Exit codes: 0 all passed (or scored/skipped), 1 a failed or errored attempt or an incomplete run,
2 a usage, config or internal error (or a refusal), 130 interrupted; `sandbox enter` exits with its shell's code.
An error is one line on stderr (results alone go to stdout). What each command does lives in assay.agent;
here are its options (`AgentRunRequest`, `AgentOptions`) and the call.

Sandboxes are kept by `assay agent run --keep-sandbox[=failed|all]`; they are recorded under ASSAY_SANDBOX_DIR
(default: a per-user folder in the temporary folder), a Docker sandbox with its container's id, so every
sandbox command reaches containers too. Leases live under `<project>/.assay/shared-state/`; one whose owner
died is released only explicitly (the confirmations say the owner and what it started are gone).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, List, Optional

import typer

from assay.agent.command_options import AgentOptions
from assay.agent.request import AgentRunRequest
from assay.cli import common
from assay.cli.options import (
    EXECUTOR, JSON, JUNIT_PATH, PROJECT, QUIET, RAY_ADDRESS, RESUME, VERBOSE, Command, Given, Param, argument, command, group,
    option, params,
)
from assay.core.run.request import not_empty

agent_app = group("Agent evals (NiceEval's model): evals drive an agent and assert on its event stream.")
sandbox_app = group("Kept and leftover sandboxes: list, diff, enter, stop, prune.")
shared_state_app = group("Shared-state leases (Experiment shared_state=): list them, recover one whose owner died.")


def _command(group: typer.Typer, name: str, *items: str | Param, only_reads: bool = False) -> Any:
    return command(group, name, *params(AgentOptions, *items), only_reads=only_reads)


@_command(agent_app, "init", "directory", PROJECT.but(help="The folder to set up, as every other agent command names "
                                                       "it (or give it as DIRECTORY)."))
def init_command(given: Given) -> None:
    """Set up a project: evals/, experiments/, a [tool.assay] table in pyproject.toml and, in a new
    project, a starter agent, eval and experiment that run offline. Existing files are never changed
    (only the [tool.assay] table is appended to a pyproject.toml that lacks one).

    Example: assay agent init my-project && assay agent run --project my-project
    """
    from assay.agent.starter import init_project

    with common.failing():
        from assay.errors import UsageError

        folder = given.directory
        if given.project is not None:
            if folder != Path("."):
                raise UsageError("give the folder once: as DIRECTORY or as --project", "--project")
            folder = given.project
        lines = init_project(folder)
    from assay.core.stdout_guard import results_made

    results_made()  # written: a reader leaving now (`| head -1`) only loses the lines naming the files
    common.say(*lines)


@command(agent_app, "list", *params(
    AgentRunRequest, PROJECT, "tags", JSON.but(help="Print a JSON document instead of tables."),
), only_reads=True)
def list_command(given: Given) -> None:
    """List evals (id, kind, group, tags, description) and experiments; runs nothing."""
    from assay.agent.listing import list_project
    from assay.agent.project import project_folder

    with common.failing():
        listing = list_project(project_folder(given.project), given.tags or ())
    common.show(given.json, listing.document(), listing.tables(), ensure_ascii=True)


class _RunCommand(Command):
    """`agent run`'s arguments with NiceEval's bare `--rerun` and `--keep-sandbox` (see `with_bare_values`); an
    `--eval` or `--experiment` is told they are arguments (`refuse_selection_option`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from assay.agent.request import refuse_selection_option, with_bare_values
        from assay.cli.options import no_such_option

        with common.failing():
            original, args = args, with_bare_values(args)
            _WORDS_AFTER_BARE_OPTIONS.clear()
            _WORDS_AFTER_BARE_OPTIONS.update(_words_after_bare_options(original, args))
            given = list(args)  # click's parser consumes the list it is given
            try:
                return super().parse_args(ctx, args)
            except no_such_option() as error:  # `--eval drive/sessions`: evals are arguments
                refuse_selection_option(given, error.option_name)  # type: ignore[attr-defined]
                raise
            except Exception as error:
                if getattr(error, "option_name", None) == "--resume" and given and given[-1] == "--resume":
                    _resume_without_checkpoint(given)
                raise


# A word after a bare `--rerun` or `--keep-sandbox` (`--keep-sandbox sometimes`) -> that option: it is read as an
# argument, so an experiment that does not exist is said to be one, with what the option takes.
_WORDS_AFTER_BARE_OPTIONS: dict[str, str] = {}


def _words_after_bare_options(original: list[str], given: list[str]) -> dict[str, str]:
    """Where `with_bare_values` gave a bare option its value, the word after it (not an option) by that option."""
    words, at = {}, 0
    for position, token in enumerate(original):
        if at < len(given) and given[at] != token:  # a value was inserted here, after the option before
            at += 1
            if position and not token.startswith("-"):
                words[token] = original[position - 1]
        at += 1
    return words


def _check_word_after_bare_option(experiment: str | None, project: Path) -> None:
    """`--keep-sandbox sometimes`: the word became the experiment; when it selects none, the option is named."""
    from assay.agent.discovery import experiment_ids, selects_an_experiment
    from assay.agent.request import BARE_VALUES
    from assay.errors import UsageError

    option = _WORDS_AFTER_BARE_OPTIONS.get(experiment or "")
    ids = experiment_ids(project) if option else None
    if option and ids and experiment and not selects_an_experiment(experiment, ids):
        raise UsageError(f"no experiment matches {experiment!r}: the word after {option} is read as the experiment, as "
                         f"{option} takes only {BARE_VALUES[option]} or all ({option}=all); experiments: {', '.join(ids)}",
                         option)


def _resume_without_checkpoint(given: list[str]) -> None:
    """A bare `--resume` names the checkpoint it could continue (click said only "requires an argument")."""
    from assay.agent.checkpoint import list_checkpoints, resume_lines
    from assay.agent.project import project_folder
    from assay.errors import UsageError

    if "--dry" in given:  # refused whatever the checkpoint, as `--dry --resume ID` is
        from assay.agent.request import check_run_options

        check_run_options(dry=True, resume="")
    named = next((given[position + 1] for position, token in enumerate(given[:-1]) if token == "--project"),
                 next((token.split("=", 1)[1] for token in given if token.startswith("--project=")), None))
    try:
        project = project_folder(named)
        unfinished = [path for path, manifest in list_checkpoints(project) if manifest.get("status") != "complete"]
    except UsageError:
        unfinished = []
    latest = (f": the latest unfinished run's is {unfinished[-1].name}; {resume_lines(unfinished[-1], project)[-1]}"
              if unfinished else "; this project has no unfinished run to continue")
    raise UsageError(f"--resume needs the checkpoint to continue, its folder or id{latest}", "--resume")


@command(agent_app, "run", *params(
    AgentRunRequest,
    argument("experiment", Optional[str], None, help="Experiment id, folder or prefix; default: all."),
    argument("evals", Optional[List[str]], None, help="Eval id prefixes that narrow the experiment's evals."),
    PROJECT, "attempts concurrency timeout budget tags", JSON.but(help="NDJSON on stdout; the last line is the receipt."),
    JUNIT_PATH, RESUME.but(help="Checkpoint folder or id to resume."),
    VERBOSE.but(param_decls=("--verbose", "-v"), help="List every attempt in the results."), QUIET, "shard",
    EXECUTOR.but(help="Where attempts run: local (default) or ray."), RAY_ADDRESS,
    "keep_sandbox sandbox telemetry_host rerun early_exit shared_state_wait",
    option("dry", bool, False, "--dry", help="Print the plan (every slot carried or run, with the reason) and run or write nothing."),
    option("agent", Optional[str], None, "--agent", hidden=True),
    option("model", Optional[str], None, "--model", hidden=True),
), cls=_RunCommand, only_reads=lambda given: given.dry)  # --dry reads a plan, runs and writes nothing
def run_command(given: Given) -> None:
    """Run experiments × evals × attempts, journaled so an interrupted run can be resumed."""
    from assay.agent.project import project_folder
    from assay.agent.request import check_run_options
    from assay.agent.run_kind import AGENT, dry_run
    from assay.errors import UsageError

    with common.failing():
        execution = check_run_options(**given.pick(
            "agent", "model", "attempts", "concurrency", "timeout", "budget", "executor", "ray_address", "shard", "rerun",
            "sandbox", "dry", "resume", "shared_state_wait", "telemetry_host",
        ))
        # NDJSON: stderr carries only errors from before the invocation exists (NiceEval).
        outputs = given.outputs()
        request = given.request(AgentRunRequest, project=project_folder(given.project))
        _check_word_after_bare_option(given.experiment, request.project)
        resumed = None
        if given.resume is not None:
            from assay.core.run.resume import restore

            try:
                restored = restore(AGENT, given.resume, request, outputs)
            except UsageError as error:  # every problem is --resume's, and the line says so (video shows it as such)
                if str(error).startswith("--resume"):
                    raise
                raise UsageError(f"--resume: {error}", "--resume") from None
            request, outputs, resumed = restored.request, restored.outputs, restored.resume
        if given.dry:
            return dry_run(request).write(outputs.json)
    common.run_and_exit(AGENT, request, outputs, resume=resumed, execution=execution)


# (an empty --run, a script's unset variable, was read as a checkpoint id and refused without naming --run)
@_command(agent_app, "show", "locator", PROJECT, params(AgentOptions, "run")[0].but(check=not_empty("the latest run")),
          JSON.but(help="Print JSON instead of text."), "timing", only_reads=True)
def show_command(given: Given) -> None:
    """Show the results of the latest (or a given) run, or one attempt in detail."""
    from assay.agent.project import project_folder
    from assay.agent.show import find_shown

    with common.failing():
        shown = find_shown(project_folder(given.project), given.locator, given.run, timing=given.timing)
    if given.timing:
        common.show(given.json, shown.timing_document(), shown.timing_lines())
    else:
        common.show(given.json, shown.document(), shown.lines())


def _refusing() -> Any:
    """A `SandboxError` (a refusal) is one `Error:` line on stderr, exit 2."""
    from assay.agent.sandbox.commands import SandboxError

    return common.failing(catch=SandboxError, internal=None)


def _write(chunks: Iterable[str], *, lines: bool = True) -> None:
    """What a command yields, written as it comes; a refusal part-way ends it (what was done is said)."""
    with _refusing():
        for chunk in chunks:
            sys.stdout.write(chunk + "\n" if lines else chunk)


@_command(sandbox_app, "list", "orphans", JSON.but(help="One JSON object per line."), only_reads=True)
def sandbox_list_command(given: Given) -> None:
    """Every sandbox recorded on this machine: kept, still active, or orphaned (its run died)."""
    from assay.agent.sandbox.kept import listed

    _write(listed(orphans=given.orphans, as_json=given.json))


@_command(sandbox_app, "diff", "sandbox window path", only_reads=True)
def sandbox_diff_command(given: Given) -> None:
    """What the agent changed, send window by send window, as a unified diff; then what changed in the
    workdir after the run (in `sandbox enter`), as `after`."""
    from assay.agent.sandbox.kept import diff_text

    _write(diff_text(given.sandbox, given.window, given.path), lines=False)


@_command(sandbox_app, "enter", "sandbox leave_running", only_reads=True)  # (it makes no results to keep)
def sandbox_enter_command(given: Given) -> None:
    """A shell in a kept sandbox: in its workdir with its environment (bubblewrap's view when it was made
    with it), or in its container. When the shell exits, the container is stopped (kept: `enter` starts it
    again, `stop` removes it) and a local sandbox's processes are killed, unless --leave-running. Exits
    with the shell's exit code."""
    from assay.agent.sandbox.kept import enter_kept

    with _refusing():
        code = enter_kept(given.sandbox, leave_running=given.leave_running)
    raise typer.Exit(code)


@_command(sandbox_app, "stop", "sandboxes stop_all", only_reads=True)  # (it makes no results to keep)
def sandbox_stop_command(given: Given) -> None:
    """Stop kept sandboxes for good: their processes, container and folder."""
    from assay.agent.sandbox.kept import stopped

    _write(stopped(given.sandboxes or (), every_kept=given.stop_all))


@_command(sandbox_app, "prune", "force", only_reads=True)  # (it makes no results to keep)
def sandbox_prune_command(given: Given) -> None:
    """Remove sandboxes whose run died without stopping them (and, with --force, kept ones)."""
    from assay.agent.sandbox.kept import pruned

    _write(pruned(force=given.force))


@_command(shared_state_app, "list", PROJECT, JSON.but(help="One JSON object per line."), only_reads=True)
def shared_state_list_command(given: Given) -> None:
    """Every lease held in the project: its key, owner token, owner (pid, host, since, experiments) and
    whether that owner still runs."""
    from assay.agent.project import project_folder
    from assay.agent.shared_state import listed

    with common.failing():
        lines = listed(project_folder(given.project), as_json=given.json)
    for line in lines:
        sys.stdout.write(line + "\n")


@_command(shared_state_app, "recover", "key owner_token owner_terminated remote_quiesced teardown", PROJECT)
def shared_state_recover_command(given: Given) -> None:
    """Release the lease of KEY whose owner died. Refused unless the token is the lease's and both
    confirmations are given, and while its owner still runs on this machine."""
    from assay.agent.project import project_folder
    from assay.agent.shared_state import experiment_teardowns, recover_lease

    with common.failing():
        root = project_folder(given.project)
        for line in recover_lease(
            root, given.key, owner_token=given.owner_token, owner_terminated=given.owner_terminated,
            remote_quiesced=given.remote_quiesced, teardown=experiment_teardowns(root) if given.teardown else None,
        ):
            sys.stdout.write(line + "\n")


agent_app.add_typer(sandbox_app, name="sandbox")
agent_app.add_typer(shared_state_app, name="shared-state")

__all__ = ["agent_app", "sandbox_app", "shared_state_app"]
