"""Where a Docker sandbox's workdir lives (docker_workspace.py), against the real daemon: a host folder the
container mounts, with what the image has at the workdir copied in; the container's own file system for a
remote daemon (the local daemon reached over TCP) and for a daemon that cannot see this machine's folders
(assay under bubblewrap with a /tmp of its own); uploads written on the host only while that is safe; and a
process that is not root still removes everything the container's root wrote, on stop and after kill -9 +
`assay agent sandbox prune`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from sandbox_helpers import no_sandbox_left, run_one_linked, sandbox_agent, sandbox_dir  # noqa: F401

from assay.agent import Turn, define_eval, docker_sandbox, equals, message
from assay.agent.sandbox import upload
from assay.agent.sandbox.docker import DockerProvider
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox.local import bubblewrap_problem
from containers import BASE_IMAGE, docker_containers, docker_image  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]


def _daemon_socket() -> str:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        pytest.skip(f"these tests reach the daemon through its Unix socket (DOCKER_HOST={host})")
    return host[len("unix://"):]


@contextlib.contextmanager
def proxied_daemon(listener: socket.socket):
    """Every connection to `listener` piped to the daemon's socket (both ways, half-closes kept): the local
    daemon as a client on TCP, or as a user who may not open its socket, sees it."""
    target = _daemon_socket()
    listener.listen(64)
    stopping = threading.Event()

    def pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def serve() -> None:
        while not stopping.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            daemon = socket.socket(socket.AF_UNIX)
            daemon.connect(target)
            for source, sink in ((client, daemon), (daemon, client)):
                threading.Thread(target=pipe, args=(source, sink), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield
    finally:
        stopping.set()
        listener.close()


def test_the_workdir_is_a_host_folder_that_keeps_what_the_image_has_there(docker_image, tmp_path, sandbox_dir):
    (tmp_path / "image").mkdir()
    (tmp_path / "image" / "Dockerfile").write_text(
        f"FROM {docker_image}\nRUN mkdir -p /repo && echo from-the-image > /repo/seed.txt\n")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    seen = {}

    async def send(turn_input, ctx):
        await ctx.sandbox.run_shell_or_raise("sed -i 's/a - b/a + b/' calc.py && echo new > added.txt")
        folder = Path(sandbox_dir / ctx.sandbox.sandbox_id / "workspace")
        seen.update(host=sorted(path.name for path in folder.iterdir()), added=(folder / "added.txt").read_text())
        return Turn([message("fixed")])

    async def test(t):
        t.check(await t.sandbox.read_text("seed.txt"), equals("from-the-image\n"))
        mounted = await t.sandbox.run_shell("grep ' /repo ' /proc/mounts | cut -d' ' -f3")
        t.check(mounted.stdout.strip() not in ("", "tmpfs"), equals(True)).label("a host folder, not a tmpfs")
        await t.send("fix it")
        t.sandbox.changed_paths(["calc.py", "added.txt"])
        t.sandbox.file_changed("calc.py", before=equals("def add(a, b):\n    return a - b\n"))

    layer = docker_sandbox(context=tmp_path / "image", workdir="/repo").prepare(upload(tmp_path / "repo"))
    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=layer))
    assert result.verdict == "passed", (result.error, result.assertions)
    sandbox_id = result.sandbox["sandbox_id"]
    assert result.sandbox["workspace"] == {"kind": "host-folder", "folder": str(sandbox_dir / sandbox_id / "workspace")}
    assert seen == {"host": ["added.txt", "calc.py", "seed.txt"], "added": "new\n"}
    assert docker_containers(sandbox_id) == [] and no_sandbox_left(sandbox_dir)


def test_a_remote_daemon_keeps_the_workdir_in_the_container(docker_image, tmp_path, monkeypatch, sandbox_dir):
    """The local daemon reached as DOCKER_HOST=tcp://127.0.0.1:PORT is taken for a remote one."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "notes.txt").write_text("before\n")

    async def send(turn_input, ctx):
        await ctx.sandbox.run_shell_or_raise("echo after > notes.txt")
        return Turn([message("done")])

    async def test(t):
        mounted = await t.sandbox.run_shell("grep -c ' /workspace ' /proc/mounts")
        t.check(mounted.stdout.strip(), equals("0")).label("nothing mounted at the workdir")
        await t.send("edit")
        t.sandbox.file_changed("notes.txt", before=equals("before\n"), after=equals("after\n"))

    listener = socket.socket(socket.AF_INET)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    with proxied_daemon(listener):
        monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{port}")
        layer = docker_sandbox(image=docker_image).prepare(upload(tmp_path / "repo"))
        result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=layer))
    assert result.verdict == "passed", (result.error, result.assertions)
    assert result.sandbox["workspace"] == {
        "kind": "container",
        "reason": f"the Docker daemon is remote (DOCKER_HOST=tcp://127.0.0.1:{port}): it cannot mount this "
                  "machine's folders",
    }
    monkeypatch.delenv("DOCKER_HOST")
    assert docker_containers(result.sandbox["sandbox_id"]) == [] and no_sandbox_left(sandbox_dir)


