"""The sandboxes runs left on this machine — kept, still active or orphaned — as `assay agent sandbox`
lists, diffs, enters, stops and prunes them.

Each command here yields the lines it prints as it goes, so what was done before a refusal is said;
every refusal is a `SandboxError` whose message is the one line the command line shows (exit 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from assay.agent.sandbox.commands import SandboxError
from assay.agent.sandbox.registry import ENTRY_FILE, SandboxEntry, find_entry, kept_container, list_entries, start_kept

__all__ = ["AFTER", "diff_text", "enter_kept", "listed", "pruned", "sandbox_base", "stopped"]

AFTER = "after"  # the window of changes made after the run, in `sandbox enter`


def sandbox_base() -> Path:
    from assay.agent.sandbox.local import sandbox_base_dir

    return sandbox_base_dir()


def _entry(prefix: str) -> SandboxEntry:
    if not prefix.strip():
        # An empty prefix starts every id: `sandbox stop "$ID"` with an unset variable would remove the only one.
        raise SandboxError(f"the sandbox id is empty ({prefix!r}); give an id or a unique prefix of one "
                           "(`assay agent sandbox list` shows them)")
    try:
        return find_entry(sandbox_base(), prefix)
    except LookupError as error:
        raise SandboxError(str(error)) from None


def listed(*, orphans: bool = False, as_json: bool = False) -> Iterator[str]:
    """Every sandbox recorded here (only orphans, with `orphans`), one line each (a JSON object each)."""
    every = list_entries(sandbox_base())
    entries = [entry for entry in every if not orphans or entry.orphaned]
    if as_json:
        for entry in entries:
            yield json.dumps({**asdict(entry), "status": entry.status})
        return
    if not entries and orphans and every:
        # "No sandboxes" would deny the kept and active ones the plain `list` shows.
        yield (f"No orphaned sandboxes under {sandbox_base()} ({len(every)} other: `assay agent sandbox list` shows "
               f"{'it' if len(every) == 1 else 'them'}).")
        return
    if not entries:
        base = sandbox_base()
        if base.exists() and not base.is_dir():  # (a run refuses this setting: "none here" would hide why)
            from assay.agent.sandbox.local import sandbox_dir_setting

            raise SandboxError(f"{base} is a file, not the folder sandboxes are recorded in ({sandbox_dir_setting()})")
        yield f"No {'orphaned ' if orphans else ''}sandboxes under {base}."
        return
    for entry in entries:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.created))
        where = "/".join(entry.labels.get(name, "?") for name in ("experiment", "eval"))
        verdict = f" {entry.verdict}" if entry.verdict else ""
        place = f"container {entry.container[:12]} {entry.workdir}" if entry.container else entry.workdir
        yield f"{entry.sandbox_id}  {entry.status:<8} {entry.provider:<6} {created}  {where}{verdict}  {place}"


def diff_text(prefix: str, window: str | None = None, path: str | None = None) -> Iterator[str]:
    """What the agent changed in the sandbox, send window by send window (only `window`, when given),
    then what changed in its workdir after the run (`after`), as unified diffs (only of `path`), each
    under its `== window ==` line. Yields text to write as it is."""
    from assay.core.format import did_you_mean

    entry = _entry(prefix)
    names = [item["window"] for item in entry.windows]
    if window is not None and window not in (*names, AFTER):
        raise SandboxError(f"sandbox {entry.sandbox_id} has no window {window!r}{did_you_mean(window, [*names, AFTER])} "
                           f"(windows: {', '.join([*names, AFTER])})")
    if path is not None:
        path = _in_workdir(entry, path)
    windows = [item for item in entry.windows if window is None or item["window"] == window]
    running = entry.state == "active" and not entry.orphaned
    if running and window == AFTER:  # (its workdir against the last snapshot would be shown as the run's end)
        raise SandboxError(f"sandbox {entry.sandbox_id} belongs to a running attempt (pid {entry.owner_pid}): its "
                           f"window {AFTER!r} exists once the run is over (keep the sandbox with --keep-sandbox)")
    with _ledger_git(entry) as git:
        if window is None and not running or window == AFTER:
            after = _after_the_run(entry, git)
            if after is not None:
                windows.append(after)
        if not windows:
            if running:  # it said "recorded no send windows" while the first was open
                yield (f"Sandbox {entry.sandbox_id} belongs to a running attempt (pid {entry.owner_pid}) and has recorded "
                       "no send window yet: each is recorded when its send returns.\n")
                return
            if window is None:
                yield f"Sandbox {entry.sandbox_id} recorded no send windows.\n"
            else:  # `after` with nothing changed since the run: headed as every window is, whatever --path asked
                yield f"== {window} ==\n" + ("(no changes)\n" if path is None else f"(no changes to {path})\n")
            return
        for item in windows:
            # The ledger stores every blob as "big" (see ledger.py), which `git diff` would show as binary.
            between = ["-c", "core.bigFileThreshold=1g", "diff", "--no-color", "--no-ext-diff", item["start"], item["end"]]
            code, out, err = asyncio.run(git(between if path is None else [*between, "--", path]))
            yield f"== {item['window']} ==\n"
            if code != 0:
                raise SandboxError(f"git diff failed: {err.decode('utf-8', 'replace').strip()}")
            if out or path is None:
                yield out.decode("utf-8", "replace") or "(no changes)\n"
                continue
            # Nothing under `path`: say what did change in the window (a misspelt --path shows nothing too).
            code, names, _ = asyncio.run(git([*between, "--name-only"]))
            changed = names.decode("utf-8", "replace").split() if code == 0 else []
            from assay.core.format import join_first

            yield f"(no changes to {path}" + (f"; changed: {join_first(changed, separator=', ')}" if changed else "") + ")\n"


def _in_workdir(entry: SandboxEntry, path: str) -> str:
    """`--path` relative to the sandbox's workdir (an absolute path in it is made so); `SandboxError` for one
    outside it, which `git diff` would only answer with a fatal error after the first window's heading."""
    import posixpath

    if not path.strip():  # would be the workdir itself, every change: not what an empty value means
        raise SandboxError(f"--path is empty; give a path in the workdir of sandbox {entry.sandbox_id}, relative to it "
                           "(like --path calc.py), or leave --path out for every change")
    workdir = entry.workdir.rstrip("/") or "/"
    resolved = posixpath.normpath(posixpath.join(workdir, path))
    if resolved == workdir:
        return "."
    if not resolved.startswith(workdir.rstrip("/") + "/"):
        raise SandboxError(f"--path {path} is outside the workdir of sandbox {entry.sandbox_id} ({workdir}): give a "
                           "path in it, relative to it (like --path calc.py)")
    return posixpath.relpath(resolved, workdir)


