"""Label mode (`assay view --label`) while the store file is replaced under it — `assay runs reindex` rebuilding a
damaged store, or a deleted store made anew by the next eval: the open label page goes on with the new file, and
a label given just before the replacement is not lost. Real Chromium (Playwright), a real server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from browser import Page, browser_fixture, expect, open_ready, page_fixture, serving, skip_without_browser
from typer.testing import CliRunner

from assay.cli.app import app
from assay.core.results_store import SqliteRunStore
from assay.view.data import ViewData
from assay.view.labelling import LabelSession
from assay.view.server import create_view_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "labels"))
from judged_runs import agent_unit, publish  # noqa: E402

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()


def _exported() -> list[tuple[str, str, str]]:
    exported = CliRunner().invoke(app, ["labels", "export"])
    assert exported.exit_code == 0, exported.output
    return [(label["run_id"], label["unit_id"], label["verdict"])
            for label in map(json.loads, filter(str.strip, exported.stdout.splitlines()))]


def test_label_mode_follows_a_store_file_replaced_while_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                page: Page) -> None:
    """Label mode kept the file it had opened: after the replacement its queue never showed the new file's runs, and
    each label went on into the replaced file, which `assay labels export` and `judge agreement` no longer read."""
    database = tmp_path / "store" / "assay.db"
    database.parent.mkdir()
    monkeypatch.setenv("ASSAY_STORE", str(database))
    first = publish(database, "agent", [agent_unit(0, 0.9)], run_id="agent-20260101T000000Z-aaaaaaaa")
    data = ViewData(SqliteRunStore(database))
    try:
        with serving(lambda binding: create_view_app(data, binding, labelling=LabelSession(data, "ann"))) as origin:
            open_ready(page, f"{origin}/#/label")
            expect(page.locator("#label-item")).to_have_attribute("data-unit", "main/eval0#1")
            page.keyboard.press("p")
            expect(page.locator("#label-status")).to_have_attribute("data-pending", "0")
            # The store is rebuilt in a new file (as reindex does) that takes its place, with a run recorded since.
            rebuilt = tmp_path / "rebuilt" / "assay.db"
            rebuilt.parent.mkdir()
            publish(rebuilt, "agent", [agent_unit(0, 0.9)], run_id=first)
            second = publish(rebuilt, "agent", [agent_unit(1, 0.2)], run_id="agent-20260102T000000Z-bbbbbbbb")
            os.replace(rebuilt, database)

            page.reload()
            page.wait_for_selector("body[data-ready=true]")
            # The unit on screen comes first again, with the label the new file was given from labels.jsonl ...
            expect(page.locator("#label-item")).to_have_attribute("data-unit", "main/eval0#1")
            expect(page.locator("#your-label")).to_have_attribute("data-verdict", "pass")
            # ... and `j` goes on to the run the new file holds.
            page.keyboard.press("j")
            expect(page.locator("#label-item")).to_have_attribute("data-run", second)
            expect(page.locator("#label-item")).to_have_attribute("data-unit", "main/eval1#1")
            page.keyboard.press("f")
            expect(page.locator("#your-label")).to_have_attribute("data-verdict", "fail")
            expect(page.locator("#label-status")).to_have_attribute("data-pending", "0")
            expect(page.locator("#label-errors li")).to_have_count(0)
        # Both labels are in the store file at the path: the one given before the replacement (read back from
        # labels.jsonl) and the one after.
        with SqliteRunStore(database, read_only=True) as store:
            indexed = sorted((run_id, unit_id, json.loads(body)["verdict"])
                             for run_id, unit_id, body in store.read("SELECT run_id, unit_id, body FROM labels"))
        assert indexed == [(first, "main/eval0#1", "pass"), (second, "main/eval1#1", "fail")]
        assert sorted(_exported()) == indexed
    finally:
        data.store.close()