CHILD = """
import asyncio, json, os, sys
from pathlib import Path
from assay.agent.sandbox.docker import DockerProvider
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest

async def main(how):
    backend = await DockerProvider(image={image!r}).create(CreateRequest("child-" + how))
    sandbox = Sandbox(SandboxCore(backend))
    await sandbox.run_shell_or_raise("mkdir -p deep/er && echo x > deep/er/f && chmod 500 deep && echo y > top.txt")
    root = Path(os.environ["ASSAY_SANDBOX_DIR"]) / ("child-" + how)
    print(json.dumps({{"placement": backend.placement.to_json(),
                      "owner": os.stat(root / "workspace" / "top.txt").st_uid if how != "elsewhere" else None}}),
          flush=True)
    if how == "killed":
        os._exit(9)  # as a kill -9 would: nothing stops the sandbox
    print(json.dumps({{"stopped": await sandbox.stop(), "left": os.path.exists(root)}}), flush=True)

asyncio.run(main(sys.argv[1]))
"""


def _child(how: str, environment: dict[str, str], launcher: list[str]) -> list[dict]:
    done = subprocess.run([*launcher, sys.executable, "-c", CHILD.format(image=BASE_IMAGE), how], capture_output=True,
                          text=True, env=environment, cwd=ROOT, timeout=120)
    assert done.returncode in (0, 9), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture
def shared_folder():
    """A folder any user may write (the test's own tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="assay-nonroot-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_user_who_is_not_root_removes_what_the_containers_root_wrote(docker_image, shared_folder):
    """assay as `nobody`, reaching the daemon through a socket it may open: the container's root writes a
    read-only folder into the workspace (host files `nobody` could not delete), and stopping the sandbox,
    or `assay agent sandbox prune` after the run was killed, still leaves no folder and no container."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run assay as another user")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(shared_folder / "docker.sock"))
    os.chmod(shared_folder / "docker.sock", 0o777)
    base = shared_folder / "sandboxes"
    base.mkdir(mode=0o777)
    base.chmod(0o777)
    environment = {**os.environ, "DOCKER_HOST": f"unix://{shared_folder / 'docker.sock'}",
                   "ASSAY_SANDBOX_DIR": str(base), "HOME": str(shared_folder)}
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    with proxied_daemon(listener):
        created, stopped = _child("stopped", environment, nobody)
        assert created["placement"]["kind"] == "host-folder" and created["owner"] == 0  # the container's root's
        assert stopped == {"stopped": True, "left": False}

        [killed] = _child("killed", environment, nobody)
        assert killed["owner"] == 0 and (base / "child-killed" / "workspace" / "deep" / "er" / "f").exists()
        assert len(docker_containers("child-killed")) == 1
        pruned = subprocess.run([*nobody, sys.executable, "-m", "assay", "agent", "sandbox", "prune"],
                                capture_output=True, text=True, env=environment, cwd=ROOT, timeout=120)
    assert pruned.returncode == 0 and "child-killed (orphaned): removed container" in pruned.stdout, pruned
    assert docker_containers("child-killed") == [] and list(base.iterdir()) == []