def _after_the_run(entry: SandboxEntry, git: Any) -> dict[str, str] | None:
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
        raise SandboxError(f"the workdir of sandbox {entry.sandbox_id} could not be read: {error}") from None
    return None if now == last else {"window": AFTER, "start": last, "end": now}


@contextlib.contextmanager
def _ledger_git(entry: SandboxEntry) -> Iterator[Any]:
    """The sandbox's ledger git: on the host for a local sandbox, in its container for Docker (a container
    `sandbox enter` stopped is started for it, and stopped again after)."""
    if entry.provider == "docker" and entry.container:
        from assay.agent.sandbox.docker import DockerSandbox, docker_client
        from assay.agent.sandbox.ledger import ExecGit

        try:
            client = docker_client()
        except Exception as error:  # noqa: BLE001
            raise SandboxError(f"the sandbox's container is not reachable: {error}") from None
        container = kept_container(client, entry)
        stopped = container.status != "running"
        if stopped:
            start_kept(container, entry)
        backend = DockerSandbox(client, container, entry.sandbox_id, entry.workdir, {}, sandbox_base() / entry.sandbox_id)
        try:
            yield ExecGit(backend, DockerSandbox.ledger_dir)
        finally:
            if stopped:
                container.stop(timeout=5)
            client.close()
        return
    if not entry.ledger:
        raise SandboxError(f"sandbox {entry.sandbox_id} has no change ledger on this machine")
    for what, folder in (("workdir", entry.workdir), ("change ledger", entry.ledger)):
        if not Path(folder).is_dir():  # removed by hand: git would not even start in it
            raise SandboxError(f"sandbox {entry.sandbox_id} has no {what} any more ({folder}); "
                               f"`assay agent sandbox stop {entry.sandbox_id}` forgets it")
    from assay.agent.sandbox.ledger import HostGit

    yield HostGit(entry.ledger, entry.workdir)


