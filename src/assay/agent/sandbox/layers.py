"""Sandbox layers: a template (which provider makes the sandbox) plus prepare steps, setups and teardowns.

Layers are immutable: `.prepare(...)`, `.setup(fn)` and `.teardown(fn)` return a new layer. Prepare
steps are declarative (`command`, `shell`, `upload`, `install_tool`) so they can be shown before
anything runs; setups and teardowns are functions `fn(sandbox, hook_ctx)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Any, Protocol

from assay.agent.loaders import beside_caller
from assay.agent.sandbox.commands import SandboxCommandError, display_command
from assay.agent.sandbox.interface import SandboxProvider
from assay.errors import ConfigError


class PrepareStep(Protocol):
    def describe(self) -> str: ...

    async def run(self, sandbox: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class Command:
    """`command(program, *args)`: argv, no shell; fails the preparation unless it exits 0."""

    argv: tuple[str, ...]
    cwd: str | None = None

    def describe(self) -> str:
        return display_command(self.argv)

    async def run(self, sandbox: Any) -> None:
        await sandbox.run_command_or_raise(*self.argv, cwd=self.cwd)


@dataclass(frozen=True, slots=True)
class Shell:
    """`shell(script)`: through bash; fails the preparation unless it exits 0."""

    script: str
    cwd: str | None = None

    def describe(self) -> str:
        return self.script

    async def run(self, sandbox: Any) -> None:
        await sandbox.run_shell_or_raise(self.script, cwd=self.cwd)


@dataclass(frozen=True, slots=True)
class Upload:
    """`upload(host_path, target)`: a host file or folder copied in; relative host paths are relative
    to the file that called `upload(...)` (an eval's fixtures sit next to it)."""

    source: Path
    target: str | None = None
    ignore: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"upload {self.source} → {self.target or '.'}"

    async def run(self, sandbox: Any) -> None:
        if self.source.is_dir():
            await sandbox.upload_directory(self.source, self.target, ignore=self.ignore)
        else:
            await sandbox.upload_file(self.source, self.target)


@dataclass(frozen=True, slots=True)
class InstallTool:
    """`install_tool(name, probe=..., install=...)`: run `install` only when `probe` fails, then probe again."""

    name: str
    probe: PrepareStep
    install: tuple[PrepareStep, ...]

    def describe(self) -> str:
        return f"install {self.name} unless `{self.probe.describe()}` succeeds"

    async def run(self, sandbox: Any) -> None:
        await ensure_installed(sandbox, self.name, self.probe, self.install)


async def probe_ok(sandbox: Any, probe: PrepareStep) -> tuple[bool, str]:
    try:
        await probe.run(sandbox)
    except SandboxCommandError as error:
        # A probe that fails printing nothing (`false`, `test -x …`) is said by its exit, not by an empty tail.
        return False, error.result.tail(300) or str(error)
    return True, ""


async def ensure_installed(sandbox: Any, name: str, probe: PrepareStep, install: Sequence[PrepareStep]) -> bool:
    """Probe → install if missing → probe again; True when it had to install. Raises if it is still missing."""
    present, why = await probe_ok(sandbox, probe)
    if present:
        return False
    if not install:  # (say what was looked for: a misspelt command name reads the same as a missing CLI)
        raise SandboxSetupError(f"{name} is not installed in the sandbox (`{probe.describe()}` failed: {why.strip()}) "
                                "and no installer was given")
    for step in install:
        await step.run(sandbox)
    present, why = await probe_ok(sandbox, probe)
    if not present:
        raise SandboxSetupError(f"{name} is still missing after installing it: {why}")
    return True


class SandboxSetupError(Exception):
    pass


def _argv_hint(parts: Sequence[Any]) -> str:
    return f"command({', '.join(map(repr, parts))})"


def command(program: str, *args: str, cwd: str | None = None) -> Command:
    if isinstance(program, (list, tuple)):
        # `command(["git", "init"])` would run a program named "['git', 'init']", and fail only in the sandbox.
        hint = _argv_hint([*program, *args]) if program else 'command("git", "init")'
        raise ConfigError(f"command takes the program and its arguments one by one, like {hint}; got a "
                          f"{type(program).__name__} {program!r:.80}")
    if not isinstance(program, (str, Path)) or not str(program):
        raise ConfigError(f"command takes a program name first, like command(\"git\", \"init\"); got {program!r:.80}")
    return Command((str(program), *map(str, args)), cwd)


def shell(script: str, *, cwd: str | None = None) -> Shell:
    if isinstance(script, (list, tuple)) and all(isinstance(part, str) for part in script):
        hint = f"; for an argv, {_argv_hint(script)}" if script else ""
        raise ConfigError(f"shell takes a script, one string like shell(\"make test\"){hint}; got {script!r:.80}")
    if not isinstance(script, str) or not script.strip():
        raise ConfigError(f"shell takes a script, one string like shell(\"make test\"); got {script!r:.80}")
    return Shell(script, cwd)


def upload(source: str | Path, target: str | None = None, *, ignore: Sequence[str] = ()) -> Upload:
    if not isinstance(source, (str, Path)) or not str(source):
        raise ConfigError(f"upload takes a host file or folder, like upload(\"../fixtures/repo\"); got {source!r:.80}")
    if isinstance(target, PurePath):
        target = target.as_posix()
    if target is not None and not isinstance(target, str):
        raise ConfigError(f"upload target is a path in the sandbox, like upload(\"../fixtures/repo\", \"repo\"); "
                          f"got {target!r:.80}")
    if isinstance(ignore, str) or not all(isinstance(pattern, str) for pattern in ignore):
        raise ConfigError(f"upload ignore is a list of patterns, like ignore=[\"*.log\"]; got {ignore!r:.80}")
    path = beside_caller(source)
    if not path.exists():
        raise ConfigError(f"upload: {source} does not exist (looked for {path.resolve()}{nearby_path(path)}); a relative "
                          "path is taken from the folder of the file that calls upload(...)")
    return Upload(path, target, tuple(ignore))


def nearby_path(path: Path) -> str:
    """"; did you mean …" with the path whose first missing part is the closest name its folder has (a misspelt
    fixture, or folder on the way to it), when one is close."""
    from assay.core.format import did_you_mean

    missing = path.resolve()
    while missing.parent != missing and not missing.parent.exists():
        missing = missing.parent
    rest = path.resolve().relative_to(missing)
    try:
        names = [child.name for child in missing.parent.iterdir()]
    except OSError:
        return ""
    return did_you_mean(missing.name, names, shown=lambda name: repr(str(missing.parent / name / rest)))


def check_step(value: Any, where: str) -> PrepareStep:
    """`value` when it is a prepare step; else a `ConfigError` naming `where` and what it takes (a bare argv list
    is the likeliest slip: it would fail only when the sandbox is prepared, and not with these words)."""
    if callable(getattr(value, "run", None)) and callable(getattr(value, "describe", None)):
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(part, str) for part in value):
        hint = f"command({', '.join(map(repr, value))})"
    else:
        hint = 'command("tool", "--version")'
    raise ConfigError(f"{where} takes command(...) or shell(...), like {hint}; got {value!r:.80}")


