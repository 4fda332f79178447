"""The Docker provider: one container per attempt, from an image or a Dockerfile, through the Docker Engine API.

The `docker` SDK is optional (assay's `docker` extra) and imported only when a sandbox is created. An
image missing here is pulled once; one that cannot be pulled is a `SandboxError` saying how to build it.
A Dockerfile is built once per content (its BuildKey hashes the context), later attempts hit the cache;
an attempt interrupted while it builds (Ctrl-C) cancels the build in the daemon.
The workdir is a host folder the container mounts when the daemon is local (docker_workspace.py).
Containers have no network unless asked (`network_mode`), and optional CPU, memory and process limits.
Commands run with `docker exec`, each the leader of its own process group; a timeout or a cancellation
kills the command's whole tree in the container (a grandchild that left the group included), and
retires the container when that tree cannot be confirmed gone. A command the kernel killed at the
memory limit comes back saying so.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import functools
import hashlib
import io
import os
import posixpath
import re
import shutil
import socket
import stat
import tarfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from assay.agent.loaders import beside_caller
from assay.agent.sandbox.commands import SandboxError, checked_env, checked_path_prepend, checked_user
from assay.agent.sandbox.docker_workspace import (
    CONTAINER,
    Placement,
    choose,
    mounts,
    needs_release,
    release,
    remove_sandbox_folder,
    unseen,
)
from assay.agent.sandbox.interface import (
    OUTPUT_LIMIT_BYTES,
    CommandSignal,
    CreateRequest,
    OutputCallback,
    RawOutput,
)
from assay.agent.sandbox.layers import SandboxLayer
from assay.agent.sandbox.registry import SandboxEntry, write_entry
from assay.errors import ConfigError

INSTALL_HINT = "pip install docker (assay's `docker` extra)"
ISOLATION = "docker"
NETWORK_NONE = "none"
_NETWORK_MODES = (NETWORK_NONE, "bridge", "host")
DEFAULT_PIDS_LIMIT = 4096  # a fork bomb stops here, not at the host's pid_max
OWNER_LABEL = "assay.owner"  # host:pid of the process that made the container (prune finds orphans by it)
ROOT_LABEL = "assay.root"  # the sandbox's registry folder on that host
_TREE_MARK = "ASSAY_SANDBOX_COMMAND"
_OOM_KILLED = 137  # 128 + SIGKILL: what the kernel's OOM killer leaves as an exit code
_KILL_GRACE_SECONDS = 1.0  # after a kill, how long trailing output may still arrive
_KILL_TREE = (
    # $1 is the command's pidfile, $2 its mark. First its process group, with one builtin `kill` and no
    # fork (a fork bomb may have taken every pid the container is allowed); then every descendant of the
    # recorded pid (through /proc's children lists, deepest first) and every process carrying the
    # command's mark in its environment: a grandchild that left the group (setsid) is no descendant.
    'read pid 2>/dev/null < "$1"; [ -n "$pid" ] && kill -KILL -$pid 2>/dev/null; '
    'alive() { [ -r /proc/$1/stat ] && ! grep -q ") Z " /proc/$1/stat 2>/dev/null; }; '
    'tree() { for c in $(cat /proc/$1/task/*/children 2>/dev/null); do tree $c; done; alive $1 && echo $1; }; '
    'marked() { for e in /proc/[0-9]*/environ; do p=${e#/proc/}; p=${p%/environ}; '
    '[ "$p" = "$$" ] && continue; tr "\\0" "\\n" < $e 2>/dev/null | grep -qx "$2" && echo $p; done; }; '
    # A listing that could not fork (the killed copies are not reaped yet) is no proof: exit 3, try again.
    'for round in 1 2 3 4 5; do left=$( { [ -n "$pid" ] && tree $pid; marked "$@"; } | sort -u) || exit 3; '
    '[ -z "$left" ] && { rm -f "$1"; exit 0; }; kill -KILL $left 2>/dev/null; sleep 0.1; done; '
    'left=$( { [ -n "$pid" ] && tree $pid; marked "$@"; } | sort -u) || exit 3; [ -z "$left" ]'
)
_KILL_TRIES = 4  # the kill script again, a moment later, before the container is given up
_KILL_PAUSE_SECONDS = 0.25
# The kernel's count of OOM kills in the container's memory cgroup (cgroup v2, then v1).
_OOM_COUNT = "cat /sys/fs/cgroup/memory.events 2>/dev/null || cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null"
_FILE_SECONDS = 300.0
_READ = 'cat -- "$1"'
_WRITE = 'folder=$(dirname -- "$1") && mkdir -p -- "$folder" && cat > "$1"'
_UNPACK = 'mkdir -p -- "$1" && tar -xof - -C "$1"'
_PACK = 'tar -cf - -C "$1" .'
_MEMORY_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
# What runc says when a `user` (at the container's start, or a `docker exec -u`, exit 126) is not in the image.
_NO_SUCH_USER = re.compile(r"unable to find (user|group) ([^:\s]+): no matching entries in (?:passwd|group) file")

# Docker Engine calls block; they get their own threads so that eight attempts building, starting and
# streaming at once never queue behind each other or behind the event loop's default executor.
_CALLS = ThreadPoolExecutor(max_workers=64, thread_name_prefix="assay-docker")
_BUILD_LOCKS: dict[str, threading.Lock] = {}
_BUILD_LOCKS_GUARD = threading.Lock()


async def _call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(_CALLS, functools.partial(function, *args, **kwargs))


def import_docker() -> Any:
    try:
        import docker  # type: ignore[import-not-found]
    except ImportError:
        raise SandboxError(f"the Docker provider needs the docker SDK: {INSTALL_HINT}") from None
    return docker


def docker_client() -> Any:
    """A client whose daemon answers (SandboxError naming the cause otherwise)."""
    docker = import_docker()
    try:
        client = docker.from_env()
        client.ping()
    except Exception as error:  # noqa: BLE001 - DockerException, connection refused, missing socket …
        raise SandboxError(f"no Docker daemon answers ({type(error).__name__}: {error})") from None
    return client


def build_key(context: Path, dockerfile: str, build_args: Mapping[str, str]) -> str:
    """A hash of everything a build reads: the context's files, the Dockerfile's name and the build args."""
    digest = hashlib.sha256()
    digest.update(dockerfile.encode())
    for name in sorted(build_args):
        digest.update(f"\0{name}={build_args[name]}".encode())
    for path in sorted(context.rglob("*")):
        if path.is_file():
            digest.update(b"\0" + path.relative_to(context).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:20]


def memory_bytes(value: int | str | None) -> int | None:
    """`memory=` as bytes: an int, or Docker's notation ("256m", "2g", "512MiB")."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SandboxError(f"docker_sandbox memory must be bytes or a size like '256m', got {value!r}")
    if isinstance(value, int):
        amount = value
    else:
        found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)(?:i?b)?\s*", value.lower())
        if found is None:
            raise SandboxError(f"docker_sandbox memory must be bytes or a size like '256m', got {value!r}")
        amount = int(float(found.group(1)) * _MEMORY_UNITS[found.group(2)])
    if amount < 6 * 1024**2:
        raise SandboxError(f"docker_sandbox memory must be at least 6m (Docker's minimum), got {value!r}")
    return amount


