"""An adapter process and everything it starts: its exit seen at once, every descendant found and stopped.

Used by every child-process transport (video command adapters, process agents, the node bridge).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import uuid
from dataclasses import dataclass
from typing import Mapping, Sequence

__all__ = ["ProcessTree", "TREE_VARIABLE", "become_subreaper", "kill_every_tree", "spawn_tree"]

# Every process of one tree inherits this variable with the tree's own token, so a descendant
# that left the session (setsid) and lost its parent can still be told apart from other children.
TREE_VARIABLE = "ASSAY_PROCESS_TREE"

_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_FIRST_POLL_S = 0.01
_LAST_POLL_S = 0.1
_subreaper: bool | None = None
_live_trees: set["ProcessTree"] = set()  # until reaped; held strongly so a leaked tree is still killed at exit


def become_subreaper() -> bool:
    """Make assay the reaper of its orphaned descendants (Linux); True if it is.

    Without it a grandchild whose parent exits is reparented to init, outside anything assay can
    walk; with it the grandchild becomes assay's child, so `/proc` ancestry still leads here."""
    global _subreaper
    if _subreaper is None:
        _subreaper = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _subreaper


@dataclass(frozen=True, slots=True)
class _Proc:
    pid: int
    ppid: int
    group: int
    session: int
    started: int  # clock ticks after boot: with the pid, names one process for good
    state: str

    @property
    def gone(self) -> bool:
        return self.state in ("Z", "X")


def _read_proc(pid: int) -> _Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
        fields = text[text.rindex(b")") + 2 :].split()  # the command name may hold spaces and parens
        return _Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]), fields[0].decode())
    except (OSError, ValueError, IndexError):
        return None


def _process_table() -> dict[int, _Proc]:
    table: dict[int, _Proc] = {}
    try:
        entries = os.scandir("/proc")
    except OSError:  # no procfs (macOS): only the process group is left to go by
        return table
    with entries:
        for entry in entries:
            if entry.name.isdigit() and (proc := _read_proc(int(entry.name))) is not None:
                table[proc.pid] = proc
    return table


