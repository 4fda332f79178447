"""`claude_agent_sdk_agent`: the real Claude Agent SDK (its `query()`, its control protocol, its message parser)
driven by evals, with a scripted Claude Code CLI behind the SDK's own `Transport` interface in place of the
subprocess (tests/agent/agents/scripted_claude_cli.py), so every frame goes through the SDK as it would from
the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_helpers import run_one
from pydantic import BaseModel

from assay.agent import equals, includes, tool_match
from assay.agent.adapters.claude_agent_sdk import (
    ClaudeSdkTranscript, claude_agent_sdk_agent, claude_agent_sdk_evidence_coverage, turn_from_claude_agent_sdk,
)

pytest.importorskip("claude_agent_sdk")
AGENTS = Path(__file__).parent / "agents"
sys.path.insert(0, str(AGENTS))
from scripted_claude_cli import Play, scripted, shop  # noqa: E402

from claude_agent_sdk import ClaudeAgentOptions, PermissionResultAllow, PermissionResultDeny  # noqa: E402


def unmatched(result):
    return [a for a in result.assertions if a["status"] != "matched"] or result.error


async def coding(play: Play) -> None:
    """A coding session: thinks, runs the tests (they fail), reads a file, edits it, runs them again."""
    play.think("I should run the tests first.")
    play.call("toolu_1", "Bash", {"command": "pytest -q", "description": "run the tests"})
    play.tool_result("toolu_1", "1 failed", is_error=True)
    play.call("toolu_2", "Read", {"file_path": "/work/shop.py"})
    play.tool_result("toolu_2", [{"type": "text", "text": "def total(): return 0"}])
    play.call("toolu_3", "Edit", {"file_path": "/work/shop.py", "old_string": "0", "new_string": "42"})
    play.tool_result("toolu_3", "The file has been updated.")
    play.say("I fixed total(); the tests pass now.")


def test_text_thinking_paired_tool_calls_a_failed_one_and_usage():
    made = []
    agent = claude_agent_sdk_agent(transport=scripted(coding, made=made))

    async def body(t):
        turn = await t.send("Fix the failing test")
        t.succeeded()
        turn.called_tool(tool_match("Bash", input={"command": "pytest -q"}, status="failed", output="1 failed"))
        turn.called_tool(tool_match("Read", status="completed", output="def total(): return 0"))
        turn.called_tool(tool_match("Edit", input={"new_string": "42"}, status="completed"))
        t.check(t.reply, equals("I fixed total(); the tests pass now."))

    result = run_one(agent, body, model="claude-test-model", reasoning_effort="low")
    assert result.verdict == "passed", unmatched(result)
    events = result.turns[0]["events"]
    assert [event["type"] for event in events] == [
        "thinking", *["operation.started", "operation.finished"] * 3, "message"]
    assert events[0]["text"] == "I should run the tests first."
    started = {event["operation_id"]: event["operation"] for event in events if event["type"] == "operation.started"}
    assert started["toolu_1"]["tool"] == "shell" and started["toolu_1"]["command"]["logical"]["executable"] == "pytest"
    assert (started["toolu_2"]["tool"], started["toolu_2"]["command"]) == ("file_read", {"kind": "not-command"})
    assert started["toolu_3"]["tool"] == "file_edit"
    # the result's usage: Anthropic's input_tokens already leave out the cache reads and writes; its cost as reported
    assert result.turns[0]["usage"] == {"input_tokens": 40, "output_tokens": 12, "cache_read_tokens": 300,
                                        "cache_creation_tokens": 20, "cost_usd": 0.0123}
    # the experiment's model and effort went into the query's options; the SDK's initialize handshake happened
    [cli] = made
    assert (cli.options.model, cli.options.effort, cli.options.resume) == ("claude-test-model", "low", None)
    assert cli.initialize is not None and cli.initialize["subtype"] == "initialize"
    [prompt] = [frame for frame in cli.written if frame["type"] == "user"]
    assert prompt["message"] == {"role": "user", "content": "Fix the failing test"}


async def guarded(play: Play) -> None:
    """Asks permission for each tool over the control protocol, as the CLI does for a `can_use_tool` host."""
    for call_id, name, given in (("toolu_ls", "Bash", {"command": "ls"}), ("toolu_rm", "Bash", {"command": "rm -rf /"})):
        play.call(call_id, name, given)
        decision = await play.ask(call_id, name, given)
        if decision["behavior"] == "allow":
            play.tool_result(call_id, "shop.py")
        else:
            play.tool_result(call_id, decision["message"], is_error=True)
    play.say("I listed the files; I was not allowed to delete anything.")
    listed = "permission_denials" in play.prompt  # (the real CLI lists denials; this script only when asked)
    play.result("done", permission_denials=[{"tool_name": "Bash", "tool_use_id": "toolu_rm",
                                             "tool_input": {"command": "rm -rf /"}}] if listed else [])


@pytest.mark.parametrize("prompt", ["clean up", "clean up (permission_denials)"], ids=["can_use_tool", "result"])
def test_a_denied_call_is_rejected_from_can_use_tool_or_the_results_permission_denials(prompt):
    asked = []

    async def can_use_tool(name, given, context):
        asked.append((name, given, context.tool_use_id))
        if given["command"].startswith("rm"):
            return PermissionResultDeny(message="Deleting is not allowed")
        return PermissionResultAllow()

    agent = claude_agent_sdk_agent(ClaudeAgentOptions(can_use_tool=can_use_tool), transport=scripted(guarded))

    async def body(t):
        turn = await t.send(prompt)
        t.succeeded()
        turn.called_tool(tool_match("Bash", input={"command": "ls"}, status="completed"))
        turn.called_tool(tool_match("Bash", input={"command": "rm -rf /"}, status="rejected",
                                    output="Deleting is not allowed"))

    result = run_one(agent, body)
    assert result.verdict == "passed", unmatched(result)
    assert asked == [("Bash", {"command": "ls"}, "toolu_ls"), ("Bash", {"command": "rm -rf /"}, "toolu_rm")]


def test_the_converter_alone_reads_denials_the_result_lists_and_marks_given():
    frames = [
        {"type": "system", "subtype": "init", "session_id": "s-1"},
        {"type": "assistant", "message": {"id": "m1", "model": "m", "content": [
            {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "a.txt"}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls | wc"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "Claude requested permissions to write", "is_error": True},
            {"type": "tool_result", "tool_use_id": "t2", "content": "3"}]}},
        # a denial the CLI lists for a call whose tool_use never reached the stream: started and rejected
        {"type": "result", "subtype": "success", "is_error": False, "session_id": "s-1", "result": "",
         "permission_denials": [{"tool_name": "Write", "tool_use_id": "t1", "tool_input": {}},
                                {"tool_name": "WebFetch", "tool_use_id": "t9", "tool_input": {"url": "http://x"}}]},
    ]
    turn = turn_from_claude_agent_sdk([json.dumps(frame) for frame in frames])
    finished = {event.operation_id: event for event in turn.events if event.type == "operation.finished"}
    assert {call: event.status for call, event in finished.items()} == {"t1": "rejected", "t2": "completed", "t9": "rejected"}
    assert finished["t1"].output == "Claude requested permissions to write"
    started = {event.operation_id: event.operation for event in turn.events if event.type == "operation.started"}
    assert started["t9"].input == {"url": "http://x"} and started["t9"].tool == "web_fetch"
    assert started["t2"].command == {"kind": "command", "original": {"state": "opaque", "reason": "compound-shell"}}
    assert turn.usage is None and turn.evidence_coverage["usage"].state == "unavailable"
    marked = turn_from_claude_agent_sdk(frames[:3], rejected={"t2": "the host said no"})
    assert [(event.operation_id, event.status) for event in marked.events if event.type == "operation.finished"] == [
        ("t1", "failed"), ("t2", "rejected")]
    assert marked.evidence_coverage["status"].state == "partial"  # no result: how it ended is not known
    # the CLI's own `permission_denied` notice, before the tool result, rejects the call without the result's list
    notice = {"type": "system", "subtype": "permission_denied", "tool_name": "Bash", "tool_use_id": "t2",
              "message": "ls needs approval"}
    noticed = turn_from_claude_agent_sdk([frames[0], frames[1], notice, frames[2]])
    assert [event.status for event in noticed.events if event.type == "operation.finished"] == ["failed", "rejected"]
    # a resumed session's result counts the whole session's cost: the turn's is what it grew by (or, from a CLI that
    # says so, this run's own per model)
    ended = {"type": "result", "subtype": "success", "is_error": False, "session_id": "s-1", "total_cost_usd": 0.5,
             "usage": {"input_tokens": 5, "output_tokens": 2, "output_tokens_details": {"thinking_tokens": 1}}}
    assert turn_from_claude_agent_sdk([ended], cost_before=0.375).usage.cost_usd == 0.125
    own = {**ended, "model_usage_since_last_result": {"a": {"costUSD": 0.25}, "b": {"costUSD": 0.0625}}}
    assert turn_from_claude_agent_sdk([own], cost_before=0.375).usage.cost_usd == 0.3125
    assert turn_from_claude_agent_sdk([ended]).usage.reasoning_tokens == 1


async def out_of_turns(play: Play) -> None:
    play.call("toolu_1", "Bash", {"command": "make"})
    play.tool_result("toolu_1", "ok")
    play.result(subtype="error_max_turns", is_error=True, errors=["Reached maximum number of turns (1)"])


def test_an_error_result_is_a_failed_turn_saying_why():
    async def body(t):
        turn = await t.send("build it")
        t.check(turn.status, equals("failed"))
        turn.called_tool(tool_match("Bash", status="completed"))

    result = run_one(claude_agent_sdk_agent(transport=scripted(out_of_turns)), body)
    assert result.verdict == "passed", unmatched(result)
    assert result.error is None  # the CLI's exit 1 after an error result (the SDK's ResultError) is not a send failure
    assert result.turns[0]["events"][-1] == {"type": "error", "message": "Reached maximum number of turns (1)"}
    assert result.turns[0]["status"] == "failed"


class Order(BaseModel):
    order_id: str
    status: str


async def structured(play: Play) -> None:
    schema = (play.options.output_format or {}).get("schema") or {}
    play.say("Here it is.")
    play.result('{"order_id": "1001"}', structured_output={"order_id": "1001", "status": "shipped"}
                if "status" in schema.get("properties", {}) else None)


def test_a_structured_output_is_the_turns_data():
    async def body(t):
        turn = await t.send("where is order 1001?", output=Order)
        t.check(turn.data, equals({"order_id": "1001", "status": "shipped"}))
        plain = await t.send("and now?")
        seen.append(plain.data)

    seen = []
    result = run_one(claude_agent_sdk_agent(transport=scripted(structured)), body)
    assert result.verdict == "passed", unmatched(result)
    assert seen == [None] and "data" not in result.turns[1]  # a turn that asked for no schema has no data
    assert result.turns[0]["data"] == {"order_id": "1001", "status": "shipped"}


def test_a_session_line_resumes_its_claude_session_and_a_new_line_starts_one():
    sessions, made = {}, []
    agent = claude_agent_sdk_agent(transport=scripted(shop, sessions, made))

    async def body(t):
        turn = await t.send("where is order 1001?")
        turn.called_tool(tool_match("mcp__shop__lookup_order", input={"order_id": "1001"},
                                    output={"order_id": "1001", "status": "shipped"}))
        again = await t.send("how many did I write?")
        t.check(again.message, equals("This session holds 2 message(s)."))
        other = t.new_session()
        await other.send("and here?")
        t.check(other.reply, equals("This session holds 1 message(s)."))

    result = run_one(agent, body)
    assert result.verdict == "passed", unmatched(result)
    assert [turn["usage"]["cost_usd"] for turn in result.turns] == [0.0123] * 3  # each turn's own, not the session's
    first, second, third = made
    assert first.options.resume is None and second.options.resume == first.session_id
    assert third.options.resume is None and third.session_id != first.session_id
    assert sessions[first.session_id] == ["where is order 1001?", "how many did I write?"]


async def delegating(play: Play) -> None:
    play.call("toolu_task", "Task", {"description": "find the bug", "prompt": "look at shop.py"})
    play.say("Let me read it.", parent="toolu_task")  # a subagent's text: not the reply
    play.call("toolu_sub", "Grep", {"pattern": "total"}, parent="toolu_task")
    play.tool_result("toolu_sub", "shop.py:1", parent="toolu_task")
    play.tool_result("toolu_task", [{"type": "text", "text": "total() returns 0"}])
    play.system("compact_boundary", compact_metadata={"trigger": "auto", "pre_tokens": 180000})
    play.say("The subagent found it: total() returns 0.")


def test_a_subagents_calls_are_the_turns_and_a_compaction_is_an_event():
    async def body(t):
        turn = await t.send("find the bug")
        turn.called_tool(tool_match("Task", status="completed", output="total() returns 0"))
        turn.called_tool(tool_match("Grep", input={"pattern": "total"}, status="completed"))
        t.check(t.reply, equals("The subagent found it: total() returns 0."))

    result = run_one(claude_agent_sdk_agent(transport=scripted(delegating)), body)
    assert result.verdict == "passed", unmatched(result)
    events = result.turns[0]["events"]
    assert [event["text"] for event in events if event["type"] == "message"] == [
        "The subagent found it: total() returns 0."]
    assert {"type": "compaction", "reason": "auto"} in events
    assert next(event for event in events if event["type"] == "operation.started")["operation"]["tool"] == "agent_task"


def test_the_transcript_takes_the_sdks_own_message_objects():
    from claude_agent_sdk import (
        AssistantMessage, ResultMessage, SystemMessage, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock,
        UserMessage,
    )

    transcript = ClaudeSdkTranscript()
    for message in (
        SystemMessage("init", {"type": "system", "subtype": "init", "session_id": "s-9"}),
        AssistantMessage([ThinkingBlock("hmm", "sig"), ToolUseBlock("u1", "Glob", {"pattern": "*.py"})], "m"),
        UserMessage([ToolResultBlock("u1", "a.py", None)]),
        AssistantMessage([TextBlock("API Error: 529 overloaded")], "m", error="server_error"),
        ResultMessage("success", 1, 1, True, 1, "s-9", result="API Error: 529 overloaded",
                      usage={"input_tokens": 7, "output_tokens": 0}, total_cost_usd=0.5),
    ):
        transcript.feed(message)
    turn = transcript.turn()
    assert transcript.session_id == "s-9"
    assert [type(event).__name__ for event in turn.events] == [
        "Thinking", "OperationStarted", "OperationFinished", "ErrorEvent", "ErrorEvent"]
    assert turn.events[3].message == "server_error: API Error: 529 overloaded"  # never the reply
    assert turn.status == "failed" and turn.usage.input_tokens == 7 and turn.usage.cost_usd == 0.5
    with pytest.raises(TypeError, match="Claude Agent SDK message"):
        transcript.feed(object())


def test_a_skill_loaded_and_a_server_tool_and_an_unknown_block_said_partial():
    frames = [
        {"type": "assistant", "message": {"id": "m1", "model": "m", "content": [
            {"type": "tool_use", "id": "s1", "name": "Skill", "input": {"skill": "pdf"}},
            {"type": "server_tool_use", "id": "w1", "name": "web_search", "input": {"query": "assay"}},
            {"type": "web_search_tool_result", "tool_use_id": "w1",
             "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"}},
            {"type": "hologram", "id": "h1"}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "s1", "content": "Launching skill: pdf"}]}},
        {"type": "result", "subtype": "success", "is_error": False, "session_id": "s", "usage": {"input_tokens": 1}},
    ]
    turn = turn_from_claude_agent_sdk(frames)
    assert [(event.type, getattr(event, "status", None)) for event in turn.events] == [
        ("operation.started", None), ("operation.started", None), ("operation.finished", "failed"),
        ("operation.finished", "completed"), ("skill.loaded", None)]
    assert turn.events[-1].skill == "pdf" and turn.events[1].operation.tool == "web_search"
    assert turn.evidence_coverage["actions"].state == "partial" and "hologram" in turn.evidence_coverage["actions"].reason


def test_files_reach_claude_as_content_blocks(tmp_path):
    async def describes(play: Play) -> None:
        play.say(repr([(block["type"], (block.get("source") or {}).get("media_type")) for block in play.content]))

    picture = tmp_path / "pic.png"
    picture.write_bytes(b"\x89PNG")

    async def body(t):
        await t.send_file(picture, "what is this?")
        t.check(t.reply, equals("[('image', 'image/png'), ('text', None)]"))

    result = run_one(claude_agent_sdk_agent(transport=scripted(describes)), body)
    assert result.verdict == "passed", unmatched(result)


def test_misused_options_and_transport_are_named():
    with pytest.raises(ValueError, match="resume.*resumes it itself"):
        claude_agent_sdk_agent(ClaudeAgentOptions(resume="abc"))
    with pytest.raises(TypeError, match="ClaudeAgentOptions"):
        claude_agent_sdk_agent({"model": "x"})
    with pytest.raises(TypeError, match="transport=lambda options"):
        claude_agent_sdk_agent(transport=scripted(shop)(ClaudeAgentOptions()))
    assert claude_agent_sdk_agent(transport=scripted(shop)).evidence_coverage == claude_agent_sdk_evidence_coverage


EXPERIMENT = """
import sys
sys.path.insert(0, {agents!r})
from scripted_claude_cli import scripted, shop
from assay.agent import Experiment
from assay.agent.adapters.claude_agent_sdk import claude_agent_sdk_agent

