"""`command_match` and command projections (NiceEval's `commandMatch`, `commandProjection`, `logical-command/v1`)."""

import shutil
from pathlib import Path

import pytest
from agent_helpers import run_one, scripted_agent, statuses

from assay.agent import (
    Turn, command_match, command_projection, complete_evidence_coverage, event_match, message,
    normalize_logical_command, not_command_projection, opaque_command_projection, partial, shell_command_projection,
    tool_call, tool_match, tool_result,
)
from assay.agent.adapters import process_agent
from assay.agent.adapters.codex import turn_from_codex_events
from assay.agent.evidence import ToolOccurrence
from assay.agent.matchers import MATCHED, MISMATCHED, UNAVAILABLE
from assay.agent.show import event_line

HERE = Path(__file__).parent


def test_launchers_are_unwrapped_and_a_path_is_its_program():
    assert normalize_logical_command("npx", ["vitest", "run"]) == ("vitest", ("run",))
    assert normalize_logical_command("npx", ["--yes", "-q", "prettier", "--check", "."]) == ("prettier", ("--check", "."))
    assert normalize_logical_command("pnpm", ["exec", "npx", "tsc", "-p", "."]) == ("tsc", ("-p", "."))
    assert normalize_logical_command("/usr/bin/git", ["push"]) == ("git", ("push",))
    assert normalize_logical_command("pnpm", ["test"]) == ("pnpm", ("test",))  # a script, not a launcher
    # A launcher option that is not known to take no value: which program runs is not guessed.
    assert normalize_logical_command("npx", ["-p", "typescript", "tsc"]) == ("npx", ("-p", "typescript", "tsc"))
    assert command_projection("npx", ["jest"]) == {
        "kind": "command", "original": {"state": "available", "executable": "npx", "args": ["jest"]},
        "logical": {"version": "logical-command/v1", "executable": "jest", "args": []},
    }


@pytest.mark.parametrize(("line", "expected"), [
    ("bash -lc 'python -m pytest -q'", ("python", ["-m", "pytest", "-q"])),
    ("sh -c \"npx vitest run\"", ("vitest", ["run"])),
    ("CI=1 git commit -m 'fix: a; b && c'", ("git", ["commit", "-m", "fix: a; b && c"])),
    ("grep -r 'TODO$' src", ("grep", ["-r", "TODO$", "src"])),
])
def test_a_simple_shell_line_is_read_as_its_program_and_arguments(line, expected):
    projection = shell_command_projection(line)
    assert (projection["logical"]["executable"], projection["logical"]["args"]) == expected


@pytest.mark.parametrize(("line", "reason"), [
    ("pytest && git push", "compound-shell"),
    ("ls | head", "compound-shell"),
    ("make > log.txt 2>&1", "compound-shell"),
    ("bash -lc 'cd app; npm test'", "compound-shell"),
    ("echo $HOME", "dynamic-shell"),
    ("rm -rf \"$TARGET\"", "dynamic-shell"),
    ("cat *.py", "dynamic-shell"),
    ("echo 'unclosed", "dynamic-shell"),
])
def test_a_shell_line_the_shell_would_interpret_further_is_opaque(line, reason):
    assert shell_command_projection(line) == {"kind": "command", "original": {"state": "opaque", "reason": reason}}


def occurrence(command, status="completed", name="shell"):
    return ToolOccurrence(id="0.1.0", session=0, turn=1, event=0, operation_id="c1", kind="tool", name=name,
                          canonical="shell", input={}, status=status, command=command)


def test_command_match_reads_the_logical_command_and_says_why_it_did_not_match():
    pushed = occurrence(command_projection("npx", ["--yes", "git-cli", "x"]))
    assert command_match("git-cli", args_start=["x"]).evaluate(pushed).status == MATCHED
    git = occurrence(command_projection("/usr/bin/git", ["push", "--force=yes", "origin"]))
    assert command_match("git", args_start=["push"]).evaluate(git).status == MATCHED
    assert command_match("/usr/local/bin/git").evaluate(git).status == MATCHED  # a path names its program
    assert command_match("git", args_start=["pull"]).evaluate(git).reason == (
        "command 'git push --force=yes origin' does not start 'git pull'")
    assert command_match("git", excludes=["--force"]).evaluate(git).reason == "command 'git push --force=yes origin' has --force"
    assert command_match("npm").evaluate(git).reason == "command 'git push --force=yes origin' runs git, not npm"
    assert command_match("git", status="failed").evaluate(git).status == MISMATCHED
    assert command_match("git", status="completed").evaluate(occurrence(git.command, status="pending")).status == UNAVAILABLE


