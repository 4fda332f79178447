"""`assay agent shared-state …`: the leases experiments with `shared_state=` hold, and the explicit release
of one whose owner died (never automatic: the confirmations say the owner and what it started are gone).

Leases live under `<project>/.assay/shared-state/`. Exit codes: 0 done, 2 a usage error or a refusal.
"""

from __future__ import annotations

import sys
from typing import Optional

from assay.cli import common
from assay.cli.options import JSON, PROJECT, Given, argument, command, group, option

shared_state_app = group("Shared-state leases (Experiment shared_state=): list them, recover one whose owner died.")


@command(shared_state_app, "list", PROJECT, JSON.but(help="One JSON object per line."), only_reads=True)
def list_command(given: Given) -> None:
    """Every lease held in the project: its key, owner token, owner (pid, host, since, experiments) and
    whether that owner still runs."""
    from assay.agent.project import project_folder
    from assay.agent.shared_state import listed

    with common.failing():
        lines = listed(project_folder(given.project), as_json=given.json)
    for line in lines:
        sys.stdout.write(line + "\n")


@command(
    shared_state_app, "recover", argument("key", str, ..., help="The shared-state key (as `list` shows it)."),
    option("owner_token", Optional[str], None, "--owner-token", help="The lease's owner token (as `list` shows it)."),
    option("owner_terminated", bool, False, "--confirm-owner-terminated",
           help="Confirm the run that holds the lease has ended."),
    option("remote_quiesced", bool, False, "--confirm-remote-quiesced",
           help="Confirm nothing it started (sandboxes, jobs, remote workers) still touches the shared state."),
    option("teardown", bool, False, "--teardown",
           help="First run the teardown of each experiment the lease names; the lease is kept if one fails."),
    PROJECT,
)
def recover_command(given: Given) -> None:
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


__all__ = ["shared_state_app"]
