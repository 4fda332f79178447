"""A stranger's pass over the viewer's pages: the window's title names the page, text an eval recorded with one long
word (a path, JSON without spaces) never makes a page scroll sideways, a group filter is reached from the keyboard,
and a store file replaced while `assay view` runs is read anew. Real Chromium (Playwright), real servers on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import Page, browser_fixture, expect, open_ready, page_fixture, serving, serving_store, skip_without_browser

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import ViewData
from assay.view.server import create_view_app

browser = browser_fixture()
page = page_fixture()

BEFORE, AFTER, AGENT = "doc-20260101T000000Z-aaaaaaaa", "doc-20260102T000000Z-bbbbbbbb", "agent-20260103T000000Z-cccccccc"
UNIT = "cases/report#1"
ATTEMPT = "main/lookup#1"
# One word of about 450 characters, with nowhere a browser may break a line (no space, "/" or "-"): a snake_case key.
PATH = "build_" + "nested_folder_" * 30 + "report.json"
TOOL_OUTPUT = {"files": [PATH, PATH], "status": "ok"}  # JSON.stringify writes it without a space


def _agent_unit() -> UnitResult:
    events = [
        {"type": "operation.started", "operation_id": "op1", "operation": {"kind": "tool", "name": "read", "input": {"path": PATH}}},
        {"type": "operation.finished", "operation_id": "op1", "status": "completed", "output": TOOL_OUTPUT},
        {"type": "message", "role": "assistant", "text": PATH},
    ]
    detail = {"agent": "reader", "model": "m", "locator": "@L", "turns": [{"session": 0, "turn": 1, "input": "read it",
              "status": "completed", "events": events}],
              "assertions": [{"kind": "check", "scope": "t", "description": f"check(equals({PATH!r}))", "status": "missed",
                              "reason": PATH}]}
    return UnitResult(ATTEMPT, "failed", "main/lookup", reason=PATH, detail=detail)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    database = tmp_path_factory.mktemp("pages") / "assay.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASSAY_STORE", str(database))
        _fill(database)
        yield database


def _fill(database: Path) -> None:
    for run_id, verdict, day in ((BEFORE, "passed", 1), (AFTER, "failed", 2)):
        units = [UnitResult(UNIT, verdict, "cases/report", expected="ok", observed=PATH[:150], reason=PATH),
                 UnitResult("cases/other#1", "passed", "cases/other", expected="ok", observed="ok")]
        publish_run(RunManifest(run_id, "doc", f"2026-01-0{day}T00:00:00Z", title="report " + PATH), units, database=database)
    publish_run(RunManifest(AGENT, "agent", "2026-01-03T00:00:00Z", title="agent"), [_agent_unit()], database=database)


@pytest.fixture(scope="module")
def origin(database: Path) -> Iterator[str]:
    with serving_store(database) as served:
        yield served


def _scrolls_sideways(page: Page) -> int:
    return page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")


@skip_without_browser[0]
@skip_without_browser[1]
def test_each_page_names_itself_in_the_window_title(origin: str, page: Page) -> None:
    """Every page's title read "Runs · assay": tabs, the history list and back's menu could not tell pages apart."""
    open_ready(page, f"{origin}/")
    expect(page).to_have_title("Runs · assay")
    open_ready(page, f"{origin}/#/run/{AFTER}")
    expect(page).to_have_title(f"{AFTER} · assay")
    open_ready(page, f"{origin}/#/unit/{AFTER}/{quote(UNIT, safe='')}")
    expect(page).to_have_title(f"{UNIT} · {AFTER} · assay")
    open_ready(page, f"{origin}/#/compare/{BEFORE}/{AFTER}")
    expect(page).to_have_title(f"compare {BEFORE} → {AFTER} · assay")
    open_ready(page, f"{origin}/#/run/nope")  # an error names no run
    expect(page).to_have_title("Not shown · assay")
    page.go_back()
    page.wait_for_selector("#compare-table")
    expect(page).to_have_title(f"compare {BEFORE} → {AFTER} · assay")


@skip_without_browser[0]
@skip_without_browser[1]
@pytest.mark.parametrize("width", [1280, 390])
def test_recorded_text_with_a_long_word_never_makes_a_page_scroll_sideways(origin: str, page: Page, width: int) -> None:
    """A tool's output in a transcript (JSON without spaces), an assertion and its reason, a run's title and the compare
    table's observed values: each widened its page past the window (by thousands of pixels on a desktop)."""
    page.set_viewport_size({"width": width, "height": 900})
    sideways = {}
    for address, ready in ((f"#/unit/{AGENT}/{quote(ATTEMPT, safe='')}", "#transcript"), ("#/", "#runs-table"),
                           (f"#/run/{AFTER}", "#units-table"), (f"#/compare/{BEFORE}/{AFTER}", "#compare-table")):
        open_ready(page, f"{origin}/{address}")
        page.wait_for_selector(ready)
        if _scrolls_sideways(page):
            sideways[address] = _scrolls_sideways(page)
    assert sideways == {}
    # The text is all there, wrapped: the whole output in the transcript, the whole observed value in its tooltip.
    open_ready(page, f"{origin}/#/unit/{AGENT}/{quote(ATTEMPT, safe='')}")
    expect(page.locator("#transcript")).to_contain_text(json.dumps(TOOL_OUTPUT, separators=(",", ":")))


