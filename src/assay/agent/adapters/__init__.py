"""Official agent adapters: OpenAI Chat Completions and Responses (with tool loops), HTTP and process agents, Codex
and Claude Code in a sandbox, the Claude Agent SDK, pydantic-ai, LangGraph and AI SDK chat routes; and the frame and delta helpers for a streaming
agent of your own.

Each factory returns a configured agent for an `Experiment`; the converters turn one provider
response into a `Turn` for adapters you write yourself. Each name is imported from its module when first
read (`core/lazy_names.py`): a project using `openai_chat_agent` does not import the Codex or process adapters.
"""

from typing import TYPE_CHECKING

from assay.core.lazy_names import lazy_names

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported from its module on first use
    from assay.agent.adapters.claude_agent_sdk import (
        ClaudeSdkTranscript, claude_agent_sdk_agent, claude_agent_sdk_evidence_coverage, turn_from_claude_agent_sdk,
    )
    from assay.agent.adapters.claude_code import claude_code_agent, claude_code_evidence_coverage
    from assay.agent.adapters.codex import codex_agent, codex_evidence_coverage, turn_from_codex_events
    from assay.agent.adapters.endpoint import OpenAIEndpoint
    from assay.agent.adapters.frames import (
        DeltaStream, FrameStreamError, Pause, ResumedStream, SSEFrame, drive_frame_stream, resume_frame_stream,
        sse_json_frames,
    )
    from assay.agent.adapters.http_agent import http_agent
    from assay.agent.adapters.langgraph_agent import langgraph_agent, langgraph_evidence_coverage, turn_from_langchain_messages
    from assay.agent.adapters.openai_chat import (
        chat_agent_evidence_coverage, chat_completion_evidence_coverage, openai_chat_agent, turn_from_chat_completion,
    )
    from assay.agent.adapters.openai_responses import (
        openai_responses_agent, responses_agent_evidence_coverage, responses_evidence_coverage, turn_from_responses,
    )
    from assay.agent.adapters.process_agent import process_agent
    from assay.agent.adapters.pydantic_ai_agent import pydantic_ai_agent, pydantic_ai_evidence_coverage, turn_from_pydantic_ai
    from assay.agent.adapters.tools import Tool, ToolResult, as_tools, tool
    from assay.agent.adapters.ui_message_stream import ui_message_stream_agent, ui_message_stream_evidence_coverage

__all__ = [
    "ClaudeSdkTranscript", "DeltaStream", "FrameStreamError", "OpenAIEndpoint", "Pause", "ResumedStream", "SSEFrame",
    "Tool", "ToolResult", "as_tools", "chat_agent_evidence_coverage", "chat_completion_evidence_coverage",
    "claude_agent_sdk_agent", "claude_agent_sdk_evidence_coverage", "claude_code_agent",
    "claude_code_evidence_coverage", "codex_agent", "codex_evidence_coverage", "drive_frame_stream", "http_agent",
    "langgraph_agent", "langgraph_evidence_coverage", "openai_chat_agent", "openai_responses_agent", "process_agent",
    "pydantic_ai_agent", "pydantic_ai_evidence_coverage", "responses_agent_evidence_coverage",
    "responses_evidence_coverage", "resume_frame_stream", "sse_json_frames", "tool", "turn_from_chat_completion",
    "turn_from_claude_agent_sdk", "turn_from_codex_events", "turn_from_langchain_messages", "turn_from_pydantic_ai",
    "turn_from_responses", "ui_message_stream_agent", "ui_message_stream_evidence_coverage",
]

__getattr__, __dir__ = lazy_names(globals(), {
    "assay.agent.adapters.claude_agent_sdk": (
        "ClaudeSdkTranscript", "claude_agent_sdk_agent", "claude_agent_sdk_evidence_coverage", "turn_from_claude_agent_sdk",
    ),
    "assay.agent.adapters.claude_code": ("claude_code_agent", "claude_code_evidence_coverage"),
    "assay.agent.adapters.codex": ("codex_agent", "codex_evidence_coverage", "turn_from_codex_events"),
    "assay.agent.adapters.endpoint": ("OpenAIEndpoint",),
    "assay.agent.adapters.frames": (
        "DeltaStream", "FrameStreamError", "Pause", "ResumedStream", "SSEFrame", "drive_frame_stream",
        "resume_frame_stream", "sse_json_frames",
    ),
    "assay.agent.adapters.http_agent": ("http_agent",),
    "assay.agent.adapters.langgraph_agent": ("langgraph_agent", "langgraph_evidence_coverage", "turn_from_langchain_messages"),
    "assay.agent.adapters.openai_chat": (
        "chat_agent_evidence_coverage", "chat_completion_evidence_coverage", "openai_chat_agent", "turn_from_chat_completion",
    ),
    "assay.agent.adapters.openai_responses": (
        "openai_responses_agent", "responses_agent_evidence_coverage", "responses_evidence_coverage", "turn_from_responses",
    ),
    "assay.agent.adapters.process_agent": ("process_agent",),
    "assay.agent.adapters.pydantic_ai_agent": ("pydantic_ai_agent", "pydantic_ai_evidence_coverage", "turn_from_pydantic_ai"),
    "assay.agent.adapters.tools": ("Tool", "ToolResult", "as_tools", "tool"),
    "assay.agent.adapters.ui_message_stream": ("ui_message_stream_agent", "ui_message_stream_evidence_coverage"),
})