def _carries(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return marker in environ.read().split(b"\0")
    except OSError:
        return False


def _descendants(roots: Sequence[int], table: dict[int, _Proc]) -> dict[int, _Proc]:
    children: dict[int, list[_Proc]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc)
    found: dict[int, _Proc] = {}
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child.pid not in found:
                found[child.pid] = child
                stack.append(child.pid)
    return found


def _exit_code(info: os.waitid_result) -> int:
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


class ProcessTree:
    """A leader started in a session of its own, and every process descended from it.

    `exited` resolves with the leader's exit code as soon as it exits, whoever still holds its pipes.
    The leader is reaped only by `stop`, after the tree has been searched: until then its pid (and
    so its process group and session ids) cannot be reused by an unrelated process."""

    def __init__(self, popen: subprocess.Popen[bytes], token: str) -> None:
        self._popen = popen
        self.pid = popen.pid
        self._marker = f"{TREE_VARIABLE}={token}".encode()
        self._loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[int] = self._loop.create_future()
        self._reaped = False
        self._seen: dict[int, int] = {}  # descendants found before, by pid -> start time
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(self.pid)
            self._loop.add_reader(self._pidfd, self._on_pidfd_ready)
        except (AttributeError, OSError, NotImplementedError):
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
            threading.Thread(target=self._wait_in_thread, name="assay-adapter-exit", daemon=True).start()
        _live_trees.add(self)

    @property
    def returncode(self) -> int | None:
        return self.exited.result() if self.exited.done() else None

    # ---- the leader's exit ----------------------------------------------------------------

    def _on_pidfd_ready(self) -> None:
        assert self._pidfd is not None
        try:
            # WNOWAIT: read the status but leave the zombie, so the pid stays ours until `stop`.
            info = os.waitid(os.P_PIDFD, self._pidfd, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
        except OSError:  # a kernel with pidfds but without waitid on them: reap by pid instead
            self._loop.remove_reader(self._pidfd)
            self._reap_by_pid()
            return
        if info is None:
            return
        self._loop.remove_reader(self._pidfd)
        self._record_exit(_exit_code(info))

    def _wait_in_thread(self) -> None:
        with contextlib.suppress(ChildProcessError):
            _, status = os.waitpid(self.pid, 0)
            code = os.waitstatus_to_exitcode(status)
            self._reaped = True
            self._popen.returncode = code
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits for the exit
                self._loop.call_soon_threadsafe(self._record_exit, code)

    def _reap_by_pid(self) -> None:
        with contextlib.suppress(ChildProcessError):
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._reaped = True
                self._popen.returncode = os.waitstatus_to_exitcode(status)
                self._record_exit(self._popen.returncode)

    def _record_exit(self, code: int) -> None:
        if not self.exited.done():
            self.exited.set_result(code)

    async def wait_exit(self, seconds: float | None) -> bool:
        """Whether the leader exited within `seconds` (None: wait as long as it takes)."""
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), seconds)
        except TimeoutError:
            return False
        return True

    # ---- finding the tree -----------------------------------------------------------------

    def members(self) -> list[_Proc]:
        """Every live or unreaped descendant of the leader (not the leader itself)."""
        table = _process_table()
        own_pid = os.getpid()
        found = _descendants([] if self._reaped else [self.pid], table)
        for proc in table.values():
            if proc.pid in found or proc.pid in (self.pid, own_pid):
                continue
            # The kernel keeps a group or session id reserved while any process uses it, and the
            # leader's pid is still ours: nothing unrelated can carry these ids.
            in_session = not self._reaped and self.pid in (proc.group, proc.session)
            if in_session or self._seen.get(proc.pid) == proc.started:
                found[proc.pid] = proc
        # Orphans that left the session: with the subreaper they are assay's children (or below).
        candidates = _descendants([own_pid], table) if become_subreaper() else table
        for proc in candidates.values():
            if proc.pid not in found and proc.pid not in (self.pid, own_pid) and _carries(proc.pid, self._marker):
                found[proc.pid] = proc
        found.update(_descendants(list(found), table))
        found.pop(self.pid, None)
        for proc in found.values():
            self._seen[proc.pid] = proc.started
        return list(found.values())

    # ---- stopping -------------------------------------------------------------------------

    def _signal_leader(self, number: int) -> None:
        if self._reaped:
            return
        # Unreaped, the leader's pid (and its group id) are still its own.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, number)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, number)

    def _signal_member(self, proc: _Proc, number: int) -> None:
        # A pidfd pins the process, so a pid freed and reused since the scan is never signalled.
        try:
            pidfd = os.pidfd_open(proc.pid)
        except ProcessLookupError:
            return
        except (AttributeError, OSError):
            pidfd = None
        try:
            current = _read_proc(proc.pid)
            if current is None or current.started != proc.started:
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if pidfd is not None:
                    signal.pidfd_send_signal(pidfd, number)
                else:
                    os.kill(proc.pid, number)
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def _signal_all(self, number: int, members: Sequence[_Proc]) -> None:
        self._signal_leader(number)
        for proc in members:
            if not proc.gone:
                self._signal_member(proc, number)

    def _reap_orphans(self, members: Sequence[_Proc]) -> None:
        own_pid = os.getpid()
        for proc in members:
            if proc.ppid == own_pid and proc.gone:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(proc.pid, os.WNOHANG)

    async def _settle(self, seconds: float) -> list[_Proc]:
        """Wait up to `seconds` for the leader to exit and every member to be gone; what is left."""
        deadline = self._loop.time() + seconds
        pause = _FIRST_POLL_S
        while True:
            left = [proc for proc in self.members() if not proc.gone]
            if self.exited.done() and not left:
                return []
            if self._loop.time() >= deadline:
                return left
            # Most trees are gone within milliseconds; a slow one is not worth a /proc scan each 10 ms.
            await asyncio.sleep(min(pause, max(0.0, deadline - self._loop.time())))
            pause = min(2 * pause, _LAST_POLL_S)

    async def stop(self, *, terminate_grace_s: float, kill_grace_s: float) -> bool:
        """Stop the whole tree and reap it; True if nothing is left running.

        A running leader and its tree get SIGTERM, then SIGKILL after `terminate_grace_s`. Once
        the leader has exited, what it left behind gets SIGKILL at once: it was the adapter's to stop."""
        members = [proc for proc in self.members() if not proc.gone]
        if not self.exited.done():
            self._signal_all(signal.SIGTERM, members)
            members = await self._settle(terminate_grace_s)
        if members or not self.exited.done():
            self._signal_all(signal.SIGKILL, members)
            members = await self._settle(kill_grace_s)
        self._reap_orphans(self.members())
        self._reap_leader()
        return not members and self.exited.done()

    def _reap_leader(self) -> None:
        if not self.exited.done() or self._reaped:
            return
        if self._pidfd is not None:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitid(os.P_PIDFD, self._pidfd, os.WEXITED | os.WNOHANG)
            os.close(self._pidfd)
            self._pidfd = None
        self._reaped = True
        self._popen.returncode = self.exited.result()  # so Popen never waits for it itself
        _live_trees.discard(self)

    def kill_now(self) -> None:
        """SIGKILL the tree without waiting (the interpreter is leaving)."""
        with contextlib.suppress(Exception):
            self._signal_all(signal.SIGKILL, self.members())


def spawn_tree(
    argv: Sequence[str], *, stdin: int, stdout: int, stderr: int, extra_env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> ProcessTree:
    """Start `argv` (no shell; environment inherited, plus `extra_env`; in `cwd`, else the current folder) as the
    leader of a new session."""
    become_subreaper()
    token = uuid.uuid4().hex
    environment = {**os.environ, **(extra_env or {}), TREE_VARIABLE: token}
    popen = subprocess.Popen(
        list(argv), stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True, env=environment, cwd=cwd,
    )
    return ProcessTree(popen, token)


def kill_every_tree() -> None:
    """SIGKILL every tree not stopped yet; runs at interpreter exit, so no adapter outlives assay."""
    for tree in list(_live_trees):
        tree.kill_now()


atexit.register(kill_every_tree)
