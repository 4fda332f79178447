"""The Claude Code sandbox agent: the real CLI (the one the claude-agent-sdk wheel bundles) run in a local sandbox
against a fake Messages API on 127.0.0.1 (a Bash call that really writes a file, resume, usage and cost, an API
error, structured output, compaction, files, settings, the key redacted), a scripted fake CLI for the ways a run
can end without a result, and the options the experiment and the adapter own refused up front."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_projects import agent_project
from sandbox_helpers import run_one_linked, sandbox_dir  # noqa: F401

from assay.agent import define_eval, equals, includes, local_sandbox, tool_match
from assay.agent.adapters.claude_code import claude_code_agent
from assay.agent.model import InputFile
from assay.agent.sandbox import command, upload
from assay.errors import ConfigError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "agents"))
from fake_coding_model_api import GREETING, REFUSAL, FakeCodingModelApi  # noqa: E402

import claude_agent_sdk  # noqa: E402

REAL_CLI = str(Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")
KEY = "sk-ant-test-claude-code-0123456789"
MODEL = "claude-sonnet-4-5"
pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(not os.access(REAL_CLI, os.X_OK), reason="the claude-agent-sdk wheel bundles no CLI here"),
]


@pytest.fixture
def api():
    with FakeCodingModelApi() as server:
        yield server


def real(api, **options):
    return claude_code_agent(command_name=REAL_CLI, install=(), api_key=KEY, base_url=api.url, **options)


def run(agent, test, **fields):
    return run_one_linked(agent, define_eval(test, sandbox=local_sandbox()), model=MODEL, timeout=60, **fields)


def unmatched(result):
    return result.error, [assertion for assertion in result.assertions if assertion["status"] != "matched"]


def agent_commands(result):
    return [entry["command"] for entry in result.sandbox["commands"]
            if " --output-format stream-json" in entry["command"]]


# -- the real CLI ------------------------------------------------------------------------------------------------

def test_a_bash_call_writes_a_file_the_second_send_resumes_and_the_key_is_redacted(api):
    async def test(t):
        first = await t.send("run: echo made > made-by-bash.txt && echo key=$ANTHROPIC_API_KEY")
        t.succeeded()
        first.called_tool(tool_match("Bash", input={"command": includes("made-by-bash.txt")}, status="completed"))
        t.check(first.message, includes("The command said: key=[redacted]"))
        second = await t.send("what did I ask")
        t.check(second.message, includes("You asked: run: echo made > made-by-bash.txt"))
        sessions.append(t.session_id)
        t.sandbox.changed_paths(["made-by-bash.txt"])
        t.sandbox.file_changed("made-by-bash.txt", status="added", after="made\n")

    sessions = []
    result = run(real(api), test, reasoning_effort="high")
    assert result.verdict == "passed", unmatched(result)
    first, second = result.turns
    bash = [event for event in first["events"] if event["type"] == "operation.started"][0]
    assert bash["operation"]["tool"] == "shell"
    assert (first["usage"]["input_tokens"], first["usage"]["output_tokens"]) == (22, 14)  # two model calls
    assert first["usage"]["cost_usd"] > 0
    # (the second turn's cost is its own one call, not the session's three)
    assert second["usage"]["cost_usd"] == pytest.approx(first["usage"]["cost_usd"] / 2)
    sent = agent_commands(result)
    assert len(sent) == 2 and "--resume" not in sent[0] and " --resume " in sent[1]
    assert f"--model {MODEL}" in sent[0] and "--effort high" in sent[0] and "--dangerously-skip-permissions" in sent[0]
    assert sent[1].split(" --resume ")[1].split()[0] == sessions[0]  # the id the first run's stream gave
    assert api.api_keys and set(api.api_keys) == {KEY}  # the CLI had the key; nothing stored has it
    stored = json.dumps(result.to_json())
    assert KEY not in stored and "key=[redacted]" in stored
    manifest = result.sandbox["artifacts"]["agent-setup.json"]
    assert manifest["version"].startswith("2.") and "Claude Code" in manifest["version"]
    assert {key: manifest[key] for key in ("agent", "model", "reasoning_effort", "credentials", "base_url")} == {
        "agent": "claude-code", "model": MODEL, "reasoning_effort": "high", "credentials": "ANTHROPIC_API_KEY",
        "base_url": api.url}
    assert "ANTHROPIC_API_KEY" in manifest["env"] and KEY not in json.dumps(manifest)


def test_an_api_error_is_a_failed_turn_saying_why(api):
    async def test(t):
        turn = await t.send("please break the api")
        t.check(turn.status, equals("failed"))

    result = run(real(api), test)
    assert result.verdict == "passed", unmatched(result)
    errors = [event["message"] for event in result.turns[0]["events"] if event["type"] == "error"]
    assert errors and any(REFUSAL in message or "400" in message for message in errors), errors


def test_structured_output_is_the_turns_data(api):
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}

    async def test(t):
        turn = await t.send("answer in structure", output=schema)
        t.check(turn.data, equals({"answer": 42}))

    result = run(real(api), test)
    assert result.verdict == "passed", unmatched(result)
    assert "--json-schema" in agent_commands(result)[0]


def test_a_compaction_is_an_event_of_the_turn_that_compacted(api):
    async def test(t):
        await t.send("hello")
        await t.send("/compact")

    result = run(real(api), test)
    assert result.verdict == "passed", unmatched(result)
    assert [event for event in result.turns[0]["events"] if event["type"] == "compaction"] == []
    compactions = [event for event in result.turns[1]["events"] if event["type"] == "compaction"]
    assert len(compactions) == 1 and compactions[0].get("reason") == "manual", result.turns[1]["events"]


def test_files_reach_the_model_as_content_blocks(api):
    pixel = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

    async def test(t):
        turn = await t.send("what is in the picture", files=[
            InputFile("image/png", pixel, "dot.png"),
            InputFile("text/plain", base64.b64encode(b"the notes").decode(), "notes.txt"),
            InputFile("application/zip", base64.b64encode(b"PK").decode(), "bundle.zip"),
        ])
        t.check(turn.message, equals(GREETING))

    result = run(real(api), test)
    assert result.verdict == "passed", unmatched(result)
    blocks = [block for block in api.requests[-1]["messages"][-1]["content"]  # (not the CLI's own reminders)
              if block.get("type") != "text"
              or block["text"].strip() in ("notes.txt:\nthe notes", "what is in the picture")]
    assert [block["type"] for block in blocks] == ["image", "text", "text"], blocks
    assert blocks[0]["source"]["data"] == pixel and blocks[1]["text"] == "notes.txt:\nthe notes"
    assert "--input-format stream-json" in agent_commands(result)[0]
    assert any(d["code"] == "claude-code-file-skipped" and "bundle.zip" in d["message"] for d in result.diagnostics)


def test_settings_reach_the_cli(api):
    """A deny rule in the settings takes Bash away from the model: the settings file was read."""
    async def test(t):
        turn = await t.send("run: touch denied.txt")
        t.check(turn.message, equals(GREETING))
        t.sandbox.no_changes()

    result = run(real(api, settings={"permissions": {"deny": ["Bash"]}}), test)
    assert result.verdict == "passed", unmatched(result)
    offered = {tool["name"] for tool in api.requests[-1]["tools"]}
    assert "Bash" not in offered and "Read" in offered
    assert result.sandbox["artifacts"]["agent-setup.json"]["settings"] == {"permissions": {"deny": ["Bash"]}}


def test_the_key_from_the_hosts_environment_is_in_no_stored_file(api, tmp_path):
    """`assay agent run` as a user runs it, the key only in the host's ANTHROPIC_API_KEY: the store holds the
    Bash output that printed it, redacted."""
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "claude.py").write_text(textwrap.dedent(f"""
        import os
        from assay.agent import Experiment
        from assay.agent.adapters.claude_code import claude_code_agent

        claude = Experiment(agent=claude_code_agent(command_name={REAL_CLI!r}, install=(),
                                                    base_url=os.environ["FAKE_ANTHROPIC_URL"]),
                            model={MODEL!r}, timeout=60)
    """))
    (project / "evals" / "key_eval.py").write_text(textwrap.dedent("""
        from assay.agent import define_eval, includes, local_sandbox


        @define_eval(sandbox=local_sandbox())
        async def test(t):
            turn = await t.send("run: echo key=$ANTHROPIC_API_KEY")
            t.check(turn.message, includes("key=[redacted]"))
    """))
    store = tmp_path / "store"
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                          capture_output=True, text=True, timeout=80, check=False,
                          env={**os.environ, "ASSAY_STORE": str(store), "ANTHROPIC_API_KEY": KEY,
                               "FAKE_ANTHROPIC_URL": api.url})
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(api.api_keys) == {KEY}
    files = [path for path in store.rglob("*") if path.is_file()] if store.is_dir() else [store]
    contents = b"".join(path.read_bytes() for path in files)
    assert files and b"[redacted]" in contents
    assert KEY.encode() not in contents
    assert KEY not in done.stdout + done.stderr


# -- a scripted CLI --------------------------------------------------------------------------------------------

FAKE = "../home/bin/claude"  # relative to the workdir: the sandbox's own home


@pytest.fixture
def fake_claude(tmp_path):
    launcher = tmp_path / "claude"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'fake_claude.py'} \"$@\"\n")
    launcher.chmod(0o755)
    return [upload(launcher, FAKE), command("chmod", "+x", FAKE)]


def test_settings_mcp_servers_and_extra_args_reach_the_cli_as_files_outside_the_workdir(fake_claude):
    settings = {"includeCoAuthoredBy": False}
    servers = {"docs": {"command": "docs-mcp", "args": ["--stdio"], "env": {"DOCS_TOKEN": "tok-secret-123"}}}
    agent = claude_code_agent(command_name=FAKE, install=fake_claude, api_key=KEY, settings=settings,
                              mcp_servers=servers, env={"MY_FLAG": "1"}, extra_args=["--max-turns", "5"])

    async def test(t):
        turn = await t.send("args")
        t.sandbox.no_changes()
        t.check(turn.status, equals("completed"))

    result = run(agent, test)
    assert result.verdict == "passed", unmatched(result)
    said = json.loads([event["text"] for event in result.turns[0]["events"] if event["type"] == "message"][0])
    argv = said["argv"]
    # (the server's token reached the CLI in the file, and is redacted where the CLI printed it, like the key)
    redacted = {"docs": {**servers["docs"], "env": {"DOCS_TOKEN": "[redacted]"}}}
    assert said["files"] == {"--settings": settings, "--mcp-config": {"mcpServers": redacted}}
    assert argv[argv.index("--max-turns") + 1] == "5" and argv[-2:] == ["--", "args"]
    manifest = result.sandbox["artifacts"]["agent-setup.json"]
    assert manifest["mcp_servers"] == ["docs"] and "tok-secret-123" not in json.dumps(manifest)
    assert manifest["env"] == sorted(["ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                                      "DISABLE_AUTOUPDATER", "IS_SANDBOX", "MY_FLAG"])
    assert manifest["version"] == "9.9.9 (Claude Code, fake)"


def test_a_run_without_a_result_is_a_send_failure_saying_whether_the_model_was_reached(fake_claude):
    agent = claude_code_agent(command_name=FAKE, install=fake_claude, api_key=KEY)

    def ending(prompt):
        async def test(t):
            await t.send(prompt)

        return run(agent, test)

    crashed = ending("crash")
    assert crashed.error["code"] == "claude-code-failed"
    assert "exited with 3 before the turn's result" in crashed.error["message"]
    assert "crashed" in crashed.error["message"]  # (the end of what it printed)
    silent = ending("silent")
    assert silent.error["code"] == "claude-code-failed"
    assert "exited with 2 before starting the session" in silent.error["message"]
    noisy = ending("noise")
    assert noisy.verdict == "passed" and noisy.turns[0]["status"] == "completed"


def test_a_resumed_sessions_cost_is_what_it_grew_by(fake_claude):
    """A CLI whose result counts only the session's total cost: each turn's cost is the difference."""
    async def test(t):
        await t.send("one")
        await t.send("two")
        await t.send("three")

    result = run(claude_code_agent(command_name=FAKE, install=fake_claude, api_key=KEY), test)
    assert result.verdict == "passed", unmatched(result)
    assert [turn["usage"]["cost_usd"] for turn in result.turns] == pytest.approx([0.01, 0.01, 0.01])
    assert [" --resume fake-session-1 " in line for line in agent_commands(result)] == [False, True, True]


def test_an_effort_claude_code_does_not_have_is_a_warning_and_no_flag(fake_claude):
    async def test(t):
        await t.send("hello")

    result = run(claude_code_agent(command_name=FAKE, install=fake_claude, api_key=KEY), test,
                 reasoning_effort="minimal")
    assert result.verdict == "passed", unmatched(result)
    assert "--effort" not in agent_commands(result)[0]
    assert [d["code"] for d in result.diagnostics if "effort" in d["code"]] == ["claude-code-effort-ignored"]


def test_the_cli_is_installed_when_its_probe_fails(fake_claude):
    async def test(t):
        await t.send("hello")

    result = run(claude_code_agent(command_name=FAKE, install=fake_claude, api_key=KEY), test)
    assert result.verdict == "passed", result.error
    assert result.sandbox["agent_ensure"]["installed"] is True
    missing = run(claude_code_agent(command_name=FAKE, install=(), api_key=KEY), test)
    assert missing.error["code"] == "agent-ensure-failed"


# -- misconfiguration ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "named"), [
    ({"settings": {"model": "opus"}}, "must not set model (the experiment's model sets it)"),
    ({"settings": {"env": {"X": "1"}}}, "must not set env (env= sets it)"),
    ({"settings": {"permissions": {"defaultMode": "plan"}}}, "must not set permissions.defaultMode"),
    ({"settings": {"mcpServers": {}}}, "must not set mcpServers (mcp_servers= sets it)"),
    ({"settings": ["model"]}, "settings takes a dict of Claude Code settings"),
    ({"env": {"ANTHROPIC_API_KEY": "sk-x"}}, "env must not set ANTHROPIC_API_KEY (set by api_key=)"),
    ({"env": {"PATH": "/bin"}}, "env must not set PATH"),
    ({"extra_args": ["--model", "opus"]}, "extra_args must not hold --model"),
    ({"mcp_servers": {"docs": {"args": []}}}, "mcp_servers['docs'] needs a stdio \"command\" or an HTTP \"url\""),
])
def test_options_the_experiment_and_the_adapter_own_are_refused_naming_them(options, named):
    with pytest.raises(ConfigError) as raised:
        claude_code_agent(**options)
    assert named in str(raised.value)


def test_a_settings_file_is_read_and_checked_like_a_dict(tmp_path):
    good = tmp_path / "settings.json"
    good.write_text('{"includeCoAuthoredBy": false}')
    claude_code_agent(settings=good)
    owned = tmp_path / "owned.json"
    owned.write_text('{"apiKeyHelper": "/bin/key"}')
    with pytest.raises(ConfigError, match=r"must not set apiKeyHelper \(api_key= sets it\)"):
        claude_code_agent(settings=owned)
    with pytest.raises(ConfigError, match="cannot be read"):
        claude_code_agent(settings=tmp_path / "missing.json")
    with pytest.raises(ConfigError) as raised:  # a relative path is this file's folder's, wherever pytest runs
        claude_code_agent(settings="fake_claude.py")
    assert f"settings file {str(HERE / 'fake_claude.py')!r} is not JSON" in str(raised.value)


def test_without_a_key_the_attempt_errors_saying_how_to_give_one(api, monkeypatch):
    """The CLI answers "Not logged in" as a reply of its own: no model was asked, so it is no failed turn of the
    agent's but an errored attempt."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    async def test(t):
        await t.send("hello")

    result = run(claude_code_agent(command_name=REAL_CLI, install=(), base_url=api.url), test)
    assert result.verdict == "errored" and result.error["code"] == "claude-code-unauthenticated", result.error
    assert "Not logged in" in result.error["message"] and "api_key=" in result.error["message"]
    assert result.sandbox["artifacts"]["agent-setup.json"]["credentials"] == "none"
    assert api.requests == []
