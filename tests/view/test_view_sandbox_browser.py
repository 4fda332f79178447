"""The viewer's attempt page for a sandbox attempt, in Chromium: File Changes per send window (with the
diff) and the commands that ran, their output redacted. The store is filled by a real `assay agent run`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Page, browser_fixture, expect, page_fixture, serving_store, skip_without_browser

from assay.core.results_store import SqliteRunStore

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()
SECRET = "sk-view-secret-9876"

PROJECT = {
    "pyproject.toml": '[tool.assay]\nname = "sandbox view"\n',
    "agents/editor.py": '''
        from assay.agent import Turn, complete_evidence_coverage, define_sandbox_agent, message

        async def send(turn_input, ctx):
            if turn_input.text == "edit":
                await ctx.sandbox.write_text("app.py", "DEBUG = True\\n")
                await ctx.sandbox.write_text("notes.md", "remember the milk\\n")
            else:
                await ctx.sandbox.run_shell("echo token=$TOKEN; rm notes.md", env={"TOKEN": "%s"},
                                            sensitive_values=["%s"])
            return Turn([message("done")])

        editor = lambda: define_sandbox_agent(name="editor", send=send, evidence_coverage=complete_evidence_coverage)
    ''' % (SECRET, SECRET),
    "experiments/editor.py": '''
        from agents.editor import editor
        from assay.agent import Experiment

        edits = Experiment(agent=editor())
    ''',
    "evals/edit_eval.py": '''
        from assay.agent import define_eval, local_sandbox

        @define_eval(sandbox=local_sandbox())
        async def edit(t):
            await t.sandbox.write_text("app.py", "DEBUG = False\\n")
            await t.send("edit")
            await t.send("clean up")
            t.sandbox.changed_paths(["app.py", "notes.md"])
    ''',
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sandbox-view")
    project = root / "project"
    for name, text in PROJECT.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    database = root / "store.db"
    environment = {**os.environ, "ASSAY_STORE": str(database), "ASSAY_SANDBOX_DIR": str(root / "sandboxes")}
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--quiet"],
                          capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 0, done.stdout + done.stderr
    return database


@pytest.fixture(scope="module")
def origin(store: Path) -> Iterator[str]:
    with serving_store(store) as served:
        yield served


def test_the_attempt_page_shows_file_changes_per_window_and_redacted_commands(page: Page, origin: str, store: Path) -> None:
    with SqliteRunStore(store, read_only=True) as opened:
        run_id = opened.resolve("latest")
    page.goto(f"{origin}/#/unit/{run_id}/editor%2Fedit%231")
    page.wait_for_selector("body[data-ready=true]")
    panel = page.locator("#file-changes")
    expect(panel.locator("h2")).to_contain_text("File Changes (2 file(s); local")
    first, second = panel.locator('[data-window="turn1"]'), panel.locator('[data-window="turn2"]')
    expect(first.locator('[data-path="app.py"] .diff-del')).to_have_text("-DEBUG = False")
    expect(first.locator('[data-path="app.py"] .diff-add')).to_have_text("+DEBUG = True")
    expect(first.locator('[data-path="notes.md"] .change-status')).to_have_text("added")
    expect(second.locator('[data-path="notes.md"] .change-status')).to_have_text("deleted")
    commands = page.locator("#sandbox-commands")
    expect(commands).to_contain_text("agent.run")
    expect(commands).to_contain_text("token=[redacted]")
    assert SECRET not in page.content()
