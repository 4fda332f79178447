"""Shared state: one lease per key under `<project>/.assay/shared-state/`, so experiments that touch the
same external state (a staging database) never run at the same time, across invocations.

A lease gives mutual exclusion only and stores nothing. It is created exclusively (`LockFile.create`),
names its owner (token, pid, host, start, experiments) and is removed by that owner when its run ends.
It is never taken over: a lease whose owner died stays until a person releases it with `recover`,
confirming that the owner and everything it started are gone.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import secrets
import shlex
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.agent.project import checkpoints_base
from assay.core.file_lock import HeldLock, LockFile, pid_is_alive
from assay.errors import AssayError, UsageError

__all__ = [
    "LeaseOwner", "LeaseStatus", "SharedStateError", "acquire_leases", "checked_project", "experiment_teardowns",
    "lease_statuses", "listed", "recover_lease",
]

LEASE_FOLDER = "shared-state"
UNKNOWN_TOKEN = "unknown"  # the token of a lease its owner was killed while writing
_UNREADABLE_AFTER_S = 10.0  # an unreadable lease older than this (and not flocked) was never finished
_POLL_S = 0.2


class SharedStateError(AssayError):
    """A lease that cannot be taken (its owner died, or the wait ran out) or released (exit 2)."""


def lease_folder(root: Path) -> Path:
    return checkpoints_base(root) / LEASE_FOLDER


def _lease_path(root: Path, key: str) -> Path:
    # Readable where the key allows it; the digest keeps keys that differ only in other characters apart.
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip(".-")[:40] or "key"
    return lease_folder(root) / f"{readable}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:12]}.lease"


@dataclass(frozen=True)
class LeaseOwner:
    """What a lease file says: whose it is, since when and for which experiments."""

    key: str
    token: str
    pid: int
    host: str
    started_at: str
    experiments: tuple[str, ...] = ()

    def to_bytes(self) -> bytes:
        document = {"key": self.key, "token": self.token, "pid": self.pid, "host": self.host,
                    "started_at": self.started_at, "experiments": list(self.experiments)}
        return (json.dumps(document, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii")

    @classmethod
    def from_bytes(cls, content: bytes) -> LeaseOwner | None:
        """None for a lease that is not (yet) a complete owner record."""
        try:
            document = json.loads(content)
            owner = cls(str(document["key"]), str(document["token"]), int(document["pid"]), str(document["host"]),
                        str(document["started_at"]), tuple(str(name) for name in document.get("experiments", ())))
        except (ValueError, KeyError, TypeError):
            return None
        return owner

    def described(self) -> str:
        used = f" (experiment {', '.join(self.experiments)})" if self.experiments else ""
        return f"pid {self.pid} on host {self.host} since {self.started_at}{used}"


@dataclass(frozen=True)
class LeaseStatus:
    """One lease as `list` shows it; `alive` is None when the owner runs on another host (it cannot be seen)."""

    path: Path
    owner: LeaseOwner | None  # None: unreadable (its owner was killed while writing it)
    alive: bool | None

    @property
    def key(self) -> str:
        return self.owner.key if self.owner is not None else f"? ({self.path.name})"

    def document(self) -> dict[str, Any]:
        owner = self.owner
        return {
            "key": owner.key if owner else None, "token": owner.token if owner else UNKNOWN_TOKEN,
            "pid": owner.pid if owner else None, "host": owner.host if owner else None,
            "started_at": owner.started_at if owner else None,
            "experiments": list(owner.experiments) if owner else [], "owner_alive": self.alive, "file": str(self.path),
        }


def _lease_lock(path: Path) -> LockFile:
    """The lease file as a lock: its owner holds the file's flock while it runs, so on this host a dead owner is
    seen as gone even when its pid names another process now; a lease that names no owner yet is being written
    while young."""
    def owner_pid(content: bytes) -> int | None:
        owner = LeaseOwner.from_bytes(content)
        return owner.pid if owner is not None else None

    return LockFile(path, owner_pid, _UNREADABLE_AFTER_S, hold_os_lock=True)


def _status(path: Path) -> LeaseStatus | None:
    """The lease at `path` (None when there is none), read and judged through one descriptor; whether its owner
    runs is None for an owner on another host (it cannot be seen)."""
    found = _lease_lock(path).inspect(size=65536)
    if found is None:
        return None
    content, gone = found
    owner = LeaseOwner.from_bytes(content)
    return LeaseStatus(path, owner, None if owner is not None and owner.host != socket.gethostname() else not gone)


def lease_statuses(root: Path) -> list[LeaseStatus]:
    """Every lease held in the project, oldest first."""
    folder = lease_folder(root)
    if not folder.is_dir():
        return []
    found = [status for path in folder.glob("*.lease") if (status := _status(path)) is not None]
    return sorted(found, key=lambda status: (status.owner.started_at if status.owner else "", status.key))


def _is_project(folder: Path) -> bool:
    from assay.agent.project import EVALS_DIR, EXPERIMENTS_DIR

    return (folder / EVALS_DIR).is_dir() or (folder / EXPERIMENTS_DIR).is_dir() or lease_folder(folder).is_dir()


def checked_project(root: Path) -> Path:
    """`root`, when it is an assay project (it has evals/ or experiments/, or leases); a `UsageError` on
    --project otherwise, naming the project above it if there is one: "no lease is held" said of a
    subfolder or of the wrong folder would let a person believe the shared state is free."""
    if _is_project(root):
        return root
    above = next((parent for parent in root.parents if _is_project(parent)), None)
    fix = (f"run it in {above} or give --project {shlex.quote(str(above))}" if above is not None
           else "run it in the project's folder or give --project DIR")
    raise UsageError(f"{root} is not an assay project (it has no evals/ or experiments/ folder), so its leases "
                     f"cannot be looked up there; {fix}", "--project")


def _project_option(root: Path) -> str:
    return "" if Path.cwd().resolve() == root else f" --project {shlex.quote(str(root))}"


def recover_command(root: Path, key: str, token: str) -> str:
    options = f"--owner-token {token} --confirm-owner-terminated --confirm-remote-quiesced{_project_option(root)}"
    if key.startswith("-"):  # `recover -db …` reads the key as an option: after `--` it is the key
        return f"assay agent shared-state recover {options} -- {shlex.quote(key)}"
    return f"assay agent shared-state recover {shlex.quote(key)} {options}"


def _dead_owner_message(root: Path, key: str, status: LeaseStatus) -> str:
    owner = status.owner
    who = owner.described() if owner is not None else "a run that was killed while taking it"
    if owner is not None and pid_is_alive(owner.pid):  # `ps` shows that pid: say why it is not the owner
        who += f" (pid {owner.pid} is another process now: the run let go of the lease file's lock as it died)"
    return (f'shared state "{key}" is held by {who}, which is no longer running; a lease is never taken over '
            "automatically. Once nothing that run started still touches the shared state, release it with: "
            + recover_command(root, key, owner.token if owner is not None else UNKNOWN_TOKEN))


@dataclass
class HeldLeases:
    """The leases one run holds; `release` (safe twice, also at exit) lets the next run have them."""

    held: list[HeldLock]

    def __post_init__(self) -> None:
        if self.held:
            atexit.register(self.release)  # a path that never reaches the pipeline's end still lets go

    def release(self) -> None:
        held, self.held = self.held, []
        for lock in reversed(held):
            lock.release()
        if held:
            atexit.unregister(self.release)


def acquire_leases(
    root: Path, experiments_by_key: Mapping[str, Sequence[str]], *, wait_s: float | None = None,
    say: Callable[[str], None], started_at: str | None = None,
) -> HeldLeases:
    """Take every key's lease, in key order (two runs needing the same keys never hold one each), waiting
    for a live owner (`wait_s`: at most that long; None: as long as it runs) and saying so once per key.
    `SharedStateError` when an owner is dead or the wait runs out; what was taken is released then."""
    from assay.core.timestamps import utc_timestamp

    held: list[HeldLock] = []
    try:
        if experiments_by_key:
            lease_folder(root).mkdir(parents=True, exist_ok=True)
        for key in sorted(experiments_by_key):
            owner = LeaseOwner(key, secrets.token_hex(8), os.getpid(), socket.gethostname(),
                               started_at or utc_timestamp(), tuple(sorted(experiments_by_key[key])))
            held.append(_acquire(root, owner, wait_s, say))
    except BaseException:
        for lock in reversed(held):
            lock.release()
        raise
    return HeldLeases(held)


def _acquire(root: Path, owner: LeaseOwner, wait_s: float | None, say: Callable[[str], None]) -> HeldLock:
    path = _lease_path(root, owner.key)
    lock = _lease_lock(path)
    deadline = None if wait_s is None else time.monotonic() + wait_s
    try:
        return _wait_for(root, owner, lock, path, deadline, wait_s, say)
    except KeyboardInterrupt:
        # Ctrl-C (or SIGTERM) while waiting: the run ends here, before anything was made. Said, as the
        # waiting was: a CI log that ends on "waiting for ..." and exit 130 would leave it open what ran.
        with contextlib.suppress(OSError):  # stderr may be a closed pipe: the interrupt is what matters
            say(f'stopped waiting for shared state "{owner.key}" (interrupted): this run ran nothing and holds no lease')
        raise


def _wait_for(
    root: Path, owner: LeaseOwner, lock: LockFile, path: Path, deadline: float | None, wait_s: float | None,
    say: Callable[[str], None],
) -> HeldLock:
    said = False
    while True:
        taken = lock.create(owner.to_bytes())
        if taken is not None:
            return taken
        status = _status(path)
        if status is None:
            continue  # released meanwhile: try again at once
        if status.alive is False:
            raise SharedStateError(_dead_owner_message(root, owner.key, status))
        holder = status.owner.described() if status.owner is not None else "a run that is taking it"
        if deadline is not None and time.monotonic() >= deadline:
            raise SharedStateError(
                f'shared state "{owner.key}" is held by {holder}; gave up after --shared-state-wait {wait_s:g} s '
                "(without it, a run waits as long as the owner runs)"
            )
        if not said:
            said = True
            token = status.owner.token if status.owner is not None else UNKNOWN_TOKEN
            say(f'waiting for shared state "{owner.key}" (owner token {token}), held by {holder}; Ctrl-C stops waiting')
        time.sleep(_POLL_S)


def recover_lease(
    root: Path, key: str, *, owner_token: str | None, owner_terminated: bool, remote_quiesced: bool,
    teardown: Callable[[LeaseOwner | None], Iterable[str]] | None = None,
) -> Iterable[str]:
    """Release the lease of `key` whose owner is gone, once every confirmation is given and the token is
    the lease's (`UsageError` otherwise, before anything is done); with `teardown`, run it first (its
    lines said) and keep the lease if it fails. Yields what was done."""
    missing = [(flag, why) for flag, given, why in (
        ("--owner-token", owner_token, "the lease's token, as `assay agent shared-state list` shows it"),
        ("--confirm-owner-terminated", owner_terminated, "the run that holds it has ended"),
        ("--confirm-remote-quiesced", remote_quiesced,
         "nothing it started (sandboxes, jobs, remote workers) still touches the shared state"),
    ) if not given]
    if missing:
        raise UsageError(
            "recover releases a lease another run took; it needs " + "; ".join(f"{flag} ({why})" for flag, why in missing),
            missing[0][0],
        )
    path = _lease_path(checked_project(root), key)
    status = _status(path)
    if status is None:
        from assay.core.format import did_you_mean

        held = [held.key for held in lease_statuses(root) if held.key]
        meant = did_you_mean(key, held, form='; did you mean {}?', shown=lambda near: f'"{near}"')
        raise UsageError(f'no lease is held for shared state "{key}" in {root}{meant} (`assay agent shared-state list` shows '
                         "them)")
    token = status.owner.token if status.owner is not None else UNKNOWN_TOKEN
    if not secrets.compare_digest(str(owner_token), token):
        raise UsageError(f'--owner-token does not match the lease of shared state "{key}" (held by '
                         f"{status.owner.described() if status.owner else 'an unreadable owner'}); "
                         "`assay agent shared-state list` shows its token", "--owner-token")
    if status.alive:
        raise UsageError(f'the owner of shared state "{key}" is still running ({status.owner.described() if status.owner else "it holds the lease open"}); '
                         "stop it first (Ctrl-C or kill: it releases the lease as it ends)", "--confirm-owner-terminated")
    if teardown is not None:
        yield from teardown(status.owner)
    now = _status(path)
    if now is None or (now.owner.token if now.owner is not None else UNKNOWN_TOKEN) != token:
        raise SharedStateError(f'the lease of shared state "{key}" changed while it was recovered; look again '
                               "with `assay agent shared-state list`")
    path.unlink(missing_ok=True)
    yield f'released shared state "{key}" (owner token {token})'


def experiment_teardowns(root: Path) -> Callable[[LeaseOwner | None], Iterable[str]]:
    """`recover --teardown`: the teardown hook of each experiment the lease names, run as the dead run
    would have run it (a fresh `ctx`); the first that raises stops recovery with the lease kept."""

    def run(owner: LeaseOwner | None) -> Iterable[str]:
        import asyncio

        from assay.agent.context import CancelSignal, Feedback, HookContext
        from assay.agent.discovery import discover_experiments
        from assay.agent.project import load_dotenv
        from assay.core.asyncutil import call_user_code

        if owner is None or not owner.experiments:
            raise SharedStateError("--teardown: the lease names no experiment (it is unreadable); recover without it")
        load_dotenv(root)
        entries = {entry.id: entry for entry in discover_experiments(root)}
        for experiment_id in owner.experiments:
            entry = entries.get(experiment_id)
            if entry is None:
                raise SharedStateError(f"--teardown: experiment {experiment_id} is no longer in {root}, so its teardown "
                                       "cannot run; the lease is kept. Clean up what that run made by hand, then "
                                       "recover without --teardown")
            hook = entry.experiment.teardown
            if hook is None:
                yield f"experiment {experiment_id} has no teardown"
                continue
            feedback = Feedback()
            try:
                asyncio.run(call_user_code(hook, HookContext(experiment_id, CancelSignal(), feedback)))
            except Exception as error:  # noqa: BLE001 - the user's hook: its failure is the message
                raise SharedStateError(
                    f"--teardown: experiment {experiment_id} teardown failed: {type(error).__name__}: {error}; "
                    "the lease is kept. Fix the teardown and recover again, or clean up by hand and recover "
                    "without --teardown"
                ) from None
            for diagnostic in feedback.diagnostics:
                yield f"experiment {experiment_id}: {diagnostic.level}: {diagnostic.message}"
            yield f"ran the teardown of experiment {experiment_id}"

    return run


_STATE_WORDS = {True: "owner running", False: "owner gone: recover it", None: "owner on another host"}


def listed(root: Path, *, as_json: bool) -> list[str]:
    """`assay agent shared-state list`: one line per lease held in the project (a JSON object each with `--json`)."""
    statuses = lease_statuses(checked_project(root))
    if as_json:
        return [json.dumps(status.document(), ensure_ascii=False) for status in statuses]
    if not statuses:
        return ["no shared-state lease is held in this project"]
    lines = []
    for status in statuses:
        owner = status.owner
        who = owner.described() if owner is not None else "an owner killed while taking it"
        token = owner.token if owner is not None else UNKNOWN_TOKEN
        lines.append(f"{status.key}  token {token}  held by {who}  [{_STATE_WORDS[status.alive]}]")
    return lines
