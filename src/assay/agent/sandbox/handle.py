"""`Sandbox`: the one handle an agent (`ctx.sandbox`) and an eval (`t.sandbox`) use to work in a sandbox.

It turns a provider's few primitives into the whole interface: argv and shell commands with env, cwd,
a timeout that defaults to the attempt's remaining deadline, streaming and cancellation; raising
variants; text and bytes; host transfers; and a redacted log of every command for the record.
"""

from __future__ import annotations

import asyncio
import io
import posixpath
import tarfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.agent.sandbox.commands import (
    MIN_SENSITIVE_CHARACTERS,
    CommandResult,
    Redactor,
    SandboxCommandError,
    SandboxError,
    SandboxRetired,
    bounded_tail,
    checked_user,
    display_command,
)
from assay.agent.sandbox.interface import CommandSignal, OutputCallback, SandboxBackend

MAX_LOGGED_COMMANDS = 500
LOG_TAIL_CHARACTERS = 1000


class SandboxCore:
    """What every view of one sandbox shares: its backend, secrets, deadline, phase and command log."""

    __slots__ = (
        "backend", "redactor", "deadline", "signal", "phase", "window", "log", "omitted_commands", "progress",
        "touches",
    )

    def __init__(
        self, backend: SandboxBackend, *, redactor: Redactor | None = None, signal: CommandSignal | None = None,
        progress: Callable[[str], Any] | None = None,
    ) -> None:
        self.backend = backend
        self.redactor = redactor if redactor is not None else Redactor()
        self.deadline: float | None = None  # loop time; commands default to what is left of it
        self.signal = signal  # the attempt's: an interrupt or its deadline stops every command
        self.phase = "sandbox.create"
        self.window: str | None = None  # the send window commands run in, if any
        self.log: list[dict[str, Any]] = []
        self.omitted_commands = 0
        self.progress = progress
        self.touches = 0  # commands run, files written and folders uploaded: what may change the workdir

    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - asyncio.get_running_loop().time())

    def record(self, result: CommandResult) -> None:
        if len(self.log) >= MAX_LOGGED_COMMANDS:
            self.omitted_commands += 1
            return
        entry: dict[str, Any] = {
            "phase": self.phase, "command": result.display, "exit_code": result.exit_code,
            "duration_seconds": round(result.duration_seconds, 4),
        }
        if self.window is not None:
            entry["window"] = self.window
        if result.timed_out:
            entry["timed_out"] = True
        if result.killed:
            entry["killed"] = result.killed
        if result.stdout.strip():
            entry["stdout_tail"] = bounded_tail(result.stdout, LOG_TAIL_CHARACTERS)
        if result.stderr.strip():
            entry["stderr_tail"] = bounded_tail(result.stderr, LOG_TAIL_CHARACTERS)
        self.log.append(entry)


def _redacting(callback: OutputCallback | None, redactor: Redactor) -> OutputCallback | None:
    if callback is None:
        return None

    def deliver(text: str) -> None:
        callback(redactor(text))

    return deliver


def _line_streamer(display: str, progress: Callable[[str], Any], redactor: Redactor) -> OutputCallback:
    """`stream=True`: each output line becomes an (ephemeral) progress line of the attempt."""
    pending = [""]

    def feed(text: str) -> None:
        pending[0] += text
        *lines, pending[0] = pending[0].split("\n")
        for line in lines:
            if line.strip():
                progress(f"{display}: {redactor(line)[:200]}")

    return feed


def _both(first: OutputCallback | None, second: OutputCallback | None) -> OutputCallback | None:
    if first is None or second is None:
        return first or second

    def deliver(text: str) -> None:
        first(text)
        second(text)

    return deliver


class _TailKeeper:
    """The last few KiB a command printed on each stream (unredacted: redact before storing)."""

    __slots__ = ("_out", "_err")
    KEEP = 8 * LOG_TAIL_CHARACTERS

    def __init__(self) -> None:
        self._out = ""
        self._err = ""

    def out(self, text: str) -> None:
        self._out = (self._out + text)[-self.KEEP:]

    def err(self, text: str) -> None:
        self._err = (self._err + text)[-self.KEEP:]

    def stdout(self) -> str:
        return self._out

    def stderr(self) -> str:
        return self._err


