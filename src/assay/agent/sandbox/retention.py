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
from typing import Any

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
    if entry.provider == "docker":
        what, removed = _remove_container(entry)
        if not removed:
            # The record is how `stop` and `prune` find the container again: dropping it would leave a container
            # that no `assay agent sandbox` command lists.
            return f"{what}; kept {entry.root}, its record, to try again"
        from assay.agent.sandbox.docker_workspace import remove_sandbox_folder

        if not remove_sandbox_folder(Path(entry.root)):
            return f"{what}; {entry.root} could not be removed (files of another user: `sudo rm -rf` it)"
        return f"{what}; removed {entry.root}"
    from assay.agent.sandbox.local import unlink_from_registry

    if not _marked(entry.sandbox_id):  # (a kept sandbox's processes ended with its attempt: nothing was killed)
        what = "no process of it was left"
    else:
        what = "killed its processes" if kill_marked(entry.sandbox_id) else "some processes would not die"
    shutil.rmtree(entry.root, ignore_errors=True)
    unlink_from_registry(entry.root, entry.sandbox_id)  # made under a base_dir of its own
    return f"{what}; removed {entry.root}"


def _remove_container(entry: SandboxEntry) -> tuple[str, bool]:
    """Remove the sandbox's container (found by its id, or by its label when the run died before recording
    the id), its workspace's files given back to this user first when the container's root wrote them.
    Returns what was done, and whether no container of the sandbox is left."""
    from assay.agent.sandbox.docker import DockerSandbox, docker_client
    from assay.agent.sandbox.docker_workspace import needs_release, release, release_with_helper

    try:
        client = docker_client()
    except Exception as error:  # noqa: BLE001 - no SDK or no daemon: say so, still drop what can be dropped
        return f"container {(entry.container or '?')[:12]} not removed ({type(error).__name__}: {error})", False
    try:
        if entry.container:
            containers = [container for container in client.containers.list(all=True, filters={"id": entry.container})]
        else:
            containers = client.containers.list(all=True, filters={"label": f"assay.sandbox={entry.sandbox_id}"})
        released = not (entry.workspace and needs_release() and os.path.isdir(entry.workspace))
        for container in containers:
            released = released or release(container, entry.workdir, DockerSandbox.ledger_dir)
        if not released and entry.image:
            release_with_helper(client, entry.image, Path(entry.root))
        said, removed = [], True
        for container in containers:
            try:
                container.remove(force=True, v=True)
                said.append(f"removed container {container.id[:12]}")
            except Exception as error:  # noqa: BLE001
                if "already in progress" in str(error) and _gone(client, container.id, REMOVAL_WAIT_SECONDS):
                    # Another removal had it (the attempt's own stop, which a second Ctrl-C cut short while the
                    # daemon went on): gone all the same, so the folder and the record go too.
                    said.append(f"removed container {container.id[:12]}")
                    continue
                said.append(f"container {container.id[:12]} not removed ({type(error).__name__}: {error})")
                removed = False
        said.extend(_remove_left_volumes(client, entry.sandbox_id))
        return "; ".join(said) or f"container {(entry.container or '?')[:12]} was gone already", removed
    finally:
        client.close()


REMOVAL_WAIT_SECONDS = 30.0


def _gone(client: Any, container_id: str, seconds: float) -> bool:
    """Whether the container is gone within `seconds` (a removal the daemon has under way ends)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if not client.containers.list(all=True, filters={"id": container_id}):
                return True
        except Exception:  # noqa: BLE001 - a daemon that stopped answering: not known to be gone
            return False
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _remove_left_volumes(client: Any, sandbox_id: str) -> list[str]:
    """The workspace volume of a container removed without its volumes (`docker rm -f` outside assay): the
    container's own removal takes it along, so one found here was left behind."""
    said = []
    try:
        volumes = client.volumes.list(filters={"label": f"assay.sandbox={sandbox_id}"})
    except Exception:  # noqa: BLE001 - a daemon that cannot list them: the container's removal said enough
        return said
    for volume in volumes:
        try:
            volume.remove(force=True)
            said.append(f"removed volume {volume.name[:12]} its container left behind")
        except Exception as error:  # noqa: BLE001
            if "no such volume" in str(error).lower():  # its container's removal took it meanwhile
                continue
            said.append(f"volume {volume.name[:12]} not removed ({type(error).__name__}: {error})")
    return said


def destroy_left_active(base: Path, run_id: str) -> list[str]:
    """Sandboxes this process made for run `run_id` that are still active as the run ends: their attempts'
    teardown was cut short (a second Ctrl-C cancels every task, teardowns too). Destroyed here, without
    awaiting anything, so nothing can cancel it; a run whose teardowns all ran finds none."""
    return [destroy(entry) for entry in list_entries(base)
            if entry.state == "active" and entry.owner_pid == os.getpid()
            and entry.labels.get("attempt", "").startswith(f"{run_id}/")]


def prune(base: Path, *, force: bool = False) -> list[tuple[SandboxEntry | None, str]]:
    """Destroy every orphaned sandbox under `base` (and, with `force`, every kept one), then every
    container of this host whose owner died before recording it, and the upload caches of dead runs."""
    from assay.agent.sandbox.template_packs import remove_abandoned

    done: list[tuple[SandboxEntry | None, str]] = []
    for link in base.iterdir() if base.is_dir() else ():
        if link.is_symlink() and not link.exists():  # to a base_dir sandbox whose folder was removed outside assay
            link.unlink(missing_ok=True)
    for entry in list_entries(base):
        if entry.orphaned or (force and entry.state == "kept"):
            done.append((entry, destroy(entry)))
    done.extend(unrecorded_containers())
    # A killed run's cache of packed uploads: only the next run uploading under this base would remove it.
    return done + [(None, f"removed {folder}, the upload cache of a run that is gone") for folder in remove_abandoned(base)]


def unrecorded_containers() -> list[tuple[SandboxEntry, str]]:
    """Remove assay's containers made on this host by a process that is gone, whose record does not
    exist (it died between starting the container and writing the record); nothing without a daemon."""
    import socket

    from assay.agent.sandbox.docker import OWNER_LABEL, ROOT_LABEL
    from assay.agent.sandbox.registry import ENTRY_FILE
    from assay.core.file_lock import pid_is_alive as process_alive

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
            try:
                recorded = not root or (Path(root) / ENTRY_FILE).exists()
            except OSError:  # another user's folder (a daemon several users share): not this user's to judge
                continue
            if recorded:
                continue  # recorded: its record says whether it is kept
            entry = SandboxEntry(sandbox_id=labels["assay.sandbox"], provider="docker", state="active", workdir="",
                                 root=root, owner_pid=int(owner_pid), container=container.id)
            try:
                container.remove(force=True, v=True)
                shutil.rmtree(root, ignore_errors=True)
                done.append((entry, f"removed unrecorded container {container.id[:12]}"))
            except Exception as error:  # noqa: BLE001
                done.append((entry, f"container {container.id[:12]} not removed ({type(error).__name__}: {error})"))
    finally:
        client.close()
    return done


__all__ = ["destroy", "kill_marked", "prune", "unrecorded_containers"]
