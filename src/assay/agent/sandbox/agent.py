"""Sandbox agents: `define_sandbox_agent` builds an agent whose setup, send and teardown get `ctx.sandbox`.

A sandbox agent may declare `ensure` (probe its CLI, install it if missing, probe again) and a
command-only `sandbox` layer of its own; which provider makes the sandbox is the eval's or the
experiment's choice, never the agent's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.agent.adapter import check_agent
from assay.agent.model import EvidenceCoverage, Turn, TurnInput
from assay.agent.sandbox.layers import PrepareStep, SandboxLayer, check_layer, check_step, check_steps
from assay.agent.sandbox.linking import is_sandbox_agent  # noqa: F401 - part of this module's names
from assay.errors import ConfigError


@dataclass(frozen=True, slots=True)
class AgentEnsure:
    """How the runner makes sure the agent's CLI is in the sandbox (phase `agent.ensure`):
    `probe` (read-only) → the `install` steps if it failed → `probe` again."""

    probe: PrepareStep
    install: tuple[PrepareStep, ...] = ()
    identity: Mapping[str, str] = field(default_factory=dict)  # agent, version, revision: for the record

    def __post_init__(self) -> None:
        object.__setattr__(self, "probe", check_step(self.probe, "AgentEnsure probe"))
        object.__setattr__(self, "install", check_steps(self.install, "AgentEnsure install"))


@dataclass(frozen=True, slots=True)
class SandboxAgent:
    name: str
    evidence_coverage: EvidenceCoverage
    send: Callable[[TurnInput, Any], Awaitable[Turn]]
    setup: Callable[[Any], Any] | None = None
    teardown: Callable[[Any], Any] | None = None
    close: Callable[[], Awaitable[Any]] | None = None
    ensure: AgentEnsure | None = None
    sandbox: SandboxLayer | None = None  # command-only: the agent's own prepare steps and hooks
    kind: str = "sandbox"
    span_mapper: Callable[[list[dict[str, Any]]], Any] | None = None  # tags its spans for the waterfall


def define_sandbox_agent(
    *,
    name: str,
    send: Callable[[TurnInput, Any], Awaitable[Turn]],
    evidence_coverage: EvidenceCoverage,
    setup: Callable[[Any], Any] | None = None,
    teardown: Callable[[Any], Any] | None = None,
    close: Callable[[], Awaitable[Any]] | None = None,
    ensure: AgentEnsure | None = None,
    sandbox: SandboxLayer | None = None,
    span_mapper: Callable[[list[dict[str, Any]]], Any] | None = None,
) -> SandboxAgent:
    """An agent that works inside a sandbox: `send(input, ctx)` and its hooks get `ctx.sandbox`;
    `span_mapper` as `define_agent`'s (a coding CLI's own span shapes, tagged for the waterfall)."""
    from assay.agent.traces.mapping import MappedSend, check_span_mapper

    layer = check_layer(sandbox, f"define_sandbox_agent({name!r})")
    if layer is not None and layer.has_template:
        raise ConfigError(
            f"define_sandbox_agent({name!r}): an agent's sandbox layer is command-only (sandbox_layer()); "
            "the eval or the experiment chooses the provider"
        )
    if ensure is not None and not isinstance(ensure, AgentEnsure):
        raise ConfigError(f"define_sandbox_agent({name!r}): ensure must be an AgentEnsure(probe=..., install=...)")
    mapper = check_span_mapper(span_mapper, f"define_sandbox_agent({name!r})")
    agent = SandboxAgent(name, evidence_coverage, MappedSend(send, mapper, name) if mapper else send, setup, teardown, close,
                         ensure, layer, span_mapper=mapper)
    check_agent(agent, "define_sandbox_agent")
    return agent


def agent_file(sandbox: Any, folder: str, name: str) -> str:
    """Where a sandbox agent keeps a file of its own (a settings file, a schema, an image to pass its CLI): in the
    sandbox's home, outside the workdir so it is not in the agent's diff; in `/tmp` only in a sandbox with no known
    home. (Not `/tmp` first: a local sandbox without bubblewrap shares the host's `/tmp`, which it refuses.)"""
    from assay.agent.sandbox.commands import SandboxError

    try:
        return sandbox.path(f"~/{folder}/{name}")
    except SandboxError:
        return f"/tmp/{folder}/{name}"


__all__ = ["AgentEnsure", "SandboxAgent", "agent_file", "define_sandbox_agent", "is_sandbox_agent"]
