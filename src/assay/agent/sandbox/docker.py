"""The Docker provider: one container per attempt, from an image or a Dockerfile, through the Docker Engine API.

The `docker` SDK is optional (assay's `docker` extra) and imported only when a sandbox is created.
A Dockerfile is built once per content (its BuildKey is a hash of the context), later attempts hit the
cache. Commands run with `docker exec`; a timeout or a cancellation kills the command's process tree in
the container, and retires the container when that tree cannot be confirmed gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import os
import posixpath
import shutil
import tarfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.agent.sandbox.commands import SandboxError
from assay.agent.sandbox.interface import (
    CommandSignal,
    CreateRequest,
    OutputCallback,
    RawOutput,
)
from assay.agent.sandbox.layers import SandboxLayer
from assay.agent.sandbox.registry import SandboxEntry, write_entry

INSTALL_HINT = "pip install docker (assay's `docker` extra)"
_TREE_MARK = "ASSAY_SANDBOX_COMMAND"
_KILL_TREE = (
    # $1 is the command's pidfile, $2 its mark. Every descendant of the recorded pid (through /proc's
    # children lists, deepest first), and every process carrying the command's mark in its environment:
    # a grandchild that left the session (setsid) and lost its parent is no descendant any more.
    'alive() { [ -r /proc/$1/stat ] && ! grep -q ") Z " /proc/$1/stat 2>/dev/null; }; '
    'tree() { for c in $(cat /proc/$1/task/*/children 2>/dev/null); do tree $c; done; alive $1 && echo $1; }; '
    'marked() { for e in /proc/[0-9]*/environ; do p=${e#/proc/}; p=${p%/environ}; '
    '[ "$p" = "$$" ] && continue; tr "\\0" "\\n" < $e 2>/dev/null | grep -qx "$2" && echo $p; done; }; '
    'pid=$(cat "$1" 2>/dev/null); '
    'for round in 1 2 3 4 5; do left=$( { [ -n "$pid" ] && tree $pid; marked "$@"; } | sort -u); '
    '[ -z "$left" ] && exit 0; kill -KILL $left 2>/dev/null; sleep 0.1; done; '
    'left=$( { [ -n "$pid" ] && tree $pid; marked "$@"; } ); [ -z "$left" ]'
)


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


class DockerSandbox:
    """One container; paths are the container's."""

    isolation = "container"
    ledger_dir = "/tmp/.assay-ledger"

    def __init__(self, client: Any, container: Any, sandbox_id: str, workdir: str, env: Mapping[str, str],
                 registry_root: Path) -> None:
        self.client = client
        self.container = container
        self.sandbox_id = sandbox_id
        self.workdir = workdir
        self.home: str | None = None
        self.env = dict(env)
        self.registry_root = registry_root
        self.retired: str | None = None

    async def exec(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, timeout: float | None,
        on_stdout: OutputCallback | None, on_stderr: OutputCallback | None, signals: Sequence[CommandSignal],
        user: str | None, stdin: bytes | None,
    ) -> RawOutput:
        for candidate in signals:
            if candidate.cancelled:
                return RawOutput(None, b"", b"", 0.0, cancelled=candidate.reason or "cancelled")
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        token = uuid.uuid4().hex
        pidfile = f"/tmp/.assay-exec-{token}"
        mark = f"{_TREE_MARK}={token}"
        # The shell records its pid and then becomes the command, so the tree has a known root.
        wrapped = ["sh", "-c", 'echo $$ > "$0"; exec "$@"', pidfile, *argv]
        api = self.client.api
        created = await asyncio.to_thread(
            api.exec_create, self.container.id, wrapped, stdout=True, stderr=True, stdin=stdin is not None,
            environment={**self.env, **env, _TREE_MARK: token}, workdir=cwd, user=user or "",
        )
        exec_id = created["Id"]
        out: list[bytes] = []
        err: list[bytes] = []
        finished = loop.create_future()

        def pump() -> None:
            try:
                if stdin is not None:
                    sock = api.exec_start(exec_id, socket=True)
                    raw = getattr(sock, "_sock", sock)
                    raw.sendall(stdin)
                    with contextlib.suppress(OSError):
                        raw.shutdown(1)
                    frames = _demux(raw)
                else:
                    frames = api.exec_start(exec_id, stream=True, demux=True)
                for stdout_chunk, stderr_chunk in frames:
                    for chunk, sink, callback in ((stdout_chunk, out, on_stdout), (stderr_chunk, err, on_stderr)):
                        if chunk:
                            sink.append(chunk)
                            if callback is not None:
                                text = chunk.decode("utf-8", "replace")
                                loop.call_soon_threadsafe(callback, text)
            except Exception as error:  # noqa: BLE001 - a broken stream ends the command
                err.append(f"\n[assay] docker exec stream failed: {error}\n".encode())
            finally:
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
        except BaseException:
            await asyncio.shield(self._kill(pidfile, mark))
            raise
        finally:
            if not cancelled.done():
                cancelled.cancel()
        exit_code = None
        if not timed_out and reason is None:
            inspected = await asyncio.to_thread(api.exec_inspect, exec_id)
            exit_code = inspected.get("ExitCode")
        return RawOutput(exit_code, b"".join(out), b"".join(err), time.perf_counter() - started, timed_out, reason)

    async def _kill(self, pidfile: str, mark: str) -> None:
        try:
            result = await asyncio.to_thread(self.container.exec_run, ["sh", "-c", _KILL_TREE, "kill-tree", pidfile, mark])
            confirmed = result.exit_code == 0
        except Exception:  # noqa: BLE001
            confirmed = False
        if not confirmed:
            self.retired = "a command's process tree could not be confirmed gone, so the container was stopped"
            await self.stop()

    async def read_bytes(self, path: str) -> bytes:
        try:
            stream, _ = await asyncio.to_thread(self.container.get_archive, path)
            data = b"".join(stream)
        except Exception as error:  # noqa: BLE001 - NotFound, APIError
            raise SandboxError(f"could not read {path} in the container: {error}") from None
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            member = archive.next()
            extracted = archive.extractfile(member) if member is not None else None
            if extracted is None:
                raise SandboxError(f"{path} is not a file in the container")
            return extracted.read()

    async def write_bytes(self, path: str, data: bytes) -> None:
        folder, name = posixpath.split(path)
        made = await asyncio.to_thread(self.container.exec_run, ["mkdir", "-p", folder])
        if made.exit_code != 0:
            raise SandboxError(f"could not make {folder} in the container: {made.output!r}")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = int(time.time())
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
        ok = await asyncio.to_thread(self.container.put_archive, folder, buffer.getvalue())
        if not ok:
            raise SandboxError(f"could not write {path} in the container")

    async def stop(self) -> bool:
        try:
            await asyncio.to_thread(self.container.remove, force=True)
        except Exception as error:  # noqa: BLE001
            if "No such container" not in str(error) and "404" not in str(error):
                return False
        _remove_entry(self.registry_root)
        return True

    async def keep(self) -> bool:
        return True  # the container keeps running for `assay agent sandbox diff`; `sandbox stop` removes it