@skip_without_browser[0]
@skip_without_browser[1]
def test_a_group_filter_is_reached_from_the_keyboard(origin: str, page: Page) -> None:
    """A group's row filtered the units on a mouse click only: nothing in it took the focus."""
    open_ready(page, f"{origin}/#/run/{AFTER}")
    link = page.locator("#groups-table a", has_text="cases/report")
    link.focus()
    page.evaluate("() => { document.body.dataset.ready = 'false'; }")
    page.keyboard.press("Enter")
    page.wait_for_selector("body[data-ready=true]")
    assert "group=cases%2Freport" in page.url
    expect(page.locator("#units-table tbody tr")).to_have_count(1)
    expect(page.locator("#units-table tbody tr")).to_have_attribute("data-unit", UNIT)
    # The compare page's tabs are links to their own addresses (each was `#`: opened in a new tab, the runs list).
    open_ready(page, f"{origin}/#/compare/{BEFORE}/{AFTER}")
    expect(page.locator("#change-tabs a[data-change=fixes]")).to_have_attribute("href", f"#/compare/{BEFORE}/{AFTER}?change=fixes")
    page.locator("#change-tabs a[data-change=still_failing]").focus()
    page.evaluate("() => { document.body.dataset.ready = 'false'; }")
    page.keyboard.press("Enter")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#change-tabs a.active")).to_have_attribute("data-change", "still_failing")


def _get(origin: str, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"{origin}/api/{path}", timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_a_store_replaced_while_the_viewer_runs_is_read_anew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`assay runs reindex` rebuilding a damaged store (or an eval making anew a store that was deleted) puts a new file
    at the path: the viewer kept showing the file it opened first and said "no run X in the store <path>" of a run
    `assay runs list` shows at that path. A store that is gone is said to be gone, not shown as it was."""
    database = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(database))
    unit = [UnitResult("cases/a#1", "passed", "cases/a", expected="ok", observed="ok")]
    publish_run(RunManifest(BEFORE, "doc", "2026-01-01T00:00:00Z"), unit, database=database)
    data = ViewData(SqliteRunStore(database, read_only=True))
    try:
        with serving(lambda binding: create_view_app(data, binding)) as served:
            assert _get(served, f"run?run={BEFORE}")[0] == 200
            rebuilt = tmp_path / "rebuilt" / "assay.db"
            publish_run(RunManifest(BEFORE, "doc", "2026-01-01T00:00:00Z"), unit, database=rebuilt)
            publish_run(RunManifest(AFTER, "doc", "2026-01-02T00:00:00Z"), unit, database=rebuilt)
            os.replace(rebuilt, database)
            status, body = _get(served, f"run?run={AFTER}")
            assert (status, body.get("run_id")) == (200, AFTER), body
            assert _get(served, "runs")[1]["total"] == 2
            database.unlink()
            status, body = _get(served, "runs")
            assert status == 503 and "is gone" in body["error"]["message"], body
    finally:
        data.store.close()


@skip_without_browser[0]
@skip_without_browser[1]
def test_a_transcript_heading_leaves_out_what_the_unit_did_not_record(tmp_path: Path, page: Page) -> None:
    """An agent unit recorded without its agent, model or locator (an imported or hand-made one) read "Transcript (, )"."""
    database = tmp_path / "assay.db"
    bare = {"turns": [{"session": 0, "turn": 1, "input": "hi", "status": "completed",
                       "events": [{"type": "message", "role": "assistant", "text": "hello"}]}]}
    named = {**bare, "agent": "reader", "locator": "@L"}
    publish_run(RunManifest(AGENT, "agent", "2026-01-03T00:00:00Z", title="agent"),
                [UnitResult("main/bare#1", "passed", "main/bare", detail=bare),
                 UnitResult("main/named#1", "passed", "main/named", detail=named)], database=database)
    with serving_store(database) as served:
        open_ready(page, f"{served}/#/unit/{AGENT}/{quote('main/bare#1', safe='')}")
        expect(page.locator("#transcript h2, h2:has-text('Transcript')").first).to_have_text("Transcript")
        open_ready(page, f"{served}/#/unit/{AGENT}/{quote('main/named#1', safe='')}")
        expect(page.locator("h2:has-text('Transcript')").first).to_have_text("Transcript (reader, @L)")
