"""The viewer's pages where a stranger ran out of what they show: a static export (`assay view --export`) holds the
first units of each run, and a live page outlives the viewer stopped under it. Real Chromium (Playwright), the export
opened from disk, the live viewer served on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import Page, browser_fixture, expect, open_ready, page_fixture, serving_store, skip_without_browser

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import ViewData
from assay.view.export import ExportLimits, export_site

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()

RUN = "doc-20260101T000000Z-aaaaaaaa"


def test_an_export_says_where_its_units_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: Page) -> None:
    """It holds the first 5,000 units of each run (200 here): "next →" on its last page of them, and an address past
    them, read "This view is not included in the export." with nothing more."""
    database = tmp_path / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(database))
    units = [UnitResult(f"cases/c{index:03}#1", "passed", "cases", expected="x", observed="x") for index in range(350)]
    publish_run(RunManifest(RUN, "doc", "2026-01-01T00:00:00Z"), units, database=database)
    with SqliteRunStore(database, read_only=True) as store:
        export_site(ViewData(store), tmp_path / "site", limits=ExportLimits(units_per_run=200))
    site = (tmp_path / "site" / "index.html").as_uri()

    open_ready(page, f"{site}#/run/{RUN}?offset=100")
    expect(page.locator("#page-status")).to_have_text(
        "101–200 of 350 · this export holds the first 200; `assay view` shows them all")
    expect(page.locator("#next-page")).to_be_disabled()
    page.locator("#previous-page").click()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#next-page")).to_be_enabled()

    open_ready(page, f"{site}#/run/{RUN}?offset=200")
    expect(page.locator("#view-error")).to_have_text(
        "This export holds the first 200 units of each run (and its first 200 failing ones); `assay view` shows them all.")


def test_a_page_of_a_stopped_viewer_says_it_is_not_answering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             page: Page) -> None:
    """A link followed after `assay view` was stopped (Ctrl-C) read "Failed to fetch"."""
    database = tmp_path / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(database))
    units = [UnitResult(f"cases/c{index:03}#1", "passed", "cases", expected="x", observed="x") for index in range(150)]
    publish_run(RunManifest(RUN, "doc", "2026-01-01T00:00:00Z"), units, database=database)
    with serving_store(database) as origin:
        open_ready(page, f"{origin}/#/run/{RUN}")
    page.evaluate("() => { document.body.dataset.ready = 'false'; }")
    page.locator("#next-page").click()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#view-error")).to_have_text("the viewer is not answering (stopped? start it again)")
