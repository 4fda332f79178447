"""Command projections: what command a tool call ran, as its agent saw it (NiceEval's `CommandProjection`).

An agent whose tool runs commands (a shell tool, Codex's `command_execution`) says so on the tool's
`operation.started` event, in `ToolOperation(command=...)`, with one of three projections:

- `command_projection(executable, args)`: the command is known. Its *logical* form unwraps the
  launchers that only run another program (`npx X …` and `pnpm exec X …` are `X …`) and drops the
  folder of an executable given by path (`/usr/bin/git` is `git`), so `command_match("vitest")`
  matches however the agent started vitest;
- `opaque_command_projection(reason)`: a command ran, but it cannot be read as one program and its
  arguments (`compound-shell`: `a && b`, a pipe, a redirection; `dynamic-shell`: `$VAR`, `$(…)`,
  backquotes, a glob; `redacted`, `truncated`, `unsupported-protocol`);
- `not_command_projection()`: the tool runs no command.

The projection is JSON, journaled with the event. assay never guesses a projection from a tool's
name: a tool call without one is a call whose command is unknown, and `command_match` is
unavailable for it, never "not matched". `shell_command_projection(text)` is for adapters that have
only a shell line (it reads `bash -lc '…'` and simple commands; anything else is opaque)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "LOGICAL_COMMAND_VERSION", "OPAQUE_REASONS", "check_command_projection", "command_projection", "completed_projection",
    "normalize_logical_command", "not_command_projection", "opaque_command_projection", "read_command",
    "shell_command_projection",
]

LOGICAL_COMMAND_VERSION = "logical-command/v1"
OPAQUE_REASONS = ("redacted", "truncated", "compound-shell", "dynamic-shell", "unsupported-protocol")

# npx's own flags that take no value and do not change which program runs.
_NPX_FLAGS = frozenset({"-y", "--yes", "--no", "--no-install", "-q", "--quiet", "--prefer-offline", "--prefer-online"})


def normalize_logical_command(executable: str, args: Sequence[str] = ()) -> tuple[str, tuple[str, ...]]:
    """The program a command runs and its arguments: `npx [-y] X …` and `pnpm exec X …` are `X …`, and an
    executable given by path is its file name. A launcher with options it does not know is left as it is."""
    program, rest = os.path.basename(executable) or executable, tuple(args)
    while True:
        if program == "npx":
            skipped = 0
            while skipped < len(rest) and rest[skipped] in _NPX_FLAGS:
                skipped += 1
            if skipped < len(rest) and not rest[skipped].startswith("-"):
                program, rest = os.path.basename(rest[skipped]) or rest[skipped], rest[skipped + 1:]
                continue
        elif program == "pnpm" and len(rest) >= 2 and rest[0] == "exec" and not rest[1].startswith("-"):
            program, rest = os.path.basename(rest[1]) or rest[1], rest[2:]
            continue
        return program, rest


def command_projection(executable: str, args: Sequence[str] = ()) -> dict[str, Any]:
    """A tool call that ran `executable` with `args` (an argv, never a shell line: see
    `shell_command_projection`)."""
    _check_argv(executable, args, "command_projection")
    program, rest = normalize_logical_command(executable, args)
    return {
        "kind": "command",
        "original": {"state": "available", "executable": executable, "args": list(args)},
        "logical": {"version": LOGICAL_COMMAND_VERSION, "executable": program, "args": list(rest)},
    }


def opaque_command_projection(reason: str) -> dict[str, Any]:
    """A tool call that ran a command assay cannot read as one program and its arguments."""
    if reason not in OPAQUE_REASONS:
        from assay.core.format import did_you_mean

        raise ValueError(f"opaque_command_projection reason must be one of {', '.join(OPAQUE_REASONS)}, got "
                         f"{reason!r}{did_you_mean(str(reason), OPAQUE_REASONS)}")
    return {"kind": "command", "original": {"state": "opaque", "reason": reason}}


def not_command_projection() -> dict[str, Any]:
    """A tool call that runs no command."""
    return {"kind": "not-command"}


_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_COMPOUND = re.compile(r"&&|\|\||[;|&<>\n]")
_DYNAMIC = re.compile(r"[$`*?\[{~]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def shell_command_projection(text: str) -> dict[str, Any]:
    """The projection of a shell line: `bash -lc '<line>'` (or `sh -c`) is read as the line it runs;
    a simple command (words, quotes, leading `NAME=value` settings) is available; anything the shell
    would interpret further is opaque (`compound-shell`, `dynamic-shell`)."""
    import shlex

    if not isinstance(text, str):
        raise TypeError(f"shell_command_projection takes the shell line as a str, got {type(text).__name__}")
    for _ in range(3):  # bash -lc "sh -c '…'" at most this deep
        try:
            words = shlex.split(text)
        except ValueError:  # an unclosed quote: not a line a shell would run as written
            return opaque_command_projection("dynamic-shell")
        if (len(words) == 3 and os.path.basename(words[0]) in _SHELLS and words[1].startswith("-")
                and "c" in words[1] and not words[1].startswith("--")):
            text = words[2]
            continue
        break
    unquoted, expanded = _read_by_the_shell(text)
    if _COMPOUND.search(unquoted):
        return opaque_command_projection("compound-shell")
    if _DYNAMIC.search(unquoted) or expanded:
        return opaque_command_projection("dynamic-shell")
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words:
        return opaque_command_projection("dynamic-shell")  # only settings, or nothing: no program named
    return command_projection(words[0], words[1:])


def _read_by_the_shell(text: str) -> tuple[str, str]:
    """What the shell would interpret in a line: the characters outside quotes (where it reads its operators,
    globs and expansions), and the `$` and backquotes inside double quotes (which it still expands)."""
    outside, expanded, quote, escaped = [], [], None, False
    for character in text:
        if escaped:
            escaped = False
            continue
        if character == "\\" and quote != "'":
            escaped = True
            continue
        if quote is None and character in "'\"":
            quote = character
        elif character == quote:
            quote = None
        elif quote is None:
            outside.append(character)
        elif quote == '"' and character in "$`":
            expanded.append(character)
    return "".join(outside), "".join(expanded)


def _check_argv(executable: Any, args: Any, where: str) -> None:
    if not isinstance(executable, str) or not executable:
        raise TypeError(f"{where} takes the executable as a non-empty str, got {executable!r}")
    if isinstance(args, str) or not isinstance(args, Sequence) or any(not isinstance(arg, str) for arg in args):
        hint = " (split a shell line with shell_command_projection(line))" if isinstance(args, str) else ""
        raise TypeError(f"{where} takes args as a list of str, got {args!r}{hint}")


def check_command_projection(value: Any, where: str) -> None:
    """A `command` given on a tool's started event: a projection (as made above, or its JSON from a
    process or HTTP agent), or None. Raises ValueError naming the field that is wrong."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a command projection, got {type(value).__name__} {str(value)[:60]!r}: "
                         "command_projection(\"git\", [\"status\"]), opaque_command_projection(\"compound-shell\"), "
                         "not_command_projection() (or their JSON)")
    from assay.core.format import did_you_mean

    kind = value.get("kind")
    if kind == "not-command":
        _check_fields(value, ("kind",), where)
        return
    if kind != "command":
        raise ValueError(f"{where}.kind must be command or not-command, got {kind!r}"
                         f"{did_you_mean(kind, ('command', 'not-command'))}")
    _check_fields(value, ("kind", "original", "logical"), where)
    original = value.get("original")
    if not isinstance(original, Mapping):
        raise ValueError(f"{where}.original must be an object ({{\"state\": \"available\", \"executable\": …, "
                         "\"args\": […]}} or {\"state\": \"opaque\", \"reason\": …})")
    state = original.get("state")
    if state == "opaque":
        _check_fields(original, ("state", "reason"), f"{where}.original")
        if original.get("reason") not in OPAQUE_REASONS:
            raise ValueError(f"{where}.original.reason must be one of {', '.join(OPAQUE_REASONS)}, "
                             f"got {original.get('reason')!r}{did_you_mean(original.get('reason'), OPAQUE_REASONS)}")
        return
    if state != "available":
        raise ValueError(f"{where}.original.state must be available or opaque, got {state!r}"
                         f"{did_you_mean(state, ('available', 'opaque'))}")
    _check_fields(original, ("state", "executable", "args"), f"{where}.original")
    try:
        _check_argv(original.get("executable"), original.get("args", []), f"{where}.original")
        logical = value.get("logical")
        if logical is not None:
            if not isinstance(logical, Mapping):
                raise ValueError(f"{where}.logical must be an object")
            _check_fields(logical, ("version", "executable", "args"), f"{where}.logical")
            _check_argv(logical.get("executable"), logical.get("args", []), f"{where}.logical")
    except TypeError as error:
        raise ValueError(str(error)) from None


