"""Claude Code as a sandbox agent: `claude -p --output-format stream-json` run in the attempt's sandbox, its
stdout read as our events.

Why stdout and not the transcript file under `~/.claude/projects`: in print mode with `stream-json` output the
CLI prints every message it adds to the conversation (the `system` init with the session id, each `assistant`
message with its text, thinking and `tool_use` blocks, each `user` message with the `tool_result`s, a
`compact_boundary` when it compacts, and a `result` with the run's usage, cost, permission denials and
structured output), so there is no file to find afterwards, and what the Claude Agent SDK reads from the same
CLI is what this adapter reads: `ClaudeSdkTranscript` folds the lines into the turn (see `claude_agent_sdk` for
what each frame becomes; `Bash` is the `shell` tool, a compaction is `Compaction`, a result with `is_error` is a
failed turn saying why).

One send is one run of the CLI in the workdir, with permissions bypassed (`--dangerously-skip-permissions`;
assay's sandbox is the boundary, and `IS_SANDBOX=1` lets the CLI run so as root, as containers often do). A
session line is one Claude session: the first send starts it, each later one passes `--resume <id>`. The
experiment's model is `--model`, its reasoning effort `--effort` (low, medium, high, xhigh, max), and
`t.send(..., output=Schema)` is `--json-schema`: the result's `structured_output` is the turn's data. Files
attached to a send go in as content blocks of the user message, read from stdin (`--input-format stream-json`):
images and PDFs as they are, text files as text; others are skipped with a warning. There are no approvals to
answer (none of the coding CLIs support HITL): a tool the settings deny is a `rejected` call.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.agent.adapter import SendFailure
from assay.agent.adapters.claude_agent_sdk import ClaudeSdkTranscript
from assay.agent.loaders import beside_caller
from assay.agent.model import COMPLETE, EvidenceCoverage, OperationStarted, Turn, TurnInput
from assay.agent.sandbox.agent import AgentEnsure, SandboxAgent, agent_file, define_sandbox_agent
from assay.agent.sandbox.commands import MIN_SENSITIVE_CHARACTERS
from assay.agent.sandbox.layers import PrepareStep, command, shell
from assay.agent.session import create_session_slot
from assay.errors import ConfigError

# As the Claude Agent SDK's: every call, result, denial and compaction is in the stream, and a turn whose stream
# holds something the converter does not know, or no result, says so itself.
claude_code_evidence_coverage = EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE)
DEFAULT_INSTALL: tuple[PrepareStep, ...] = (shell("npm install -g @anthropic-ai/claude-code"),)
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# Settings keys the experiment (model, effort) or the adapter (credentials, environment, telemetry, MCP servers,
# the permission bypass) owns: a settings file setting one would silently change what is being compared.
_OWNED_SETTINGS = {
    "model": "the experiment's model", "availableModels": "the experiment's model",
    "effortLevel": "the experiment's reasoning_effort", "env": "env=", "apiKeyHelper": "api_key=",
    "forceLoginMethod": "api_key=", "forceLoginOrgUUID": "api_key=", "otelHeadersHelper": "the adapter",
    "mcpServers": "mcp_servers=", "enableAllProjectMcpServers": "mcp_servers=",
    "enabledMcpjsonServers": "mcp_servers=", "disabledMcpjsonServers": "mcp_servers=",
}
_OWNED_PERMISSIONS = ("defaultMode", "disableBypassPermissionsMode")  # the adapter bypasses permissions
# Environment variables the adapter sets from its own options (or the experiment's): given in `env` they would
# bypass them (a key in `env` would not be redacted).
_OWNED_ENV = {
    "ANTHROPIC_API_KEY": "api_key=", "ANTHROPIC_AUTH_TOKEN": "api_key=", "ANTHROPIC_BASE_URL": "base_url=",
    "ANTHROPIC_MODEL": "the experiment's model", "CLAUDE_CODE_EFFORT_LEVEL": "the experiment's reasoning_effort",
    "IS_SANDBOX": "the adapter",
}
# Set unless `env` says otherwise: the CLI probed is the CLI run (no self-update mid-run), and nothing but the
# model's API is called from the sandbox.
_DEFAULT_ENV = {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
_RESUME = create_session_slot("claude-code session to resume, and its cost so far")
_CONFIG_DIR = ".assay-claude-code"  # in the sandbox's home (else /tmp): outside the workdir, so not in the diff


def _checked_settings(settings: Mapping[str, Any] | str | os.PathLike[str] | None) -> dict[str, Any]:
    if settings is None:
        return {}
    if isinstance(settings, (str, os.PathLike)):
        path = Path(settings)
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise ConfigError(f"claude_code_agent settings file {str(path)!r} cannot be read ({error.strerror}): give "
                              "the path of a settings.json, or the settings as a dict") from None
        except ValueError as error:
            raise ConfigError(f"claude_code_agent settings file {str(path)!r} is not JSON ({error})") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"claude_code_agent settings file {str(path)!r} holds a {type(loaded).__name__}, not a "
                              "settings object ({\"includeCoAuthoredBy\": false, …})")
        settings = loaded
    if not isinstance(settings, Mapping):
        raise ConfigError("claude_code_agent settings takes a dict of Claude Code settings "
                          f"(settings={{\"includeCoAuthoredBy\": False}}) or a settings.json path, got "
                          f"{type(settings).__name__}")
    given = dict(settings)
    owned = [f"{key} ({_OWNED_SETTINGS[key]} sets it)" for key in sorted(set(_OWNED_SETTINGS) & set(given))]
    permissions = given.get("permissions")
    if isinstance(permissions, Mapping):
        owned += [f"permissions.{key} (the adapter bypasses permissions: assay's sandbox is the boundary)"
                  for key in _OWNED_PERMISSIONS if key in permissions]
    if owned:
        raise ConfigError(f"claude_code_agent settings must not set {', '.join(owned)}: the experiment and the adapter "
                          "own them; leave them out")
    try:
        json.dumps(given)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"claude_code_agent settings must be JSON: {error}") from None
    return given


def _checked_mcp_servers(servers: Mapping[str, Any] | None) -> dict[str, Any]:
    if servers is None:
        return {}
    if not isinstance(servers, Mapping) or not all(isinstance(name, str) and isinstance(spec, Mapping)
                                                   for name, spec in servers.items()):
        raise ConfigError("claude_code_agent mcp_servers maps server names to their config, like "
                          "mcp_servers={\"docs\": {\"command\": \"docs-mcp\", \"args\": []}} or "
                          "{\"api\": {\"type\": \"http\", \"url\": \"https://…\", \"headers\": {…}}}")
    for name, spec in servers.items():
        if "command" not in spec and "url" not in spec:
            raise ConfigError(f"claude_code_agent mcp_servers[{name!r}] needs a stdio \"command\" or an HTTP \"url\"")
    return {name: dict(spec) for name, spec in servers.items()}


def _checked_env(env: Mapping[str, str] | None) -> dict[str, str]:
    given = dict(env or {})
    if "PATH" in given:
        raise ConfigError("claude_code_agent env must not set PATH (give the sandbox path_prepend)")
    owned = [f"{name} (set by {_OWNED_ENV[name]})" for name in sorted(set(_OWNED_ENV) & set(given))]
    if owned:
        raise ConfigError(f"claude_code_agent env must not set {', '.join(owned)}: the experiment and the adapter own "
                          "them")
    bad = [name for name, value in given.items() if not isinstance(name, str) or not isinstance(value, str)]
    if bad:
        raise ConfigError(f"claude_code_agent env maps names to strings; {', '.join(map(str, bad))} is not one")
    return given


def _config_path(sandbox: Any, name: str) -> str:
    return agent_file(sandbox, _CONFIG_DIR, name)


def _content(turn_input: TurnInput, ctx: Any) -> list[dict[str, Any]]:
    """The user message as Anthropic content blocks: images and PDFs as they are, text files as text, the text."""
    blocks: list[dict[str, Any]] = []
    for attached in turn_input.files:
        source = {"type": "base64", "media_type": attached.mime_type, "data": attached.data_base64}
        if attached.mime_type.startswith("image/"):
            blocks.append({"type": "image", "source": source})
        elif attached.mime_type == "application/pdf":
            blocks.append({"type": "document", "source": source})
        elif attached.mime_type.startswith("text/"):
            text = base64.b64decode(attached.data_base64).decode("utf-8", "replace")
            blocks.append({"type": "text", "text": f"{attached.filename or 'file'}:\n{text}"})
        else:
            ctx.diagnostic("claude-code-file-skipped", "warning",
                           f"Claude Code takes images, PDFs and text files; {attached.filename or 'a file'} "
                           f"({attached.mime_type}) was not sent")
    if turn_input.text:
        blocks.append({"type": "text", "text": turn_input.text})
    return blocks


def claude_code_agent(
    *,
    name: str = "claude-code",
    command_name: str = "claude",
    api_key: str | None = None,
    base_url: str | None = None,
    settings: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    mcp_servers: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
    install: Sequence[PrepareStep] = DEFAULT_INSTALL,
    extra_args: Sequence[str] = (),
) -> SandboxAgent:
    """Claude Code (`claude -p`) in the sandbox. The model and reasoning effort come from the experiment; `api_key`
    (default: the host's `ANTHROPIC_API_KEY`, read at send time) reaches the CLI as `ANTHROPIC_API_KEY` and is
    redacted from everything stored; `base_url` becomes `ANTHROPIC_BASE_URL`. `settings` (a dict, or the path of a
    settings.json on this machine, relative to the calling file's folder) is written to a file passed with `--settings` (not the keys the experiment and
    the adapter own); `mcp_servers` (name -> {"command": …} or {"type": "http", "url": …}) to one passed with
    `--mcp-config`; `env` adds environment variables; `extra_args` go before the prompt."""
    if isinstance(settings, (str, os.PathLike)):
        settings = beside_caller(settings)  # (a relative path is the experiment file's, as upload()'s)
    chosen_settings = _checked_settings(settings)
    servers = _checked_mcp_servers(mcp_servers)
    extra_env = _checked_env(env)
    if isinstance(extra_args, str) or not all(isinstance(arg, str) for arg in extra_args):
        raise ConfigError("claude_code_agent extra_args is a list of strings, like "
                          "extra_args=[\"--max-turns\", \"20\"]")
    owned_args = sorted({"--resume", "-r", "--model", "--effort", "--settings", "--mcp-config", "--json-schema",
                         "--output-format", "--input-format", "--continue", "-c", "--session-id"} & set(extra_args))
    if owned_args:
        raise ConfigError(f"claude_code_agent extra_args must not hold {', '.join(owned_args)}: the experiment and the "
                          "adapter pass them (model=, reasoning_effort=, settings=, mcp_servers=, the session line)")
    ensure = AgentEnsure(command(command_name, "--version"), tuple(install), {"agent": "claude-code"})

    def environment() -> tuple[dict[str, str], list[str]]:
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        values = {**_DEFAULT_ENV, **extra_env, "IS_SANDBOX": "1"}
        if key:
            values["ANTHROPIC_API_KEY"] = key
        if base_url:
            values["ANTHROPIC_BASE_URL"] = base_url
        # (a key too short to redact, as a test's placeholder may be, is not one `run_command` would take)
        return values, [key] if key and len(key) >= MIN_SENSITIVE_CHARACTERS else []

    async def setup(ctx: Any) -> None:
        sandbox = ctx.sandbox
        probe = await sandbox.run_command(command_name, "--version")
        if chosen_settings:
            await sandbox.write_text(_config_path(sandbox, "settings.json"), json.dumps(chosen_settings, indent=2))
        if servers:
            await sandbox.write_text(_config_path(sandbox, "mcp.json"), json.dumps({"mcpServers": servers}, indent=2))
        values, secrets = environment()
        ctx.store_artifact("agent-setup.json", {
            "agent": "claude-code", "command": command_name, "version": probe.stdout.strip() or None,
            "model": ctx.model, "reasoning_effort": ctx.reasoning_effort,
            "settings": chosen_settings,
            "mcp_servers": sorted(servers),  # names only: their headers and env may hold credentials
            "env": sorted(values),  # names only: values may be credentials
            "credentials": "ANTHROPIC_API_KEY" if secrets else "none",
            "base_url": base_url, "extra_args": list(extra_args),
        })

    async def send(turn_input: TurnInput, ctx: Any) -> Turn:
        sandbox = ctx.sandbox
        resume, cost_before = ctx.session.get(_RESUME) or (ctx.session.id, 0.0)
        argv = [command_name, "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
        if ctx.model:
            argv += ["--model", ctx.model]
        if ctx.reasoning_effort in EFFORTS:
            argv += ["--effort", ctx.reasoning_effort]
        elif ctx.reasoning_effort:
            ctx.diagnostic("claude-code-effort-ignored", "warning",
                           f"reasoning_effort={ctx.reasoning_effort!r} is not a Claude Code effort "
                           f"({', '.join(EFFORTS)}): the CLI ran with its own", dedupe_key="claude-code-effort")
        if chosen_settings:
            argv += ["--settings", _config_path(sandbox, "settings.json")]
        if servers:
            argv += ["--mcp-config", _config_path(sandbox, "mcp.json")]
        if turn_input.output_schema is not None:
            argv += ["--json-schema", json.dumps(turn_input.output_schema)]
        if resume:
            argv += ["--resume", resume]
        argv += list(extra_args)
        stdin = None
        if turn_input.files:  # the prompt as a user message on stdin, to carry the files as content blocks
            argv += ["--input-format", "stream-json"]
            message = {"type": "user", "session_id": "", "parent_tool_use_id": None,
                       "message": {"role": "user", "content": _content(turn_input, ctx)}}
            stdin = json.dumps(message) + "\n"
        else:
            argv += ["--", turn_input.text]
        values, secrets = environment()
        watcher = ClaudeSdkTranscript()
        pending = [""]

        def on_stdout(text: str) -> None:
            # Live progress only; the turn is read from the finished (wholly redacted) stdout below, so a
            # secret split across two chunks can never reach the record.
            *lines, pending[0] = (pending[0] + text).split("\n")
            for line in lines:
                try:
                    added = watcher.feed_line(line)
                except ValueError:
                    continue
                for event in added:
                    if isinstance(event, OperationStarted):
                        given = event.operation.input if isinstance(event.operation.input, Mapping) else {}
                        what = given.get("command") or given.get("file_path") or given.get("pattern") or ""
                        ctx.progress(f"claude: {event.operation.name} {str(what)[:80]}".rstrip())

        result = await sandbox.run_command(*argv, env=values, on_stdout=on_stdout, sensitive_values=secrets,
                                           stdin=stdin)
        transcript = ClaudeSdkTranscript(cost_before=cost_before)
        printed, unauthenticated = 0, None
        for line in result.stdout.splitlines():
            try:
                transcript.feed_line(line)
            except ValueError:
                continue  # (stray output: the CLI prints only JSON lines on stdout in this mode)
            printed += 1
            if unauthenticated is None and '"authentication_failed"' in line:
                frame = json.loads(line)
                if isinstance(frame, Mapping) and frame.get("error") == "authentication_failed":
                    unauthenticated = "".join(str(block.get("text", "")) for block in
                                              (frame.get("message") or {}).get("content") or ()
                                              if isinstance(block, Mapping)) or "authentication failed"
        if transcript.session_id:
            ctx.session.capture(transcript.session_id)
            # (the latest id: a CLI that gives a resumed session a new one is resumed from that)
            ctx.session.set(_RESUME, (transcript.session_id, transcript.total_cost or cost_before))
        if unauthenticated is not None and not any(isinstance(event, OperationStarted) for event in transcript.events):
            # (the CLI's own reply, before anything ran: no model was reached, so no failed turn of the agent's)
            raise SendFailure(f"claude could not authenticate ({unauthenticated}): give claude_code_agent(api_key=…) "
                              "or set ANTHROPIC_API_KEY on the host", acceptance="rejected", retried=True,
                              code="claude-code-unauthenticated")
        if not transcript.completed:
            what = "timed out" if result.timed_out else f"exited with {result.exit_code}"
            if printed == 0 and not result.timed_out:  # not even its init line: the prompt never reached the model
                raise SendFailure(f"claude {what} before starting the session: {result.tail(500)}",
                                  acceptance="rejected", retried=True, code="claude-code-failed")
            raise SendFailure(f"claude {what} before the turn's result: {result.tail(500)}", acceptance="started",
                              code="claude-code-failed")
        return transcript.turn()

    return define_sandbox_agent(
        name=name, send=send, evidence_coverage=claude_code_evidence_coverage, setup=setup, ensure=ensure,
    )


__all__ = ["claude_code_agent", "claude_code_evidence_coverage"]