def _remove_entry(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


def _demux(sock: Any) -> Any:
    """Docker's multiplexed attach stream (8-byte headers) as (stdout, stderr) chunks."""
    buffer = b""
    while True:
        data = sock.recv(65536)
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
        path_prepend: Sequence[str] = (), user: str | None = None,
    ) -> None:
        if (image is None) == (context is None and dockerfile is None):
            raise SandboxError("docker_sandbox takes image=… or a Dockerfile (context=…, dockerfile=…), not both")
        if not posixpath.isabs(workdir):
            raise SandboxError("docker_sandbox workdir must be an absolute path in the container")
        environment = dict(env or {})
        if "PATH" in environment:
            raise SandboxError("PATH is managed by the sandbox; use path_prepend")
        self.image = image
        self.context = Path(context).resolve() if context is not None else (
            Path(dockerfile).resolve().parent if dockerfile is not None else None
        )
        self.dockerfile = Path(dockerfile).name if dockerfile is not None else "Dockerfile"
        self.build_args = dict(build_args or {})
        self.workdir = workdir
        self.env = environment
        self.path_prepend = tuple(path_prepend)
        self.user = user

    def describe(self) -> dict[str, Any]:
        source = {"image": self.image} if self.image else {"dockerfile": str(self.context / self.dockerfile)}
        return {"provider": "docker", **source, "workdir": self.workdir}

    def _image(self, client: Any) -> str:
        if self.image is not None:
            try:
                client.images.get(self.image)
            except Exception:  # noqa: BLE001 - ImageNotFound: pull it
                client.images.pull(self.image)
            return self.image
        assert self.context is not None
        tag = f"assay-sandbox:{build_key(self.context, self.dockerfile, self.build_args)}"
        try:
            client.images.get(tag)  # build cache hit
        except Exception:  # noqa: BLE001 - not built yet: built once
            client.images.build(path=str(self.context), dockerfile=self.dockerfile, tag=tag, buildargs=self.build_args,
                                rm=True)
        return tag

    async def create(self, request: CreateRequest) -> DockerSandbox:
        from assay.agent.sandbox.local import sandbox_base_dir

        client = await asyncio.to_thread(docker_client)
        image = await asyncio.to_thread(self._image, client)
        labels = {"assay.sandbox": request.sandbox_id, **{f"assay.{key}": value for key, value in request.labels.items()}}
        environment = dict(self.env)
        if self.path_prepend:
            inspected = await asyncio.to_thread(client.images.get, image)
            image_env = dict(item.split("=", 1) for item in (inspected.attrs.get("Config", {}).get("Env") or []) if "=" in item)
            base_path = image_env.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            environment["PATH"] = ":".join([*self.path_prepend, base_path])
        container = await asyncio.to_thread(
            client.containers.run, image, ["tail", "-f", "/dev/null"], detach=True, labels=labels,
            environment=environment, init=True, user=self.user or None,
        )
        made = await asyncio.to_thread(container.exec_run, ["mkdir", "-p", self.workdir])
        if made.exit_code != 0:
            await asyncio.to_thread(container.remove, force=True)
            raise SandboxError(f"could not make the workdir {self.workdir} in the container: {made.output!r}")
        root = (request.base_dir or sandbox_base_dir()) / request.sandbox_id
        write_entry(root, SandboxEntry(
            sandbox_id=request.sandbox_id, provider="docker", state="active", workdir=self.workdir, root=str(root),
            isolation="container", owner_pid=os.getpid(), created=time.time(), labels=dict(request.labels),
            container=container.id,
        ))
        return DockerSandbox(client, container, request.sandbox_id, self.workdir, environment, root)


def docker_sandbox(
    *, image: str | None = None, dockerfile: str | Path | None = None, context: str | Path | None = None,
    build_args: Mapping[str, str] | None = None, workdir: str = "/workspace", env: Mapping[str, str] | None = None,
    path_prepend: Sequence[str] = (), user: str | None = None,
) -> SandboxLayer:
    """A template-bearing layer: a container per attempt from `image`, or built from a Dockerfile
    (`context=` the build folder, `dockerfile=` its file). Needs the `docker` extra."""
    return SandboxLayer(DockerProvider(
        image=image, dockerfile=dockerfile, context=context, build_args=build_args, workdir=workdir, env=env,
        path_prepend=path_prepend, user=user,
    ))


__all__ = ["DockerProvider", "DockerSandbox", "INSTALL_HINT", "build_key", "docker_client", "docker_sandbox", "import_docker"]