def check_steps(values: Any, where: str) -> tuple[PrepareStep, ...]:
    """A sequence of prepare steps (one step alone is taken as one)."""
    if callable(getattr(values, "run", None)):
        return (values,)
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise ConfigError(f"{where} takes a list of command(...) or shell(...) steps, like [shell(\"npm install -g tool\")]; "
                          f"got {values!r:.80}")
    if values and all(isinstance(part, str) for part in values):  # one argv, not a list of steps
        raise ConfigError(f"{where} takes a list of command(...) or shell(...) steps, like "
                          f"[command({', '.join(map(repr, values))})]; got {values!r:.80}")
    return tuple(check_step(value, where) for value in values)


def install_tool(name: str, *, probe: PrepareStep, install: Sequence[PrepareStep] = ()) -> InstallTool:
    return InstallTool(name, check_step(probe, f"install_tool({name!r}) probe"),
                       check_steps(install, f"install_tool({name!r}) install"))


HookFunction = Callable[[Any, Any], Any]


@dataclass(frozen=True, slots=True)
class SandboxLayer:
    """What one side (eval, experiment or agent) contributes; `provider` makes it template-bearing."""

    provider: SandboxProvider | None = None
    prepares: tuple[PrepareStep, ...] = ()
    setups: tuple[HookFunction, ...] = ()
    teardowns: tuple[HookFunction, ...] = ()

    @property
    def has_template(self) -> bool:
        return self.provider is not None

    def prepare(self, *steps: PrepareStep) -> SandboxLayer:
        for step in steps:
            if not callable(getattr(step, "run", None)) or not callable(getattr(step, "describe", None)):
                hint = (f", like {_argv_hint(step)} for that argv" if isinstance(step, (list, tuple)) and step
                        and all(isinstance(part, str) for part in step) else "")
                raise ConfigError(
                    f"prepare takes command(...), shell(...), upload(...) or install_tool(...){hint}, "
                    f"got {type(step).__name__} {step!r:.80}"
                )
        return replace(self, prepares=self.prepares + tuple(steps))

    def setup(self, function: HookFunction) -> SandboxLayer:
        return replace(self, setups=self.setups + (_checked_hook("setup", function),))

    def teardown(self, function: HookFunction) -> SandboxLayer:
        return replace(self, teardowns=self.teardowns + (_checked_hook("teardown", function),))

    def describe(self) -> dict[str, Any]:
        document: dict[str, Any] = {"prepare": [step.describe() for step in self.prepares]}
        if self.provider is not None:
            document["template"] = self.provider.describe()
        return document


