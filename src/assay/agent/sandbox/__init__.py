"""Sandboxes for agent evals: a workspace per attempt, commands in it, and what the agent changed there.

Providers (`local_sandbox`, `docker_sandbox`, `define_sandbox`) make template-bearing layers; `sandbox_layer`
adds command-only steps; `define_sandbox_agent` builds an agent that works inside the sandbox.
"""

from assay.agent.sandbox.agent import AgentEnsure, SandboxAgent, define_sandbox_agent
from assay.agent.sandbox.commands import (
    CommandResult,
    SandboxCommandError,
    SandboxError,
    SandboxRetired,
)
from assay.agent.sandbox.custom import define_sandbox
from assay.agent.sandbox.handle import Sandbox
from assay.agent.sandbox.interface import (
    CreateRequest,
    RawOutput,
    SandboxBackend,
    SandboxProvider,
)
from assay.agent.sandbox.layers import (
    SandboxLayer,
    command,
    install_tool,
    sandbox_layer,
    shell,
    upload,
)
from assay.agent.sandbox.local import local_sandbox


def __getattr__(name: str):  # `docker_sandbox` on first use: its module (tar, the SDK's shims) is not small
    if name == "docker_sandbox":
        from assay.agent.sandbox.docker import docker_sandbox

        return docker_sandbox
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AgentEnsure", "CommandResult", "CreateRequest", "RawOutput", "Sandbox", "SandboxAgent", "SandboxBackend",
    "SandboxCommandError", "SandboxError", "SandboxLayer", "SandboxProvider", "SandboxRetired", "command",
    "define_sandbox", "define_sandbox_agent", "docker_sandbox", "install_tool", "local_sandbox", "sandbox_layer",
    "shell", "upload",
]