def test_a_call_whose_command_is_unknown_is_undecided_and_one_that_runs_none_is_not_a_match():
    assert command_match("git").evaluate(occurrence(not_command_projection())).reason == "tool 'shell' runs no command"
    opaque = command_match("git").evaluate(occurrence(opaque_command_projection("compound-shell")))
    assert (opaque.status, opaque.reason) == (UNAVAILABLE, "tool 'shell' ran a command that cannot be read (compound-shell)")
    unknown = command_match("git").evaluate(occurrence(None, name="get_weather"))
    assert unknown.status == UNAVAILABLE and unknown.reason == (
        "tool 'get_weather' has no command projection: its agent did not say whether it ran a command (a tool that "
        "runs none says so with tool_call(..., command=not_command_projection()))")


def test_bad_arguments_are_refused_when_written():
    with pytest.raises(TypeError, match=r"excludes=\['--force'\] for one"):
        command_match("git", excludes="--force")
    with pytest.raises(ValueError, match="did you mean 'failed'"):
        command_match("git", status="faild")
    with pytest.raises(TypeError, match="non-empty str"):
        command_match("")
    with pytest.raises(TypeError, match=r"shell_command_projection\(line\)"):
        command_projection("git", "push origin")
    with pytest.raises(ValueError, match="must be one of redacted, truncated"):
        opaque_command_projection("compound")


def shell_turn(*commands):
    events = []
    for index, command in enumerate(commands):
        events += [tool_call(f"c{index}", "shell", {"line": index}, command=command), tool_result(f"c{index}", {})]
    return Turn([*events, message("done")])


def test_called_and_not_called_tool_with_command_match_in_a_run():
    agent, _ = scripted_agent([shell_turn(command_projection("npx", ["vitest", "run"]), not_command_projection())])

    async def body(t):
        turn = await t.send("test it")
        turn.called_tool(command_match("vitest", args_start=["run"]), count=1)
        turn.not_called_tool(command_match("rm"))
        turn.tool_order([command_match("vitest"), tool_match("shell")])
        turn.event(event_match("operation.started", tool=command_match("vitest")))

    result = run_one(agent, body)
    assert result.verdict == "passed", result.assertions
    assert [assertion["description"] for assertion in result.assertions][:2] == [
        "called_tool(command_match('vitest', args_start=['run']), count=1)", "not_called_tool(command_match('rm'))"]
    calls = result.turns[0]["events"]
    assert calls[0]["operation"]["command"]["logical"] == {"version": "logical-command/v1", "executable": "vitest", "args": ["run"]}
    # `assay agent show @…` says what each call ran, as command_match reads it
    assert [event_line(event) for event in calls[:4:2]] == ['→ tool shell #c0 {"line": 0} (ran: vitest run)',
                                                         '→ tool shell #c1 {"line": 1}']
    opaque = {**calls[0], "operation": {**calls[0]["operation"], "command": opaque_command_projection("redacted")}}
    assert event_line(opaque).endswith(" (ran a command that cannot be read: redacted)")


def test_an_opaque_or_unprojected_call_leaves_not_called_tool_undecided_and_a_near_miss_is_named():
    agent, _ = scripted_agent([shell_turn(command_projection("git", ["push"]), opaque_command_projection("compound-shell"))])

    async def body(t):
        turn = await t.send("ship it")
        turn.not_called_tool(command_match("rm")).optional()  # the opaque call may have been an rm
        turn.called_tool(command_match("git", args_start=["push"]))
        turn.called_tool(command_match("git", args_start=["pull"])).optional()

    result = run_one(agent, body)
    assert statuses(result) == ["unavailable", "matched", "unavailable"]
    assert "ran a command that cannot be read (compound-shell)" in result.assertions[0]["reason"]
    assert "1 candidate(s) undecidable" in result.assertions[2]["reason"]
    pushed, _ = scripted_agent([shell_turn(command_projection("git", ["push"]), not_command_projection())])

    async def pulled(t):
        turn = await t.send("ship it")
        turn.called_tool(command_match("git", args_start=["pull"]))

    result = run_one(pushed, pulled)
    assert result.verdict == "failed"
    assert result.assertions[0]["reason"].endswith(
        "(tools called: shell); shell #c0 did not match: command 'git push' does not start 'git pull'")


