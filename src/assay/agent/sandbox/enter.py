"""A shell in a kept sandbox (`assay agent sandbox enter`): where its commands ran, as they ran.

Local: the sandbox's workdir with its environment (its HOME, TMPDIR, variables and PATH), under bubblewrap
when it was made with it. Docker: `docker exec -it` into its container, in the workdir with the container's
environment; through the docker CLI when it is installed (its terminal handling is the one people know:
raw mode, window resizes), else through the Engine API with the same terminal handling done here. A
stopped container is started first. When the shell exits, the sandbox is left as a run leaves a kept
local one, with nothing running: the container is stopped (not removed: its files and ledger stay, and
`enter` starts it again) and a local sandbox's leftover processes are killed — unless `leave_running`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from assay.agent.sandbox.commands import SandboxError
from assay.agent.sandbox.registry import SandboxEntry, kept_container, start_kept

# bash when the image or host has it, else sh; `exec` leaves no extra shell behind.
_CONTAINER_SHELL = ["sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash; exec sh"]
_STOP_SECONDS = 5


def enter(entry: SandboxEntry, *, leave_running: bool = False) -> int:
    """Run an interactive shell in the sandbox until it exits; its exit code."""
    if entry.provider == "docker":
        return _enter_container(entry, leave_running)
    return _enter_local(entry, leave_running)


def _enter_local(entry: SandboxEntry, leave_running: bool) -> int:
    from assay.agent.sandbox.local import BUBBLEWRAP, PROCESS_GROUP, LocalSandbox, bubblewrap_problem
    from assay.agent.sandbox.retention import kill_marked

    sandbox = LocalSandbox(entry.sandbox_id, Path(entry.root), entry.isolation or PROCESS_GROUP, entry.env,
                           entry.path_prepend)
    if not os.path.isdir(sandbox.workdir):
        raise SandboxError(f"sandbox {entry.sandbox_id} has no workdir any more ({sandbox.workdir}); "
                           f"`assay agent sandbox stop {entry.sandbox_id}` forgets it")
    if sandbox.isolation == BUBBLEWRAP and bubblewrap_problem() is not None:
        raise SandboxError(f"sandbox {entry.sandbox_id} was made under bubblewrap, which cannot run here now: "
                           f"{bubblewrap_problem()}")
    shell = os.environ.get("SHELL") if os.path.isfile(os.environ.get("SHELL") or "") else shutil.which("bash") or "/bin/sh"
    environment = {**sandbox.environment, "TERM": os.environ.get("TERM", "dumb")}
    bubblewrapped = sandbox.isolation == BUBBLEWRAP
    argv = [*_WITH_DEFAULT_CTRL_C, shell] if bubblewrapped else [shell]
    try:
        return _shell_until_it_exits(sandbox.wrapped_argv(argv, sandbox.workdir), cwd=sandbox.workdir, env=environment,
                                     starter_ignores_ctrl_c=bubblewrapped)
    finally:
        if not leave_running:
            kill_marked(entry.sandbox_id)


# Under bubblewrap the shell is started by `bwrap`, which is in the terminal's foreground group too and would
# die of Ctrl-C (taking the shell with it): bwrap starts with Ctrl-C ignored, and this, inside the sandbox,
# gives the shell Ctrl-C's default back before it runs (an ignored signal stays ignored across exec, and a
# shell cannot `trap` a signal ignored when it started). The host's Python, which bwrap's view of the host shows.
# Python itself starts with SIGPIPE and SIGXFSZ ignored: they get their defaults back too, or every command in
# the shell would inherit them (`seq 1 100000 | head -1` saying "write error: Broken pipe").
_WITH_DEFAULT_CTRL_C = [
    sys.executable, "-I", "-S", "-c",
    "import os, signal, sys\n"
    "for name in ('SIGINT', 'SIGPIPE', 'SIGXFSZ'):\n"
    "    signal.signal(getattr(signal, name), signal.SIG_DFL)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])",
]


def _shell_until_it_exits(argv: list[str], *, starter_ignores_ctrl_c: bool = False, **options: Any) -> int:
    """The shell's exit code, once it exits. Ctrl-C typed into it (to stop a command in it) reaches every
    process of the terminal's foreground group, assay's too: it is the shell's to act on, so here it does
    nothing, as under `ssh` (it used to end this command, which killed the shell). A handler rather than
    SIG_IGN, so the shell and its commands start with Ctrl-C's default (exec resets a handled signal); with
    `starter_ignores_ctrl_c`, `argv[0]` starts with it ignored (bwrap; see `_WITH_DEFAULT_CTRL_C`).
    SIGTERM (a job cancelled) still ends it as Ctrl-C ends other commands: the shell is killed (an interactive
    shell ignores SIGTERM), then KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        code = subprocess.Popen(argv, **options).wait()
        return 128 - code if code < 0 else code
    terminated: list[int] = []
    process: subprocess.Popen | None = None

    def terminate(number: int, frame: Any) -> None:
        terminated.append(number)
        if process is not None:
            process.kill()

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN if starter_ignores_ctrl_c else lambda *_: None),
                signal.SIGTERM: signal.signal(signal.SIGTERM, terminate)}
    try:
        process = subprocess.Popen(argv, **options)
        signal.signal(signal.SIGINT, lambda *_: None)
        if terminated:  # SIGTERM while it was being started
            process.kill()
        code = process.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if terminated:
        raise KeyboardInterrupt
    # A shell killed by a signal exits as shells say it, 128 + the signal (`kill -9 $$`: 137), not -9.
    return 128 - code if code < 0 else code


