"""The record of sandboxes on this machine: one `sandbox.json` per sandbox folder, read by `assay agent sandbox`.

A sandbox is `active` while its attempt runs and `kept` once `--keep-sandbox` retained it; an active one
whose owning process is gone was left behind by a run that died (an orphan, for `prune`).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from assay.core.file_lock import pid_is_alive as process_alive

ENTRY_FILE = "sandbox.json"


@dataclass
class SandboxEntry:
    sandbox_id: str
    provider: str
    state: str  # active | kept
    workdir: str
    root: str  # the folder this entry lives in
    isolation: str = ""
    owner_pid: int = 0
    created: float = 0.0
    labels: dict[str, str] = field(default_factory=dict)  # experiment, eval, attempt, run
    ledger: str | None = None  # the change ledger's git dir (local sandboxes)
    windows: list[dict[str, Any]] = field(default_factory=list)  # label, start tree, end tree
    container: str | None = None  # Docker container id
    image: str | None = None  # Docker image the container was made from
    workspace: str | None = None  # the host folder a container mounts as its workdir, when it is one
    env: dict[str, str] = field(default_factory=dict)  # a local sandbox's own variables (`sandbox enter` sets them)
    path_prepend: list[str] = field(default_factory=list)  # … and the folders put before PATH
    diff: dict[str, list[str]] = field(default_factory=dict)  # the eval's diff rules (include, ignore)
    verdict: str | None = None

    @property
    def orphaned(self) -> bool:
        return self.state == "active" and not process_alive(self.owner_pid)

    @property
    def status(self) -> str:
        return "orphaned" if self.orphaned else self.state


def kept_container(client: Any, entry: SandboxEntry) -> Any:
    """The container of a recorded Docker sandbox, from the daemon; a `SandboxError` saying it is gone (removed
    outside assay) and how to forget it, not the daemon's 404."""
    try:
        return client.containers.get(entry.container or "")
    except Exception as error:  # noqa: BLE001 - NotFound, or the daemon's own refusal
        from assay.agent.sandbox.commands import SandboxError

        raise SandboxError(f"the container of sandbox {entry.sandbox_id} is gone ({type(error).__name__}); "
                           f"`assay agent sandbox stop {entry.sandbox_id}` forgets it") from None


def start_kept(container: Any, entry: SandboxEntry) -> None:
    """Start the stopped container of a recorded Docker sandbox (`sandbox enter` stops it); a `SandboxError` saying
    why it cannot be, and how to forget it, not the daemon's traceback."""
    from assay.agent.sandbox.commands import SandboxError

    forget = f"`assay agent sandbox stop {entry.sandbox_id}` removes its container and forgets it"
    if entry.workspace and not Path(entry.workspace).is_dir():  # removed by hand: the daemon would name a volume mount
        raise SandboxError(f"sandbox {entry.sandbox_id} has no workdir any more ({entry.workspace}); {forget}")
    try:
        container.start()
    except Exception as error:  # noqa: BLE001 - the daemon's refusal
        raise SandboxError(f"the container of sandbox {entry.sandbox_id} could not be started: {error}; {forget}") from None


def write_entry(root: Path, entry: SandboxEntry) -> None:
    """Replace `root/sandbox.json` atomically (a listing never reads half an entry)."""
    root.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=root, prefix=".sandbox-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(asdict(entry), file, indent=1)
        os.replace(temporary, root / ENTRY_FILE)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_entry(root: Path) -> SandboxEntry | None:
    try:
        document = json.loads((root / ENTRY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, Mapping):
        return None
    known = {item.name for item in fields(SandboxEntry)}
    try:
        return SandboxEntry(**{name: value for name, value in document.items() if name in known})
    except TypeError:
        return None


def list_entries(base: Path) -> list[SandboxEntry]:
    """Every sandbox recorded under `base`, oldest first."""
    entries = []
    try:
        folders = list(base.iterdir())
    except OSError:
        return []
    for folder in folders:
        if folder.is_dir():
            entry = read_entry(folder)
            if entry is not None:
                entries.append(entry)
    return sorted(entries, key=lambda entry: (entry.created, entry.sandbox_id))


def find_entry(base: Path, prefix: str) -> SandboxEntry:
    """The one entry whose id starts with `prefix`; LookupError naming the ids meant otherwise (those that
    match, or the closest one and the ids there are)."""
    from assay.core.format import did_you_mean, join_first

    entries = list_entries(base)
    matches = [entry for entry in entries if entry.sandbox_id.startswith(prefix)]
    exact = [entry for entry in matches if entry.sandbox_id == prefix]
    if exact:
        return exact[0]
    if len(matches) > 1:
        ids = join_first([entry.sandbox_id for entry in matches], separator=", ")
        raise LookupError(f"{len(matches)} sandboxes under {base} start with {prefix!r} ({ids}); give more of the id")
    if not matches:
        ids = [entry.sandbox_id for entry in entries]
        there = f"the sandboxes there: {join_first(ids, separator=', ')}" if ids else "there are none"
        # A prefix is compared with the ids' prefixes of its length: '2c9e' is close to '2c9d', not to '2c9dc35072e1'.
        heads = {sandbox_id[:len(prefix)]: sandbox_id for sandbox_id in reversed(ids)}
        meant = did_you_mean(prefix, heads, shown=lambda head: repr(heads[head]))
        raise LookupError(f"no sandbox under {base} has an id starting with {prefix!r}{meant} "
                          f"({there}; `assay agent sandbox list` shows them)")
    return matches[0]


__all__ = ["ENTRY_FILE", "SandboxEntry", "find_entry", "list_entries", "read_entry", "start_kept", "write_entry"]