def human_bytes(amount: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if amount >= size:
            return f"{amount / size:g} {unit}"
    return f"{amount} bytes"


def owner_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _no_such_user(option: str, value: str, image: str, said: str) -> str | None:
    """The message for the runtime's "unable to find user X" (or group) in `said`, naming the option that
    asked for it, the image and the fix; None when `said` is something else."""
    found = _NO_SUCH_USER.search(said)
    if found is None:
        return None
    return (f"{option}(user={value!r}): no such {found.group(1)} in image {image} (docker: {found.group(0)}); "
            f"use a {found.group(1)} the image has, or a numeric {'uid' if found.group(1) == 'user' else 'gid'}")


class _BuildCancel:
    """Cancels a Dockerfile build from another thread (the event loop's, when the attempt is cancelled: Ctrl-C).
    The build runs in a thread the cancellation does not reach, and the daemon builds on for as long as the
    build's HTTP response stream is open: closing that stream is what cancels the build in the daemon (its
    `RUN` step's processes killed). `hook` is a `requests` response hook on the client that catches the
    build's response as soon as its headers arrive; a cancellation that comes before them closes it then."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._response: Any = None
        self.cancelled = False

    def hook(self, response: Any, *args: Any, **kwargs: Any) -> Any:
        if response.request.path_url.split("?", 1)[0].endswith("/build"):
            with self._lock:
                self._response = response
                cancelled = self.cancelled
            if cancelled:
                _close_stream(response)
        return response

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            response = self._response
        if response is not None:
            _close_stream(response)


def _close_stream(response: Any) -> None:
    """Close a streamed response's connection now, even while another thread blocks reading it: the socket is
    shut down (docker's own `CancellableStream.close`), not only released, which would wait for that read."""
    with contextlib.suppress(Exception):  # an SSH daemon's channel has no socket to shut down: closed below
        import_docker().types.CancellableStream(iter(()), response).close()
    with contextlib.suppress(Exception):
        response.close()


def _local_image_hint(client: Any, image: str) -> str:
    """"; did you mean …" with the image of this machine whose name is closest to `image` (a misspelt tag), if any."""
    from assay.core.format import did_you_mean

    try:
        names = [tag for found in client.images.list() for tag in (getattr(found, "tags", None) or ())]
    except Exception:  # noqa: BLE001 - only a hint
        return ""
    # Assay's own build cache (assay-sandbox:<key>) is no name anyone types.
    return did_you_mean(image, [name for name in names if not name.startswith("assay-sandbox:")],
                        form=" (did you mean {}? this machine has it)")


def _short_error(error: BaseException) -> str:
    """The daemon's own words, without the SDK's request line (`404 Client Error for http+docker://…`)."""
    explanation = getattr(error, "explanation", None)
    text = str(explanation if explanation else error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class DockerSandbox:
    """One container; paths are the container's."""

    isolation = ISOLATION
    ledger_dir = "/tmp/.assay-ledger"
    workdir_private = True  # only commands in the container reach the workdir (the change ledger relies on it)

    def __init__(self, client: Any, container: Any, sandbox_id: str, workdir: str, env: Mapping[str, str],
                 registry_root: Path, *, memory: int | None = None, network_mode: str = NETWORK_NONE,
                 placement: Placement | None = None, user: str | None = None, image: str = "its image") -> None:
        self.client = client
        self.container = container
        self.sandbox_id = sandbox_id
        self.workdir = workdir
        self.home: str | None = None
        self.env = dict(env)
        self.registry_root = registry_root
        self.retired: str | None = None
        self.memory = memory
        self.network_mode = network_mode
        self.placement = placement or Placement(CONTAINER)  # where the workdir is (docker_workspace.py)
        self.user = user
        self.image = image  # as said in messages: the image's name, or the Dockerfile it was built from
        self.commands_run = 0  # commands (and file commands) run in the container so far
        self._oom_kills = 0  # the container's OOM kills already told
        self._started: asyncio.Future[None] | None = None  # the container's start, once asked for

    def start_in_background(self) -> None:
        """Start the container in a thread; `ready` waits for it."""
        self._started = asyncio.ensure_future(_call(self._start_container))

    def _start_container(self) -> None:
        self.container.start()
        if self.user:  # the daemon made the workdir as root
            self.container.exec_run(["sh", "-c", 'chown "$(id -u "$1" 2>/dev/null || echo "$1")" "$2"', "sh",
                                     self.user.split(":")[0], self.workdir], user="0")

    async def ready(self) -> None:
        """Wait until the container runs (SandboxError, with the daemon's words, when it could not start)."""
        if self._started is None:
            return
        try:
            await asyncio.shield(self._started)  # an exec cancelled meanwhile does not cancel the start
        except Exception as error:  # noqa: BLE001 - the runtime refused: a bad user, a missing command, …
            said = _short_error(error)
            if f"network {self.network_mode} not found" in said:  # a misspelt network_mode
                from assay.core.format import did_you_mean

                said += (f"; network_mode takes none, bridge, host or the name of a network `docker network ls` shows"
                         f"{did_you_mean(self.network_mode, _NETWORK_MODES)}")
            elif self.user:  # a misspelt user= ("nobdy"): the daemon's words name neither the option nor the fix
                said = _no_such_user("docker_sandbox", self.user, self.image, said) or said
            raise SandboxError(f"the container could not be started: {said}") from None

    @property
    def host_loopback(self) -> bool:
        """Whether the host's 127.0.0.1 is reachable from commands (only with the host's network)."""
        return self.network_mode == "host"

    # -- commands -----------------------------------------------------------------------------------
    async def exec(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, timeout: float | None,
        on_stdout: OutputCallback | None, on_stderr: OutputCallback | None, signals: Sequence[CommandSignal],
        user: str | None, stdin: bytes | None,
    ) -> RawOutput:
        for candidate in signals:
            if candidate.cancelled:
                return RawOutput(None, b"", b"", 0.0, cancelled=candidate.reason or "cancelled")
        if timeout is not None and timeout <= 0:
            return RawOutput(None, b"", b"the attempt's deadline had already passed", 0.0, timed_out=True)
        self.commands_run += 1
        await self.ready()
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        token = uuid.uuid4().hex
        pidfile = f"/tmp/.assay-exec-{token}"  # /tmp: there in every image, writable by every user
        mark = f"{_TREE_MARK}={token}"
        # The shell records its pid and then becomes the command: the tree has a known root, which
        # `docker exec` makes the leader of its own session and process group.
        # ($0 is `sh`: a program that is not there is "sh: 1: exec: NAME: not found", exit 127, naming no pidfile.)
        wrapped = ["sh", "-c", 'echo $$ > "$1"; shift; exec "$@"', "sh", pidfile, *argv]
        api = self.client.api
        try:
            created = await _call(
                api.exec_create, self.container.id, wrapped, stdout=True, stderr=True, stdin=stdin is not None,
                environment={**self.env, **env, _TREE_MARK: token}, workdir=cwd, user=user or "",
            )
        except Exception as error:  # noqa: BLE001 - NotFound, Conflict: the container is gone or stopped
            raise SandboxError(f"could not run a command in the container: {_short_error(error)}") from None
        exec_id = created["Id"]
        out: list[bytes] = []
        err: list[bytes] = []
        kept = {id(out): 0, id(err): 0}  # bytes kept per stream: as locally, no more than the output limit
        finished = loop.create_future()

        def deliver(callback: OutputCallback, decoder: Any, chunk: bytes) -> None:
            text = decoder.decode(chunk)
            if text:
                with contextlib.suppress(Exception):  # a broken callback must not lose the command
                    callback(text)

        def pump() -> None:
            decoders = (codecs.getincrementaldecoder("utf-8")("replace"), codecs.getincrementaldecoder("utf-8")("replace"))
            sock = None
            try:
                # Always the hijacked socket, read through the response's buffer (`stream_reader`): docker-py's
                # own `stream=True, demux=True` reads the raw socket too, and lost the output that arrived with
                # the headers (a remote daemon's `grep -c` printed nothing, 1 run in 5).
                sock = api.exec_start(exec_id, socket=True)
                if stdin is not None:
                    raw = getattr(sock, "_sock", sock)
                    raw.sendall(stdin)
                    with contextlib.suppress(OSError):
                        raw.shutdown(1)
                frames = demux_frames(stream_reader(sock))
                for stdout_chunk, stderr_chunk in frames:
                    for chunk, sink, callback, decoder in (
                        (stdout_chunk, out, on_stdout, decoders[0]), (stderr_chunk, err, on_stderr, decoders[1]),
                    ):
                        if chunk:
                            if kept[id(sink)] < OUTPUT_LIMIT_BYTES:
                                sink.append(chunk[: OUTPUT_LIMIT_BYTES - kept[id(sink)]])
                                kept[id(sink)] += len(sink[-1])
                            if callback is not None:
                                loop.call_soon_threadsafe(deliver, callback, decoder, chunk)
            except Exception as error:  # noqa: BLE001 - a broken stream ends the command
                err.append(f"\n[assay] docker exec stream failed: {error}\n".encode())
            finally:
                if sock is not None:
                    with contextlib.suppress(Exception):
                        sock.close()
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is waiting
                    loop.call_soon_threadsafe(lambda: finished.done() or finished.set_result(None))

        threading.Thread(target=pump, name="assay-docker-exec", daemon=True).start()
        cancelled: asyncio.Future[str] = loop.create_future()
        for candidate in signals:
            candidate.add_callback(lambda reason: cancelled.done() or cancelled.set_result(reason))
        reason: str | None = None
        timed_out = False
        try:
            await asyncio.wait({finished, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if not finished.done():
                if cancelled.done():
                    reason = cancelled.result()
                else:
                    timed_out = True
                await self._kill(pidfile, mark)
                await asyncio.wait({finished}, timeout=_KILL_GRACE_SECONDS)  # what it wrote before it died
        except BaseException:
            await asyncio.shield(self._kill(pidfile, mark))
            raise
        finally:
            if not cancelled.done():
                cancelled.cancel()
        exit_code = None
        killed = None
        stderr = b"".join(err)
        if not timed_out and reason is None:
            inspected = await _call(api.exec_inspect, exec_id)
            exit_code = inspected.get("ExitCode")
            output = b"".join(out)
            if exit_code == 126 and b"chdir to cwd" in output + stderr:
                raise SandboxError(f"cwd {cwd} is not a folder in the sandbox")
            if exit_code == 126:  # `docker exec -u` of a user the image does not have: the command never ran
                said = (output + stderr).decode("utf-8", "replace")
                missing = (_no_such_user("run_command", user, self.image, said) if user
                           else _no_such_user("docker_sandbox", self.user or "", self.image, said) if self.user else None)
                if missing is not None:
                    raise SandboxError(missing)
            if exit_code == _OOM_KILLED and await self._killed_for_memory():
                killed = (f"out of memory: the kernel killed it at the container's memory limit ({human_bytes(self.memory)})"
                          if self.memory else "out of memory: the kernel's OOM killer killed it")
                stderr += (b"\n" if stderr and not stderr.endswith(b"\n") else b"") + f"[assay] killed: {killed}\n".encode()
        return RawOutput(exit_code, b"".join(out), stderr, time.perf_counter() - started, timed_out, reason, killed)

    async def _killed_for_memory(self) -> bool:
        """Whether the kernel's OOM killer struck in the container since the last time it was asked."""
        try:
            result = await _call(self.container.exec_run, ["sh", "-c", _OOM_COUNT])
        except Exception:  # noqa: BLE001 - no answer: not known to be memory
            return False
        found = re.search(rb"^oom_kill (\d+)$", result.output or b"", re.MULTILINE)
        if found is None:
            return False
        count = int(found.group(1))
        seen, self._oom_kills = self._oom_kills, count
        return count > seen

    async def _kill(self, pidfile: str, mark: str) -> None:
        confirmed = False
        for attempt in range(_KILL_TRIES):
            if attempt:
                # A fork bomb's killed copies hold every pid until they are reaped, and the listing that
                # confirms the tree is gone needs a fork: it gets another go a moment later.
                await asyncio.sleep(_KILL_PAUSE_SECONDS)
            try:
                result = await _call(self.container.exec_run, ["sh", "-c", _KILL_TREE, "kill-tree", pidfile, mark])
                confirmed = result.exit_code == 0
            except Exception:  # noqa: BLE001
                confirmed = False
            if confirmed:
                break
        if not confirmed:
            self.retired = "a command's process tree could not be confirmed gone, so the container was removed"
            await self.stop()

    # -- files --------------------------------------------------------------------------------------
    # Through commands in the container, not the daemon's archive API: that one writes to the image's
    # layers underneath whatever is mounted (a tmpfs workdir would never see the file), and a command
    # sees the container exactly as the agent does. Each is one exec.
    async def _file_command(self, action: str, script: str, path: str, stdin: bytes | None = None) -> bytes:
        done = await self.exec(["sh", "-c", script, "assay-file", path], env={}, cwd="/", timeout=_FILE_SECONDS,
                               on_stdout=None, on_stderr=None, signals=(), user=None, stdin=stdin)
        if done.exit_code != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            # `cat: /workspace/x: No such file or directory` -> the reason, as the local provider says it; the first
            # line, as tar's last one is only its summary (`tar: Error is not recoverable: exiting now`)
            reason = said[0].rsplit(": ", 1)[-1] if said else f"exit code {done.exit_code}"
            raise SandboxError(f"could not {action} {path} in the sandbox: {reason}")
        return done.stdout

    async def read_bytes(self, path: str) -> bytes:
        return await self._file_command("read", _READ, path)

    async def write_bytes(self, path: str, data: bytes) -> None:
        await self._file_command("write", _WRITE, path, data)

    async def upload_directory(self, source: Path, target: str, ignore: Sequence[str]) -> None:
        """The folder as one tar the container unpacks into `target` (one exec), or copied on the host
        straight into the workspace's folder while the host may write there (`host_folder_for`)."""
        folder = self.host_folder_for(target)
        if folder is not None and await _call(_copy_into, source, folder, tuple(ignore)):
            return
        await self._file_command("upload into", _UNPACK, target, await _call(_pack, source, tuple(ignore)))

    def host_folder_for(self, path: str) -> Path | None:
        """The host folder that is the sandbox folder `path`, while the host may write there as the container
        would: the workdir is a host folder, nothing has run in the container yet (no process of it can
        race the host or has planted anything), assay and the container's commands both run as root (the
        files come out owned as `tar` in the container would leave them), and no link is on the way."""
        folder = self.placement.folder
        if folder is None or self.commands_run or os.geteuid() != 0 or (self.user or "root").split(":")[0] not in ("root", "0"):
            return None
        relative = posixpath.relpath(posixpath.normpath(path), self.workdir)
        if relative == ".." or relative.startswith("../"):
            return None
        found = folder
        for part in () if relative == "." else relative.split("/"):
            found = found / part
            if found.is_symlink() or (found.exists() and not found.is_dir()):
                return None
        return found

    def ledger_git(self) -> Any:
        """The change ledger's git: on the host while the host may work in the workspace (the baseline of an
        attempt whose prepare steps ran no command costs no exec), in the container after."""
        from assay.agent.sandbox.ledger import ExecGit

        inside = ExecGit(self, self.ledger_dir)
        if self.placement.ledger is None:
            return inside
        return _LedgerGit(self, inside)

    async def download_directory(self, source: str, target: Path) -> None:
        packed = await self._file_command("download", _PACK, source)
        with tarfile.open(fileobj=io.BytesIO(packed)) as archive:
            archive.extractall(target, filter="data")  # no absolute paths, links out or devices

    # -- lifetime ----------------------------------------------------------------------------------
    async def stop(self) -> bool:
        if self._started is not None:
            with contextlib.suppress(BaseException):
                await asyncio.shield(self._started)  # removing a container while it starts would race the start
        folder = self.placement.folder
        emptying = None
        if folder is not None and needs_release():
            await _call(release, self.container, self.workdir, self.ledger_dir)  # files its root wrote, back to us
        elif folder is not None:
            # The workspace's files go while the daemon removes the container (both take ~0.1 s here); what
            # a dying process still writes meanwhile goes with the folder below.
            emptying = asyncio.ensure_future(_call(shutil.rmtree, folder, ignore_errors=True))
        try:
            await _call(self.container.remove, force=True, v=True)  # v: the workspace's volume with it
        except Exception as error:  # noqa: BLE001
            if "No such container" not in str(error) and "404" not in str(error):
                return False
        finally:
            if emptying is not None:
                await emptying
        await _call(remove_sandbox_folder, self.registry_root)
        with contextlib.suppress(Exception):
            self.client.close()
        return True

    async def keep(self) -> bool:
        with contextlib.suppress(SandboxError):
            await self.ready()
        return True  # the container keeps running for `assay agent sandbox diff`; `sandbox stop` removes it


class _LedgerGit:
    """ExecGit, except while `host_folder_for` allows the host into the workspace: then the same git runs on
    the host, on the workspace's and the ledger's folders (the ledger's folder is mounted in the container
    at `ledger_dir`, so the container's git carries on from the host's snapshot)."""

    def __init__(self, sandbox: DockerSandbox, inside: Any) -> None:
        from assay.agent.sandbox.ledger import HostGit

        self._sandbox = sandbox
        self._inside = inside
        self._host = HostGit(str(sandbox.placement.ledger), str(sandbox.placement.folder))

    def _runner(self) -> Any:
        return self._host if self._sandbox.host_folder_for(self._sandbox.workdir) is not None and shutil.which("git") \
            else self._inside

    async def prepare(self, run: Any) -> bool:
        return False  # the first snapshot makes the repository

    async def __call__(self, args: Sequence[str], stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
        return await self._runner()(args, stdin)

    async def snapshot(self, add: Sequence[str], since: str | None, limit: int) -> tuple[int, bytes, bytes]:
        from assay.agent.sandbox.ledger import host_snapshot

        runner = self._runner()
        if runner is self._host:
            return await host_snapshot(self._host, add, since, limit)
        return await runner.snapshot(add, since, limit)


def _copy_into(source: Path, folder: Path, ignore: Sequence[str]) -> bool:
    """Copy `source`'s contents into the host folder `folder` (modes, times and links kept, owned by this
    process's user); False, having written nothing, when a file or folder it would write through is a link."""
    from assay.agent.sandbox.local import copy_tree, counterparts

    if folder.exists() and any((folder / relative).is_symlink() for relative in counterparts(source, str(folder), ignore)):
        return False
    # Owned by this process's user: modes and times kept, not ownership.
    copy_tree(source, folder, ignore, keep=("-dR", "--preserve=mode,timestamps"), failure=f"could not upload {source}")
    return True


def _pack(source: Path, ignore: Sequence[str]) -> bytes:
    """`source`'s contents as a tar (unpacked with `tar -o`: owned by whoever unpacks it). Headers are
    made from `lstat` directly: `tarfile`'s own lookup of each file's user and group names costs more
    than the copy itself for a repository's many small files."""
    from assay.agent.sandbox.handle import ignored

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for folder, folders, files in os.walk(source):
            folders.sort()
            relative_folder = os.path.relpath(folder, source)
            for name in (*folders, *sorted(files)):
                relative = os.path.normpath(os.path.join(relative_folder, name))
                if ignore and ignored(Path(relative), ignore):
                    if name in folders:
                        folders.remove(name)
                    continue
                path = os.path.join(folder, name)
                status = os.lstat(path)
                info = tarfile.TarInfo(relative.replace(os.sep, "/"))
                info.mode, info.mtime = status.st_mode & 0o7777, int(status.st_mtime)
                if stat.S_ISLNK(status.st_mode):
                    info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
                    archive.addfile(info)
                elif stat.S_ISDIR(status.st_mode):
                    info.type = tarfile.DIRTYPE
                    archive.addfile(info)
                elif stat.S_ISREG(status.st_mode):
                    info.size = status.st_size
                    with open(path, "rb") as file:
                        archive.addfile(info, file)
    return buffer.getvalue()


def _remove_labelled(client: Any, sandbox_id: str) -> None:
    with contextlib.suppress(Exception):
        for container in client.containers.list(all=True, filters={"label": f"assay.sandbox={sandbox_id}"}):
            container.remove(force=True, v=True)


def stream_reader(connection: Any) -> Any:
    """`read(n)` of what an `exec_start(socket=True)` connection sends, the bytes that came with the
    HTTP response's headers first. Those are in the response's buffered reader, not the socket: read
    from the raw socket, they were lost whenever the daemon's first output arrived with its headers
    (as it does through a TCP proxy), and with them a command's first line."""
    response = getattr(connection, "_response", None)  # docker-py keeps it on the socket it returns
    buffered = getattr(getattr(getattr(response, "raw", None), "_fp", None), "fp", None)
    if buffered is not None and hasattr(buffered, "read1"):
        return buffered.read1
    return getattr(connection, "_sock", connection).recv


def demux_frames(read: Any) -> Any:
    """Docker's multiplexed attach stream (8-byte headers) as (stdout, stderr) chunks; `read(n)` as
    `stream_reader` gives it."""
    buffer = b""
    while True:
        data = read(65536)
        if not data:
            return
        buffer += data
        while len(buffer) >= 8:
            kind, size = buffer[0], int.from_bytes(buffer[4:8], "big")
            if len(buffer) < 8 + size:
                break
            payload, buffer = buffer[8:8 + size], buffer[8 + size:]
            yield (payload, None) if kind == 1 else (None, payload)


class DockerProvider:
    name = "docker"

    def __init__(
        self, *, image: str | None = None, dockerfile: str | Path | None = None, context: str | Path | None = None,
        build_args: Mapping[str, str] | None = None, workdir: str = "/workspace", env: Mapping[str, str] | None = None,
        path_prepend: Sequence[str] = (), user: str | None = None, network_mode: str = NETWORK_NONE,
        cpus: float | None = None, memory: int | str | None = None, pids_limit: int | None = DEFAULT_PIDS_LIMIT,
        tmpfs_workdir: bool = False,
    ) -> None:
        if image is None and context is None and dockerfile is None:
            raise SandboxError("docker_sandbox needs image=… or a Dockerfile (context=…, dockerfile=…)")
        if image is not None and (not isinstance(image, str) or not image.strip() or image != image.strip()):
            # Else it is only found out per attempt, as an image that "could not be pulled".
            raise SandboxError(f"docker_sandbox image must be an image's name, like image=\"python:3.12\"; got {image!r:.80}")
        if image is not None and (context is not None or dockerfile is not None):
            raise SandboxError("docker_sandbox takes image=… or a Dockerfile (context=…, dockerfile=…), not both")
        if not isinstance(workdir, (str, os.PathLike)) or not posixpath.isabs(workdir):
            raise SandboxError(f"docker_sandbox workdir must be an absolute path in the container, like "
                               f"workdir=\"/workspace\"; got {workdir!r:.80}")
        if posixpath.normpath(os.fspath(workdir)) in ("/", "//"):
            # Docker refuses to mount a volume (or a tmpfs) over the container's root: every attempt would fail.
            raise SandboxError("docker_sandbox workdir cannot be the container's root /: give a folder of its own, "
                               "like workdir=\"/workspace\"")
        environment = checked_env("docker_sandbox", env)
        if not isinstance(network_mode, str) or not network_mode:
            raise SandboxError("docker_sandbox network_mode must be a Docker network mode: none (the default), "
                               "bridge, host or a network's name")
        if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus <= 0):
            raise SandboxError(f"docker_sandbox cpus must be a positive number (e.g. 1.5), got {cpus!r}")
        if pids_limit is not None and (isinstance(pids_limit, bool) or not isinstance(pids_limit, int) or pids_limit < 8):
            raise SandboxError(f"docker_sandbox pids_limit must be a whole number of at least 8 (or None), got {pids_limit!r}")
        if not isinstance(tmpfs_workdir, bool):
            # bool("false") is True: a quoted value put the workspace on a memory file system, hiding the image's.
            raise SandboxError(f"docker_sandbox tmpfs_workdir must be True or False, got {tmpfs_workdir!r}")
        if build_args is not None and (not isinstance(build_args, Mapping) or not all(
                isinstance(key, str) and isinstance(value, str) for key, value in build_args.items())):
            raise SandboxError("docker_sandbox build_args maps build argument names to strings (write numbers as "
                               f"\"1\"), like build_args={{\"PYTHON\": \"3.12\"}}; got {build_args!r:.80}")
        if image is not None and build_args:
            raise SandboxError("docker_sandbox build_args are for a Dockerfile build (context=…, dockerfile=…); "
                               f"with image={image!r} nothing is built, so they would change nothing: drop them")
        self.image = image
        self.context, self.dockerfile = _build_source(context, dockerfile) if image is None else (None, "Dockerfile")
        if self.context is not None and build_args:
            _check_build_args(self.context / self.dockerfile, build_args)
        self.build_args = dict(build_args or {})
        self.workdir = posixpath.normpath(os.fspath(workdir))  # "/workspace/../srv" is /srv to every command
        self.env = environment
        self.path_prepend = checked_path_prepend("docker_sandbox", path_prepend)
        self.user = checked_user("docker_sandbox", user)
        self.network_mode = network_mode
        self.cpus = float(cpus) if cpus is not None else None
        self.memory = memory_bytes(memory)
        self.pids_limit = pids_limit
        self.tmpfs_workdir = bool(tmpfs_workdir)

    def describe(self) -> dict[str, Any]:
        source = {"image": self.image} if self.image else {"dockerfile": str(self.context / self.dockerfile)}
        document: dict[str, Any] = {"provider": "docker", **source, "workdir": self.workdir}
        if self.network_mode != NETWORK_NONE:
            document["network_mode"] = self.network_mode
        for name in ("cpus", "memory"):
            if getattr(self, name) is not None:
                document[name] = getattr(self, name)
        if self.pids_limit != DEFAULT_PIDS_LIMIT:
            document["pids_limit"] = self.pids_limit
        if self.tmpfs_workdir:
            document["tmpfs_workdir"] = True
        return document

    def _image(self, client: Any, cancel: _BuildCancel | None = None) -> str:
        if self.image is not None:
            try:
                client.images.get(self.image)
            except Exception:  # noqa: BLE001 - ImageNotFound: pull it
                try:
                    client.images.pull(self.image)
                except Exception as error:  # noqa: BLE001 - no registry, no such image, no credentials
                    said = _short_error(error)
                    if "invalid reference format" in said:  # no such name can be built or pulled either
                        raise SandboxError(
                            f"image {self.image!r} is not a name Docker accepts ({said}){_local_image_hint(client, self.image)}; "
                            "give one like python:3.12 (lowercase, no spaces)"
                        ) from None
                    raise SandboxError(
                        f"image {self.image!r} is not on this machine and could not be pulled "
                        f"({said}){_local_image_hint(client, self.image)}; build it here (`docker build -t {self.image} …`, or "
                        "docker_sandbox(context=…) from a Dockerfile) or pull it where a registry answers"
                    ) from None
            return self.image
        assert self.context is not None
        tag = f"assay-sandbox:{build_key(self.context, self.dockerfile, self.build_args)}"
        with _BUILD_LOCKS_GUARD:
            lock = _BUILD_LOCKS.setdefault(tag, threading.Lock())
        with lock:  # concurrent attempts wait for the one build of this content
            if cancel is not None and cancel.cancelled:  # interrupted while another attempt built it
                raise SandboxError(f"the build of {self.context / self.dockerfile} was interrupted")
            try:
                client.images.get(tag)  # build cache hit
            except Exception:  # noqa: BLE001 - not built yet: built once
                self._build(client, tag, cancel or _BuildCancel())
        return tag

    def _build(self, client: Any, tag: str, cancel: _BuildCancel) -> None:
        assert self.context is not None
        where = self.context / self.dockerfile
        hooks = client.api.hooks.setdefault("response", [])
        hooks.append(cancel.hook)  # `cancel` closes the build's stream: the daemon cancels the build
        try:
            client.images.build(path=str(self.context), dockerfile=self.dockerfile, tag=tag, buildargs=self.build_args,
                                rm=True, forcerm=True)
        except Exception as error:  # noqa: BLE001 - BuildError (with its log), APIError
            if cancel.cancelled:
                raise SandboxError(f"the build of {where} was interrupted") from None
            lines = [
                str(entry.get("stream") or entry.get("error") or "").rstrip()
                for entry in getattr(error, "build_log", None) or () if isinstance(entry, dict)
            ]
            tail = "\n".join(line for line in lines if line)[-1500:]
            raise SandboxError(
                f"building {where} failed: {_short_error(error)}" + (f"\n{tail}" if tail else "")
            ) from None
        finally:
            with contextlib.suppress(ValueError):
                hooks.remove(cancel.hook)

    def _record_and_create(self, client: Any, image: str, request: CreateRequest) -> DockerSandbox:
        """Record the sandbox, create its container, record the container (in a thread: every step blocks).
        The record comes first: a run killed while the container is made leaves something `prune` finds."""
        from assay.agent.sandbox.local import make_sandbox_root, sandbox_base_dir

        base = request.base_dir or sandbox_base_dir()
        root = base / request.sandbox_id
        labels = {
            "assay.sandbox": request.sandbox_id, OWNER_LABEL: owner_label(), ROOT_LABEL: str(root),
            **{f"assay.{key}": value for key, value in request.labels.items()},
        }
        environment = dict(self.env)
        if self.path_prepend:
            image_env = dict(
                item.split("=", 1) for item in (client.images.get(image).attrs.get("Config", {}).get("Env") or [])
                if "=" in item
            )
            base_path = image_env.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            environment["PATH"] = ":".join([*self.path_prepend, base_path])
        limits: dict[str, Any] = {}
        if self.cpus is not None:
            limits["nano_cpus"] = int(self.cpus * 1e9)
        if self.memory is not None:
            limits["mem_limit"] = limits["memswap_limit"] = self.memory  # no swap: the limit is the limit
        if self.pids_limit is not None:
            limits["pids_limit"] = self.pids_limit
        # What a container's root writes into the workspace is reachable by no other user.
        make_sandbox_root(base, request.sandbox_id, mode=0o700)
        try:
            placement = choose(client, root, tmpfs=self.tmpfs_workdir)
            entry = SandboxEntry(
                sandbox_id=request.sandbox_id, provider="docker", state="active", workdir=self.workdir, root=str(root),
                isolation=ISOLATION, owner_pid=os.getpid(), created=time.time(), labels=dict(request.labels),
                image=image, workspace=str(placement.folder) if placement.folder else None,
            )
            write_entry(root, entry)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        container = None
        try:
            container, placement = self._create(client, image, request.sandbox_id, labels, environment, limits, placement)
            if placement.folder is None:
                entry.workspace = None
            entry.container = container.id
            write_entry(root, entry)
        except BaseException:
            if container is not None:
                with contextlib.suppress(Exception):
                    container.remove(force=True, v=True)
            remove_sandbox_folder(root)
            raise
        return DockerSandbox(client, container, request.sandbox_id, self.workdir, environment, root,
                             memory=self.memory, network_mode=self.network_mode, placement=placement, user=self.user,
                             image=self.image or f"{image} built from {self.context / self.dockerfile}")

    def _create(self, client: Any, image: str, sandbox_id: str, labels: dict[str, str], environment: dict[str, str],
                limits: dict[str, Any], placement: Placement) -> tuple[Any, Placement]:
        """Create the container with its workdir where `placement` says, or in the container's own file
        system when the daemon cannot see the host folder; SandboxError with the daemon's words."""
        while True:
            try:
                # The daemon makes the workdir (`working_dir`): no command has to run before the first one.
                return client.containers.create(
                    image, ["tail", "-f", "/dev/null"], labels=labels, environment=environment, init=True,
                    user=self.user or None, network_mode=self.network_mode, working_dir=self.workdir, **limits,
                    **mounts(placement, self.workdir, DockerSandbox.ledger_dir, labels),
                ), placement
            except Exception as error:  # noqa: BLE001 - a bad network name, limits the daemon refuses, …
                _remove_labelled(client, sandbox_id)
                fallback = unseen(client, placement, error)
                if fallback is None:
                    raise SandboxError(f"the container could not be created from {image}: {_short_error(error)}") from None
                placement = fallback

    async def create(self, request: CreateRequest) -> DockerSandbox:
        client = await _call(docker_client)
        cancel = _BuildCancel()
        try:
            image = await _call(self._image, client, cancel)
        except asyncio.CancelledError:
            # Interrupted (Ctrl-C) while the image is built: the build goes on in its thread and in the daemon
            # until its stream is closed, which cancels it there.
            cancel.cancel()
            client.close()
            raise
        except BaseException:
            client.close()
            raise
        creating = asyncio.ensure_future(_call(self._record_and_create, client, image, request))
        try:
            sandbox = await asyncio.shield(creating)
        except asyncio.CancelledError:
            # Interrupted while the container is made (Ctrl-C): it still is, in its thread, so wait for it
            # and remove it rather than leave it behind.
            with contextlib.suppress(BaseException):
                await (await creating).stop()
            raise
        except BaseException:
            client.close()
            raise
        # The container starts (a few hundred milliseconds of the daemon's and runc's work) while the
        # attempt goes on: an upload into a host-folder workspace and the ledger's baseline need no
        # container, and the first command waits for it.
        sandbox.start_in_background()
        return sandbox


def _build_source(context: str | Path | None, dockerfile: str | Path | None) -> tuple[Path, str]:
    """(the build context, the Dockerfile's path inside it): `dockerfile` is a path inside `context` (Docker's
    `-f`), or alone the file whose folder is the context. Either must exist (a `ConfigError` naming it)."""
    if context is None:
        assert dockerfile is not None
        path = Path(dockerfile).resolve()
        folder, name = path.parent, path.name
    else:
        folder = Path(context).resolve()
        if not folder.is_dir():
            from assay.agent.sandbox.layers import nearby_path

            state = "is not a folder" if folder.exists() else f"does not exist{nearby_path(folder)}"
            raise ConfigError(f"docker_sandbox: the build context {folder} {state} (a relative path is taken from the "
                              "folder of the file that calls docker_sandbox(...))")
        name = Path(dockerfile).as_posix() if dockerfile is not None else "Dockerfile"
        if Path(name).is_absolute():
            try:
                name = Path(name).resolve().relative_to(folder).as_posix()
            except ValueError:
                raise ConfigError(f"docker_sandbox: the Dockerfile {name} is not inside the build context {folder}") from None
    if not (folder / name).is_file():
        from assay.agent.sandbox.layers import nearby_path

        raise ConfigError(f"docker_sandbox: no Dockerfile at {folder / name}{nearby_path(folder / name)}")
    return folder, name


# Build arguments every build knows without an ARG line (Docker's predefined proxy ones, BuildKit's own).
_PREDEFINED_ARGS = frozenset(
    name for base in ("HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "NO_PROXY", "ALL_PROXY") for name in (base, base.lower())
)


def _declared_args(dockerfile: Path) -> set[str] | None:
    """The names the Dockerfile's ARG instructions declare (None when it cannot be read): line continuations
    joined, with the escape character a `# escape=` directive sets."""
    try:
        text = dockerfile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    directive = re.match(r"\s*#\s*escape\s*=\s*(\S)", text)
    escape = directive.group(1) if directive else "\\"
    joined = re.sub(re.escape(escape) + r"[ \t]*\r?\n", " ", text)
    names: set[str] = set()
    for line in joined.splitlines():
        words = line.split()
        if len(words) > 1 and words[0].upper() == "ARG":
            names.update(word.split("=", 1)[0] for word in words[1:] if not word.startswith("--"))
    return names


def _check_build_args(dockerfile: Path, build_args: Mapping[str, str]) -> None:
    """A build argument no ARG line declares changes nothing in the image (Docker only warns, deep in the build
    log): a misspelt one would build, and be cached, with the default. A ConfigError naming it."""
    from assay.core.format import did_you_mean

    declared = _declared_args(dockerfile)
    if declared is None:
        return
    for name in build_args:
        if name not in declared and name not in _PREDEFINED_ARGS and not name.startswith("BUILDKIT_"):
            have = f"it declares {', '.join(sorted(declared))}" if declared else "it has no ARG line"
            raise ConfigError(
                f"docker_sandbox build_args names {name!r}, which {dockerfile} does not declare with ARG"
                f"{did_you_mean(name, declared)} ({have}); add `ARG {name}` to it, or fix the name"
            )


def docker_sandbox(
    *, image: str | None = None, dockerfile: str | Path | None = None, context: str | Path | None = None,
    build_args: Mapping[str, str] | None = None, workdir: str = "/workspace", env: Mapping[str, str] | None = None,
    path_prepend: Sequence[str] = (), user: str | None = None, network_mode: str = NETWORK_NONE,
    cpus: float | None = None, memory: int | str | None = None, pids_limit: int | None = DEFAULT_PIDS_LIMIT,
    tmpfs_workdir: bool = False,
) -> SandboxLayer:
    """A template-bearing layer: a container per attempt from `image`, or built from a Dockerfile
    (`context=` the build folder, `dockerfile=` the file's path inside it; relative paths are the calling
    file's folder's, as `upload()`'s are). No network unless `network_mode` allows it
    ("bridge", "host" or a network's name); `cpus`, `memory` ("256m") and `pids_limit` bound what its
    commands may take. The workdir is a folder of this machine that the container mounts (Docker copies
    what the image has there into it), or the container's own file system when the daemon is remote
    (docker_workspace.py); `tmpfs_workdir=True` puts it on a memory file system instead, which counts
    against `memory` and hides what the image has at the workdir. Needs the `docker` extra."""
    if context is not None:
        context = beside_caller(context)  # `dockerfile` is then a path inside it
    elif dockerfile is not None:
        dockerfile = beside_caller(dockerfile)
    return SandboxLayer(DockerProvider(
        image=image, dockerfile=dockerfile, context=context, build_args=build_args, workdir=workdir, env=env,
        path_prepend=path_prepend, user=user, network_mode=network_mode, cpus=cpus, memory=memory,
        pids_limit=pids_limit, tmpfs_workdir=tmpfs_workdir,
    ))


__all__ = [
    "DEFAULT_PIDS_LIMIT", "DockerProvider", "DockerSandbox", "INSTALL_HINT", "ISOLATION", "NETWORK_NONE",
    "OWNER_LABEL", "ROOT_LABEL", "build_key", "docker_client", "docker_sandbox", "human_bytes", "import_docker",
    "memory_bytes", "owner_label",
]
