"""The Codex sandbox agent: its converter on recorded `codex exec --json` transcripts, and the whole path
(ensure, setup manifest, send, resume, file edits attributed, credentials redacted) against a fake CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sandbox_helpers import run_one_linked, sandbox_dir  # noqa: F401

from assay.agent import command_succeeded, define_eval, includes, local_sandbox
from assay.agent.adapters import codex_agent, turn_from_codex_events
from assay.agent.model import (
    ErrorEvent,
    Message,
    OperationFinished,
    OperationStarted,
    Thinking,
)
from assay.agent.sandbox import command, upload
from assay.errors import ConfigError

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
KEY = "sk-test-codex-key-0123456789"


CLI = "../home/bin/codex"  # relative to the workdir: the sandbox's own home (the host's /tmp is not visible)


@pytest.fixture
def fake_codex(tmp_path):
    """Install steps putting the fake CLI in the sandbox, behind a launcher that uses this interpreter."""
    launcher = tmp_path / "codex"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'fake_codex.py'} \"$@\"\n")
    launcher.chmod(0o755)
    return [upload(launcher, CLI), command("chmod", "+x", CLI)]


def test_a_recorded_transcript_becomes_paired_operations_messages_and_usage():
    turn = turn_from_codex_events((DATA / "codex_fix_test.jsonl").read_text().splitlines())
    kinds = [(type(event).__name__, getattr(event, "operation_id", "")) for event in turn.events]
    assert kinds == [
        ("Thinking", ""), ("OperationStarted", "item_1"), ("OperationFinished", "item_1"),
        ("OperationStarted", "item_2"), ("OperationFinished", "item_2"),
        ("OperationStarted", "item_4"), ("OperationFinished", "item_4"),
        ("OperationStarted", "item_5"), ("OperationFinished", "item_5"),
        ("OperationStarted", "item_6"), ("OperationFinished", "item_6"), ("Message", ""),
    ]
    first = turn.events[1]
    assert isinstance(first, OperationStarted) and first.operation.name == "shell"
    assert first.operation.input == {"command": "bash -lc 'python -m pytest -q'"}
    failed_run = turn.events[2]
    assert isinstance(failed_run, OperationFinished) and failed_run.status == "failed"
    assert failed_run.output == {"exit_code": 1, "output": "F.\n1 failed, 1 passed\n"}
    edit = turn.events[3]
    assert edit.operation.name == "apply_patch" and edit.operation.tool == "file_edit"
    assert edit.operation.input == {"changes": [{"path": "/workspace/calc.py", "kind": "update"}]}
    assert turn.events[7].operation.name == "search" and turn.events[7].operation.input == {"q": "add"}
    assert turn.events[9].operation.input == {"query": "python unittest add"}
    assert isinstance(turn.events[0], Thinking) and isinstance(turn.events[-1], Message)
    assert turn.status == "completed" and turn.evidence_coverage is None
    assert (turn.usage.input_tokens, turn.usage.cache_read_tokens, turn.usage.output_tokens) == (315, 24448, 122)


def test_a_failed_turn_with_unknown_items_is_failed_and_downgrades_its_evidence():
    turn = turn_from_codex_events((DATA / "codex_failed_turn.jsonl").read_text().splitlines())
    assert turn.status == "failed"
    declined = turn.events[1]
    assert isinstance(declined, OperationFinished) and declined.status == "rejected"
    assert [event.message for event in turn.events if isinstance(event, ErrorEvent)] == [
        "stream disconnected before completion", "stream disconnected before completion"]
    assert turn.evidence_coverage["actions"].state == "partial"
    assert "item future_tool" in turn.evidence_coverage["actions"].reason
    assert turn.evidence_coverage["usage"].state == "unavailable"


def test_config_may_not_override_what_the_experiment_owns():
    with pytest.raises(ConfigError, match="must not set model"):
        codex_agent(config={"model": "o3"})


def test_the_whole_path_against_a_fake_cli(fake_codex):
    agent = codex_agent(command_name=CLI, install=fake_codex, api_key=KEY, config={"hide_agent_reasoning": False})

    async def test(t):
        await t.sandbox.write_text("calc.py", "def add(a, b):\n    return a - b\n")
        first = await t.send("run python3 -c 'print(2)'\nwrite calc.py: def add(a, b):\\n    return a + b\nsay fixed")
        first.called_tool("shell")
        first.called_tool("apply_patch")
        t.check(first.message, includes("fixed"))
        second = await t.send("remember\nrun echo key=$CODEX_API_KEY\nmodel")
        t.check(second.message, includes("model=codex-mini"))
        t.check(t.session_id, includes("thread-"))
        t.sandbox.changed_paths(["calc.py"])
        t.sandbox.file_changed("calc.py", status="modified", after=includes("a + b"))
        t.check(await t.sandbox.run_command(sys.executable, "-c", "import calc; assert calc.add(2, 2) == 4"),
                command_succeeded())
        t.max_tokens(5000)

    result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()), model="codex-mini",
                            reasoning_effort="low")
    assert result.verdict == "passed", (result.error, [a for a in result.assertions if a["status"] != "matched"])
    remembered = [e["text"] for e in result.turns[1]["events"] if e["type"] == "message"]
    assert remembered[0].startswith("earlier: run python3")  # the second send resumed the first thread
    assert remembered[-1] == 'model=codex-mini model_reasoning_effort="low"'
    stored = json.dumps(result.to_json())
    assert KEY not in stored and "key=[redacted]" in stored
    manifest = result.sandbox["artifacts"]["agent-setup.json"]
    assert manifest == {
        "agent": "codex", "command": CLI, "version": "codex-cli 0.42.0-fake", "model": "codex-mini",
        "reasoning_effort": "low", "config": {"hide_agent_reasoning": False}, "env": ["CODEX_API_KEY"],
        "credentials": "CODEX_API_KEY", "base_url": None, "extra_args": [],
    }
    exec_commands = [entry["command"] for entry in result.sandbox["commands"] if " exec --json" in entry["command"]]
    assert len(exec_commands) == 2 and " resume thread-" in exec_commands[1]
    assert result.usage["input_tokens"] == 2000 and result.usage["cache_read_tokens"] == 400


def test_ensure_installs_the_cli_when_the_probe_fails_and_not_when_it_is_there(fake_codex):
    async def test(t):
        await t.send("say hello")

    result = run_one_linked(codex_agent(command_name=CLI, install=fake_codex, api_key=KEY),
                            define_eval(test, sandbox=local_sandbox()))
    assert result.verdict == "passed", result.error
    assert result.sandbox["agent_ensure"]["installed"] is True
    preinstalled = local_sandbox().prepare(*fake_codex)
    again = run_one_linked(codex_agent(command_name=CLI, install=(), api_key=KEY), define_eval(test, sandbox=preinstalled))
    assert again.verdict == "passed" and again.sandbox["agent_ensure"]["installed"] is False
    missing = run_one_linked(codex_agent(command_name=CLI, install=(), api_key=KEY), define_eval(test, sandbox=local_sandbox()))
    assert missing.error["code"] == "agent-ensure-failed" and "no installer" in missing.error["message"]


def test_a_cli_that_dies_mid_turn_is_a_send_failure_and_a_refusal_a_failed_turn(fake_codex):
    agent = codex_agent(command_name=CLI, install=fake_codex, api_key=KEY)

    async def crashing(t):
        await t.send("crash")

    async def refusing(t):
        turn = await t.send("fail")
        t.check(turn.status, includes("failed"))

    crashed = run_one_linked(agent, define_eval(crashing, sandbox=local_sandbox()))
    assert crashed.error["code"] == "codex-exec-failed" and "exited with 3" in crashed.error["message"]
    refused = run_one_linked(agent, define_eval(refusing, sandbox=local_sandbox()))
    assert refused.verdict == "passed" and refused.turns[0]["status"] == "failed"


def test_without_credentials_the_cli_says_so(fake_codex, monkeypatch):
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    async def test(t):
        await t.send("say hi")

    result = run_one_linked(codex_agent(command_name=CLI, install=fake_codex), define_eval(test, sandbox=local_sandbox()))
    assert result.error["code"] == "codex-exec-failed"
    assert result.sandbox["artifacts"]["agent-setup.json"]["credentials"] == "none"


@pytest.mark.parametrize("isolation", ["none", "auto"])
def test_a_schema_and_an_image_reach_the_cli_whatever_the_sandbox_isolates_with(fake_codex, isolation):
    """The schema and image files were written to /tmp/…: a sandbox without bubblewrap, whose /tmp is the host's,
    refused them as outside the sandbox, so any `output=` or image send errored there."""
    import base64

    from assay.agent.model import InputFile

    image = InputFile("image/png", base64.b64encode(b"\x89PNG\r\n\x1a\n").decode(), "dot.png")

    async def test(t):
        await t.send("say {\"answer\": 4}", output={"type": "object", "properties": {"answer": {"type": "integer"}}},
                     files=[image])

    result = run_one_linked(codex_agent(command_name=CLI, install=fake_codex, api_key=KEY),
                            define_eval(test, sandbox=local_sandbox(isolation=isolation)))
    assert result.verdict == "passed", result.error
    (sent,) = [entry["command"] for entry in result.sandbox["commands"] if " exec --json" in entry["command"]]
    assert " --output-schema " in sent and " -i " in sent and "/tmp/assay-codex" not in sent