class Sandbox:
    """One attempt's sandbox. Relative paths are relative to `workdir`; writes create parent folders.

    Everything it stores (the command log, error messages, tails) has `sensitive_values` replaced; the
    `CommandResult` you get back is redacted too."""

    __slots__ = ("_core", "__weakref__")  # weak-referenceable: setup state can be keyed by sandbox

    def __init__(self, core: SandboxCore) -> None:
        self._core = core

    # -- identity ---------------------------------------------------------------------------------
    @property
    def workdir(self) -> str:
        return self._core.backend.workdir

    @property
    def sandbox_id(self) -> str:
        return self._core.backend.sandbox_id

    @property
    def isolation(self) -> str:
        return getattr(self._core.backend, "isolation", "unknown")

    @property
    def otlp_host(self) -> str | None:
        return None  # ctx.telemetry.env already names the endpoint commands reach (see telemetry.py)

    def path(self, path: str | Path) -> str:
        """The absolute sandbox path of `path` (relative paths are under `workdir`)."""
        text = str(path)
        if text.startswith("~/") or text == "~":
            home = getattr(self._core.backend, "home", None)
            if home is None:
                raise SandboxError("this sandbox has no known home folder for '~'")
            text = posixpath.join(home, text[2:])
        if not posixpath.isabs(text):
            text = posixpath.join(self.workdir, text)
        return posixpath.normpath(text)

    def _live(self) -> SandboxBackend:
        backend = self._core.backend
        retired = getattr(backend, "retired", None)
        if retired:
            raise SandboxRetired(f"sandbox {backend.sandbox_id} was retired: {retired}")
        return backend

    # -- commands ---------------------------------------------------------------------------------
    async def run_command(
        self,
        program: str | Sequence[str],
        *args: str,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        timeout: float | None = None,
        stream: bool = False,
        on_stdout: OutputCallback | None = None,
        on_stderr: OutputCallback | None = None,
        signal: CommandSignal | None = None,
        sensitive_values: Iterable[str] = (),
        user: str | None = None,
        stdin: bytes | str | None = None,
    ) -> CommandResult:
        """Run argv (no shell). `timeout` defaults to what is left of the attempt's deadline; a timed-out
        command is killed with its whole process tree and comes back with `timed_out=True`."""
        core = self._core
        argv = [str(part) for part in ([*program, *args] if not isinstance(program, str) else [program, *args])]
        if not argv or not argv[0]:
            raise SandboxError("run_command needs a program to run")
        environment = dict(env or {})
        if "PATH" in environment:
            raise SandboxError("PATH is managed by the sandbox; give the provider `path_prepend` instead")
        for name, value in environment.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise SandboxError(f"command environment values must be strings ({name!r})")
        user = checked_user("run_command", user)
        if isinstance(sensitive_values, (str, bytes)):
            # One string would be split into its characters, each too short to redact: the secret would be stored.
            # (The message never shows the value.)
            raise SandboxError("sensitive_values is a list of exact strings, like sensitive_values=[token]; got one "
                               f"{type(sensitive_values).__name__}, which would be split into its characters and redact nothing")
        sensitive_values = list(sensitive_values)
        for value in sensitive_values:  # left out, it would be stored as it is, the caller believing it redacted
            if not isinstance(value, str):
                raise SandboxError(f"sensitive_values holds a {type(value).__name__}; give each secret as a string")
            if len(value) < MIN_SENSITIVE_CHARACTERS:  # (the message never shows the value)
                raise SandboxError(
                    f"sensitive_values holds a value of {len(value)} character(s), too short to redact: it would be "
                    f"replaced wherever those characters appear; give each secret whole ({MIN_SENSITIVE_CHARACTERS} "
                    "characters or more)")
        core.redactor.add(sensitive_values)
        backend = self._live()
        if timeout is None:
            timeout = core.remaining()
        elif isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise SandboxError(f"timeout must be a positive number of seconds, like timeout=30; got {timeout!r}")
        display = core.redactor(display_command(argv))
        out_callback = _redacting(on_stdout, core.redactor)
        if stream and core.progress is not None:
            out_callback = _both(out_callback, _line_streamer(display, core.progress, core.redactor))
        err_callback = _redacting(on_stderr, core.redactor)
        signals = [candidate for candidate in (core.signal, signal) if candidate is not None]
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        core.touches += 1
        seen = _TailKeeper()  # what it printed, for the log should the attempt end while it runs
        started = time.perf_counter()
        try:
            raw = await backend.exec(
                argv, env=environment, cwd=self.path(cwd) if cwd is not None else self.workdir, timeout=timeout,
                on_stdout=_both(out_callback, seen.out), on_stderr=_both(err_callback, seen.err), signals=signals,
                user=user, stdin=data,
            )
        except asyncio.CancelledError:
            # The attempt's task was cancelled while it ran (its deadline, a second Ctrl-C): the provider killed its
            # tree and returns nothing. It is still logged, and a timeout says it was running, so the record names
            # the command that hung (a prepare step's `sleep`, an agent's test run) instead of only the deadline.
            reason = core.signal.reason if core.signal is not None else None
            timed_out = reason == "timeout"
            core.record(CommandResult(
                tuple(core.redactor(part) for part in argv), None, core.redactor(seen.stdout()),
                core.redactor(seen.stderr()), time.perf_counter() - started, timed_out,
                None if timed_out else f"cancelled ({reason or 'its caller stopped waiting'})",
            ))
            if timed_out and core.progress is not None:
                core.progress(f"`{display[:200]}` was running in {core.phase}")
            raise
        redact = core.redactor
        result = CommandResult(
            tuple(redact(part) for part in argv), raw.exit_code,
            redact(raw.stdout.decode("utf-8", "replace")), redact(raw.stderr.decode("utf-8", "replace")),
            raw.duration_seconds, raw.timed_out, raw.killed,
        )
        core.record(result)
        if raw.cancelled is not None:
            from assay.agent.context import Cancelled

            # The provider confirmed the tree is gone (or retired the sandbox) before returning.
            raise Cancelled(raw.cancelled)
        return result

    async def run_shell(self, script: str, **options: Any) -> CommandResult:
        """Run `script` with bash (`bash -c script`); the same options as `run_command`."""
        if not isinstance(script, str):
            # A list ran as its repr (`bash: [echo,: command not found`).
            hint = (f"; for an argv, run_command({', '.join(repr(str(part)) for part in script)})"
                    if isinstance(script, (list, tuple)) and script else "")
            raise SandboxError(f"run_shell takes a script, one string like run_shell(\"make test\"), "
                               f"got {type(script).__name__}{hint}")
        return await self.run_command("bash", "-c", script, **options)

    async def run_command_or_raise(self, program: str | Sequence[str], *args: str, **options: Any) -> CommandResult:
        """`run_command`, raising `SandboxCommandError` (a redacted stderr tail in its message) unless it exited 0."""
        result = await self.run_command(program, *args, **options)
        if not result.ok:
            raise SandboxCommandError(result)
        return result

    async def run_shell_or_raise(self, script: str, **options: Any) -> CommandResult:
        result = await self.run_shell(script, **options)
        if not result.ok:
            raise SandboxCommandError(result)
        return result

    # -- files --------------------------------------------------------------------------------------
    async def read_bytes(self, path: str | Path) -> bytes:
        return await self._live().read_bytes(self.path(path))

    async def read_text(self, path: str | Path, encoding: str = "utf-8") -> str:
        return (await self.read_bytes(path)).decode(encoding)

    async def write_bytes(self, path: str | Path, data: bytes) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise SandboxError(f"write_bytes takes bytes, got {type(data).__name__}")
        self._core.touches += 1
        await self._live().write_bytes(self.path(path), bytes(data))

    async def write_text(self, path: str | Path, text: str, encoding: str = "utf-8") -> None:
        if not isinstance(text, str):
            raise SandboxError(f"write_text takes text, got {type(text).__name__}")
        await self.write_bytes(path, text.encode(encoding))

    async def path_exists(self, path: str | Path) -> bool:
        backend = self._live()
        exists = getattr(backend, "path_exists", None)
        if exists is not None:
            return await exists(self.path(path))
        return (await self._quiet(["test", "-e", self.path(path)])).exit_code == 0

    async def _quiet(self, argv: Sequence[str], stdin: bytes | None = None) -> Any:
        """A housekeeping command of assay's own (not logged, no deadline of the attempt)."""
        return await self._live().exec(
            argv, env={}, cwd="/", timeout=300.0, on_stdout=None, on_stderr=None, signals=(), user=None, stdin=stdin,
        )

    # -- transfers ---------------------------------------------------------------------------------
    async def upload_file(self, source: str | Path, target: str | Path | None = None) -> str:
        """Copy a host file into the sandbox (default: its name under `workdir`); returns the sandbox path."""
        source_path = Path(source)
        if not source_path.is_file():
            raise SandboxError(f"upload_file: {source_path} is not a file")
        destination = self.path(target if target is not None else source_path.name)
        await self.write_bytes(destination, source_path.read_bytes())
        return destination

    async def upload_directory(
        self, source: str | Path, target: str | Path | None = None, *, ignore: Sequence[str] = (),
    ) -> str:
        """Copy a host folder's contents into `target` (default `workdir`); `ignore` holds glob patterns."""
        source_path = Path(source)
        if not source_path.is_dir():
            raise SandboxError(f"upload_directory: {source_path} is not a folder")
        destination = self.path(target if target is not None else ".")
        backend = self._live()
        self._core.touches += 1
        native = getattr(backend, "upload_directory", None)
        if native is not None:
            await native(source_path, destination, tuple(ignore))
            return destination
        archive = _tar_of(source_path, tuple(ignore))
        scratch = f"/tmp/assay-upload-{uuid.uuid4().hex}.tar"
        await backend.write_bytes(scratch, archive)
        done = await self._quiet(["sh", "-c", 'mkdir -p "$1" && tar -xf "$2" -C "$1"; code=$?; rm -f "$2"; exit $code',
                                  "sh", destination, scratch])
        if done.exit_code != 0:
            raise SandboxError(f"upload_directory into {destination} failed: {done.stderr.decode('utf-8', 'replace')}")
        return destination

    async def download_file(self, path: str | Path, target: str | Path) -> Path:
        """Copy a sandbox file to the host; returns the host path."""
        target_path = Path(target)
        data = await self.read_bytes(path)
        target_path.parent.mkdir(parents=True, exist_ok=True)
        target_path.write_bytes(data)
        return target_path

    async def download_directory(self, path: str | Path, target: str | Path) -> Path:
        """Copy a sandbox folder's contents into a host folder; returns the host folder."""
        source = self.path(path)
        target_path = Path(target)
        target_path.mkdir(parents=True, exist_ok=True)
        backend = self._live()
        native = getattr(backend, "download_directory", None)
        if native is not None:
            await native(source, target_path)
            return target_path
        packed = await self._quiet(["tar", "-cf", "-", "-C", source, "."])
        if packed.exit_code != 0:
            raise SandboxError(f"download_directory of {source} failed: {packed.stderr.decode('utf-8', 'replace')}")
        with tarfile.open(fileobj=io.BytesIO(packed.stdout)) as archive:
            archive.extractall(target_path, filter="data")  # no absolute paths, links out or devices
        return target_path

    # -- lifetime ----------------------------------------------------------------------------------
    async def stop(self) -> bool:
        """Destroy the sandbox now; True when nothing of it is left running."""
        return await self._core.backend.stop()

    def __repr__(self) -> str:
        return f"<Sandbox {self.sandbox_id} at {self.workdir} ({self.isolation})>"


def _tar_of(source: Path, ignore: Sequence[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in sorted(source.rglob("*")):
            relative = path.relative_to(source)
            if ignored(relative, ignore):
                continue
            archive.add(path, arcname=relative.as_posix(), recursive=False)
    return buffer.getvalue()


def ignored(relative: Path, patterns: Sequence[str]) -> bool:
    """Whether any part of `relative` matches one of the glob patterns (as `.gitignore` names do)."""
    if not patterns:
        return False
    text = relative.as_posix()
    for pattern in patterns:
        if relative.match(pattern) or any(Path(part).match(pattern) for part in relative.parts) or text == pattern:
            return True
    return False


__all__ = ["MAX_LOGGED_COMMANDS", "Sandbox", "SandboxCore", "ignored"]
