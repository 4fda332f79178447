"""Lock files: one file created exclusively per resource, naming its owner, broken only once the owner is gone.

Used by the checkpoint journal (`active.lock`, refused at once while live), the cloud video cache
(download locks, waited for) and agent shared-state leases (never broken: `LockFile.create`). The caller decides what the file says and how long an unreadable one is respected.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

try:  # POSIX only; without it staleness falls back to the owner's pid and the file's age alone.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["HeldLock", "LockFile", "LockHeld", "pid_is_alive"]

BreakResult = Literal["removed", "changed", "held"]
_FILE_MODE = 0o600
_CONTESTED_ROUNDS = 20  # lost races in a row before a lock counts as held (someone keeps winning it)


class LockHeld(Exception):
    """A live owner holds the lock (and the wait, if any, is over)."""


def pid_is_alive(pid: int) -> bool:
    """Whether a process `pid` exists here (one we may not signal counts: it is someone else's)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # pragma: no cover - os.kill(pid, 0) would end the process there
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:
        return True
    return not _exited(pid)


def _exited(pid: int) -> bool:
    """A zombie: the process has ended (and let go of everything) but its parent has not collected it yet, as
    right after `kill -9` of a child its parent has not waited for. Linux says so in /proc; elsewhere, no."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # `pid (command) state …`: the command may hold spaces and parentheses, so read after the last ")"
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"Z", b"X")


@dataclass(frozen=True, slots=True)
class LockFile:
    """The lock at `path`; `owner_pid` reads the owner's pid from the file (None: unreadable, which a
    half-written file also is, so only one older than `unreadable_stale_after_s` counts as abandoned).

    `hold_os_lock` keeps the file open with an flock while held, so a live owner is never broken
    whatever its recorded pid says (another pid namespace), and a dead one is seen as gone whatever
    process its pid names now (pids are reused: a run in a fresh container is often the killed run's
    pid); without it (or where there is no flock) liveness is the recorded pid alone, and the file is
    closed once written.
    """

    path: Path
    owner_pid: Callable[[bytes], int | None]
    unreadable_stale_after_s: float
    hold_os_lock: bool = False

    def acquire(self, content: bytes, *, wait_s: float = 0.0, poll_s: float = 0.1) -> HeldLock:
        """Create the lock holding `content`, breaking an abandoned one; `LockHeld` when a live owner
        still has it after `wait_s` seconds; `OSError` when the file cannot be made or read."""
        deadline = time.monotonic() + wait_s
        contested = 0
        while True:
            held = self._create(content)
            if held is not None:
                return held
            if self.break_if_stale() != "held" and contested < _CONTESTED_ROUNDS:
                contested += 1
                continue  # gone or replaced: try to take it again
            contested = 0
            if time.monotonic() >= deadline:
                raise LockHeld(str(self.path))
            time.sleep(poll_s)

    def create(self, content: bytes) -> HeldLock | None:
        """Create the lock holding `content` if nobody has it (None if someone does); never breaks one,
        for a lock whose abandoned owner a person must release (agent shared-state leases)."""
        return self._create(content)

    def _create(self, content: bytes) -> HeldLock | None:
        try:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, _FILE_MODE)
        except FileExistsError:
            return None
        try:
            if self.hold_os_lock and fcntl is not None:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX)
                except OSError:
                    pass  # no flock here (some network file systems): the pid and age rules decide
            os.fchmod(descriptor, _FILE_MODE)  # the create mode is filtered by the umask
            os.write(descriptor, content)
            os.fsync(descriptor)
        except BaseException:
            # A lock that names no owner would be respected by everyone for a while: take it back.
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            os.close(descriptor)
            raise
        if self.hold_os_lock:
            return HeldLock(self.path, content, descriptor)
        os.close(descriptor)
        return HeldLock(self.path, content, None)

    def owner_is_gone(self, content: bytes, modified_at: float) -> bool:
        pid = self.owner_pid(content)
        if pid is None or os.name == "nt":
            return time.time() - modified_at > self.unreadable_stale_after_s
        return not pid_is_alive(pid)

    def break_if_stale(self) -> BreakResult:
        """Remove the lock if its owner is gone: "removed", "changed" (it went or was replaced meanwhile:
        look again) or "held". A lock that cannot be opened counts as held: its owner cannot be seen."""
        try:
            descriptor = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return "changed"
        except OSError:
            return "held"
        try:
            flocked = _try_flock(descriptor, exclusive=True)
            if flocked is None:
                return "held"  # its owner (or another breaker) has it open right now
            opened = os.fstat(descriptor)
            if not _same_file(self.path, opened):
                return "changed"  # released (or broken) and perhaps taken again since we opened it
            if not self._gone(os.read(descriptor, 4096), opened.st_mtime, flocked):
                return "held"
            # With the flock held nobody else can replace the file now. Without one (some network file
            # systems) another breaker might have, so move it aside and check it is the file judged;
            # a live lock moved by mistake is put back.
            hidden = self.path.name if self.path.name.startswith(".") else f".{self.path.name}"
            aside = self.path.with_name(f"{hidden}.{secrets.token_hex(8)}.stale")
            try:
                os.rename(self.path, aside)
            except FileNotFoundError:
                return "changed"
            if not _same_file(aside, opened):
                try:
                    os.link(aside, self.path)
                except FileExistsError:
                    pass
                os.unlink(aside)
                return "changed"
            os.unlink(aside)
            return "removed"
        finally:
            os.close(descriptor)

    def _gone(self, content: bytes, modified_at: float, flocked: bool) -> bool:
        """Whether the owner of a lock holding `content` is gone, once its flock was free for the taking
        (`flocked`; False where there is no flock): an owner that holds it while it runs (`hold_os_lock`) and
        has written its record would have it, whatever its pid names now; otherwise the pid and age rules."""
        if flocked and self.hold_os_lock and self.owner_pid(content) is not None:
            return True
        return self.owner_is_gone(content, modified_at)

    def inspect(self, *, size: int = 4096) -> tuple[bytes, bool] | None:
        """The lock's content (its first `size` bytes) and whether its owner is gone, read through one
        descriptor (a lock released and taken again between two reads would be judged as another file); None
        when there is no lock. `OSError` when it cannot be read."""
        try:
            descriptor = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            content = os.read(descriptor, size)
            flocked = _try_flock(descriptor, exclusive=False)
            return content, flocked is not None and self._gone(content, os.fstat(descriptor).st_mtime, flocked)
        finally:
            os.close(descriptor)

    def is_abandoned(self) -> bool:
        """Whether the lock is gone or its owner is, without removing it."""
        try:
            found = self.inspect()
        except OSError:
            return False
        return found is None or found[1]


def _try_flock(descriptor: int, *, exclusive: bool) -> bool | None:
    """Take the file's flock without waiting: True when taken, None when someone holds it, False where there is
    no flock (no fcntl, or a network file system without it)."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(descriptor, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return None
    except OSError:
        return False
    return True


def _same_file(path: Path, opened: os.stat_result) -> bool:
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (opened.st_dev, opened.st_ino)


class HeldLock:
    """A lock this process holds; `release` removes it (only if the file is still ours) and is safe twice."""

    __slots__ = ("_content", "_descriptor", "_released", "path")

    def __init__(self, path: Path, content: bytes, descriptor: int | None) -> None:
        self.path = path
        self._content = content
        self._descriptor = descriptor
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        try:
            if self._still_ours():
                # Unlink before close: a breaker that opened this file then finds another (or none) at the path.
                self.path.unlink(missing_ok=True)
        finally:
            if self._descriptor is not None:
                os.close(self._descriptor)

    def _still_ours(self) -> bool:
        try:
            if self._descriptor is not None:
                return _same_file(self.path, os.fstat(self._descriptor))
            return self.path.read_bytes() == self._content
        except OSError:
            return False
