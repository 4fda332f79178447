"""The local provider: a fresh folder per attempt, each command the leader of its own process tree.

Commands run in their own session (and, where bubblewrap works, in a read-only view of the host with
only the sandbox's folders writable and their own PID namespace); a timeout or a cancellation kills
the whole tree and waits until it is gone. The isolation actually used is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.adapters.process_tree import TREE_VARIABLE, ProcessTree, become_subreaper
from assay.agent.sandbox.commands import SandboxError, checked_env, checked_path_prepend
from assay.agent.sandbox.interface import (
    OUTPUT_LIMIT_BYTES,
    CommandSignal,
    CreateRequest,
    OutputCallback,
    RawOutput,
)
from assay.agent.sandbox.registry import SandboxEntry, write_entry
from assay.core.fsutil import is_contained

BUBBLEWRAP = "bubblewrap"
PROCESS_GROUP = "process-group"
ISOLATIONS = ("auto", BUBBLEWRAP, "none")
_DRAIN_SECONDS = 0.5  # after the leader exits, how long a descendant may keep its pipes open
_TERMINATE_GRACE_SECONDS = 1.0
_KILL_GRACE_SECONDS = 3.0
_bubblewrap_state: str | None = None  # "" once bubblewrap is known to work


def sandbox_base_dir() -> Path:
    """Where local sandboxes (and the record of kept ones) live: `ASSAY_SANDBOX_DIR`, else a per-user
    folder in the system temporary folder. Never inside a project: an agent's `git` would find its repo."""
    configured = os.environ.get("ASSAY_SANDBOX_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path(tempfile.gettempdir()) / f"assay-sandboxes-{os.getuid()}"


def sandbox_dir_setting() -> str:
    """What to change when the folder `sandbox_base_dir()` names cannot be used."""
    configured = os.environ.get("ASSAY_SANDBOX_DIR")
    if configured:
        return f"ASSAY_SANDBOX_DIR is {configured}: point it at a folder you can write, or unset it"
    return "set ASSAY_SANDBOX_DIR to a folder you can write"


def make_sandbox_root(base: Path, sandbox_id: str, folders: Sequence[str] = (), *, mode: int = 0o777,
                      base_dir: Path | None = None) -> Path:
    """`base/sandbox_id` (and `folders` in it), made new; a `SandboxError` naming the setting the base comes from
    (`base_dir`, else ASSAY_SANDBOX_DIR) when it cannot be made there."""
    root = base / sandbox_id
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        root.mkdir(mode=mode)
        for folder in folders:
            (root / folder).mkdir()
    except OSError as error:
        setting = (f"local_sandbox(base_dir={str(base_dir)!r}): give it a folder you can write" if base_dir is not None
                   else sandbox_dir_setting())
        why = f"{base} is not a folder" if base.exists() and not base.is_dir() else error.strerror or str(error)
        raise SandboxError(f"could not make the sandbox folder {root}: {why} ({setting})") from None
    return root


def link_in_registry(root: Path, sandbox_id: str) -> None:
    """A sandbox made under a `base_dir` of its own is linked from ASSAY_SANDBOX_DIR (`<id>` -> its folder),
    where `assay agent sandbox list | diff | enter | stop | prune` look for sandboxes; best effort."""
    registry = sandbox_base_dir()
    if root.parent.resolve() == registry.resolve():
        return
    with contextlib.suppress(OSError):
        registry.mkdir(parents=True, exist_ok=True)
        (registry / sandbox_id).symlink_to(root, target_is_directory=True)


def unlink_from_registry(root: Path | str, sandbox_id: str) -> None:
    """Remove the link `link_in_registry` made for the sandbox whose folder is `root` (none: nothing)."""
    link = sandbox_base_dir() / sandbox_id
    with contextlib.suppress(OSError):
        if link.is_symlink() and os.readlink(link) == str(root):
            link.unlink()


def bubblewrap_problem() -> str | None:
    """None when bubblewrap can isolate commands here; else why not, telling "not installed" apart from
    "installed, but cannot make a namespace" (user namespaces forbidden, a container without the rights)."""
    global _bubblewrap_state
    if _bubblewrap_state is None:
        executable = shutil.which("bwrap")
        if executable is None:
            _bubblewrap_state = "bubblewrap is not installed (apt-get install bubblewrap)"
        else:
            _bubblewrap_state = _probe_bubblewrap(executable)
    return _bubblewrap_state or None


def _probe_bubblewrap(executable: str) -> str:
    """'' when a namespace can be made, else the reason (bwrap's own words)."""
    try:
        probe = subprocess.run(
            [executable, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
             "--die-with-parent", "true"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=10,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"bubblewrap cannot make a namespace here ({executable} did not run: {error})"
    if probe.returncode == 0:
        return ""
    said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
    return (f"bubblewrap cannot make a namespace here ({said[-1] if said else f'exit code {probe.returncode}'}; "
            "check `bwrap --ro-bind / / true`)")


def bubblewrap_works() -> bool:
    """Whether `bwrap` is installed and can make a sandbox here (`bubblewrap_problem()` says why not)."""
    return bubblewrap_problem() is None


class _Collector:
    """Reads one pipe without blocking the loop, keeping up to the output limit."""

    __slots__ = ("_loop", "_fd", "_callback", "_decoder", "chunks", "size", "done")

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, callback: OutputCallback | None) -> None:
        self._loop = loop
        self._fd = fd
        self._callback = callback
        self._decoder = None
        if callback is not None:
            import codecs

            self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.chunks: list[bytes] = []
        self.size = 0
        self.done: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._read)

    def _read(self) -> None:
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        if self.size < OUTPUT_LIMIT_BYTES:
            kept = data[: OUTPUT_LIMIT_BYTES - self.size]
            self.chunks.append(kept)
            self.size += len(kept)
        if self._callback is not None and self._decoder is not None:
            text = self._decoder.decode(data)
            if text:
                with contextlib.suppress(Exception):  # a broken callback must not lose the command
                    self._callback(text)

    def close(self) -> None:
        if self.done.done():
            return
        self._loop.remove_reader(self._fd)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self.done.set_result(None)

    def value(self) -> bytes:
        return b"".join(self.chunks)


_NOT_THERE = os.strerror(errno.ENOENT)


def _could_not_run(name: str, reason: str) -> tuple[int, bytes]:
    """A command that could not be started, as a shell says it: 127 for a program that is not there, 126 for
    one that cannot run, and `NAME: REASON` on stderr."""
    return (127 if reason == _NOT_THERE else 126), f"{name}: {reason}\n".encode()


def _bwrap_could_not_run(said: bytes) -> tuple[int, bytes]:
    """bwrap's own failure to start the command (`bwrap: execvp NAME: REASON`, exit 1), said as above."""
    name, _, reason = said.split(b"\n", 1)[0][len(b"bwrap: execvp "):].decode("utf-8", "replace").rpartition(": ")
    return _could_not_run(name, reason)


def _host_paths_under_tmp(root: Path) -> list[str]:
    """`--ro-bind` arguments that keep the host's tools visible when they live under /tmp (a CI
    checkout, a venv): the sandbox's own /tmp hides the host's, and these paths come back read-only."""
    wanted = {os.getcwd(), sys.prefix, os.path.dirname(sys.executable)}
    wanted |= {entry for entry in os.environ.get("PATH", "").split(os.pathsep) if entry}
    found = []
    sandbox_root = os.path.realpath(root)
    for path in sorted(wanted):
        real = os.path.realpath(path)
        if (real == "/tmp" or not real.startswith("/tmp/")) or not os.path.isdir(real):
            continue
        if real == sandbox_root or real.startswith(sandbox_root + os.sep) or sandbox_root.startswith(real + os.sep):
            continue  # never the sandbox itself, nor a folder holding it (its ledger stays hidden)
        found += ["--ro-bind", real, real]
    return found


class LocalSandbox:
    """One local sandbox: `<base>/<id>/` holding `workspace/` (the workdir), `home/`, `tmp/` and the
    change ledger `ledger/` (outside the workspace, and hidden from commands under bubblewrap)."""

    def __init__(
        self, sandbox_id: str, root: Path, isolation: str, env: Mapping[str, str], path_prepend: Sequence[str],
    ) -> None:
        self.sandbox_id = sandbox_id
        self.root = root
        self.workdir = str(root / "workspace")
        self.home = str(root / "home")
        self.tmp = str(root / "tmp")
        self.ledger_dir = str(root / "ledger")
        self.isolation = isolation
        self.retired: str | None = None
        self._lingering: list[ProcessTree] = []  # trees whose leader exited but whose children did not
        self._stopped = False
        self._packs: list[str] = []  # template packs of the folders uploaded (template_packs.py)
        path = os.pathsep.join([*path_prepend, os.environ.get("PATH", os.defpath)])
        self.environment = {  # every command's, under what it is given
            "PATH": path, "HOME": self.home, "USER": os.environ.get("USER", "assay"),
            "LANG": "C.UTF-8", "TERM": "dumb", "TMPDIR": "/tmp" if isolation == BUBBLEWRAP else self.tmp,
            "ASSAY_SANDBOX": sandbox_id, **env,
        }

    # -- commands -----------------------------------------------------------------------------------
    def wrapped_argv(self, argv: Sequence[str], cwd: str) -> list[str]:
        """`argv` as the sandbox runs it: under bubblewrap's view of the host, when it has one."""
        if self.isolation != BUBBLEWRAP:
            return list(argv)
        return [
            "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--bind", self.tmp, "/tmp", *_host_paths_under_tmp(self.root),
            "--bind", self.workdir, self.workdir, "--bind", self.home, self.home,
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--chdir", cwd, "--", *argv,
        ]

    async def exec(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, timeout: float | None,
        on_stdout: OutputCallback | None, on_stderr: OutputCallback | None, signals: Sequence[CommandSignal],
        user: str | None, stdin: bytes | None,
    ) -> RawOutput:
        if self._stopped:
            raise SandboxError(f"sandbox {self.sandbox_id} is stopped")
        if user is not None and user != os.environ.get("USER"):
            raise SandboxError("the local provider runs every command as the current user; `user` is not supported")
        if not os.path.isdir(cwd):
            raise SandboxError(f"cwd {cwd} is not a folder in the sandbox")
        started = time.perf_counter()
        for candidate in signals:
            if candidate.cancelled:
                return RawOutput(None, b"", b"", 0.0, cancelled=candidate.reason or "cancelled")
        if timeout is not None and timeout <= 0:
            return RawOutput(None, b"", b"the attempt's deadline had already passed", 0.0, timed_out=True)
        loop = asyncio.get_running_loop()
        become_subreaper()
        token = uuid.uuid4().hex
        environment = {**self.environment, **env, TREE_VARIABLE: token}
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            try:
                popen = subprocess.Popen(
                    self.wrapped_argv(argv, cwd), stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                    stdout=out_write, stderr=err_write, cwd=cwd, env=environment, start_new_session=True,
                )
            finally:
                os.close(out_write)
                os.close(err_write)
        except OSError as error:
            os.close(out_read)
            os.close(err_read)
            code, message = _could_not_run(argv[0], error.strerror or str(error))
            return RawOutput(code, b"", message, time.perf_counter() - started)
        tree = ProcessTree(popen, token)
        stdout = _Collector(loop, out_read, on_stdout)
        stderr = _Collector(loop, err_read, on_stderr)
        if stdin is not None and popen.stdin is not None:
            await loop.run_in_executor(None, _feed, popen.stdin, stdin)
        cancelled: asyncio.Future[str] = loop.create_future()
        for candidate in signals:
            candidate.add_callback(lambda reason: cancelled.done() or cancelled.set_result(reason))
        timed_out = False
        reason: str | None = None
        try:
            await asyncio.wait({tree.exited, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if tree.exited.done():
                await asyncio.wait({stdout.done, stderr.done}, timeout=_DRAIN_SECONDS)
                await self._settle(tree)
            elif cancelled.done():
                reason = cancelled.result()
                await self._kill(tree, f"cancelled ({reason})")
            else:
                timed_out = True
                await self._kill(tree, "timed out")
        except BaseException:
            # The attempt's task was cancelled (its deadline, a second Ctrl-C): the tree goes with it.
            await asyncio.shield(self._kill(tree, "cancelled"))
            raise
        finally:
            if not cancelled.done():
                cancelled.cancel()
            stdout.close()
            stderr.close()
        exit_code = None if timed_out or reason is not None else tree.returncode
        err = stderr.value()
        if self.isolation == BUBBLEWRAP and exit_code == 1 and err.startswith(b"bwrap: execvp "):
            exit_code, err = _bwrap_could_not_run(err)
        return RawOutput(exit_code, stdout.value(), err, time.perf_counter() - started, timed_out, reason)

    async def _settle(self, tree: ProcessTree) -> None:
        """The leader exited: reap it now, unless it left processes running (a server started in setup).
        Earlier trees whose last process has ended since are reaped too: under bubblewrap the leader often
        exits a moment before bwrap's inner process, and each such tree used to stay, with its zombies,
        until the sandbox stopped (two per command, thousands in a long attempt)."""
        self._lingering.append(tree)
        ended = [earlier for earlier in self._lingering if all(member.gone for member in earlier.members())]
        self._lingering = [earlier for earlier in self._lingering if earlier not in ended]
        for earlier in ended:
            await earlier.stop(terminate_grace_s=0.0, kill_grace_s=_KILL_GRACE_SECONDS)

    async def _kill(self, tree: ProcessTree, why: str) -> bool:
        gone = await tree.stop(terminate_grace_s=_TERMINATE_GRACE_SECONDS, kill_grace_s=_KILL_GRACE_SECONDS)
        if not gone:
            # The spec's rule: if the tree cannot be confirmed dead, the sandbox is retired whole.
            self.retired = f"a command that {why} left processes that would not die"
            await self.stop()
        return gone

    # -- files -------------------------------------------------------------------------------------
    def _host(self, path: str) -> str:
        """The host path of a sandbox path (the same path, except /tmp under bubblewrap)."""
        if self.isolation == BUBBLEWRAP and (path == "/tmp" or path.startswith("/tmp/")) and not path.startswith(
            str(self.root) + "/"
        ):
            return os.path.join(self.tmp, path[len("/tmp/"):]) if path != "/tmp" else self.tmp
        return path

    def _contained(self, path: str, action: str, *, follow_last: bool = True) -> str:
        """The host path of sandbox path `path` when it stays in the sandbox's own folders (workdir, home,
        /tmp) with every link on the way followed (`follow_last=False`: all but a link at its end, the
        thing asked about); `SandboxError` naming it otherwise. Reads are held to this as writes are:
        an agent can plant a link, and the eval side must not read or write the host through it."""
        host = self._host(path)
        lexical = Path(os.path.abspath(host))
        folders = (self.workdir, self.home, self.tmp)
        inside = next((Path(folder) for folder in folders if lexical.is_relative_to(folder)), None)
        if inside is None:
            raise SandboxError(f"refusing to {action} {path}: it is outside the sandbox (its workdir, home and /tmp)")
        real = Path(os.path.realpath(lexical if follow_last or lexical == inside else lexical.parent))
        if not any(is_contained(Path(os.path.realpath(folder)), real) for folder in folders):
            raise SandboxError(f"refusing to {action} {path}: a link on the way leads outside the sandbox, to {real}")
        return host

    def _refuse_links_out(self, root: str, relative_paths: Sequence[str], action: str) -> None:
        """`SandboxError` for the first of `relative_paths` under the sandbox folder `root` that is a
        link leading outside the sandbox: a transfer would write or read the host through it."""
        for relative in relative_paths:
            candidate = os.path.join(root, relative)
            if os.path.islink(candidate):
                self._contained(candidate, action)

    async def read_bytes(self, path: str) -> bytes:
        host = self._contained(path, "read")
        try:
            with open(os.path.realpath(host), "rb", opener=_no_final_link) as file:
                return file.read()
        except OSError as error:
            raise SandboxError(f"could not read {path} in the sandbox: {error.strerror or error}") from None

    async def write_bytes(self, path: str, data: bytes) -> None:
        host = self._contained(path, "write")
        try:
            os.makedirs(os.path.dirname(host), exist_ok=True)
            host = self._contained(path, "write")  # again: a folder made meanwhile may be a link
            real = os.path.realpath(host)
            try:
                before: os.stat_result | None = os.stat(real)
            except FileNotFoundError:
                before = None
            with open(real, "wb", opener=_no_final_link) as file:
                file.write(data)
            _outdate_cached_bytecode(real, before, len(data))
        except OSError as error:
            raise SandboxError(f"could not write {path} in the sandbox: {error.strerror or error}") from None

    async def path_exists(self, path: str) -> bool:
        return os.path.lexists(self._contained(path, "look for", follow_last=False))

    async def upload_directory(self, source: Path, target: str, ignore: Sequence[str]) -> None:
        host = self._contained(target, "upload into")
        # What the copy would write through: a link the agent left where an uploaded file or folder goes.
        self._refuse_links_out(host, counterparts(source, host, ignore), "upload into")
        # `cp -a` keeps modes, links and modification times (old times also spare the ledger git's
        # re-hashing of "racily clean" new files).
        await _to_thread_to_its_end(copy_tree, source, host, ignore, keep=("-a",),
                                    failure=f"could not upload {source} to {target}")
        await self._add_packs(source, ignore)

    async def _add_packs(self, source: Path, ignore: Sequence[str]) -> None:
        from assay.agent.sandbox.template_packs import packs_for

        if os.path.exists(self.ledger_dir):  # an upload after the baseline: no ledger would use its pack
            return
        for pack in await packs_for(self.root.parent, source, ignore):
            if pack not in self._packs:
                self._packs.append(pack)

    async def download_directory(self, source: str, target: Path) -> None:
        host = self._contained(source, "download")
        # Links are copied as links: one that leads out of the sandbox would hand the host a way back in.
        self._refuse_links_out(host, _relative_entries(host), "download")
        try:
            shutil.copytree(host, target, symlinks=True, dirs_exist_ok=True)
        except OSError as error:  # shutil.Error too (it has no strerror); said as the Docker provider says it
            raise SandboxError(f"could not download {source} in the sandbox: {error.strerror or error}") from None

    def ledger_git(self) -> Any:
        from assay.agent.sandbox.ledger import HostGit

        return HostGit(self.ledger_dir, self.workdir, self._packs)

    # -- lifetime ----------------------------------------------------------------------------------
    def left_running(self) -> tuple[ProcessTree, ...]:
        """The trees commands have left running so far (a server a setup started)."""
        return tuple(self._lingering)

    async def stop_processes(self, spare: tuple[ProcessTree, ...] = ()) -> bool:
        """Kill whatever commands left running, except the trees in `spare` (a shared sandbox's preparation
        left them: they serve every task); True when every tree killed is confirmed gone."""
        gone = True
        trees = [tree for tree in self._lingering if tree not in spare]
        self._lingering = [tree for tree in self._lingering if tree in spare]
        for tree in trees:
            gone = await tree.stop(terminate_grace_s=_TERMINATE_GRACE_SECONDS, kill_grace_s=_KILL_GRACE_SECONDS) and gone
        return gone

    async def stop(self) -> bool:
        """Kill every process and remove the folder."""
        self._stopped = True
        gone = await self.stop_processes()
        await asyncio.get_running_loop().run_in_executor(None, remove_tree, self.root)
        unlink_from_registry(self.root, self.sandbox_id)
        return gone and not self.root.exists()

    async def keep(self) -> bool:
        """Kill every process but leave the folder (and the ledger) for `assay agent sandbox diff`."""
        self._stopped = True
        return await self.stop_processes()


def _feed(pipe: Any, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, OSError):
        pipe.write(data)
    with contextlib.suppress(BrokenPipeError, OSError):
        pipe.close()


def _no_final_link(path: str, flags: int) -> int:
    """`open`'s opener for a path already resolved and checked: a link swapped in since is refused."""
    return os.open(path, flags | os.O_NOFOLLOW, 0o666)


def _relative_entries(root: str) -> list[str]:
    """Every path under `root`, relative to it (links are listed, not followed)."""
    found = []
    for folder, folders, files in os.walk(root):
        relative = os.path.relpath(folder, root)
        found += [os.path.normpath(os.path.join(relative, name)) for name in folders + files]
    return found


def counterparts(source: Path, target: str, ignore: Sequence[str]) -> list[str]:
    """The paths, relative to both, that copying `source` into `target` writes and that already exist in
    `target` (only those can be links; a folder missing from `target` has nothing below it to check)."""
    from assay.agent.sandbox.handle import ignored

    found = []
    for folder, folders, files in os.walk(source):
        relative = os.path.relpath(folder, source)
        kept = []
        for name in folders + files:
            path = os.path.normpath(os.path.join(relative, name))
            if ignored(Path(path), ignore) or not os.path.lexists(os.path.join(target, path)):
                continue
            found.append(path)
            if name in folders:
                kept.append(name)
        folders[:] = [name for name in folders if name in kept]
    return found


def copy_tree(source: Path, destination: str | Path, ignore: Sequence[str], *, keep: Sequence[str], failure: str) -> None:
    """Copy `source`'s contents into `destination` (made if missing), leaving out what `ignore` matches: with
    `cp KEEP` when nothing is ignored (about twice as fast as copytree), else copytree keeping links, modes
    and times. A failure is a SandboxError `failure: why`."""
    from assay.agent.sandbox.handle import ignored

    os.makedirs(destination, exist_ok=True)
    if not ignore and shutil.which("cp"):
        done = subprocess.run(["cp", *keep, "--", f"{source}/.", str(destination)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if done.returncode != 0:
            raise SandboxError(f"{failure}: {done.stderr.decode('utf-8', 'replace').strip()}")
        return

    def skip(folder: str, names: list[str]) -> set[str]:
        relative = Path(folder).relative_to(source)
        return {name for name in names if ignored(relative / name, ignore)}

    try:
        shutil.copytree(source, destination, symlinks=True, dirs_exist_ok=True, ignore=skip if ignore else None)
    except (OSError, shutil.Error) as error:
        raise SandboxError(f"{failure}: {error}") from None


def remove_tree(root: Path) -> None:
    def writable_then_retry(function: Any, path: str, _info: Any) -> None:
        # A read-only folder (an agent's chmod -w, git's objects) must not keep its files alive.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o755)
            os.chmod(path, 0o755)
            function(path)

    shutil.rmtree(root, onerror=writable_then_retry)


def _outdate_cached_bytecode(host: str, before: os.stat_result | None, size: int) -> None:
    """Python trusts a cached .pyc while its source keeps the same size and the same whole second
    of modification time: an edit that keeps the size (`a - b` -> `a + b`) within the second the
    file was last imported would run the old code. Such an edit gets the next second."""
    if before is None or before.st_size != size:
        return
    after = os.stat(host)
    if int(after.st_mtime) == int(before.st_mtime):
        os.utime(host, ns=(after.st_atime_ns, (int(before.st_mtime) + 1) * 1_000_000_000))


class LocalProvider:
    """`local_sandbox(...)`'s template: `isolation` is auto (bubblewrap if it works), bubblewrap or none."""

    name = "local"

    def __init__(
        self, *, isolation: str = "auto", env: Mapping[str, str] | None = None, path_prepend: Sequence[str] = (),
        base_dir: str | Path | None = None,
    ) -> None:
        if isolation not in ISOLATIONS:
            from assay.core.format import did_you_mean

            meant = did_you_mean(isolation, ISOLATIONS)
            raise SandboxError(f"local_sandbox isolation must be one of {', '.join(ISOLATIONS)}, got {isolation!r}{meant}")
        if base_dir is not None and (not isinstance(base_dir, (str, os.PathLike)) or not str(base_dir).strip()):
            raise SandboxError(f"local_sandbox base_dir is the folder sandboxes are made in, like base_dir=\"/var/tmp/sandboxes\"; "
                               f"got {base_dir!r}")
        self.isolation = isolation
        self.env = checked_env("local_sandbox", env)
        self.path_prepend = checked_path_prepend("local_sandbox", path_prepend)
        # Absolute, as ASSAY_SANDBOX_DIR is taken: the sandbox's own paths are compared with absolute ones.
        self.base_dir = Path(base_dir).expanduser().resolve() if base_dir is not None else None

    def describe(self) -> dict[str, Any]:
        return {"provider": "local", "isolation": self.isolation}

    def _isolation(self) -> str:
        if self.isolation == "none" or not sys.platform.startswith("linux"):
            return PROCESS_GROUP
        problem = bubblewrap_problem()
        if problem is None:
            return BUBBLEWRAP
        if self.isolation == BUBBLEWRAP:
            raise SandboxError(f"local_sandbox(isolation='bubblewrap'): {problem}")
        return PROCESS_GROUP

    async def create(self, request: CreateRequest) -> LocalSandbox:
        isolation = self._isolation()
        base = self.base_dir or request.base_dir or sandbox_base_dir()
        root = make_sandbox_root(base, request.sandbox_id, ("workspace", "home", "tmp"), base_dir=self.base_dir)
        sandbox = LocalSandbox(request.sandbox_id, root, isolation, self.env, self.path_prepend)
        write_entry(root, SandboxEntry(
            sandbox_id=request.sandbox_id, provider="local", state="active", workdir=sandbox.workdir,
            root=str(root), isolation=isolation, owner_pid=os.getpid(), created=time.time(),
            labels=dict(request.labels), ledger=sandbox.ledger_dir, env=dict(self.env), path_prepend=list(self.path_prepend),
        ))
        link_in_registry(root, request.sandbox_id)
        return sandbox




async def _to_thread_to_its_end(function: Any, *args: Any, **kwargs: Any) -> Any:
    """`asyncio.to_thread`, except that a cancelled caller (Ctrl-C, a timeout) waits for the thread to end before
    it goes on: a copy into the sandbox still running in its thread would otherwise write into the folder while
    the sandbox is removed, and leave part of it behind. A second cancellation stops waiting."""
    work = asyncio.ensure_future(asyncio.to_thread(function, *args, **kwargs))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        await asyncio.wait((work,))
        raise


def local_sandbox(
    *, isolation: str = "auto", env: Mapping[str, str] | None = None, path_prepend: Sequence[str] = (),
    base_dir: str | Path | None = None,
) -> Any:
    """A template-bearing layer: a fresh local folder per attempt (bubblewrap isolation where it works)."""
    from assay.agent.sandbox.layers import SandboxLayer

    return SandboxLayer(LocalProvider(isolation=isolation, env=env, path_prepend=path_prepend, base_dir=base_dir))


__all__ = [
    "BUBBLEWRAP", "LocalProvider", "LocalSandbox", "PROCESS_GROUP", "bubblewrap_problem", "bubblewrap_works",
    "link_in_registry", "local_sandbox", "make_sandbox_root",
    "sandbox_base_dir", "unlink_from_registry",
]
