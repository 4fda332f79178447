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

Skills (`skills=`, local folders each holding a `SKILL.md`) are copied at setup into the sandbox's
`~/.claude/skills/<folder name>/`, where the CLI finds its user skills: it lists them to the model with the `Skill`
tool, and a completed `Skill` call is the turn's `skill.loaded`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.agent.adapter import SendFailure
from assay.agent.adapters.claude_agent_sdk import ClaudeSdkTranscript, content_blocks
from assay.agent.context import say_once_a_run
from assay.agent.loaders import beside_caller
from assay.agent.model import COMPLETE, EvidenceCoverage, OperationStarted, Turn, TurnInput
from assay.agent.sandbox.agent import AgentEnsure, SandboxAgent, agent_file, define_sandbox_agent
from assay.agent.sandbox.commands import MIN_SENSITIVE_CHARACTERS
from assay.agent.sandbox.layers import PrepareStep, command, shell
from assay.agent.session import create_session_slot
from assay.core.format import did_you_mean
from assay.errors import ConfigError

# As the Claude Agent SDK's: every call, result, denial and compaction is in the stream, and a turn whose stream
# holds something the converter does not know, or no result, says so itself.
claude_code_evidence_coverage = EvidenceCoverage(COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE, COMPLETE)
DEFAULT_INSTALL: tuple[PrepareStep, ...] = (shell("npm install -g @anthropic-ai/claude-code"),)
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# Said once a run too, not only in `assay agent show`: each means the run is not quite what the experiment says.
say_once_a_run("claude-code-effort-ignored", "the experiment's reasoning effort was not used")
say_once_a_run("claude-code-model-default", "the model evaluated is the CLI's choice")
say_once_a_run("claude-code-mcp-server-failed", "the agent ran without that server's tools")
say_once_a_run("claude-code-file-skipped", "the agent did not see the file")
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
# The CLI reads these lists of rules; a misspelt key, or a rule list given as one string, it ignores without a word
# (so a deny rule would silently not apply).
_PERMISSION_LISTS = ("allow", "deny", "ask", "additionalDirectories")
# The MCP server config the CLI reads: a server with a misspelt key, a wrong type or an unknown transport is dropped
# by the CLI without a word (the agent then runs without its tools), so its shape is checked here.
_MCP_TYPES = ("stdio", "sse", "http")
_MCP_KEYS = {"stdio": ("type", "command", "args", "env"), "sse": ("type", "url", "headers"),
             "http": ("type", "url", "headers")}
# Arguments the adapter passes (or that would replace what the experiment and the adapter own), also as `--flag=value`.
_OWNED_ARGS = {
    "--resume": "the session line", "-r": "the session line", "--continue": "the session line",
    "-c": "the session line", "--session-id": "the session line", "--fork-session": "the session line",
    "--model": "model=", "--fallback-model": "model=", "--effort": "reasoning_effort=", "--settings": "settings=",
    "--mcp-config": "mcp_servers=", "--json-schema": "t.send(output=…)", "--output-format": "the adapter",
    "--input-format": "the adapter", "--permission-mode": "the adapter, which bypasses permissions",
}
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
_CREDENTIAL_NAME = re.compile(r"token|key|secret|passw|auth|credential|cookie|session", re.IGNORECASE)
_CONFIG_DIR = ".assay-claude-code"  # in the sandbox's home (else /tmp): outside the workdir, so not in the diff
_SKILLS_DIR = "~/.claude/skills"  # where the CLI reads the user's own skills: outside the workdir, so not in the diff
_SKILL_FILE = "SKILL.md"


def _checked_skills(skills: Any) -> list[Any]:
    """The skills option as a list of paths (not yet resolved): a string is one path given without its list."""
    if skills is None:
        return []
    if isinstance(skills, (str, bytes, os.PathLike)):
        given = os.fsdecode(skills)
        raise ConfigError("claude_code_agent skills is a list of skill folders, like "
                          f"skills=[\"skills/release-notes\"]; got the single path {given!r}: give skills=[{given!r}]")
    if not isinstance(skills, Sequence) or not all(isinstance(path, (str, os.PathLike)) for path in skills):
        raise ConfigError("claude_code_agent skills is a list of skill folder paths (strings), like "
                          f"skills=[\"skills/release-notes\"]; got {skills!r}")
    return list(skills)


