"""Where a container's workdir lives: a folder of this machine that the container mounts, when the daemon
can see this machine's files; the container's own file system otherwise. The choice is recorded.

Writing a repository into a container's layered file system is several times slower than into a host
folder (601 entries: 0.58 s against ~0.1 s here), and that write is most of what a sandbox costs beyond
`docker run --rm` on a bind mount. So the workdir is the sandbox's own folder, `<sandbox folder>/workspace`,
mounted through an anonymous local volume bound to it: Docker copies whatever the image has at the workdir
into a new volume (a bind mount would hide it), the workspace does not count against the container's
memory (a tmpfs would), and the volume goes with the container. Everything still goes in and out through
commands in the container (uploads are a tar it unpacks), so links are resolved as the agent sees them
and never on the host. A remote daemon (DOCKER_HOST tcp://, ssh://) cannot mount this machine's folders,
and a daemon that answers on a local socket may still be another machine's: it then says the folder does
not exist, and this process stops asking it. Files the container writes belong to its users: a process
that is not root gets them back (`chown` inside the container) before it removes the folder.
"""

from __future__ import annotations

import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HOST_FOLDER = "host-folder"
CONTAINER = "container"
TMPFS = "tmpfs"
WORKSPACE = "workspace"  # the host folder's name inside the sandbox's folder
LEDGER = "ledger"  # the change ledger's git dir beside it, mounted where the container's ledger is
_LOCAL_SCHEMES = ("", "unix", "npipe")
_UNSEEN: set[str] = set()  # daemons (base URLs) that could not mount a folder of this machine
_UNSEEN_GUARD = threading.Lock()


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one sandbox's workdir is: `kind` (host-folder, container or tmpfs), the host `folder` when
    it is one, and `reason` when it is not (for the record)."""

    kind: str
    folder: Path | None = None
    reason: str = ""

    @property
    def ledger(self) -> Path | None:
        return self.folder.parent / LEDGER if self.folder is not None else None

    def to_json(self) -> dict[str, str]:
        document = {"kind": self.kind}
        if self.folder is not None:
            document["folder"] = str(self.folder)
        if self.reason:
            document["reason"] = self.reason
        return document


def remote_daemon(environment: dict[str, str] | None = None) -> str | None:
    """Why the daemon DOCKER_HOST names cannot see this machine's folders (tcp://, ssh://), or None."""
    host = (environment if environment is not None else os.environ).get("DOCKER_HOST", "")
    scheme = urlsplit(host).scheme.lower() if "://" in host else ""
    if scheme in _LOCAL_SCHEMES:
        return None
    return f"the Docker daemon is remote (DOCKER_HOST={host}): it cannot mount this machine's folders"


def choose(client: Any, root: Path, *, tmpfs: bool) -> Placement:
    """The placement for a sandbox whose folder is `root`; a host folder is made here (empty, for Docker's
    copy of the image's files into a new volume)."""
    if tmpfs:
        return Placement(TMPFS, reason="tmpfs_workdir=True")
    remote = remote_daemon()
    if remote is None and _daemon_key(client) in _UNSEEN:
        remote = "the Docker daemon could not mount a folder of this machine (it runs on another machine)"
    if remote is not None:
        return Placement(CONTAINER, reason=remote)
    folder = root / WORKSPACE
    folder.mkdir(mode=0o755)
    (root / LEDGER).mkdir(mode=0o755)
    return Placement(HOST_FOLDER, folder)


def mounts(placement: Placement, workdir: str, ledger: str, labels: dict[str, str]) -> dict[str, Any]:
    """The `containers.create` arguments that put the workdir (and the change ledger at `ledger`) where
    `placement` says."""
    if placement.kind == TMPFS:
        # Docker's default tmpfs options include noexec: a workspace runs its own scripts.
        return {"tmpfs": {workdir: "rw,exec,nosuid,nodev,mode=0755"}}
    if placement.kind != HOST_FOLDER:
        return {}
    from docker.types import DriverConfig, Mount  # type: ignore[import-not-found]

    bound = DriverConfig("local", {"type": "none", "o": "bind", "device": str(placement.folder)})
    return {"mounts": [Mount(workdir, None, type="volume", labels=labels, driver_config=bound),
                       Mount(ledger, str(placement.ledger), type="bind")]}


def unseen(client: Any, placement: Placement, error: BaseException) -> Placement | None:
    """When creating the container failed because the daemon cannot find the host folder (it is another
    machine's), the container's file system instead, remembered for this daemon; None for any other failure."""
    if placement.kind != HOST_FOLDER or placement.folder is None:
        return None
    said = str(getattr(error, "explanation", None) or error)
    # "bind source path does not exist: <ledger>", "failed to mount local volume: mount <workspace>:…: no such file"
    named = str(placement.folder) in said or str(placement.ledger) in said
    if not named or not any(words in said.lower() for words in ("no such file or directory", "does not exist")):
        return None
    with _UNSEEN_GUARD:
        _UNSEEN.add(_daemon_key(client))
    for folder in (placement.folder, placement.ledger):
        shutil.rmtree(folder, ignore_errors=True)
    return Placement(CONTAINER, reason="the Docker daemon could not mount a folder of this machine "
                                       "(it runs on another machine)")


def _daemon_key(client: Any) -> str:
    return str(getattr(getattr(client, "api", None), "base_url", ""))


def needs_release() -> bool:
    """Whether files the container wrote must be handed back before this process can remove them."""
    return os.geteuid() != 0


def release(container: Any, *paths: str) -> bool:
    """Give everything under `paths` (the workdir, the ledger) to this process's user, from inside the
    container (as root there); a stopped container is started for it. True when done."""
    argv = ["chown", "-R", "-h", f"{os.geteuid()}:{os.getegid()}", "--", *paths]
    for attempt in range(2):
        try:
            if attempt:
                container.start()
            return container.exec_run(argv, user="0").exit_code == 0
        except Exception:  # noqa: BLE001 - not running (started once), or gone
            continue
    return False


def release_with_helper(client: Any, image: str, folder: Path) -> bool:
    """`release` for a folder whose container is gone: a throwaway container of its image does the chown."""
    try:
        client.containers.run(
            image, ["chown", "-R", "-h", f"{os.geteuid()}:{os.getegid()}", "--", "/released"], remove=True, user="0",
            network_mode="none", volumes={str(folder): {"bind": "/released", "mode": "rw"}},
        )
    except Exception:  # noqa: BLE001 - no image, no daemon: the folder stays for a later prune
        return False
    return True


def remove_sandbox_folder(root: Path) -> bool:
    """Remove the sandbox's folder, its record last: a workspace that cannot be removed (files of another
    user) keeps the record, so `assay agent sandbox prune` finds it again. True when all of it is gone."""
    from assay.agent.sandbox.local import remove_tree

    for name in (WORKSPACE, LEDGER):
        if (root / name).exists():
            remove_tree(root / name)  # read-only folders (an agent's chmod -w, git's objects) included
        if (root / name).exists():
            return False
    shutil.rmtree(root, ignore_errors=True)
    return not root.exists()


__all__ = [
    "CONTAINER", "HOST_FOLDER", "LEDGER", "Placement", "TMPFS", "WORKSPACE", "choose", "mounts", "needs_release", "release",
    "release_with_helper", "remote_daemon", "remove_sandbox_folder", "unseen",
]