def test_prune_by_another_user_passes_over_a_container_whose_folder_it_cannot_read(docker_image, shared_folder):
    """A daemon shared by several users: another user's orphaned container names a sandbox folder `nobody` may
    not look into. Prune leaves it to its owner instead of stopping with a traceback (PermissionError)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run assay as another user")
    import docker

    from assay.agent.sandbox.docker import OWNER_LABEL, ROOT_LABEL

    private = shared_folder / "root-only"
    (private / "sandbox").mkdir(parents=True)
    private.chmod(0o700)  # root's: `nobody` cannot tell whether a record is inside
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(shared_folder / "docker.sock"))
    os.chmod(shared_folder / "docker.sock", 0o777)
    base = shared_folder / "sandboxes"
    base.mkdir(mode=0o777)
    base.chmod(0o777)
    client = docker.from_env()
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid no process has now: the container's owner is gone
    container = client.containers.create(docker_image, ["true"], labels={
        "assay.sandbox": "someone-elses", OWNER_LABEL: f"{socket.gethostname()}:{dead.pid}",
        ROOT_LABEL: str(private / "sandbox"),
    })
    try:
        environment = {**os.environ, "DOCKER_HOST": f"unix://{shared_folder / 'docker.sock'}",
                       "ASSAY_SANDBOX_DIR": str(base), "HOME": str(shared_folder)}
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        with proxied_daemon(listener):
            pruned = subprocess.run([*nobody, sys.executable, "-m", "assay", "agent", "sandbox", "prune"],
                                    capture_output=True, text=True, env=environment, cwd=ROOT, timeout=120)
        assert pruned.returncode == 0 and "Traceback" not in pruned.stderr, pruned
        assert docker_containers("someone-elses") != []  # not this user's to judge: left alone
    finally:
        container.remove(force=True)


def test_a_daemon_that_cannot_see_this_machines_folders_gets_the_workdir_in_the_container(docker_image, shared_folder):
    """assay under bubblewrap with a /tmp of its own: the daemon cannot find the sandbox's folder there, says
    so, and the sandbox is made again with the workdir in the container's own file system."""
    problem = bubblewrap_problem()
    if problem is not None:
        pytest.skip(problem)
    private = "/tmp/assay-private-sandboxes"
    environment = {**os.environ, "ASSAY_SANDBOX_DIR": private}
    if _daemon_socket().startswith("/tmp/"):
        pytest.skip("the daemon's socket is under /tmp, which this test hides")
    argv = ["bwrap", "--bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"]
    for kept in {sys.prefix, str(ROOT)}:  # a checkout or a virtual environment under /tmp stays visible
        if kept.startswith("/tmp/"):
            argv += ["--bind", kept, kept]
    argv.append("--")
    created, stopped = _child("elsewhere", environment, argv)
    assert created["placement"] == {"kind": "container", "reason": "the Docker daemon could not mount a folder of "
                                                                   "this machine (it runs on another machine)"}
    assert stopped == {"stopped": True, "left": False}
    assert docker_containers("child-elsewhere") == [] and not Path(private).exists()


def test_uploads_are_written_on_the_host_only_before_any_command_and_never_through_a_link(docker_image, tmp_path):
    """A link in the workspace leads where the container says, not to the host's path of the same name."""
    outside = tmp_path / "outside"  # the same path exists in the container only once a command makes it
    outside.mkdir()
    first = tmp_path / "first"
    first.mkdir()
    (first / "escape").symlink_to(outside)
    second = tmp_path / "second" / "escape"
    second.mkdir(parents=True)
    (second / "planted.txt").write_text("planted\n")

    async def body():
        backend = await DockerProvider(image=docker_image).create(CreateRequest("links", base_dir=tmp_path / "base"))
        sandbox = Sandbox(SandboxCore(backend))
        try:
            host_side = backend.host_folder_for(backend.workdir)
            await sandbox.upload_directory(first)  # written on the host: a link is copied as a link
            await sandbox.upload_directory(tmp_path / "second")  # through the link: only the container's way
            inside = await sandbox.run_shell(f"cat escape/planted.txt; test -e {outside}/planted.txt || echo not-there")
            after_a_command = backend.host_folder_for(backend.workdir)
            return host_side, inside, after_a_command
        finally:
            await sandbox.stop()

    host_side, inside, after_a_command = asyncio.run(body())
    assert host_side == tmp_path / "base" / "links" / "workspace" and after_a_command is None
    assert list(outside.iterdir()) == []  # the host's folder of that name was never written
    assert inside.stdout == "planted\nnot-there\n"  # uploaded, as the container's own tar puts it
