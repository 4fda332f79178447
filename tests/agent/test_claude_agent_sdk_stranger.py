"""`claude_agent_sdk_agent` as a new user meets it: the docs' example run with `--project` from another folder, and
the typos a user makes in its options, each refused with one message naming the thing and the fix."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from agent_helpers import run_one

from assay.agent.adapters.claude_agent_sdk import ClaudeSdkTranscript, claude_agent_sdk_agent, turn_from_claude_agent_sdk
from assay.agent.discovery import _LOADING_PROJECT
from assay.agent.model import Message

pytest.importorskip("claude_agent_sdk")
sys.path.insert(0, str(Path(__file__).parent / "agents"))
from scripted_claude_cli import Play, scripted  # noqa: E402

from claude_agent_sdk import ClaudeAgentOptions  # noqa: E402


async def hello(play: Play) -> None:
    play.say("Hello.")


def made_in_project(folder: Path, *args, **kwargs):
    """The agent as an experiment file of the project at `folder` makes it (`assay agent run --project folder`)."""
    token = _LOADING_PROJECT.set(folder)
    try:
        return claude_agent_sdk_agent(*args, **kwargs)
    finally:
        _LOADING_PROJECT.reset(token)


def test_a_relative_cwd_is_the_project_folder_wherever_assay_was_started(tmp_path, monkeypatch):
    # the docs' example says cwd="shop": run from another folder, the CLI must still work in the project's shop/
    (tmp_path / "shop").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    made = []
    agent = made_in_project(tmp_path, ClaudeAgentOptions(cwd="shop"), transport=scripted(hello, made=made))

    async def body(t):
        await t.send("hi")
        t.succeeded()

    result = run_one(agent, body)
    assert result.verdict == "passed", result.error
    assert [Path(cli.options.cwd) for cli in made] == [tmp_path / "shop"]


def test_no_cwd_is_the_project_folder_and_a_function_s_relative_cwd_too(tmp_path, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    made = []
    plain = made_in_project(tmp_path, transport=scripted(hello, made=made))
    per_turn = made_in_project(tmp_path, lambda ctx: ClaudeAgentOptions(cwd="work"), transport=scripted(hello, made=made))

    async def body(t):
        await t.send("hi")

    for agent in (plain, per_turn):
        assert run_one(agent, body).verdict == "passed"
    assert [Path(cli.options.cwd) for cli in made] == [tmp_path, tmp_path / "work"]


def test_a_cwd_that_is_no_folder_is_refused_when_the_agent_is_made_not_retried_for_35_seconds(tmp_path):
    with pytest.raises(ValueError, match=r"cwd='shpo' is not a folder \(.*shpo does not exist\).*relative to the project"):
        made_in_project(tmp_path, ClaudeAgentOptions(cwd="shpo"))
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        claude_agent_sdk_agent(ClaudeAgentOptions(cwd=str(tmp_path / "file.txt")))
    # the same from an options function: the attempt errors at once, the send not resent
    agent = claude_agent_sdk_agent(lambda ctx: ClaudeAgentOptions(cwd=str(tmp_path / "nope")), transport=scripted(hello))

    async def body(t):
        await t.send("hi")

    result = run_one(agent, body)
    assert result.verdict == "errored"
    assert "is not a folder" in result.error["message"] and "retries exhausted" not in result.error["message"]


def test_an_options_function_that_returns_nothing_is_refused_not_run_with_default_options():
    made = []

    def options(ctx):
        ClaudeAgentOptions(system_prompt="You help customers.")  # (the return forgotten)

    agent = claude_agent_sdk_agent(options, transport=scripted(hello, made=made))

    async def body(t):
        await t.send("hi")

    result = run_one(agent, body)
    assert result.verdict == "errored" and made == []
    assert "options function" in result.error["message"] and "returned None" in result.error["message"]
    assert "missing return" in result.error["message"]


def test_an_options_function_that_takes_no_context_is_refused_when_the_agent_is_made():
    with pytest.raises(TypeError, match=r"options=lambda ctx: ClaudeAgentOptions\(...\)"):
        claude_agent_sdk_agent(lambda: ClaudeAgentOptions())
    with pytest.raises(TypeError, match="transport=lambda options"):
        claude_agent_sdk_agent(transport=lambda: None)


def test_an_options_function_s_own_error_is_raised_as_it_is():
    def options(ctx):
        return ClaudeAgentOptions(max_turns=int("three"))

    agent = claude_agent_sdk_agent(options, transport=scripted(hello))

    async def body(t):
        await t.send("hi")

    result = run_one(agent, body)
    assert result.verdict == "errored"
    assert "send raised ValueError: invalid literal for int()" in result.error["message"]


RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "Hi.", "session_id": "s1",
          "usage": {"input_tokens": 3, "output_tokens": 2}}
REPLY = {"type": "assistant", "session_id": "s1", "parent_tool_use_id": None,
         "message": {"id": "m1", "content": [{"type": "text", "text": "Hi."}]}}


def test_the_cli_s_whole_output_as_one_string_or_bytes_or_binary_lines():
    output = "\n".join(json.dumps(frame) for frame in (REPLY, RESULT)) + "\n"
    for given in (output, output.encode(), output.encode().splitlines(keepends=True)):
        turn = turn_from_claude_agent_sdk(given)
        assert turn.events == [Message("Hi.")] and turn.usage.output_tokens == 2 and turn.evidence_coverage is None


def test_a_line_that_is_json_but_no_message_is_refused_like_one_that_is_no_json():
    with pytest.raises(ValueError, match=r"a JSON object\), got '\[1, 2\]'"):
        turn_from_claude_agent_sdk(["[1, 2]", json.dumps(RESULT)])


def test_an_assistant_message_whose_content_is_a_string_is_its_text():
    turn = turn_from_claude_agent_sdk([{**REPLY, "message": {"id": "m1", "content": "Hi there."}}, RESULT])
    assert turn.events == [Message("Hi there.")]


def test_rejected_must_map_ids_to_reasons():
    with pytest.raises(TypeError, match=r"rejected maps each denied tool_use id to why"):
        turn_from_claude_agent_sdk([RESULT], rejected=["toolu_1"])
    transcript = ClaudeSdkTranscript()
    transcript.mark_rejected("toolu_1", "no")
    assert transcript.rejected == {"toolu_1": "no"}


@pytest.mark.parametrize(("given", "said"), [
    ({"permission_mode": "acceptEdit"}, "permission_mode='acceptEdit' is not one of default, acceptEdits, .*; did you "
                                        "mean 'acceptEdits'\\?"),
    ({"effort": "hihg"}, "effort='hihg' is not one of low, medium, high, xhigh, max; did you mean 'high'\\?"),
    ({"allowed_tools": "Read"}, r"allowed_tools='Read' is a string; allowed_tools takes a list: allowed_tools=\['Read'\]"),
    ({"setting_sources": "project"}, r"setting_sources takes a list: setting_sources=\['project'\]"),
    ({"setting_sources": ["projects"]}, "setting_sources='projects' is not one of user, project, local; did you mean"),
])
def test_a_near_miss_or_a_string_for_a_list_in_the_options_is_refused_when_the_agent_is_made(given, said):
    with pytest.raises((TypeError, ValueError), match=said):
        claude_agent_sdk_agent(ClaudeAgentOptions(**given))


def test_options_the_sdk_s_types_do_not_list_yet_go_to_the_cli_as_they_are():
    for given in ({"permission_mode": "manual"}, {"betas": ["context-1m-2025-08-08"]}, {"skills": "all"},
                  {"allowed_tools": ["Read", "Grep"]}):
        claude_agent_sdk_agent(ClaudeAgentOptions(**given))


def test_the_cli_s_own_words_are_the_failure_s_not_check_stderr_output(tmp_path, capsys):
    # the real bundled CLI, refusing an option assay cannot check: its stderr is the attempt's error, not lost in the
    # run's stderr beside the SDK's "Fatal error in message reader" log line
    agent = claude_agent_sdk_agent(ClaudeAgentOptions(cwd=str(tmp_path), permission_mode="bogus",
                                                      env={"HOME": str(tmp_path), "ANTHROPIC_API_KEY": "test"}))

    async def body(t):
        await t.send("hi")

    result = run_one(agent, body, timeout=60)
    assert result.verdict == "errored"
    message = result.error["message"]
    assert "the Claude Code CLI failed before the turn's result: exit code 1; the CLI said:" in message
    assert "'bogus' is invalid" in message and "Check stderr" not in message
    assert "Fatal error in message reader" not in capsys.readouterr().err
    # (outside pytest, whose log capture stands in for it, the SDK's logger needs a handler for that: a NullHandler)
    assert any(isinstance(handler, logging.NullHandler) for handler in logging.getLogger("claude_agent_sdk").handlers)