def _check_skills(paths: Sequence[Path]) -> dict[str, Path]:
    """Skill name (its folder's name, as the CLI names it) -> the folder, each checked to be a skill the CLI loads."""
    chosen: dict[str, Path] = {}
    for path in paths:
        if not path.is_dir():
            if path.is_file() and path.name == _SKILL_FILE:
                raise ConfigError(f"claude_code_agent skills names {str(path)!r}, a SKILL.md file: give the folder "
                                  f"holding it (skills=[{str(path.parent)!r}])")
            what = "is not a folder" if path.exists() else "does not exist"
            raise ConfigError(f"claude_code_agent skills path {str(path)!r} {what}: give the folder of a Claude Code "
                              "skill (one holding a SKILL.md), relative to the experiment file's folder")
        if not (path / _SKILL_FILE).is_file():
            raise ConfigError(f"claude_code_agent skill folder {str(path)!r} has no {_SKILL_FILE}: a Claude Code skill "
                              f"is a folder with a {_SKILL_FILE} (front matter with name and description, then the "
                              "instructions); add one, or give the folder that holds it")
        if path.name in chosen:
            raise ConfigError(f"claude_code_agent skills holds two folders named {path.name!r} "
                              f"({str(chosen[path.name])!r} and {str(path)!r}): each is copied to "
                              f"~/.claude/skills/{path.name}, so one would replace the other; rename one of them")
        chosen[path.name] = path
    return chosen


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
    not_named = [key for key in given if not isinstance(key, str)]
    if not_named:
        raise ConfigError(f"claude_code_agent settings keys are setting names (strings); {not_named[0]!r} is not one")
    # A key the CLI does not know is ignored by it without a word: one close to a key it reads is a typo.
    for key in given:
        if key not in _OWNED_SETTINGS and key != "permissions":
            near = did_you_mean(key, [*_OWNED_SETTINGS, "permissions"], cutoff=0.8, form="{}", shown=str)
            if near:
                whose = f", which {_OWNED_SETTINGS[near]} sets" if near in _OWNED_SETTINGS else ""
                raise ConfigError(f"claude_code_agent settings key {key!r} is no Claude Code setting (did you mean "
                                  f"{near!r}{whose}?); the CLI would ignore it without a word")
    owned = [f"{key} ({_OWNED_SETTINGS[key]} sets it)" for key in sorted(set(_OWNED_SETTINGS) & set(given))]
    permissions = given.get("permissions")
    if "permissions" in given and not isinstance(permissions, Mapping):
        raise ConfigError("claude_code_agent settings permissions is an object of rule lists, like "
                          f"{{\"permissions\": {{\"deny\": [\"Bash\"]}}}}; got a {type(permissions).__name__}")
    if isinstance(permissions, Mapping):
        known = [*_PERMISSION_LISTS, *_OWNED_PERMISSIONS]
        for key, value in permissions.items():
            near = "" if key in known else did_you_mean(key, known, cutoff=0.8, form=" (did you mean {}?)")
            if near:
                raise ConfigError(f"claude_code_agent settings key permissions.{key} is no Claude Code setting"
                                  f"{near}; the CLI would ignore it without a word")
            if key in _PERMISSION_LISTS and (isinstance(value, str) or not isinstance(value, Sequence)
                                             or not all(isinstance(rule, str) for rule in value)):
                raise ConfigError(f"claude_code_agent settings permissions.{key} is a list of strings, like "
                                  f"{{\"{key}\": [\"Bash(rm:*)\"]}}; got {value!r} (the CLI would ignore it)")
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
        _check_mcp_server(name, spec)
    checked = {name: dict(spec) for name, spec in servers.items()}
    try:
        json.dumps(checked)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"claude_code_agent mcp_servers must be JSON: {error}") from None
    return checked


def _check_mcp_server(name: str, spec: Mapping[str, Any]) -> None:
    where = f"claude_code_agent mcp_servers[{name!r}]"
    if name == "mcpServers":
        raise ConfigError("claude_code_agent mcp_servers maps server names to their config, without the "
                          "{\"mcpServers\": …} wrapper of a .mcp.json: mcp_servers=config[\"mcpServers\"]")
    if not name.strip():
        raise ConfigError("claude_code_agent mcp_servers names its servers: an empty name is not one")
    kind = spec.get("type", "stdio" if "command" in spec or "url" not in spec else None)
    if kind is None:
        raise ConfigError(f"{where} has a \"url\" but no \"type\": give \"type\": \"http\" (or \"sse\"); the CLI "
                          "would drop the server without a word")
    if kind not in _MCP_TYPES:
        raise ConfigError(f"{where} type {kind!r} is not one Claude Code runs ({', '.join(_MCP_TYPES)})"
                          f"{did_you_mean(kind, _MCP_TYPES)}")
    known = _MCP_KEYS[kind]
    for key in spec:
        if key not in known:
            near = did_you_mean(key, known, form=" (did you mean {}?)")
            raise ConfigError(f"{where} has {key!r}, which a {kind} server does not take ({', '.join(known)})"
                              f"{near}; the CLI would drop the server without a word")
    if kind == "stdio":
        if not isinstance(spec.get("command"), str) or not spec["command"].strip():
            raise ConfigError(f"{where} needs a stdio \"command\" or an HTTP \"url\" (a command is one program, as a "
                              "string, its arguments in \"args\"; a url goes with \"type\": \"http\")")
        args = spec.get("args", [])
        if isinstance(args, str) or not isinstance(args, Sequence) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f"{where} args is a list of strings, like \"args\": [\"--stdio\"]; got {args!r}")
    else:
        url = spec.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where} needs a \"url\" starting with http:// or https://; got {url!r}")
    for key in ("env", "headers"):
        if key in spec and not (isinstance(spec[key], Mapping) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in spec[key].items())):
            raise ConfigError(f"{where} {key} maps names to strings, like \"{key}\": {{\"TOKEN\": \"…\"}}; "
                              f"got {type(spec[key]).__name__}" + (" with a value that is not a string"
                                                                   if isinstance(spec[key], Mapping) else ""))


