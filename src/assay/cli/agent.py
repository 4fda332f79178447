"""`assay agent …`: init a project, list evals and experiments, run them, show recorded results.

Exit codes: 0 all passed (or scored/skipped), 1 a failed or errored attempt or an incomplete run,
2 a usage, config or internal error, 130 interrupted. An error is one line on stderr (results alone go
to stdout). What each command does lives in assay.agent; here are its options and the call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from assay.agent.request import AgentRunRequest
from assay.cli import common
from assay.cli.agent_sandbox import sandbox_app
from assay.cli.agent_shared_state import shared_state_app
from assay.cli.options import (
    EXECUTOR, JSON, JUNIT_PATH, PROJECT, QUIET, RAY_ADDRESS, RESUME, VERBOSE, Given, argument, command, group, option, params,
)

agent_app = group("Agent evals (NiceEval's model): evals drive an agent and assert on its event stream.")


@command(agent_app, "init", argument("directory", Path, Path("."), help="Folder to set up (created if missing)."))
def init_command(given: Given) -> None:
    """Set up a project: evals/, experiments/, a [tool.assay] table in pyproject.toml and, in a new
    project, a starter agent, eval and experiment that run offline. Existing files are never changed
    (only the [tool.assay] table is appended to a pyproject.toml that lacks one).

    Example: assay agent init my-project && assay agent run --project my-project
    """
    from assay.agent.starter import init_project

    with common.failing():
        common.say(*init_project(given.directory))


@command(agent_app, "list", *params(
    AgentRunRequest, PROJECT, "tags", JSON.but(help="Print a JSON document instead of tables."),
), only_reads=True)
def list_command(given: Given) -> None:
    """List evals (id, tags, description) and experiments; runs nothing."""
    from assay.agent.listing import list_project
    from assay.agent.project import project_folder

    with common.failing():
        listing = list_project(project_folder(given.project), given.tags or ())
    common.show(given.json, listing.document(), listing.tables(), ensure_ascii=True)


class _RunCommand(typer.core.TyperCommand):
    """`agent run`'s arguments with NiceEval's bare `--rerun` (see `with_rerun_value`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from assay.agent.request import with_rerun_value

        with common.failing():
            args = with_rerun_value(args)
        return super().parse_args(ctx, args)


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

    with common.failing():
        execution = check_run_options(**given.pick(
            "agent", "model", "attempts", "concurrency", "timeout", "budget", "executor", "ray_address", "shard", "rerun",
            "sandbox", "dry", "resume", "shared_state_wait",
        ))
        # NDJSON: stderr carries only errors from before the invocation exists (NiceEval).
        outputs = given.outputs()
        request = given.request(AgentRunRequest, project=project_folder(given.project))
        resumed = None
        if given.resume is not None:
            from assay.core.run.resume import restore

            restored = restore(AGENT, given.resume, request, outputs)
            request, outputs, resumed = restored.request, restored.outputs, restored.resume
        if given.dry:
            return dry_run(request).write(outputs.json)
    common.run_and_exit(AGENT, request, outputs, resume=resumed, execution=execution)


@command(
    agent_app, "show", argument("locator", Optional[str], None, help="An attempt locator (@XXXX…, a unique prefix is enough)."),
    PROJECT, option("run", Optional[str], None, "--run", help="Checkpoint id or folder; default: the latest run."),
    JSON.but(help="Print JSON instead of text."),
    option("timing", bool, False, "--timing", help="The attempt's phase tree (eval.run, agent.setup, each agent.send, judge calls)."),
    only_reads=True,
)
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


agent_app.add_typer(sandbox_app, name="sandbox")
agent_app.add_typer(shared_state_app, name="shared-state")

__all__ = ["agent_app"]
