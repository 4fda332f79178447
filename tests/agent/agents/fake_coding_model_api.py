"""A fake Anthropic Messages API on 127.0.0.1 playing a coding model, for the real Claude Code CLI in tests.

It streams its replies as `fake_anthropic_api` does (server-sent events), and plays, from the newest user
message of the request:

- `run: COMMAND` (with the Bash tool offered): calls Bash with COMMAND; given its result, says
  `The command said: <first line>`;
- `answer in structure` (with the CLI's StructuredOutput tool offered, as `--json-schema` makes it):
  calls StructuredOutput with `{"answer": 42}`; given its result, says `Done.`;
- `skill: NAME` (with the Skill tool offered): calls Skill with NAME; given its result, says
  `The skill said: <what the tool result and the rest of that message said, on one line>`;
- `break the api`: answers HTTP 400 (`invalid_request_error`), which the CLI does not retry;
- `what did I ask`: lists the earlier user prompts of the conversation (so a resumed session shows);
- anything else: greets.

Every request body is kept in `requests` and its `x-api-key` header in `api_keys`.
"""

from __future__ import annotations

from typing import Any

from fake_anthropic_api import REFUSAL, FakeAnthropicApi

__all__ = ["GREETING", "REFUSAL", "FakeCodingModelApi", "reply"]

GREETING = "Hello from the fake coding model."


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [str(block.get("text", "")) for block in content or ()
            if isinstance(block, dict) and block.get("type") == "text"]


def _prompts(messages: list[dict[str, Any]]) -> list[str]:
    """The user's own prompts (not tool results, not the CLI's reminders), in order."""
    said = []
    for message in messages:
        if message.get("role") != "user":
            continue
        for text in _texts(message.get("content")):
            text = text.strip()
            if text and not text.startswith(("<system-reminder>", "[structured-output-enforce]", "<")):
                said.append(text)
    return said


def reply(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The reply's content blocks, or None for an HTTP error."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content") if isinstance(last.get("content"), list) else []
    results = [block for block in content if isinstance(block, dict) and block.get("type") == "tool_result"]
    if results:
        result = results[0]
        calls = {block.get("id"): block.get("name") for message in messages if message.get("role") == "assistant"
                 for block in message.get("content") or ()
                 if isinstance(block, dict) and block.get("type") == "tool_use"}
        if calls.get(result.get("tool_use_id")) == "StructuredOutput":
            return [{"type": "text", "text": "Done."}]
        if calls.get(result.get("tool_use_id")) == "Skill":  # (the skill's instructions: its result, or beside it)
            said = [text for text in [*_texts(result.get("content")), *_texts(content)]
                    if not text.lstrip().startswith("<system-reminder>")]
            return [{"type": "text", "text": "The skill said: " + " ".join(" ".join(said).split())}]
        raw = result.get("content")
        text = raw if isinstance(raw, str) else "".join(_texts(raw))
        lines = text.strip().splitlines()
        return [{"type": "text", "text": f"The command said: {lines[0] if lines else ''}"}]
    prompts = _prompts(messages)
    asked = prompts[-1] if prompts else ""
    offered = {tool.get("name") for tool in body.get("tools") or []}
    if asked.startswith("run: ") and "Bash" in offered:
        return [{"type": "tool_use", "id": f"toolu_bash_{len(messages)}", "name": "Bash",
                 "input": {"command": asked[len("run: "):], "description": "run what was asked"}}]
    if asked.startswith("skill: ") and "Skill" in offered:
        return [{"type": "tool_use", "id": f"toolu_skill_{len(messages)}", "name": "Skill",
                 "input": {"skill": asked[len("skill: "):].strip()}}]
    if "answer in structure" in asked and "StructuredOutput" in offered:
        return [{"type": "tool_use", "id": "toolu_structured", "name": "StructuredOutput", "input": {"answer": 42}}]
    if "break the api" in asked:
        return None
    if "what did I ask" in asked:
        return [{"type": "text", "text": "You asked: " + " | ".join(prompts[:-1])}]
    return [{"type": "text", "text": GREETING}]


class FakeCodingModelApi(FakeAnthropicApi):
    def __init__(self) -> None:
        super().__init__(reply)
