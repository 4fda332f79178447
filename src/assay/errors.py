"""The error hierarchy every command uses: each error carries its exit code and a message for a person.

Commands catch `AssayError`, print its message (no traceback unless --debug) and exit with its code.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

_show_tracebacks = False


def show_tracebacks(enabled: bool | None = None) -> bool:
    """Whether errors are printed with their traceback (`assay --debug`); set once by the CLI."""
    global _show_tracebacks
    if enabled is not None:
        _show_tracebacks = enabled
    return _show_tracebacks


class AssayError(Exception):
    """A problem a user can fix; `str(error)` is the whole message."""

    exit_code: int = EXIT_ERROR


class UsageError(AssayError):
    """A bad command-line option or combination of options (exit 2). `option` names the option the bad value was
    given with (`Invalid value for '--at': …`); None for a usage error of no one option; "" for a bad value that
    came with no option (a discovered file: click's `Invalid value: …`, as GlassKit reports its adapter config)."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


class ConfigError(AssayError):
    """An invalid config file (eval config, adapter config, project config)."""


class CaseError(AssayError):
    """An invalid case file, or a selection that matches nothing."""


class VideoError(AssayError):
    """A video that cannot be opened, probed or decoded."""


class AdapterError(AssayError):
    """The adapter could not be loaded, constructed, called or closed."""


class AdapterRuntimeError(AdapterError):
    """An error raised by an adapter transport whose message is already complete.

    Runners pass it through unchanged instead of adding sample context (GlassKit does the same
    for command-adapter errors)."""


class AdapterExited(AdapterRuntimeError):
    """An adapter process that ended when nothing asked it to: its exit code (None: no status) and
    the tail of what it wrote to stderr, for a caller that can say more about either."""

    def __init__(self, message: str, exit_code: int | None, stderr_tail: str) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class CheckpointError(AssayError):
    """A checkpoint that cannot be created, read or resumed."""


class JsonValueError(AssayError):
    """A value that is not JSON-like; the message names where in the value the problem is, and `key` is the
    mapping key that is not text when that is the problem (`on:` read by YAML as True), else None."""

    key: object = None