experiment = Experiment(agent=claude_agent_sdk_agent(transport=scripted(shop)))
"""
EVAL = """
from assay.agent import define_eval, equals, includes, tool_match

@define_eval
async def order(t):
    turn = await t.send("where is order 1001?")
    t.succeeded()
    turn.called_tool(tool_match("mcp__shop__lookup_order", output={{"status": "shipped"}}))
    t.check(t.reply, includes("shipped"))
    again = await t.send("and how many messages?")
    t.check(again.message, equals({expected!r}))
"""


@pytest.mark.parametrize("expected,code,verdict", [("This session holds 2 message(s).", 0, "PASSED"),
                                                   ("This session holds 1 message(s).", 1, "FAILED")])
def test_a_project_run_through_the_cli(tmp_path, expected, code, verdict):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "evals").mkdir()
    (tmp_path / "experiments" / "claude.py").write_text(textwrap.dedent(EXPERIMENT.format(agents=str(AGENTS))))
    (tmp_path / "evals" / "shop_eval.py").write_text(textwrap.dedent(EVAL.format(expected=expected)))
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == code, done.stdout + done.stderr
    assert verdict in done.stdout and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr


def _bundled_cli() -> Path | None:
    import claude_agent_sdk

    found = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return found if found.is_file() and os.access(found, os.X_OK) else None


@pytest.mark.skipif(_bundled_cli() is None, reason="this claude-agent-sdk wheel bundles no Claude Code CLI")
def test_the_real_claude_code_cli_against_a_fake_messages_api(tmp_path):
    """End to end, offline: the SDK starts the CLI its wheel bundles, which calls a fake Messages API on 127.0.0.1.
    The CLI denies the shell command that would write a file (default permission mode), then resumes the session."""
    from fake_anthropic_api import COMMAND, GREETING, FakeAnthropicApi

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with FakeAnthropicApi() as api:
        environment = {
            "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "test", "ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_USE_BEDROCK": "",
            "CLAUDE_CODE_USE_VERTEX": "",
        }
        agent = claude_agent_sdk_agent(ClaudeAgentOptions(cwd=str(work), env=environment))

        async def body(t):
            turn = await t.send("please run the command")
            t.succeeded()
            turn.called_tool(tool_match("Bash", input={"command": COMMAND}, status="rejected"))
            t.check(t.reply, includes("needs approval"))
            again = await t.send("hello again")
            t.check(again.message, equals(GREETING))

        result = run_one(agent, body, model="claude-sonnet-4-5", timeout=90)
    assert result.verdict == "passed", unmatched(result)
    assert not (work / "made-by-bash.txt").exists()
    first, second = result.turns
    assert first["usage"]["input_tokens"] == 22 and first["usage"]["output_tokens"] == 14
    assert first["usage"]["cost_usd"] > 0 and second["usage"]["cost_usd"] == pytest.approx(first["usage"]["cost_usd"] / 2)
    # the second turn resumed the session: the model was sent the first turn's conversation with the new message
    asked = [json.dumps(request["messages"]) for request in api.requests if request.get("tools")]
    assert "please run the command" in asked[-1] and "hello again" in asked[-1]
    assert {request["model"] for request in api.requests if request.get("tools")} == {"claude-sonnet-4-5"}
