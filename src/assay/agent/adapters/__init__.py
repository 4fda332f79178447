"""Official agent adapters: OpenAI Chat Completions and Responses (with tool loops), HTTP and process agents, Codex.

Each factory returns a configured agent for an `Experiment`; the converters turn one provider
response into a `Turn` for adapters you write yourself.
"""

from assay.agent.adapters.codex import codex_agent, codex_evidence_coverage, turn_from_codex_events
from assay.agent.adapters.endpoint import OpenAIEndpoint
from assay.agent.adapters.http_agent import http_agent
from assay.agent.adapters.openai_chat import (
    chat_agent_evidence_coverage, chat_completion_evidence_coverage, openai_chat_agent, turn_from_chat_completion,
)
from assay.agent.adapters.openai_responses import (
    openai_responses_agent, responses_agent_evidence_coverage, responses_evidence_coverage, turn_from_responses,
)
from assay.agent.adapters.process_agent import process_agent
from assay.agent.adapters.tools import Tool, ToolResult, as_tools, tool

__all__ = [
    "codex_agent", "codex_evidence_coverage", "turn_from_codex_events",
    "OpenAIEndpoint", "Tool", "ToolResult", "as_tools", "chat_agent_evidence_coverage",
    "chat_completion_evidence_coverage", "http_agent", "openai_chat_agent", "openai_responses_agent",
    "process_agent", "responses_agent_evidence_coverage", "responses_evidence_coverage", "tool",
    "turn_from_chat_completion", "turn_from_responses",
]
