"""The static export (`assay view --export`) opened from disk as a newcomer uses it: the references the live
viewer takes (`latest`, `latest~N`), and two runs picked on the runs page and compared.
Checked in a real browser (Debian's Chromium through Playwright)."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import Page, browser_fixture, expect, open_ready, page_fixture, skip_without_browser

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import ViewData
from assay.view.export import export_site

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()

FIRST, SECOND, THIRD = (f"video-2026010{day}T000000Z-{letter * 8}" for day, letter in ((1, "a"), (2, "b"), (3, "c")))
AGENT = "agent-20260104T000000Z-dddddddd"
UNITS = ["clip/lamp/0@1s#1", "clip/lamp/1@2s#1"]


@pytest.fixture(autouse=True)
def _own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "unused" / "assay.db"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Three video runs and an agent run (the latest), exported."""
    folder = tmp_path_factory.mktemp("stranger-wave")
    database = folder / "assay.db"
    for day, run_id in enumerate((FIRST, SECOND, THIRD), start=1):
        units = [UnitResult(unit, "failed" if day == 2 and index else "passed", "clip/lamp") for index, unit in enumerate(UNITS)]
        publish_run(RunManifest(run_id, "video", f"2026-01-0{day}T00:00:00Z", title=f"day {day}"), units, database=database)
    publish_run(RunManifest(AGENT, "agent", "2026-01-04T00:00:00Z", title="agent"),
                [UnitResult("main/eval#1", "passed", "main/eval")], database=database)
    with SqliteRunStore(database, read_only=True) as store:
        export_site(ViewData(store), folder / "site")
    return (folder / "site" / "index.html").as_uri()


def _settled_at(page: Page, hash_: str) -> None:
    page.wait_for_function(f"() => decodeURIComponent(location.hash) === {hash_!r}")
    page.wait_for_selector("body[data-ready=true]")


def test_the_export_takes_latest_and_latest_n_as_the_live_viewer_does(page: Page, site: str) -> None:
    """`#/run/latest` opened the newest run live, and read "No run 'latest' in this export" in the export."""
    open_ready(page, f"{site}#/run/latest")
    _settled_at(page, f"#/run/{AGENT}")
    expect(page.locator("#run-title")).to_have_text(AGENT)
    open_ready(page, f"{site}#/compare/latest~2/latest~1")  # the compare the export holds: THIRD with the run before it
    _settled_at(page, f"#/compare/{SECOND}/{THIRD}")
    expect(page.locator("#crumbs")).to_contain_text(f"compare {SECOND} → {THIRD}")
    open_ready(page, f"{site}#/run/latest~9")  # past the oldest: named as missing
    expect(page.locator("#view-error")).to_have_text("No run 'latest~9' in this export: it holds the 4 run(s) listed on its first page.")


def test_two_runs_picked_on_the_runs_page_are_told_which_compare_the_export_holds(page: Page, site: str) -> None:
    """Picking the first and the third run and pressing "Compare selected" read "This view is not included in the
    export.", with nothing on which compares it does hold."""
    open_ready(page, f"{site}#/")
    page.check(f"input[aria-label='select {FIRST}']")
    page.check(f"input[aria-label='select {THIRD}']")
    page.evaluate("() => { document.body.dataset.ready = 'false'; }")
    page.click("#compare-selected")
    _settled_at(page, f"#/compare/{FIRST}/{THIRD}")
    expect(page.locator("#view-error")).to_have_text(
        f"This export holds the compare of each run with the run of its kind before it (here: {SECOND} → {THIRD}), "
        f"not {FIRST} → {THIRD}; `assay view` compares any two runs.")
    open_ready(page, f"{site}#/compare/{THIRD}/{THIRD}")  # a run with itself: refused in the live viewer's words
    expect(page.locator("#view-error")).to_have_text(
        f"both references name the run {THIRD}; a run compared with itself has no changes: give two different runs")


def test_the_export_says_it_shows_the_agreement_page_unfiltered(page: Page, site: str) -> None:
    """A link to the agreement page with filters showed the whole report in an export, as if filtered."""
    open_ready(page, f"{site}#/agreement?judge=gpt-judge&labeller=ann")
    expect(page.locator("#agreement-unfiltered")).to_have_text(
        "This export holds every judge and labeller; the filters in the link (judge=gpt-judge, labeller=ann) need the "
        "live viewer (`assay view`).")
    open_ready(page, f"{site}#/agreement")
    expect(page.locator("#main h1")).to_have_text("Judge–human agreement")
    expect(page.locator("#agreement-unfiltered")).to_have_count(0)