def _check_fields(value: Mapping[str, Any], known: Sequence[str], where: str) -> None:
    """A misspelt field (`"arg"` for `"args"`) would otherwise be dropped, and the command read without it."""
    from assay.core.format import did_you_mean

    for field in value:
        if field not in known:
            raise ValueError(f"{where} has an unknown field {field!r}{did_you_mean(field, known)} "
                             f"(its fields: {', '.join(known)})")


def completed_projection(value: Any) -> Any:
    """A checked projection with its logical form (a process or HTTP agent's JSON may leave it out)."""
    if not isinstance(value, Mapping) or "logical" in value or value.get("kind") != "command":
        return value
    original = value.get("original")
    if not isinstance(original, Mapping) or original.get("state") != "available":
        return value
    program, rest = normalize_logical_command(original["executable"], original.get("args") or ())
    return {**value, "logical": {"version": LOGICAL_COMMAND_VERSION, "executable": program, "args": list(rest)}}


def read_command(value: Any) -> tuple[str, Any]:
    """A checked projection read for matching: ("command", (program, args)), ("not-command", None) or
    ("opaque", reason); ("unknown", None) when the call carries none. A projection without its logical
    form (a process agent's JSON may leave it out) is normalised here."""
    if not isinstance(value, Mapping):
        return "unknown", None
    if value.get("kind") == "not-command":
        return "not-command", None
    original = value.get("original")
    if not isinstance(original, Mapping):
        return "unknown", None
    if original.get("state") == "opaque":
        return "opaque", original.get("reason")
    logical = value.get("logical")
    if isinstance(logical, Mapping):
        return "command", (str(logical.get("executable")), tuple(logical.get("args") or ()))
    return "command", normalize_logical_command(str(original.get("executable")), original.get("args") or ())
