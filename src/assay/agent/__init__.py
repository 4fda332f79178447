"""Agent evals (NiceEval's model): evals drive an agent through `t` and assert on its event stream.

Authoring names live here: `define_eval`, `Experiment`, `define_agent`, `define_sandbox_agent` and the
sandbox providers, the event and turn model, and the matchers. The runner and CLI import their own modules.
"""

from typing import TYPE_CHECKING

from assay.core.lazy_names import lazy_names

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported from its module on first use
    from assay.agent.adapter import Agent, DefinedAgent, SendFailure, define_agent
    from assay.agent.assertions import command_succeeded
    from assay.agent.authoring import Answer, EvalContext, SessionHandle, TurnHandle, at_least
    from assay.agent.logical_command import (
        command_projection, normalize_logical_command, not_command_projection, opaque_command_projection,
        shell_command_projection,
    )
    from assay.agent.context import AgentContext, CancelSignal, HookContext, SandboxAgentContext, Telemetry
    from assay.agent.definition import Eval, EvalDescriptor, EvalGroup, define_eval, define_eval_group, define_score_eval
    from assay.agent.experiment import Experiment
    from assay.agent.judging import Judge, JudgeRequest, JudgeScore
    from assay.agent.matchers import (
        Matcher, Outcome, Unavailable, and_, command_match, define_score_match, define_value_match, equals, event_match,
        excludes, has_sections, includes, includes_url, is_defined, is_false, is_true, json_match, matches, not_, or_, pattern,
        references_any_path, satisfies, similarity, tool_match,
    )
    from assay.agent.model import (
        COMPLETE, MISSING, Compaction, ContextInjected, Coverage, ErrorEvent, EvidenceCoverage, InputFile, InputOption,
        InputRequest, InputRequested, InputResponse, Message, OperationFinished, OperationStarted, SkillLoaded,
        SubagentOperation, Thinking, ToolOperation, Turn, TurnInput, Usage, complete_evidence_coverage, message, partial,
        tool_call, tool_result, unavailable,
    )
    from assay.agent.sandbox import (
        AgentEnsure, CommandResult, Sandbox, SandboxAgent, define_sandbox, define_sandbox_agent, local_sandbox,
        sandbox_layer,
    )
    from assay.agent.sandbox.docker import docker_sandbox
    from assay.agent.session import AgentSession, SessionSlot, create_session_slot

__getattr__, __dir__ = lazy_names(globals(), {
    "assay.agent.adapter": ("Agent", "DefinedAgent", "SendFailure", "define_agent"),
    "assay.agent.assertions": ("command_succeeded",),
    "assay.agent.authoring": ("Answer", "EvalContext", "SessionHandle", "TurnHandle", "at_least"),
    "assay.agent.logical_command": (
        "command_projection", "normalize_logical_command", "not_command_projection", "opaque_command_projection",
        "shell_command_projection",
    ),
    "assay.agent.context": ("AgentContext", "CancelSignal", "HookContext", "SandboxAgentContext", "Telemetry"),
    "assay.agent.definition": (
        "Eval", "EvalDescriptor", "EvalGroup", "define_eval", "define_eval_group", "define_score_eval",
    ),
    "assay.agent.experiment": ("Experiment",),
    "assay.agent.judging": ("Judge", "JudgeRequest", "JudgeScore"),
    "assay.agent.matchers": (
        "Matcher", "Outcome", "Unavailable", "and_", "command_match", "define_score_match", "define_value_match", "equals",
        "event_match", "excludes", "has_sections", "includes", "includes_url", "is_defined", "is_false", "is_true",
        "json_match", "matches", "not_", "or_", "pattern", "references_any_path", "satisfies", "similarity",
        "tool_match",
    ),
    "assay.agent.model": (
        "COMPLETE", "MISSING", "Compaction", "ContextInjected", "Coverage", "ErrorEvent", "EvidenceCoverage",
        "InputFile", "InputOption", "InputRequest", "InputRequested", "InputResponse", "Message",
        "OperationFinished", "OperationStarted", "SkillLoaded", "SubagentOperation", "Thinking", "ToolOperation",
        "Turn", "TurnInput", "Usage", "complete_evidence_coverage", "message", "partial", "tool_call", "tool_result",
        "unavailable",
    ),
    "assay.agent.sandbox": (
        "AgentEnsure", "CommandResult", "Sandbox", "SandboxAgent", "define_sandbox", "define_sandbox_agent",
        "local_sandbox", "sandbox_layer",
    ),
    "assay.agent.session": ("AgentSession", "SessionSlot", "create_session_slot"),
    "assay.agent.sandbox.docker": ("docker_sandbox",),
})


__all__ = [
    "AgentEnsure", "CommandResult", "Sandbox", "SandboxAgent", "SandboxAgentContext", "command_succeeded",
    "define_sandbox", "define_sandbox_agent", "docker_sandbox", "local_sandbox", "sandbox_layer",
    "COMPLETE", "MISSING", "Agent", "AgentContext", "AgentSession", "Answer", "CancelSignal", "Compaction",
    "ContextInjected", "Coverage", "DefinedAgent", "ErrorEvent", "Eval", "EvalContext", "EvalDescriptor", "EvalGroup",
    "EvidenceCoverage", "Experiment", "HookContext", "InputFile", "InputOption", "InputRequest", "InputRequested",
    "InputResponse", "Judge", "JudgeRequest", "JudgeScore", "Matcher", "Message", "OperationFinished",
    "OperationStarted", "Outcome", "SendFailure", "SessionHandle", "SessionSlot", "SkillLoaded", "SubagentOperation",
    "Telemetry", "Thinking", "ToolOperation", "Turn", "TurnHandle", "TurnInput", "Unavailable", "Usage", "and_",
    "at_least", "command_match", "command_projection", "complete_evidence_coverage", "create_session_slot",
    "define_agent", "define_eval", "define_eval_group", "define_score_eval", "define_score_match", "define_value_match", "equals", "event_match", "excludes",
    "has_sections", "includes", "includes_url", "is_defined", "is_false", "is_true", "json_match", "matches", "message",
    "normalize_logical_command", "not_", "not_command_projection", "opaque_command_projection", "or_", "partial",
    "pattern", "references_any_path", "satisfies", "shell_command_projection", "similarity", "tool_call",
    "tool_match", "tool_result", "unavailable",
]
