"""Codex as a sandbox agent: `codex exec --json` run in the attempt's sandbox, its JSONL read as our events.

Why Codex: its stdout *is* the transcript (no transcript file to find afterwards), every tool use is an
item with an id that is started and completed (commands and file changes first among them, so they map
onto paired operations), the turn's usage arrives in `turn.completed`, and `thread.started` gives the id
that `codex exec resume` continues. `turn_from_codex_events` converts a recorded transcript on its own.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from assay.agent.adapter import SendFailure
from assay.agent.context import say_once_a_run
from assay.agent.model import (
    COMPLETE,
    MISSING,
    Coverage,
    ErrorEvent,
    EvidenceCoverage,
    Message,
    OperationFinished,
    OperationStarted,
    StreamEvent,
    Thinking,
    ToolOperation,
    Turn,
    TurnInput,
    Usage,
    partial,
    unavailable,
)
from assay.agent.logical_command import opaque_command_projection, shell_command_projection
from assay.agent.sandbox.agent import AgentEnsure, SandboxAgent, agent_file, define_sandbox_agent
from assay.agent.sandbox.commands import MIN_SENSITIVE_CHARACTERS
from assay.agent.sandbox.layers import PrepareStep, command, shell
from assay.errors import ConfigError

codex_evidence_coverage = EvidenceCoverage(
    events=partial("Codex's todo-list updates are not shown as events"),
    actions=COMPLETE, messages=COMPLETE, usage=COMPLETE, status=COMPLETE, data=COMPLETE,
)
DEFAULT_INSTALL: tuple[PrepareStep, ...] = (shell("npm install -g @openai/codex"),)
# Set by the experiment (model, reasoning effort) or by this adapter (telemetry, tools): a config
# override of them would silently change what is being compared.
_OWNED_CONFIG = frozenset({"model", "model_reasoning_effort", "model_provider", "otel", "mcp_servers"})
# Said once a run too, not only in `assay agent show`: each means the run is not quite what the experiment says.
say_once_a_run("codex-file-skipped", "the agent did not see the file")
_TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})
_QUIET_ITEMS = frozenset({"todo_list"})  # known, deliberately not events


def _tool_operation(item: Mapping[str, Any]) -> ToolOperation:
    kind = item.get("type")
    if kind == "command_execution":
        text = item.get("command", "")
        projection = shell_command_projection(text) if isinstance(text, str) else opaque_command_projection(
            "unsupported-protocol")
        return ToolOperation("shell", {"command": text}, tool="shell", command=projection)
    if kind == "file_change":
        changes = [
            {"path": change.get("path"), "kind": change.get("kind")} for change in item.get("changes") or []
            if isinstance(change, Mapping)
        ]
        return ToolOperation("apply_patch", {"changes": changes}, tool="file_edit")
    if kind == "mcp_tool_call":
        return ToolOperation(str(item.get("tool") or "mcp"), item.get("arguments"),
                             tool=f"mcp:{item.get('server')}" if item.get("server") else None)
    return ToolOperation("web_search", {"query": item.get("query")}, tool="web_search")


def _finish_status(item: Mapping[str, Any]) -> str:
    status = item.get("status")
    if status == "declined":
        return "rejected"
    if status == "failed" or item.get("error"):
        return "failed"
    exit_code = item.get("exit_code")
    if item.get("type") == "command_execution" and isinstance(exit_code, int) and exit_code != 0:
        return "failed"
    return "completed"


def _finish_output(item: Mapping[str, Any]) -> Any:
    kind = item.get("type")
    if kind == "command_execution":
        return {"exit_code": item.get("exit_code"), "output": item.get("aggregated_output", "")}
    if kind == "mcp_tool_call":
        return item.get("result") if item.get("error") is None else {"error": item.get("error")}
    if kind == "file_change":
        return {"status": item.get("status", "completed")}
    return {}


class CodexTranscript:
    """Folds `codex exec --json` events, in order, into a Turn (and the thread id to resume)."""

    def __init__(self) -> None:
        self.events: list[StreamEvent] = []
        self.thread_id: str | None = None
        self.usage: Usage | None = None
        self.completed = False
        self.failure: str | None = None
        self.unknown: set[str] = set()
        self.unparsed = 0
        self._open: dict[str, str] = {}  # item id -> item type, for items started and not yet completed
        self._closed: set[str] = set()
        self._partial_line = ""

    # -- input --------------------------------------------------------------------------------------
    def feed_text(self, text: str) -> None:
        """A chunk of stdout; whole lines are parsed as they complete."""
        *lines, self._partial_line = (self._partial_line + text).split("\n")
        for line in lines:
            self.feed_line(line)

    def flush(self) -> None:
        if self._partial_line.strip():
            self.feed_line(self._partial_line)
        self._partial_line = ""

    def feed_line(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        try:
            event = json.loads(line)
        except ValueError:
            self.unparsed += 1  # Codex prints a banner to stderr, but be forgiving about stray stdout
            return
        if isinstance(event, Mapping):
            self.feed(event)

    def feed(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "thread.started":
            self.thread_id = event.get("thread_id") or self.thread_id
        elif kind == "turn.completed":
            self.completed = True
            self._add_usage(event.get("usage") or {})
        elif kind == "turn.failed":
            message = (event.get("error") or {}).get("message") or "the turn failed"
            self.failure = str(message)
            self.events.append(ErrorEvent(str(message)))
        elif kind == "error":
            self.events.append(ErrorEvent(str(event.get("message") or "error")))
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, Mapping):
                self._item(kind, item)
        elif kind not in ("turn.started",):
            self.unknown.add(f"event {kind}")

    def _item(self, phase: str, item: Mapping[str, Any]) -> None:
        kind = item.get("type")
        item_id = str(item.get("id") or f"item-{len(self.events)}")
        if kind in _TOOL_ITEMS:
            if item_id in self._closed:
                return
            if item_id not in self._open:  # an item may arrive completed without a started line
                self._open[item_id] = str(kind)
                self.events.append(OperationStarted(item_id, _tool_operation(item)))
            if phase == "item.completed":
                del self._open[item_id]
                self._closed.add(item_id)
                self.events.append(OperationFinished(item_id, _finish_status(item), _finish_output(item), "tool"))
            return
        if phase != "item.completed":
            return
        if kind == "agent_message":
            if item.get("text"):
                self.events.append(Message(str(item["text"])))
        elif kind == "reasoning":
            if item.get("text"):
                self.events.append(Thinking(str(item["text"])))
        elif kind == "error":
            self.events.append(ErrorEvent(str(item.get("message") or "error")))
        elif kind not in _QUIET_ITEMS:
            self.unknown.add(f"item {kind}")

    def _add_usage(self, usage: Mapping[str, Any]) -> None:
        total_input = usage.get("input_tokens")
        cached = usage.get("cached_input_tokens") or 0
        output = usage.get("output_tokens")
        if total_input is None and output is None:
            return
        turn = Usage(
            input_tokens=None if total_input is None else max(0, int(total_input) - int(cached)),
            output_tokens=output, cache_read_tokens=int(cached) or None,
            reasoning_tokens=usage.get("reasoning_output_tokens"), requests=1,
        )
        previous = self.usage
        if previous is None:
            self.usage = turn
        else:
            self.usage = Usage(*(  # one exec may hold several model turns: their counts add up
                (a or 0) + (b or 0) if a is not None or b is not None else None
                for a, b in zip((previous.input_tokens, previous.output_tokens, previous.cache_read_tokens,
                                 previous.cache_creation_tokens, previous.reasoning_tokens, previous.requests),
                                (turn.input_tokens, turn.output_tokens, turn.cache_read_tokens,
                                 turn.cache_creation_tokens, turn.reasoning_tokens, turn.requests))
            ))

    # -- output -------------------------------------------------------------------------------------
    def turn(self, data: Any = None) -> Turn:
        coverage: dict[str, Coverage] = {}
        if self.unknown:
            why = f"skipped Codex {', '.join(sorted(self.unknown))} this converter does not know"
            coverage["events"] = partial(why)
            coverage["actions"] = partial(why)
        if self.usage is None:
            coverage["usage"] = unavailable("Codex reported no usage for this turn")
        # An item started and never completed stays pending: its output is unavailable, never empty.
        status = "failed" if self.failure is not None else "completed"
        return Turn(list(self.events), status, MISSING if data is None else data, self.usage, coverage or None)


def turn_from_codex_events(lines: Iterable[str | Mapping[str, Any]]) -> Turn:
    """A Turn from a recorded `codex exec --json` transcript (lines of JSON, or parsed events)."""
    transcript = CodexTranscript()
    for line in lines:
        if isinstance(line, Mapping):
            transcript.feed(line)
        else:
            transcript.feed_line(line)
    return transcript.turn()


def _config_arguments(config: Mapping[str, Any]) -> list[str]:
    arguments = []
    for key in sorted(config):
        arguments += ["-c", f"{key}={json.dumps(config[key])}"]  # JSON scalars and lists are valid TOML values
    return arguments


def codex_agent(
    *,
    name: str = "codex",
    command_name: str = "codex",
    api_key: str | None = None,
    base_url: str | None = None,
    config: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    install: Sequence[PrepareStep] = DEFAULT_INSTALL,
    extra_args: Sequence[str] = (),
) -> SandboxAgent:
    """Codex CLI in the sandbox. The model and reasoning effort come from the experiment; `api_key`
    (default: the host's `CODEX_API_KEY`, else `OPENAI_API_KEY`, read at send time) is passed to the
    CLI as `CODEX_API_KEY` and redacted from everything stored; `base_url` becomes `OPENAI_BASE_URL`.
    `config` holds further `-c key=value` overrides (not the keys the experiment owns)."""
    overrides = dict(config or {})
    owned = sorted(_OWNED_CONFIG & set(overrides))
    if owned:
        raise ConfigError(f"codex_agent config must not set {', '.join(owned)}: the experiment and the adapter own them")
    extra_env = dict(env or {})
    if "PATH" in extra_env:
        raise ConfigError("codex_agent env must not set PATH (give the sandbox path_prepend)")
    ensure = AgentEnsure(command(command_name, "--version"), tuple(install), {"agent": "codex"})

    def credential() -> str | None:
        return api_key or os.environ.get("CODEX_API_KEY") or os.environ.get("OPENAI_API_KEY")

    def environment() -> tuple[dict[str, str], list[str]]:
        key = credential()
        values = dict(extra_env)
        if key:
            values["CODEX_API_KEY"] = key
        if base_url:
            values["OPENAI_BASE_URL"] = base_url
        # (a key too short to redact, as a test's placeholder may be, is not one `run_command` would take)
        return values, [key] if key and len(key) >= MIN_SENSITIVE_CHARACTERS else []

    async def setup(ctx: Any) -> None:
        probe = await ctx.sandbox.run_command(command_name, "--version")
        values, secrets = environment()
        ctx.store_artifact("agent-setup.json", {
            "agent": "codex", "command": command_name, "version": probe.stdout.strip() or None,
            "model": ctx.model, "reasoning_effort": ctx.reasoning_effort,
            "config": {key: overrides[key] for key in sorted(overrides)},
            "env": sorted(values),  # names only: values may be credentials
            "credentials": "CODEX_API_KEY" if secrets else "none",
            "base_url": base_url, "extra_args": list(extra_args),
        })

    async def send(turn_input: TurnInput, ctx: Any) -> Turn:
        sandbox = ctx.sandbox
        argv = [command_name, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                "-C", sandbox.workdir]
        if ctx.model:
            argv += ["-m", ctx.model]
        if ctx.reasoning_effort:
            argv += ["-c", f"model_reasoning_effort={json.dumps(ctx.reasoning_effort)}"]
        argv += _config_arguments(overrides)
        schema_path = None
        if turn_input.output_schema is not None:
            schema_path = agent_file(sandbox, ".assay-codex", f"schema-{ctx.attempt}-{len(turn_input.text)}.json")
            await sandbox.write_text(schema_path, json.dumps(turn_input.output_schema))
            argv += ["--output-schema", schema_path]
        for position, attached in enumerate(turn_input.files):
            if not attached.mime_type.startswith("image/"):
                ctx.diagnostic("codex-file-skipped", "warning",
                               f"codex exec takes images only; {attached.filename or 'a file'} was not sent")
                continue
            image_path = agent_file(sandbox, ".assay-codex", f"image-{position}-{attached.filename or 'image'}")
            await sandbox.write_bytes(image_path, base64.b64decode(attached.data_base64))
            argv += ["-i", image_path]
        argv += list(extra_args)
        if ctx.session.id:
            argv += ["resume", ctx.session.id]
        argv += ["--", turn_input.text]
        values, secrets = environment()
        watcher = CodexTranscript()

        def on_stdout(text: str) -> None:
            # Live progress only; the turn is read from the finished (wholly redacted) stdout below, so a
            # secret split across two chunks can never reach the record.
            before = len(watcher.events)
            watcher.feed_text(text)
            for event in watcher.events[before:]:
                if isinstance(event, OperationStarted) and event.operation.name == "shell":
                    ctx.progress(f"codex: {str((event.operation.input or {}).get('command', ''))[:80]}")
            del watcher.events[:]

        result = await sandbox.run_command(*argv, env=values, on_stdout=on_stdout, sensitive_values=secrets)
        transcript = CodexTranscript()
        transcript.feed_text(result.stdout)
        transcript.flush()
        if transcript.thread_id:
            ctx.session.capture(transcript.thread_id)
        if not transcript.completed and transcript.failure is None:
            what = "timed out" if result.timed_out else f"exited with {result.exit_code}"
            raise SendFailure(f"codex {what} before the turn completed: {result.tail(500)}", acceptance="started",
                              code="codex-exec-failed")
        data = None
        if schema_path is not None and transcript.failure is None:
            messages = [event.text for event in transcript.events if isinstance(event, Message)]
            try:
                data = json.loads(messages[-1]) if messages else None
            except ValueError:
                data = None
        return transcript.turn(data)

    return define_sandbox_agent(
        name=name, send=send, evidence_coverage=codex_evidence_coverage, setup=setup, ensure=ensure,
    )


__all__ = ["CodexTranscript", "codex_agent", "codex_evidence_coverage", "turn_from_codex_events"]