def test_a_malformed_projection_errors_the_attempt_naming_the_field():
    bad = {"type": "operation.started", "operationId": "c1",
           "operation": {"kind": "tool", "name": "shell", "input": {}, "command": {"kind": "command", "original": {"state": "availble"}}}}
    agent, _ = scripted_agent([{"status": "completed", "events": [bad]}])

    async def body(t):
        await t.send("x")

    result = run_one(agent, body)
    assert result.verdict == "errored" and result.error["code"] == "agent-send-failed"
    assert "events[0].operation.command.original.state must be available or opaque, got 'availble'" in result.error["message"]
    python_agent, _ = scripted_agent([Turn([tool_call("c1", "shell", {}, command="git push")])])
    result = run_one(python_agent, body)
    assert result.error["code"] == "agent-send-failed"
    assert "events[0].operation.command must be a command projection, got str 'git push'" in result.error["message"]


@pytest.mark.skipif(shutil.which("node") is None or shutil.which("git") is None, reason="needs node and git")
def test_a_javascript_process_agent_reports_projections_assay_completes():
    agent = process_agent(f"node {HERE / 'agents' / 'command_agent.mjs'}", evidence_coverage=complete_evidence_coverage)

    async def body(t):
        version = await t.send("git --version")
        version.called_tool(command_match("git", args_start=["--version"], status="completed"))
        node = await t.send("node -e process.exit(3)")
        node.called_tool(command_match("node", args_start=["-e"], status="failed"))  # an absolute path, read as node
        said = await t.send("say hello")
        said.not_called_tool(command_match("node"))

    result = run_one(agent, body)
    assert result.verdict == "passed", result.assertions
    first = result.turns[0]["events"][0]["operation"]["command"]
    assert first["original"] == {"state": "available", "executable": "git", "args": ["--version"]}
    # The agent sent no logical form: the record keeps the one command_match read.
    assert first["logical"] == {"version": "logical-command/v1", "executable": "git", "args": ["--version"]}
    node = result.turns[1]["events"][0]["operation"]["command"]
    assert node["original"]["executable"].startswith("/") and node["logical"]["executable"] == "node"
    assert "git version" in result.turns[0]["events"][-1]["text"]


def test_codex_shell_lines_become_projections():
    turn = turn_from_codex_events((HERE / "data" / "codex_fix_test.jsonl").read_text().splitlines())
    first = turn.events[1].operation
    assert first.input == {"command": "bash -lc 'python -m pytest -q'"}  # the line as the agent ran it
    assert first.command["logical"] == {"version": "logical-command/v1", "executable": "python", "args": ["-m", "pytest", "-q"]}


def test_partial_actions_evidence_keeps_no_call_from_proving_absence():
    coverage = complete_evidence_coverage.downgraded({"actions": partial("a hidden tool loop")})
    agent, _ = scripted_agent([shell_turn(command_projection("git", ["status"]))], coverage=coverage)

    async def body(t):
        turn = await t.send("look")
        turn.not_called_tool(command_match("rm")).optional()

    assert statuses(run_one(agent, body)) == ["unavailable"]


@pytest.mark.parametrize(("sent", "said"), [
    # A misspelt field would be dropped and the command read without it (`rm` with no arguments, here).
    ({"kind": "command", "original": {"state": "available", "executable": "rm", "arg": ["-rf", "/"]}},
     "command.original has an unknown field 'arg'; did you mean 'args'? (its fields: state, executable, args)"),
    ({"kind": "command", "orignal": {"state": "available", "executable": "rm"}},
     "command has an unknown field 'orignal'; did you mean 'original'? (its fields: kind, original, logical)"),
    ({"kind": "comand", "original": {"state": "available", "executable": "rm"}},
     "command.kind must be command or not-command, got 'comand'; did you mean 'command'?"),
    ({"kind": "command", "original": {"state": "opaque", "reason": "compound_shell"}},
     "got 'compound_shell'; did you mean 'compound-shell'?"),
])
def test_a_projection_sent_as_json_with_a_misspelt_field_is_refused_naming_it(sent, said):
    from assay.agent.logical_command import check_command_projection

    with pytest.raises(ValueError) as refused:
        check_command_projection(sent, "events[0].operation.command")
    assert str(refused.value).endswith(said)
    check_command_projection(command_projection("rm", ["-rf", "/"]), "command")  # every field it makes is known
    check_command_projection(opaque_command_projection("compound-shell"), "command")
    check_command_projection(not_command_projection(), "command")
