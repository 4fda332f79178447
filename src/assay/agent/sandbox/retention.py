"""Removing sandboxes that outlived their attempt: kept ones (`sandbox stop`) and orphans (`sandbox prune`).

An orphan's owner died before it could stop it, so no process tree object is left to stop: its processes
are found by the `ASSAY_SANDBOX=<id>` marker every sandbox command carries, and killed. A container is
removed through the daemon; one whose owner died before it was even recorded is found by its labels.
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
    """Destroy every orphaned sandbox under `base` (and, with `force`, every kept one), then every
    container of this host whose owner died before recording it."""
    done = []
    for entry in list_entries(base):
        if entry.orphaned or (force and entry.state == "kept"):
            done.append((entry, destroy(entry)))
    return done + unrecorded_containers()


def unrecorded_containers() -> list[tuple[SandboxEntry, str]]:
    """Remove assay's containers made on this host by a process that is gone, whose record does not
    exist (it died between starting the container and writing the record); nothing without a daemon."""
    import socket

    from assay.agent.sandbox.docker import OWNER_LABEL, ROOT_LABEL
    from assay.agent.sandbox.registry import ENTRY_FILE, process_alive

    try:
        import docker  # noqa: F401  (only where the SDK is installed)

        from assay.agent.sandbox.docker import docker_client

        client = docker_client()
    except Exception:  # noqa: BLE001 - no SDK or no daemon: no containers to look at
        return []
    host = socket.gethostname()
    done = []
    try:
        for container in client.containers.list(all=True, filters={"label": "assay.sandbox"}):
            labels = container.labels or {}
            owner_host, _, owner_pid = str(labels.get(OWNER_LABEL, "")).rpartition(":")
            root = labels.get(ROOT_LABEL)
            if owner_host != host or not owner_pid.isdigit() or process_alive(int(owner_pid)):
                continue
            if not root or (Path(root) / ENTRY_FILE).exists():
                continue  # recorded: its record says whether it is kept
            entry = SandboxEntry(sandbox_id=labels["assay.sandbox"], provider="docker", state="active", workdir="",
                                 root=root, owner_pid=int(owner_pid), container=container.id)
            try:
                container.remove(force=True)
                done.append((entry, f"removed unrecorded container {container.id[:12]}"))
            except Exception as error:  # noqa: BLE001
                done.append((entry, f"container {container.id[:12]} not removed ({type(error).__name__}: {error})"))
    finally:
        client.close()
    return done


__all__ = ["destroy", "kill_marked", "prune", "unrecorded_containers"]