def _checked_hook(kind: str, function: Any) -> HookFunction:
    """A hook is called `function(sandbox, hook_ctx)`: one that cannot take both is refused when the file loads, not
    found out in every attempt (a teardown's failure is only a diagnostic: its cleanup would silently never run)."""
    import inspect

    if not callable(function):
        raise ConfigError(f"{kind} takes a function (sandbox, hook_ctx), got {type(function).__name__}")
    try:
        inspect.signature(function).bind(None, None)
    except ValueError:  # no signature to read (a builtin): it is found out when called
        pass
    except TypeError:
        name = getattr(function, "__name__", type(function).__name__)
        raise ConfigError(f"{kind} takes a function (sandbox, hook_ctx), but {name}{inspect.signature(function)} "
                          f"cannot be called with both; write it as def {kind}(sandbox, hook_ctx)") from None
    return function


def sandbox_layer() -> SandboxLayer:
    """A command-only layer (no template): prepare steps and hooks for a sandbox the other side makes."""
    return SandboxLayer()


def check_layer(value: Any, where: str) -> SandboxLayer | None:
    if value is None:
        return None
    if not isinstance(value, SandboxLayer):
        name = getattr(value, "__name__", None)
        # `sandbox=local_sandbox`: the factory, uncalled, is the likeliest slip
        got = f"the function {name}: call it, sandbox={name}(...)" if callable(value) and name else type(value).__name__
        raise ConfigError(
            f"{where} sandbox must be a sandbox layer (local_sandbox(), docker_sandbox(...), define_sandbox(...) "
            f"or sandbox_layer()), got {got}"
        )
    return value


__all__ = [
    "Command", "InstallTool", "PrepareStep", "SandboxLayer", "SandboxSetupError", "Shell", "Upload", "check_layer",
    "check_step", "check_steps", "command", "ensure_installed", "install_tool", "nearby_path", "sandbox_layer", "shell",
    "upload",
]
