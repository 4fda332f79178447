"""The options of `assay agent`'s commands besides `run` (whose options are its request, `AgentRunRequest`):
`init`, `show`, and the `sandbox` and `shared-state` groups. Declared once with `option(...)`, as every
command's are; `assay.cli.options.params` makes them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assay.core.run.request import option

__all__ = ["AgentOptions"]


@dataclass(frozen=True, kw_only=True)
class AgentOptions:
    """Every option and argument of `agent init`, `agent show`, `agent sandbox …` and `agent shared-state …`."""

    directory: Path = option(Path("."), argument=True, help="Folder to set up (created if missing).")
    locator: str | None = option(None, argument=True, help="An attempt locator (@XXXX…, a unique prefix is enough), or its unit id (experiment/eval#2).")
    run: str | None = option(None, flag="--run", help="Run (checkpoint) id, the start of one, or its folder; default: the latest run.")
    timing: bool = option(False, flag="--timing", help="The attempt's phase tree (eval.run, agent.setup, each agent.send, "
                          "judge calls).")
    sandbox: str = option(argument=True, help="Sandbox id (a unique prefix is enough).")
    sandboxes: tuple[str, ...] = option((), argument=True, help="Sandbox ids (unique prefixes are enough).")
    orphans: bool = option(False, flag="--orphans", help="Only sandboxes a dead run left behind.")
    window: str | None = option(None, flag="--window", help="One send window: turn2, session1/turn1, or `after` (changes "
                                "made since the run).")
    path: str | None = option(None, flag="--path", help="Only this path (relative to the workdir).")
    leave_running: bool = option(False, flag="--leave-running", help="Leave the container running (and a local sandbox's "
                                 "processes) after the shell exits.")
    stop_all: bool = option(False, flag="--all", help="Every kept sandbox.")
    force: bool = option(False, flag="--force", help="Also remove kept sandboxes.")
    key: str = option(argument=True, help="The shared-state key (as `list` shows it).")
    owner_token: str | None = option(None, flag="--owner-token", help="The lease's owner token (as `list` shows it).")
    owner_terminated: bool = option(False, flag="--confirm-owner-terminated",
                                    help="Confirm the run that holds the lease has ended.")
    remote_quiesced: bool = option(False, flag="--confirm-remote-quiesced", help="Confirm nothing it started (sandboxes, "
                                   "jobs, remote workers) still touches the shared state.")
    teardown: bool = option(False, flag="--teardown", help="First run the teardown of each experiment the lease names; "
                            "the lease is kept if one fails.")
