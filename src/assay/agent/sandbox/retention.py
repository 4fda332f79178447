"""Removing sandboxes that outlived their attempt: kept ones (`sandbox stop`) and orphans (`sandbox prune`).

An orphan's owner died before it could stop it, so no process tree object is left to stop: its processes
are found by the `ASSAY_SANDBOX=<id>` marker every sandbox command carries, and killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from assay.agent.sandbox.registry import SandboxEntry, list_entries


def _marked(sandbox_id: str) -> list[int]:
    needle = f"ASSAY_SANDBOX={sandbox_id}".encode()
    found = []
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as environ:
                if needle in environ.read().split(b"\0"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_marked(sandbox_id: str, wait_seconds: float = 3.0) -> bool:
    """SIGKILL every process of the sandbox; True once none is left."""
    deadline = time.monotonic() + wait_seconds
    while True:
        pids = _marked(sandbox_id)
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if time.monotonic() > deadline:
            return not _marked(sandbox_id)
        time.sleep(0.05)


def destroy(entry: SandboxEntry) -> str:
    """Stop a recorded sandbox for good (processes, container, folder); returns what was done."""
    if entry.provider == "docker" and entry.container:
        from assay.agent.sandbox.docker import docker_client

        try:
            docker_client().containers.get(entry.container).remove(force=True)
            what = f"removed container {entry.container[:12]}"
        except Exception as error:  # noqa: BLE001 - gone already, or no daemon: say so, still drop the record
            what = f"container {entry.container[:12]} not removed ({type(error).__name__}: {error})"
    else:
        what = "killed its processes" if kill_marked(entry.sandbox_id) else "some processes would not die"
    shutil.rmtree(entry.root, ignore_errors=True)
    return f"{what}; removed {entry.root}"


def prune(base: Path, *, force: bool = False) -> list[tuple[SandboxEntry, str]]:
    """Destroy every orphaned sandbox under `base` (and, with `force`, every kept one)."""
    done = []
    for entry in list_entries(base):
        if entry.orphaned or (force and entry.state == "kept"):
            done.append((entry, destroy(entry)))
    return done


__all__ = ["destroy", "kill_marked", "prune"]