def _checked_env(env: Mapping[str, str] | None) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise ConfigError("claude_code_agent env maps names to strings, like env={\"MAX_THINKING_TOKENS\": \"1024\"}; "
                          f"got a {type(env).__name__}")
    given = dict(env)
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


def _read_init(line: str, servers: Mapping[str, Any], ctx: Any) -> None:
    """What the CLI's init frame alone says. An MCP server that failed to start (a misspelt command, a server that
    exits) is only a status there: the agent then works without that server's tools. And with no model from the
    experiment, the model the CLI chose for itself is only named there."""
    frame = json.loads(line)
    if not (isinstance(frame, Mapping) and frame.get("type") == "system" and frame.get("subtype") == "init"):
        return
    if not ctx.model:
        ctx.diagnostic("claude-code-model-default", "warning",
                       f"the experiment gives no model, so Claude Code ran with its own default "
                       f"({frame.get('model') or 'unnamed'}); give Experiment(model=…) to say which model is "
                       "evaluated", dedupe_key="claude-code-model-default")
    for server in frame.get("mcp_servers") or ():
        if (isinstance(server, Mapping) and server.get("name") in servers
                and server.get("status") in ("failed", "needs-auth")):
            spec = servers[server["name"]]
            how = (f"command {spec.get('command')!r}" if "command" in spec else f"url {spec.get('url')!r}")
            ctx.diagnostic("claude-code-mcp-server-failed", "warning",
                           f"MCP server {server['name']!r} ({how}) did not start in the sandbox (status "
                           f"{server['status']}): the agent ran without its tools; check that the command is on "
                           "the sandbox's PATH, or the URL answers", dedupe_key=f"claude-code-mcp-{server['name']}")


def _config_path(sandbox: Any, name: str) -> str:
    return agent_file(sandbox, _CONFIG_DIR, name)


def _content(turn_input: TurnInput, ctx: Any) -> list[dict[str, Any]]:
    return content_blocks(turn_input, ctx, skipped="claude-code-file-skipped", who="Claude Code")