def _refuse_active(entry: SandboxEntry, then: str = "") -> None:
    if entry.state == "active" and not entry.orphaned:
        raise SandboxError(f"sandbox {entry.sandbox_id} belongs to a running attempt (pid {entry.owner_pid}){then}")


def enter_kept(prefix: str, *, leave_running: bool = False) -> int:
    """A shell in the sandbox until it exits (`assay.agent.sandbox.enter`); its exit code."""
    from assay.agent.sandbox.enter import enter

    entry = _entry(prefix)
    _refuse_active(entry, "; enter it once the run is over (keep it with --keep-sandbox)")
    return enter(entry, leave_running=leave_running)


def stopped(prefixes: Sequence[str] = (), *, every_kept: bool = False) -> Iterator[str]:
    """Stop the sandboxes `prefixes` name (or every kept one) for good: processes, container, folder."""
    from assay.agent.sandbox.retention import destroy

    if every_kept and prefixes:
        raise SandboxError("give sandbox ids or --all, not both")
    if not every_kept and not prefixes:
        raise SandboxError("give the ids of the sandboxes to stop (`assay agent sandbox list` shows them), or --all")
    if every_kept:
        entries = [entry for entry in list_entries(sandbox_base()) if entry.state == "kept"]
    else:
        named = [_entry(prefix) for prefix in prefixes]
        # One sandbox named twice (`stop 2a08 2a081c`) is stopped once, not said to be removed twice.
        entries = list({entry.sandbox_id: entry for entry in named}.values())
    left = []
    for entry in entries:
        # (it said only whose it was: what to do was left to guess)
        _refuse_active(entry, "; its run removes it when the attempt ends (Ctrl-C stops the run sooner)")
        yield f"{entry.sandbox_id}: {destroy(entry)}"
        if (Path(entry.root) / ENTRY_FILE).exists():
            left.append(entry.sandbox_id)
    if not entries:
        yield "No kept sandboxes."
    if left:  # said above, line by line; the exit code must not say it is done
        raise SandboxError(f"{', '.join(left)} not stopped (see above); `assay agent sandbox stop {' '.join(left)}` "
                           "tries again once that is fixed")


def pruned(*, force: bool = False) -> Iterator[str]:
    """Remove the sandboxes whose run died without stopping them (and, with `force`, the kept ones)."""
    from assay.agent.sandbox.retention import prune

    done = prune(sandbox_base(), force=force)
    for entry, what in done:
        yield f"{entry.sandbox_id} ({entry.status}): {what}" if entry is not None else what
    if not done:
        yield "Nothing to prune."
    # A container no daemon removed keeps its record, as with `stop`: the exit code must not say it is done.
    left = [entry.sandbox_id for entry, _ in done
            if entry is not None and entry.root and (Path(entry.root) / ENTRY_FILE).exists()]
    if left:
        raise SandboxError(f"{', '.join(left)} not removed (see above); `assay agent sandbox prune"
                           f"{' --force' if force else ''}` tries again once that is fixed")
