"""Whether a lock's owner is gone. An owner that holds the file's flock while it runs (`hold_os_lock`) is judged by
that flock on this host: a killed owner's lock is abandoned even when its recorded pid now names another live
process (pids are reused: a run in a fresh container is often the killed run's pid). Without `hold_os_lock`, the pid
decides, as it always did. (The shared-state lease had its own copy of this rule; the results store's and the video
store's locks waited on a reused pid.)"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from assay.core.file_lock import LockFile


def _lock(path: Path, *, hold_os_lock: bool) -> LockFile:
    return LockFile(path, lambda content: int(content) if content.strip() else None, 10.0, hold_os_lock=hold_os_lock)


def test_a_lock_whose_flock_is_free_is_abandoned_though_its_pid_names_a_live_process(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    path.write_bytes(str(os.getpid()).encode())  # a killed owner's record; its pid is alive (this process) again
    assert _lock(path, hold_os_lock=True).is_abandoned()
    assert _lock(path, hold_os_lock=True).inspect() == (str(os.getpid()).encode(), True)
    assert not _lock(path, hold_os_lock=False).is_abandoned()  # no flock held by owners: the pid decides
    assert _lock(path, hold_os_lock=True).break_if_stale() == "removed" and not path.exists()


def test_a_lock_whose_owner_holds_its_flock_is_held_and_a_record_not_yet_written_is_young(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    path.write_bytes(b"999999")  # a pid that does not run: the flock, held below, says the owner does
    descriptor = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        assert not _lock(path, hold_os_lock=True).is_abandoned()
        assert _lock(path, hold_os_lock=True).break_if_stale() == "held"
    finally:
        os.close(descriptor)
    path.write_bytes(b"")  # created, its record not written yet: young, so not abandoned
    assert not _lock(path, hold_os_lock=True).is_abandoned()
    assert _lock(tmp_path / "none.lock", hold_os_lock=True).inspect() is None