def claude_code_agent(
    *,
    name: str = "claude-code",
    command_name: str = "claude",
    api_key: str | None = None,
    base_url: str | None = None,
    settings: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    mcp_servers: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
    skills: Sequence[str | os.PathLike[str]] = (),
    install: Sequence[PrepareStep] = DEFAULT_INSTALL,
    extra_args: Sequence[str] = (),
) -> SandboxAgent:
    """Claude Code (`claude -p`) in the sandbox. The model and reasoning effort come from the experiment; `api_key`
    (default: the host's `ANTHROPIC_API_KEY`, read at send time) reaches the CLI as `ANTHROPIC_API_KEY` and is
    redacted from everything stored; `base_url` becomes `ANTHROPIC_BASE_URL`. `settings` (a dict, or the path of a
    settings.json on this machine, relative to the calling file's folder) is written to a file passed with
    `--settings` (not the keys the experiment and the adapter own; a key close to one the CLI reads, or a permission
    rule list that is not a list, is refused, as the CLI would ignore it without a word); `mcp_servers` (name ->
    {"command": …, "args": […], "env": {…}} or {"type": "http" | "sse", "url": …, "headers": {…}}, checked as
    strictly, since the CLI drops a malformed server silently; their env and header values are redacted like the
    key) to one passed with `--mcp-config`; `env` adds environment variables; `extra_args` go before the prompt.
    `skills` is a list of local folders (relative to the calling file's folder), each a Claude Code skill: a
    `SKILL.md` (front matter with `name` and `description`, then the instructions) and any files it uses. Each is
    copied at setup to the sandbox's `~/.claude/skills/<folder name>/` (outside the workdir, so not in the diff),
    where the CLI offers it to the model through its `Skill` tool; a path that is not such a folder, or two folders
    of one name, is refused. Only local folders: a skill from a repository at a ref is not supported (check it out,
    and give its folder)."""
    if isinstance(settings, (str, os.PathLike)):
        settings = beside_caller(settings)  # (a relative path is the experiment file's, as upload()'s)
    skill_paths = []
    for skill in _checked_skills(skills):  # (here, not in a helper: beside_caller looks two frames up)
        skill_paths.append(beside_caller(skill))
    chosen_skills = _check_skills(skill_paths)
    chosen_settings = _checked_settings(settings)
    servers = _checked_mcp_servers(mcp_servers)
    extra_env = _checked_env(env)
    if (isinstance(extra_args, (str, bytes)) or not isinstance(extra_args, Sequence)
            or not all(isinstance(arg, str) for arg in extra_args)):
        raise ConfigError("claude_code_agent extra_args is a list of strings, like "
                          "extra_args=[\"--max-turns\", \"20\"]")
    # (`--model=opus` is `--model opus` to the CLI)
    owned_args = sorted({arg.split("=", 1)[0] for arg in extra_args} & set(_OWNED_ARGS))
    if owned_args:
        raise ConfigError(f"claude_code_agent extra_args must not hold {', '.join(owned_args)}: the experiment and the "
                          "adapter pass them ("
                          + "; ".join(f"{arg} is set by {_OWNED_ARGS[arg]}" for arg in owned_args) + ")")
    if install is None or isinstance(install, (str, bytes)) or not isinstance(install, Sequence):
        raise ConfigError("claude_code_agent install is a list of steps, like "
                          "install=[shell(\"npm install -g @anthropic-ai/claude-code\")] (install=() when the CLI is "
                          f"already there); got {install!r}")
    texts = [step for step in install if isinstance(step, str)]
    if texts:
        raise ConfigError(f"claude_code_agent install takes command(...) or shell(...) steps, not text: "
                          f"install=[shell({texts[0]!r})] (from assay.agent.sandbox import shell)")
    if api_key is not None and (not isinstance(api_key, str) or not api_key.strip()):
        raise ConfigError("claude_code_agent api_key is the key as a string (api_key=os.environ[\"MY_KEY\"]); "
                          "leave it out to use the host's ANTHROPIC_API_KEY")
    if base_url is not None and (not isinstance(base_url, str) or not base_url.startswith(("http://", "https://"))):
        raise ConfigError(f"claude_code_agent base_url is the API's URL, starting with http:// or https:// "
                          f"(base_url=\"https://gateway.example.com\"); got {base_url!r}")
    ensure = AgentEnsure(command(command_name, "--version"), tuple(install), {"agent": "claude-code"})

    # An MCP server's env and headers hold its credentials (a token, `Bearer …`): redacted like the key, should the
    # agent print its config or a server echo them. Only those whose name says so: redacting `LOG_LEVEL=debug`'s
    # value would blank "debug" wherever the record has it.
    mcp_secrets = sorted({secret for spec in servers.values() for key in ("env", "headers")
                          for name, value in (spec.get(key) or {}).items() if _CREDENTIAL_NAME.search(name)
                          for secret in (value, value.split(" ", 1)[-1]) if len(secret) >= MIN_SENSITIVE_CHARACTERS})

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
        for skill_name, folder in chosen_skills.items():
            await sandbox.upload_directory(folder, f"{_SKILLS_DIR}/{skill_name}")
        values, secrets = environment()
        ctx.store_artifact("agent-setup.json", {
            "agent": "claude-code", "command": command_name, "version": probe.stdout.strip() or None,
            "model": ctx.model, "reasoning_effort": ctx.reasoning_effort,
            "settings": chosen_settings,
            "mcp_servers": sorted(servers),  # names only: their headers and env may hold credentials
            "skills": list(chosen_skills),
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
                           f"({', '.join(EFFORTS)}){did_you_mean(ctx.reasoning_effort, EFFORTS)}: the CLI ran with its "
                           "own", dedupe_key="claude-code-effort")
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

        result = await sandbox.run_command(*argv, env=values, on_stdout=on_stdout,
                                           sensitive_values=[*secrets, *mcp_secrets], stdin=stdin)
        transcript = ClaudeSdkTranscript(cost_before=cost_before)
        printed, unauthenticated = 0, None
        for line in result.stdout.splitlines():
            try:
                transcript.feed_line(line)
            except ValueError:
                continue  # (stray output: the CLI prints only JSON lines on stdout in this mode)
            printed += 1
            if '"init"' in line:
                _read_init(line, servers, ctx)
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
