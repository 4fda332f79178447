"""A host folder uploaded into many sandboxes is hashed and packed once per process, not once per attempt.

The first upload of a folder builds a git pack of its files in `<sandbox base>/.ledger-packs-<pid>/`.
Every later attempt's ledger gets a hard link to that pack (an immutable file; `ledger.link_packs`) before its baseline, so
the baseline finds each uploaded file's blob already stored: git hashes the files but compresses and
writes nothing. The links keep every ledger self-contained (a kept sandbox outlives the cache and the
process that made it), and a stale pack, when the folder changed since, is only a cache miss: the
ledger writes whatever blob it does not find. The cache is removed at exit; one left by a process
that was killed is removed by the next process to build one under the same base.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from assay.agent.sandbox.ledger import ChangeLedger, DiffRules, HostGit
from assay.core.file_lock import pid_is_alive as process_alive

_PREFIX = ".ledger-packs-"
_built: dict[tuple[str, str, tuple[str, ...]], tuple[str, ...]] = {}
_building: dict[tuple[str, str, tuple[str, ...]], asyncio.Task[tuple[str, ...]]] = {}
_roots: set[Path] = set()


async def packs_for(base: Path, source: Path, ignore: Sequence[str]) -> tuple[str, ...]:
    """The pack files holding `source`'s blobs (built on first use); empty when they cannot be made."""
    key = (str(base), os.path.realpath(source), tuple(ignore))
    packs = _built.get(key)
    if packs is not None and all(os.path.exists(path) for path in packs):
        return packs
    loop = asyncio.get_running_loop()
    task = _building.get(key)
    if task is None or task.get_loop() is not loop:
        task = _building[key] = loop.create_task(_build(base, Path(key[1]), key[2]))
    packs = await asyncio.shield(task)
    _built[key] = packs
    if _building.get(key) is task:
        del _building[key]
    return packs


async def _build(base: Path, source: Path, ignore: tuple[str, ...]) -> tuple[str, ...]:
    root = base / f"{_PREFIX}{os.getpid()}"
    if root not in _roots:
        remove_abandoned(base)
        _roots.add(root)
        if len(_roots) == 1:
            atexit.register(_remove_own)
    git_dir = root / hashlib.sha256(repr((str(source), ignore)).encode()).hexdigest()[:16]
    with contextlib.suppress(OSError):
        shutil.rmtree(git_dir)
    try:
        git_dir.mkdir(parents=True)
    except OSError:
        return ()
    # The same snapshot a ledger takes (its default excludes and the upload's ignore patterns), so the
    # pack holds exactly the blobs a baseline of this upload looks up.
    git = HostGit(str(git_dir), str(source))
    tree = await ChangeLedger(git, DiffRules(ignore=ignore)).start()
    if tree is None:
        return ()
    # One pack of the blobs and the trees too: a baseline's `write-tree` then finds the uploaded
    # folders' trees as well and writes no loose object for them.
    code, listing, _ = await git(["ls-tree", "-r", "-t", "-z", tree])
    if code != 0:
        return ()
    objects = [tree]
    for entry in filter(None, listing.split(b"\0")):
        _, kind, name = entry.split(b"\t", 1)[0].split(b" ")
        if kind != b"commit":  # an embedded repository's commit is not in this store
            objects.append(name.decode())
    pack_folder = git_dir / "objects" / "pack"
    streamed = sorted(pack_folder.glob("pack-*"))
    code, name, _ = await git(["pack-objects", "-q", str(pack_folder / "pack")], ("\n".join(objects) + "\n").encode())
    if code != 0:
        return ()
    packed = pack_folder / f"pack-{name.decode().strip()}.pack"
    for path in streamed:
        if path.stem != packed.stem:
            path.unlink()
    return (str(packed),)


def remove_abandoned(base: Path) -> list[str]:
    """Remove the caches under `base` of processes that are gone (killed before their exit); their folders."""
    removed = []
    with contextlib.suppress(OSError):
        for folder in base.iterdir():
            if folder.name.startswith(_PREFIX):
                owner = folder.name[len(_PREFIX):]
                if owner.isdigit() and not process_alive(int(owner)):
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(str(folder))
    return removed


def _remove_own() -> None:
    for root in _roots:
        shutil.rmtree(root, ignore_errors=True)


__all__ = ["packs_for", "remove_abandoned"]
