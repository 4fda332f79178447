"""What running a command in a sandbox returns and raises, and how secrets are kept out of what is stored.

`CommandResult` is the value `run_command` gives back (already redacted); `Redactor` holds the sensitive
values of one sandbox, so every log line, tail, diff and error message it stores has them replaced.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

REDACTED = "[redacted]"
TAIL_CHARACTERS = 2000
# Shorter strings would blank out ordinary words in every log; secrets are never this short.
MIN_SENSITIVE_CHARACTERS = 4


class SandboxError(Exception):
    """A sandbox could not do what was asked (create, read, write, transfer); the message says why."""


class SandboxRetired(SandboxError):
    """A process tree could not be confirmed gone, so the whole sandbox was stopped instead."""


class SandboxCommandError(SandboxError):
    """Raised by the `…_or_raise` variants for a non-zero exit or a timeout; `.result` has everything."""

    def __init__(self, result: CommandResult) -> None:
        self.result = result
        if result.timed_out:
            what = f"timed out after {result.duration_seconds:.1f}s"
        elif result.killed:
            what = f"was killed ({result.killed}, exit code {result.exit_code})"
        else:
            what = f"exited with {result.exit_code}"
        tail = result.tail()
        super().__init__(f"`{result.display}` {what}" + (f":\n{tail}" if tail else ""))


class Redactor:
    """The exact strings one sandbox must never store; shared by its handle, ledger and log."""

    __slots__ = ("_values",)

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: tuple[str, ...] = ()
        self.add(values)

    def add(self, values: Iterable[str]) -> None:
        fresh = {value for value in values if isinstance(value, str) and len(value) >= MIN_SENSITIVE_CHARACTERS}
        if fresh - set(self._values):
            # Longest first, so a secret that contains another is replaced whole.
            self._values = tuple(sorted(set(self._values) | fresh, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    def __bool__(self) -> bool:
        return bool(self._values)


def checked_path_prepend(provider: str, folders: Sequence[str]) -> tuple[str, ...]:
    """A provider's `path_prepend`, folders put before PATH: one string would be split into its characters."""
    if isinstance(folders, (str, bytes)) or not all(isinstance(folder, (str, os.PathLike)) for folder in folders):
        raise SandboxError(f"{provider} path_prepend is a list of folders, like path_prepend=[\"bin\"]; got {folders!r}")
    return tuple(str(folder) for folder in folders)


def checked_env(provider: str, env: Any) -> dict[str, str]:
    """A provider's `env`, names to string values, checked where it is written rather than by the first
    command (an int value would fail every attempt with a TypeError naming nothing); PATH is managed."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise SandboxError(f"{provider} env maps variable names to strings, like env={{\"LANG\": \"C.UTF-8\"}}; got {env!r}")
    wrong = [f"{name!r}: {value!r}" for name, value in env.items() if not isinstance(name, str) or not name
             or not isinstance(value, str)]
    if wrong:
        raise SandboxError(f"{provider} env maps variable names to strings (write numbers as \"1\"); got {', '.join(wrong)}")
    if "PATH" in env:
        raise SandboxError("PATH is managed by the sandbox; use path_prepend")
    return dict(env)


def checked_user(where: str, user: Any) -> str | None:
    """A `user=` as the Engine API takes it: a name (`name:group`) or a numeric uid, given as a string or as a
    whole number (`user=1000`, which the daemon would refuse as "cannot unmarshal number", naming nothing)."""
    if user is None:
        return None
    if isinstance(user, int) and not isinstance(user, bool) and user >= 0:
        return str(user)
    if isinstance(user, str) and user.strip() == user and user:
        return user
    raise SandboxError(f"{where} user is a user name the image has or a numeric uid, like user=\"app\" or user=1000; "
                       f"got {user!r:.80}")


def bounded_tail(text: str, limit: int = TAIL_CHARACTERS) -> str:
    """The last `limit` characters of `text`, marked when something was cut."""
    text = text.rstrip()
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def display_command(argv: Sequence[str]) -> str:
    """The argv as a person would type it (the script itself for `bash -c script`)."""
    if len(argv) == 3 and argv[0] in ("bash", "sh") and argv[1] == "-c":
        return argv[2]
    return shlex.join(argv)


@dataclass(frozen=True, slots=True)
class CommandResult:
    """One finished command; its output has the sandbox's sensitive values replaced already.

    `exit_code` is None when the command was killed before it exited (a timeout); `killed` says why
    the sandbox killed a command that did exit (e.g. "out of memory: …" with exit code 137)."""

    command: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    duration_seconds: float
    timed_out: bool = False
    killed: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def display(self) -> str:
        return display_command(self.command)

    def tail(self, limit: int = TAIL_CHARACTERS) -> str:
        """The end of stderr, or of stdout when stderr is empty: what explains a failure."""
        return bounded_tail(self.stderr if self.stderr.strip() else self.stdout, limit)


__all__ = [
    "CommandResult", "REDACTED", "Redactor", "SandboxCommandError", "SandboxError", "SandboxRetired", "TAIL_CHARACTERS",
    "bounded_tail", "display_command",
]