def _enter_container(entry: SandboxEntry, leave_running: bool) -> int:
    from assay.agent.sandbox.docker import docker_client

    client = docker_client()
    try:
        container = kept_container(client, entry)
        if container.status != "running":
            start_kept(container, entry)
        try:
            cli = shutil.which("docker")
            if cli is not None:
                return _docker_cli_exec(cli, container.id, entry.workdir)
            return _api_exec(client, container.id, entry.workdir)
        finally:
            if not leave_running:
                container.stop(timeout=_STOP_SECONDS)
    finally:
        client.close()


def _docker_cli_exec(cli: str, container: str, workdir: str) -> int:
    # The daemon the SDK reached (DOCKER_HOST, else the local socket), not whatever context the CLI prefers.
    environment = {**os.environ, "DOCKER_HOST": os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"}
    environment.pop("DOCKER_CONTEXT", None)
    terminal = ["-t"] if sys.stdin.isatty() and sys.stdout.isatty() else []
    return subprocess.call([cli, "exec", "-i", *terminal, "-w", workdir, container, *_CONTAINER_SHELL], env=environment)


def _api_exec(client: Any, container: str, workdir: str) -> int:
    """`docker exec -i [-t]` through the Engine API: stdin to the shell, its output to ours."""
    from assay.agent.sandbox.docker import demux_frames, stream_reader

    api = client.api
    terminal = sys.stdin.isatty() and sys.stdout.isatty()
    created = api.exec_create(container, _CONTAINER_SHELL, stdin=True, tty=terminal, workdir=workdir,
                              environment={"TERM": os.environ.get("TERM", "xterm")} if terminal else None)
    exec_id = created["Id"]
    connection = api.exec_start(exec_id, socket=True, tty=terminal)
    raw = getattr(connection, "_sock", connection)
    read = stream_reader(connection)
    threading.Thread(target=_forward_stdin, args=(raw,), daemon=True).start()
    with _raw_terminal(terminal, lambda height, width: api.exec_resize(exec_id, height=height, width=width)):
        if terminal:
            while data := read(65536):
                os.write(sys.stdout.fileno(), data)
        else:
            for out, err in demux_frames(read):
                stream = sys.stdout.buffer if out is not None else sys.stderr.buffer
                stream.write(out if out is not None else err)
                stream.flush()
    with contextlib.suppress(OSError):
        raw.close()
    code = api.exec_inspect(exec_id).get("ExitCode")
    return code if isinstance(code, int) else 1


def _forward_stdin(sock: Any) -> None:
    with contextlib.suppress(OSError):
        while data := os.read(sys.stdin.fileno(), 65536):
            sock.sendall(data)
        sock.shutdown(1)  # the shell sees the end of its input


@contextlib.contextmanager
def _raw_terminal(terminal: bool, resize: Any):
    """Our terminal in raw mode for the shell's own line editing, its size followed (SIGWINCH); restored after."""
    if not terminal:
        yield
        return
    import termios
    import tty

    def follow(*_: Any) -> None:
        size = shutil.get_terminal_size()
        with contextlib.suppress(Exception):
            resize(size.lines, size.columns)

    saved = termios.tcgetattr(sys.stdin.fileno())
    previous = signal.signal(signal.SIGWINCH, follow)
    tty.setraw(sys.stdin.fileno())
    follow()
    try:
        yield
    finally:
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, previous)


__all__ = ["enter"]
