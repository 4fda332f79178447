"""The viewer's transcript says what command each tool call ran, as `command_match` reads it (real Chromium,
a real `assay agent run` of a project whose agent reports command projections)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from browser import Page, browser_fixture, expect, open_ready, page_fixture, serving_store, skip_without_browser

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()

AGENT = '''
from assay.agent import (Turn, command_projection, complete_evidence_coverage, define_agent, message,
                         opaque_command_projection, tool_call, tool_result)


async def send(turn_input, ctx):
    return Turn([
        tool_call("c1", "bash", {"command": "npx vitest run"}, command=command_projection("npx", ["vitest", "run"])),
        tool_result("c1", {"exit_code": 0}),
        tool_call("c2", "bash", {"command": "ls | wc -l"}, command=opaque_command_projection("compound-shell")),
        tool_result("c2", {"exit_code": 0}),
        message("ok"),
    ])


shell = define_agent(name="shell", send=send, evidence_coverage=complete_evidence_coverage)
'''
EXPERIMENT = '''
from agents.shell import shell
from assay.agent import Experiment

shell = Experiment(agent=shell, model="m")
'''
EVAL = '''
from assay.agent import command_match, define_eval


@define_eval
async def test(t):
    turn = await t.send("Run the tests")
    turn.called_tool(command_match("vitest", args_start=["run"]))
'''


def test_the_transcript_shows_each_calls_logical_command(tmp_path: Path, page: Page) -> None:
    project = tmp_path / "shop"
    for path, text in {"pyproject.toml": "[tool.assay]\n", "agents/__init__.py": "", "agents/shell.py": AGENT,
                       "experiments/shell.py": EXPERIMENT, "evals/tests_eval.py": EVAL}.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text)
    database = tmp_path / "assay.db"
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)], capture_output=True,
                          text=True, env={**os.environ, "ASSAY_STORE": str(database)}, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    with serving_store(database) as origin:
        with sqlite3.connect(database) as connection:
            [(run_id,)] = connection.execute("SELECT run_id FROM runs").fetchall()
        open_ready(page, f"{origin}/#/run/{run_id}")
        page.locator("#units-table tbody tr a").first.click()
        page.wait_for_selector("body[data-ready=true]")
        calls = page.locator("#transcript .event.tool")
        expect(calls.nth(0)).to_contain_text('→ tool bash #c1 {"command":"npx vitest run"} ran: vitest run')
        expect(calls.nth(2)).to_contain_text("ran a command that cannot be read: compound-shell")
        expect(page.locator("#assertions")).to_contain_text("called_tool(command_match('vitest', args_start=['run']))")
