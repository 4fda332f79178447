"""The contracts a sandbox provider implements: create a sandbox, run argv in it, move bytes, stop it.

Providers (local, Docker, `define_sandbox`) implement these few primitives; everything an eval or an
agent calls (`Sandbox` in handle.py: text helpers, shells, raising variants, transfers, the log) is
built on them once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

OutputCallback = Callable[[str], Any]
OUTPUT_LIMIT_BYTES = 32 * 1024 * 1024  # per stream, in every provider; a command printing more is cut (callbacks still see it)


@dataclass(frozen=True, slots=True)
class RawOutput:
    """What a provider's `exec` observed, before redaction and decoding."""

    exit_code: int | None  # None: killed before it exited
    stdout: bytes
    stderr: bytes
    duration_seconds: float
    timed_out: bool = False
    cancelled: str | None = None  # the cancel reason, when the caller's signal stopped it
    killed: str | None = None  # why the sandbox killed it, e.g. "out of memory: …" (the exit code stays)


@dataclass(frozen=True, slots=True)
class CreateRequest:
    """What a provider is told when one attempt needs a sandbox."""

    sandbox_id: str
    labels: Mapping[str, str] = field(default_factory=dict)  # experiment, eval, attempt: for listings
    base_dir: Path | None = None  # where local state (and the kept-sandbox registry) lives


class CommandSignal(Protocol):
    """The cancellation a command listens to (an attempt's `CancelSignal` fits)."""

    @property
    def cancelled(self) -> bool: ...

    @property
    def reason(self) -> str | None: ...

    def add_callback(self, callback: Callable[[str], Any]) -> None: ...


@runtime_checkable
class SandboxBackend(Protocol):
    """One live sandbox as its provider runs it. Paths are the sandbox's own (absolute)."""

    sandbox_id: str
    workdir: str
    isolation: str  # e.g. "bubblewrap", "process-group", "docker"

    async def exec(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, timeout: float | None,
        on_stdout: OutputCallback | None, on_stderr: OutputCallback | None, signals: Sequence[CommandSignal],
        user: str | None, stdin: bytes | None,
    ) -> RawOutput: ...

    async def read_bytes(self, path: str) -> bytes: ...

    async def write_bytes(self, path: str, data: bytes) -> None: ...

    async def stop(self) -> bool:
        """Destroy the sandbox; True when nothing of it is left running."""
        ...


class GitRunner(Protocol):
    """Runs the change ledger's git, wherever the workdir is (on the host, or inside a container)."""

    async def __call__(self, args: Sequence[str], stdin: bytes | None = None) -> tuple[int, bytes, bytes]: ...


@runtime_checkable
class SandboxProvider(Protocol):
    """A template: how to make a fresh sandbox for one attempt."""

    name: str

    async def create(self, request: CreateRequest) -> SandboxBackend: ...

    def describe(self) -> dict[str, Any]: ...


__all__ = ["CommandSignal", "CreateRequest", "GitRunner", "OutputCallback", "RawOutput", "SandboxBackend", "SandboxProvider"]
