"""Sandboxes for agent evals: a workspace per attempt, commands in it, and what the agent changed there.

Providers (`local_sandbox`, `docker_sandbox`, `define_sandbox`) make template-bearing layers; `sandbox_layer`
adds command-only steps; `define_sandbox_agent` builds an agent that works inside the sandbox.
"""

from typing import TYPE_CHECKING

from assay.core.lazy_names import lazy_names

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported from its module on first use
    from assay.agent.sandbox.agent import AgentEnsure, SandboxAgent, define_sandbox_agent
    from assay.agent.sandbox.commands import (
        CommandResult,
        SandboxCommandError,
        SandboxError,
        SandboxRetired,
    )
    from assay.agent.sandbox.custom import define_sandbox
    from assay.agent.sandbox.docker import docker_sandbox
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

__getattr__, __dir__ = lazy_names(globals(), {
    "assay.agent.sandbox.agent": ("AgentEnsure", "SandboxAgent", "define_sandbox_agent"),
    "assay.agent.sandbox.commands": ("CommandResult", "SandboxCommandError", "SandboxError", "SandboxRetired"),
    "assay.agent.sandbox.custom": ("define_sandbox",),
    "assay.agent.sandbox.handle": ("Sandbox",),
    "assay.agent.sandbox.interface": ("CreateRequest", "RawOutput", "SandboxBackend", "SandboxProvider"),
    "assay.agent.sandbox.layers": ("SandboxLayer", "command", "install_tool", "sandbox_layer", "shell", "upload"),
    "assay.agent.sandbox.local": ("local_sandbox",),
    "assay.agent.sandbox.docker": ("docker_sandbox",),
})


__all__ = [
    "AgentEnsure", "CommandResult", "CreateRequest", "RawOutput", "Sandbox", "SandboxAgent", "SandboxBackend",
    "SandboxCommandError", "SandboxError", "SandboxLayer", "SandboxProvider", "SandboxRetired", "command",
    "define_sandbox", "define_sandbox_agent", "docker_sandbox", "install_tool", "local_sandbox", "sandbox_layer",
    "shell", "upload",
]
