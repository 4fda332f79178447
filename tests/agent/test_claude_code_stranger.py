"""claude_code_agent as a stranger types it: every misspelt or misshapen option, settings key and MCP server is
refused when the experiment file is loaded (exit 2, one message naming it and the fix), since the CLI itself
ignores a settings key it does not know and drops a malformed MCP server without a word; an MCP server that does
not start in the sandbox is a warning, not a silently missing tool; a base URL without its scheme is no failed
turn of the agent's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_projects import agent_project
from sandbox_helpers import run_one_linked, sandbox_dir  # noqa: F401

from assay.agent import define_eval, local_sandbox
from assay.agent.adapters.claude_code import claude_code_agent
from assay.agent.sandbox import shell
from assay.errors import ConfigError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "agents"))
from fake_coding_model_api import FakeCodingModelApi  # noqa: E402

import claude_agent_sdk  # noqa: E402

REAL_CLI = str(Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")
KEY = "sk-ant-test-claude-code-stranger-0123"
MODEL = "claude-sonnet-4-5"
pytestmark = pytest.mark.timeout(90)


@pytest.mark.parametrize(("options", "named"), [
    # env given as a list or a line, not a mapping (a bare ValueError about "dictionary update sequence" before)
    ({"env": ["FOO=1"]}, "env maps names to strings, like env={"),
    ({"env": "FOO=1"}, "env maps names to strings, like env={"),
    # extra_args: None, and the adapter's own flags written as --flag=value, or ones that replace what it owns
    ({"extra_args": None}, "extra_args is a list of strings"),
    ({"extra_args": ["--model=claude-opus-4-1"]}, "extra_args must not hold --model"),
    ({"extra_args": ["--settings=other.json"]}, "extra_args must not hold --settings"),
    ({"extra_args": ["--output-format=json"]}, "extra_args must not hold --output-format"),
    ({"extra_args": ["--permission-mode", "plan"]}, "extra_args must not hold --permission-mode"),
    ({"extra_args": ["--fallback-model", "claude-haiku-4-5"]}, "extra_args must not hold --fallback-model"),
    # install as one string (taken letter by letter before), as text steps, or None
    ({"install": "npm install -g @anthropic-ai/claude-code"}, "install=[shell(\"npm install -g"),
    ({"install": ["npm install -g @anthropic-ai/claude-code"]},
     "not text: install=[shell('npm install -g @anthropic-ai/claude-code')]"),
    ({"install": None}, "install=() when the CLI is already there"),
    # credentials and URL
    ({"api_key": 12345678901}, "api_key is the key as a string"),
    ({"api_key": ""}, "api_key is the key as a string"),
    ({"base_url": "127.0.0.1:8080"}, "base_url is the API's URL, starting with http:// or https://"),
    # settings keys the CLI would ignore without a word
    ({"settings": {"modle": "opus"}}, "'modle' is no Claude Code setting (did you mean 'model', which the "
                                      "experiment's model sets?)"),
    ({"settings": {"Model": "opus"}}, "did you mean 'model'"),
    ({"settings": {"mcpServer": {}}}, "did you mean 'mcpServers', which mcp_servers= sets?"),
    ({"settings": {"permission": {"deny": ["Bash"]}}}, "'permission' is no Claude Code setting (did you mean "
                                                       "'permissions'?)"),
    ({"settings": {"permissions": {"Deny": ["Bash"]}}}, "permissions.Deny is no Claude Code setting (did you mean "
                                                        "'deny'?)"),
    ({"settings": {"permissions": {"defaultmode": "plan"}}}, "did you mean 'defaultMode'?"),
    ({"settings": {"permissions": {"deny": "Bash"}}}, "permissions.deny is a list of strings"),
    ({"settings": {"permissions": ["deny", "Bash"]}}, "permissions is an object of rule lists"),
    ({"settings": {1: "x"}}, "settings keys are setting names (strings); 1 is not one"),
    # MCP servers the CLI would drop without a word
    ({"mcp_servers": {"api": {"url": "https://mcp.example.com"}}}, "has a \"url\" but no \"type\""),
    ({"mcp_servers": {"api": {"type": "htpp", "url": "https://x"}}}, "type 'htpp' is not one Claude Code runs "
                                                                     "(stdio, sse, http); did you mean 'http'?"),
    ({"mcp_servers": {"docs": {"command": "docs-mcp", "args": "--stdio"}}}, "args is a list of strings"),
    ({"mcp_servers": {"docs": {"command": ["docs-mcp", "--stdio"]}}}, "needs a stdio \"command\" or an HTTP \"url\""),
    ({"mcp_servers": {"docs": {"command": "docs-mcp", "arg": ["--stdio"]}}}, "has 'arg', which a stdio server does "
                                                                            "not take"),
    ({"mcp_servers": {"docs": {"command": "docs-mcp", "env": {"TOKEN": 1}}}}, "env maps names to strings"),
    ({"mcp_servers": {"api": {"type": "http", "url": "https://x", "headers": ["a: b"]}}}, "headers maps names"),
    ({"mcp_servers": {"api": {"type": "http", "url": "mcp.example.com"}}}, "needs a \"url\" starting with http://"),
    ({"mcp_servers": {"mcpServers": {"docs": {"command": "x"}}}}, "without the {\"mcpServers\": …} wrapper"),
    ({"mcp_servers": {"": {"command": "x"}}}, "an empty name is not one"),
])
def test_a_misspelt_or_misshapen_option_is_refused_naming_it_and_the_fix(options, named):
    with pytest.raises(ConfigError) as raised:
        claude_code_agent(**options)
    assert named in str(raised.value)


@pytest.mark.parametrize("options", [
    {"settings": {"includeCoAuthoredBy": False, "permissions": {"deny": ["Bash"], "allow": ["Read"]}}},
    {"settings": {"hooks": {}, "cleanupPeriodDays": 3}},
    {"mcp_servers": {"docs": {"command": "docs-mcp", "args": ["--stdio"], "env": {"T": "x"}},
                     "api": {"type": "http", "url": "https://x", "headers": {"Authorization": "Bearer x"}},
                     "events": {"type": "sse", "url": "http://127.0.0.1:9"}}},
    {"extra_args": ["--max-turns", "5", "--append-system-prompt", "be brief"]},
    {"install": [shell("npm install -g @anthropic-ai/claude-code")]},
    {"install": ()},
    {"base_url": "http://127.0.0.1:8080", "api_key": "sk-ant-placeholder"},
])
def test_the_shapes_the_docs_show_are_accepted(options):
    claude_code_agent(**options)


def test_a_misshapen_env_is_exit_2_with_one_line_and_no_traceback(tmp_path):
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "claude.py").write_text(textwrap.dedent("""
        from assay.agent import Experiment
        from assay.agent.adapters import claude_code_agent

        claude = Experiment(agent=claude_code_agent(env=["MAX_THINKING_TOKENS=1024"]), model="claude-sonnet-4-5")
    """))
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                          capture_output=True, text=True, timeout=80, check=False,
                          env={**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")})
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "env maps names to strings" in said and "Traceback" not in said
    assert "dictionary update sequence" not in said


@pytest.mark.skipif(not os.access(REAL_CLI, os.X_OK), reason="the claude-agent-sdk wheel bundles no CLI here")
def test_an_mcp_server_that_does_not_start_is_a_warning_naming_it():
    """A misspelt MCP command: the CLI starts without the server and says so only in its init frame."""
    async def test(t):
        await t.send("hello")

    with FakeCodingModelApi() as api:
        agent = claude_code_agent(command_name=REAL_CLI, install=(), api_key=KEY, base_url=api.url,
                                  mcp_servers={"docs": {"command": "docs-mcp-not-installed", "args": ["--stdio"]}})
        result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()), model=MODEL, timeout=60)
    assert result.verdict == "passed", result.error
    failed = [d for d in result.diagnostics if d["code"] == "claude-code-mcp-server-failed"]
    assert len(failed) == 1 and "'docs'" in failed[0]["message"], result.diagnostics
    assert "docs-mcp-not-installed" in failed[0]["message"] and failed[0]["level"] == "warning"


@pytest.mark.skipif(not os.access(REAL_CLI, os.X_OK), reason="the claude-agent-sdk wheel bundles no CLI here")
def test_an_mcp_servers_token_the_agent_prints_is_redacted_like_the_key():
    """The MCP config is a file in the sandbox's home: an agent that prints it (or a server that echoes its
    token) must not put the token in the record, as the API key is not."""
    servers = {"api": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                       "headers": {"Authorization": "Bearer mcp-token-0123456789"}},
               "docs": {"command": "docs-mcp-not-installed",
                        "env": {"DOCS_TOKEN": "docs-token-0123456789", "LOG_LEVEL": "verbose-logging"}}}

    async def test(t):
        await t.send("run: cat $HOME/.assay-claude-code/mcp.json | tr -d ' \\n'")

    with FakeCodingModelApi() as api:
        agent = claude_code_agent(command_name=REAL_CLI, install=(), api_key=KEY, base_url=api.url,
                                  mcp_servers=servers)
        result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()), model=MODEL, timeout=60)
    stored = json.dumps(result.to_json())
    assert "mcpServers" in stored and "[redacted]" in stored, stored[:2000]  # (the agent did print the file)
    assert "mcp-token-0123456789" not in stored and "docs-token-0123456789" not in stored
    assert "verbose-logging" in stored  # (a value whose name is no credential's is left as it is)


@pytest.mark.skipif(not os.access(REAL_CLI, os.X_OK), reason="the claude-agent-sdk wheel bundles no CLI here")
def test_a_misspelt_effort_warning_names_the_effort_meant():
    async def test(t):
        await t.send("hello")

    with FakeCodingModelApi() as api:
        agent = claude_code_agent(command_name=REAL_CLI, install=(), api_key=KEY, base_url=api.url)
        result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()), model=MODEL, timeout=60,
                                reasoning_effort="hgih")
    assert result.verdict == "passed", result.error
    warned = [d["message"] for d in result.diagnostics if d["code"] == "claude-code-effort-ignored"]
    assert len(warned) == 1 and "did you mean 'high'?" in warned[0], result.diagnostics


@pytest.mark.skipif(not os.access(REAL_CLI, os.X_OK), reason="the claude-agent-sdk wheel bundles no CLI here")
def test_an_experiment_without_a_model_warns_naming_the_model_the_cli_chose():
    """No `--model` (an empty or missing Experiment model): the CLI picks its own, which only its init frame says."""
    async def test(t):
        await t.send("hello")

    with FakeCodingModelApi() as api:
        agent = claude_code_agent(command_name=REAL_CLI, install=(), api_key=KEY, base_url=api.url)
        result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()), model="", timeout=60)
        chose = api.requests[-1]["model"]
    assert result.verdict == "passed", result.error
    warned = [d["message"] for d in result.diagnostics if d["code"] == "claude-code-model-default"]
    assert len(warned) == 1 and f"({chose})" in warned[0] and "Experiment(model=" in warned[0], result.diagnostics


def test_a_misspelt_command_name_without_an_installer_names_the_command_and_its_failure():
    """"claude-code is not installed in the sandbox and no installer was given" named neither the command looked
    for nor why the probe failed, so `command_name="clade"` read as a CLI missing from the sandbox."""
    async def test(t):
        await t.send("hello")

    agent = claude_code_agent(command_name="clade", install=(), api_key="sk-ant-test-0123456789abcdef")
    result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()), model=MODEL, timeout=60)
    assert result.verdict == "errored"
    assert "`clade --version` failed" in result.error["message"], result.error
    assert "no installer was given" in result.error["message"]


@pytest.mark.skipif(not os.access(REAL_CLI, os.X_OK), reason="the claude-agent-sdk wheel bundles no CLI here")
def test_an_effort_the_cli_does_not_take_is_said_once_on_the_runs_console_with_its_count(tmp_path):
    """The warning was in `assay agent show` alone: a CI log of a run whose every attempt ignored the experiment's
    effort said nothing of it."""
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "claude.py").write_text(textwrap.dedent(f"""
        import os
        from assay.agent import Experiment
        from assay.agent.adapters import claude_code_agent

        claude = Experiment(agent=claude_code_agent(command_name={REAL_CLI!r}, install=(),
                                                    base_url=os.environ["FAKE_ANTHROPIC_URL"]),
                            model={MODEL!r}, reasoning_effort="hgih", timeout=60)
    """))
    (project / "evals" / "hello_eval.py").write_text(textwrap.dedent("""
        from assay.agent import define_eval, local_sandbox


        async def hello(t):
            await t.send("hello")


        evals = {"first": define_eval(hello, sandbox=local_sandbox()), "second": define_eval(hello, sandbox=local_sandbox())}
    """))
    with FakeCodingModelApi() as api:
        done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "claude"],
                              capture_output=True, text=True, timeout=80, check=False,
                              env={**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db"),
                                   "ANTHROPIC_API_KEY": KEY, "FAKE_ANTHROPIC_URL": api.url})
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("warning [claude-code-effort-ignored]")]
    assert len(said) == 1, done.stdout
    assert "did you mean 'high'?" in said[0] and "(in 2 attempt(s); the experiment's reasoning effort was not used; " \
        "`assay agent show claude/hello/" in said[0], said[0]
