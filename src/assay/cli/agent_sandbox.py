"""`assay agent sandbox …`: list the sandboxes on this machine, show what an agent changed in a kept one,
open a shell in one, stop kept sandboxes and prune those a dead run left behind.

Sandboxes are kept by `assay agent run --keep-sandbox[=failed|all]`; they are recorded under ASSAY_SANDBOX_DIR
(default: a per-user folder in the temporary folder), a Docker sandbox with its container's id, so every
command here reaches containers too. Exit codes: 0 done, 2 a usage error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from typing import List, Optional

import typer

sandbox_app = typer.Typer(
    rich_markup_mode=None,
    help="Kept and leftover sandboxes: list, diff, enter, stop, prune.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _examples(*lines: str) -> str:
    # The format of cli/examples.py (`\b` keeps click from rewrapping the block).
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def _fail(message: str) -> None:
    print(f"Error: {message}", file=sys.stderr)
    raise typer.Exit(2)


def _base():
    from assay.agent.sandbox.local import sandbox_base_dir

    return sandbox_base_dir()


def _entry(prefix: str):
    from assay.agent.sandbox.registry import find_entry

    try:
        return find_entry(_base(), prefix)
    except LookupError as error:
        _fail(str(error))


@sandbox_app.command("list", epilog=_examples("assay agent sandbox list", "assay agent sandbox list --orphans --json"))
def list_command(
    orphans: bool = typer.Option(False, "--orphans", help="Only sandboxes a dead run left behind."),
    output_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
) -> None:
    """Every sandbox recorded on this machine: kept, still active, or orphaned (its run died)."""
    from dataclasses import asdict

    from assay.agent.sandbox.registry import list_entries

    entries = [entry for entry in list_entries(_base()) if not orphans or entry.orphaned]
    if output_json:
        for entry in entries:
            print(json.dumps({**asdict(entry), "status": entry.status}))
        return
    if not entries:
        print(f"No sandboxes under {_base()}.")
        return
    for entry in entries:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.created))
        where = "/".join(entry.labels.get(name, "?") for name in ("experiment", "eval"))
        verdict = f" {entry.verdict}" if entry.verdict else ""
        place = f"container {entry.container[:12]} {entry.workdir}" if entry.container else entry.workdir
        print(f"{entry.sandbox_id}  {entry.status:<8} {entry.provider:<6} {created}  {where}{verdict}  {place}")


@sandbox_app.command("diff", epilog=_examples(
    "assay agent sandbox diff 3f9a", "assay agent sandbox diff 3f9a --window turn2 --path src/app.py",
    "assay agent sandbox diff 3f9a --window after",
))
def diff_command(
    sandbox: str = typer.Argument(..., help="Sandbox id (a unique prefix is enough)."),
    window: Optional[str] = typer.Option(None, "--window", help="One send window: turn2, session1/turn1, or "
                                                                "`after` (changes made since the run)."),
    path: Optional[str] = typer.Option(None, "--path", help="Only this path (relative to the workdir)."),
) -> None:
    """What the agent changed, send window by send window, as a unified diff; then what changed in the
    workdir after the run (in `sandbox enter`), as `after`."""
    entry = _entry(sandbox)
    names = [item["window"] for item in entry.windows]
    if window is not None and window not in (*names, AFTER):
        _fail(f"sandbox {entry.sandbox_id} has no window {window!r} (windows: {', '.join([*names, AFTER])})")
    windows = [item for item in entry.windows if window is None or item["window"] == window]
    with _ledger_git(entry) as git:
        if window in (None, AFTER):
            after = _after_the_run(entry, git)
            if after is not None:
                windows.append(after)
        if not windows:
            print(f"Sandbox {entry.sandbox_id} recorded no send windows." if window is None else "(no changes)")
            return
        for item in windows:
            # The ledger stores every blob as "big" (see ledger.py), which `git diff` would show as binary.
            arguments = ["-c", "core.bigFileThreshold=1g", "diff", "--no-color", "--no-ext-diff", item["start"], item["end"]]
            if path is not None:
                arguments += ["--", path]
            code, out, err = asyncio.run(git(arguments))
            print(f"== {item['window']} ==")
            if code != 0:
                _fail(f"git diff failed: {err.decode('utf-8', 'replace').strip()}")
            sys.stdout.write(out.decode("utf-8", "replace") or "(no changes)\n")


AFTER = "after"  # the window of changes made after the run, in `sandbox enter`


def _after_the_run(entry, git):
    """A window from the last recorded snapshot to the workdir now, with the run's diff rules; None when
    nothing changed or the run recorded no snapshot."""
    from assay.agent.sandbox.ledger import ChangeLedger, DiffRules, LedgerError

    last = entry.windows[-1]["end"] if entry.windows else (entry.diff.get("baseline") or [None])[0]
    if last is None:
        return None
    rules = DiffRules(tuple(entry.diff.get("include") or ()), tuple(entry.diff.get("ignore") or ()))
    try:
        now = asyncio.run(ChangeLedger(git, rules).snapshot())
    except LedgerError as error:
        _fail(f"the workdir of sandbox {entry.sandbox_id} could not be read: {error}")
    return None if now == last else {"window": AFTER, "start": last, "end": now}


@contextlib.contextmanager
def _ledger_git(entry):
    """The sandbox's ledger git: on the host for a local sandbox, in its container for Docker (a container
    `sandbox enter` stopped is started for it, and stopped again after)."""
    if entry.provider == "docker" and entry.container:
        from assay.agent.sandbox.docker import DockerSandbox, docker_client
        from assay.agent.sandbox.ledger import ExecGit

        try:
            client = docker_client()
            container = client.containers.get(entry.container)
            stopped = container.status != "running"
            if stopped:
                container.start()
        except Exception as error:  # noqa: BLE001
            _fail(f"the sandbox's container is not reachable: {error}")
        backend = DockerSandbox(client, container, entry.sandbox_id, entry.workdir, {}, _base() / entry.sandbox_id)
        try:
            yield ExecGit(backend, DockerSandbox.ledger_dir)
        finally:
            if stopped:
                container.stop(timeout=5)
            client.close()
        return
    if not entry.ledger:
        _fail(f"sandbox {entry.sandbox_id} has no change ledger on this machine")
    from assay.agent.sandbox.ledger import HostGit

    yield HostGit(entry.ledger, entry.workdir)


@sandbox_app.command("enter", epilog=_examples(
    "assay agent sandbox enter 3f9a", "assay agent sandbox enter 3f9a --leave-running",
    "echo 'python -m pytest -q' | assay agent sandbox enter 3f9a",
))
def enter_command(
    sandbox: str = typer.Argument(..., help="Sandbox id (a unique prefix is enough)."),
    leave_running: bool = typer.Option(False, "--leave-running", help="Leave the container running (and a local "
                                                                      "sandbox's processes) after the shell exits."),
) -> None:
    """A shell in a kept sandbox: in its workdir with its environment (bubblewrap's view when it was made
    with it), or in its container. When the shell exits, the container is stopped (kept: `enter` starts it
    again, `stop` removes it) and a local sandbox's processes are killed, unless --leave-running. Exits
    with the shell's exit code."""
    from assay.agent.sandbox.commands import SandboxError
    from assay.agent.sandbox.enter import enter

    entry = _entry(sandbox)
    if entry.state == "active" and not entry.orphaned:
        _fail(f"sandbox {entry.sandbox_id} belongs to a running attempt (pid {entry.owner_pid}); "
              "enter it once the run is over (keep it with --keep-sandbox)")
    try:
        code = enter(entry, leave_running=leave_running)
    except SandboxError as error:
        _fail(str(error))
    raise typer.Exit(code)


