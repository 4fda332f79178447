"""`assay agent sandbox …`: list the sandboxes on this machine, show what an agent changed in a kept one,
open a shell in one, stop kept sandboxes and prune those a dead run left behind.

Sandboxes are kept by `assay agent run --keep-sandbox[=failed|all]`; they are recorded under ASSAY_SANDBOX_DIR
(default: a per-user folder in the temporary folder), a Docker sandbox with its container's id, so every
command here reaches containers too. Exit codes: 0 done, 2 a usage error.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, List, Optional

import typer

from assay.cli import common
from assay.cli.options import Given, argument, command, group, option

sandbox_app = group("Kept and leftover sandboxes: list, diff, enter, stop, prune.")

SANDBOX = argument("sandbox", str, ..., help="Sandbox id (a unique prefix is enough).")


def _refusing() -> Any:
    """A `SandboxError` (a refusal) is one `Error:` line on stderr, exit 2."""
    from assay.agent.sandbox.commands import SandboxError

    return common.failing(catch=SandboxError, internal=None)


def _write(chunks: Iterable[str], *, lines: bool = True) -> None:
    """What a command yields, written as it comes; a refusal part-way ends it (what was done is said)."""
    with _refusing():
        for chunk in chunks:
            sys.stdout.write(chunk + "\n" if lines else chunk)


@command(sandbox_app, "list", option("orphans", bool, False, "--orphans", help="Only sandboxes a dead run left behind."),
         option("json", bool, False, "--json", help="One JSON object per line."))
def list_command(given: Given) -> None:
    """Every sandbox recorded on this machine: kept, still active, or orphaned (its run died)."""
    from assay.agent.sandbox.kept import listed

    _write(listed(orphans=given.orphans, as_json=given.json))


@command(
    sandbox_app, "diff", SANDBOX,
    option("window", Optional[str], None, "--window",
           help="One send window: turn2, session1/turn1, or `after` (changes made since the run)."),
    option("path", Optional[str], None, "--path", help="Only this path (relative to the workdir)."),
)
def diff_command(given: Given) -> None:
    """What the agent changed, send window by send window, as a unified diff; then what changed in the
    workdir after the run (in `sandbox enter`), as `after`."""
    from assay.agent.sandbox.kept import diff_text

    _write(diff_text(given.sandbox, given.window, given.path), lines=False)


@command(
    sandbox_app, "enter", SANDBOX,
    option("leave_running", bool, False, "--leave-running",
           help="Leave the container running (and a local sandbox's processes) after the shell exits."),
)
def enter_command(given: Given) -> None:
    """A shell in a kept sandbox: in its workdir with its environment (bubblewrap's view when it was made
    with it), or in its container. When the shell exits, the container is stopped (kept: `enter` starts it
    again, `stop` removes it) and a local sandbox's processes are killed, unless --leave-running. Exits
    with the shell's exit code."""
    from assay.agent.sandbox.kept import enter_kept

    with _refusing():
        code = enter_kept(given.sandbox, leave_running=given.leave_running)
    raise typer.Exit(code)


@command(sandbox_app, "stop", argument("sandboxes", Optional[List[str]], None, help="Sandbox ids (unique prefixes are enough)."),
         option("stop_all", bool, False, "--all", help="Every kept sandbox."))
def stop_command(given: Given) -> None:
    """Stop kept sandboxes for good: their processes, container and folder."""
    from assay.agent.sandbox.kept import stopped

    _write(stopped(given.sandboxes or (), every_kept=given.stop_all))


@command(sandbox_app, "prune", option("force", bool, False, "--force", help="Also remove kept sandboxes."))
def prune_command(given: Given) -> None:
    """Remove sandboxes whose run died without stopping them (and, with --force, kept ones)."""
    from assay.agent.sandbox.kept import pruned

    _write(pruned(force=given.force))


__all__ = ["sandbox_app"]