@sandbox_app.command("stop", epilog=_examples("assay agent sandbox stop 3f9a", "assay agent sandbox stop --all"))
def stop_command(
    sandboxes: Optional[List[str]] = typer.Argument(None, help="Sandbox ids (unique prefixes are enough)."),
    stop_all: bool = typer.Option(False, "--all", help="Every kept sandbox."),
) -> None:
    """Stop kept sandboxes for good: their processes, container and folder."""
    from assay.agent.sandbox.registry import list_entries
    from assay.agent.sandbox.retention import destroy

    if stop_all == bool(sandboxes):
        _fail("give sandbox ids or --all (not both)")
    entries = [entry for entry in list_entries(_base()) if entry.state == "kept"] if stop_all else [
        _entry(prefix) for prefix in sandboxes or ()
    ]
    for entry in entries:
        if entry.state == "active" and not entry.orphaned:
            _fail(f"sandbox {entry.sandbox_id} belongs to a running attempt (pid {entry.owner_pid})")
        print(f"{entry.sandbox_id}: {destroy(entry)}")
    if not entries:
        print("No kept sandboxes.")


@sandbox_app.command("prune", epilog=_examples("assay agent sandbox prune", "assay agent sandbox prune --force"))
def prune_command(
    force: bool = typer.Option(False, "--force", help="Also remove kept sandboxes."),
) -> None:
    """Remove sandboxes whose run died without stopping them (and, with --force, kept ones)."""
    from assay.agent.sandbox.retention import prune

    done = prune(_base(), force=force)
    for entry, what in done:
        print(f"{entry.sandbox_id} ({entry.status}): {what}")
    if not done:
        print("Nothing to prune.")


__all__ = ["sandbox_app"]
