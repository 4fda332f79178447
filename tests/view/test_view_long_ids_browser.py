"""A unit id of hundreds of characters without a space (a generated case name, a long path) wraps in the
viewer's pages instead of widening them: no page scrolls sideways, and the whole id is still on the page,
selectable. Checked in a real browser (Debian's Chromium through Playwright) on each page that shows it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import Page, browser_fixture, serving, skip_without_browser

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import ViewData
from assay.view.labelling import LabelSession
from assay.view.server import create_view_app

pytestmark = skip_without_browser
browser = browser_fixture()

BEFORE, AFTER = "video-20260101T000000-aaaaaa", "video-20260102T000000-bbbbbb"
LONG_ID = "clip/" + "frame_" * 49 + "x@1s#1"  # 300 characters, not one space


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    database = tmp_path_factory.mktemp("long-ids") / "assay.db"
    for run_id, verdict, day in ((BEFORE, "passed", "01"), (AFTER, "failed", "02")):
        units = [UnitResult(LONG_ID, verdict, "clip", expected="red", observed="red" if verdict == "passed" else "green"),
                 UnitResult("clip/short@2s#1", "passed", "clip", expected="red", observed="red")]
        publish_run(RunManifest(run_id, "video", f"2026-01-{day}T00:00:00Z", title=day), units, database=database)
    store = SqliteRunStore(database)
    data = ViewData(store)
    try:
        with serving(lambda binding: create_view_app(data, binding, labelling=LabelSession(data, "tester"))) as served:
            yield served
    finally:
        store.close()


@pytest.fixture(params=[1280, 800], ids=["wide", "narrow"])
def page(browser: object, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": request.param, "height": 900})
    opened = context.new_page()
    yield opened
    context.close()


PAGES = {
    "run": (f"#/run/{AFTER}", "#units-table"),
    "unit": (f"#/unit/{AFTER}/{quote(LONG_ID, safe='')}", "#unit-title"),
    "compare": (f"#/compare/{BEFORE}/{AFTER}", "#compare-table"),
    "label": ("#/label", "#label-unit"),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_a_300_character_unit_id_wraps_and_the_page_does_not_scroll_sideways(page: Page, origin: str, name: str) -> None:
    address, shown_in = PAGES[name]
    page.goto(f"{origin}/{address}")
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(shown_in)
    assert page.locator("#view-error").count() == 0
    widths = page.evaluate("({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })")
    assert widths["scroll"] <= widths["client"], f"the {name} page is {widths['scroll']} px wide in a {widths['client']} px window"
    # Every place the id is shown fits in the window: wrapped, the id whole; or cut short with an ellipsis
    # (the top bar's crumbs), the whole id in the title of the box that cuts it.
    shown = page.evaluate(
        """([id, selector]) => {
          const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
          const found = [];
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            if (!node.textContent.includes(id.slice(0, 40))) continue;
            let cut = node.parentElement;
            while (cut && getComputedStyle(cut).textOverflow !== "ellipsis") cut = cut.parentElement;
            const range = document.createRange();
            range.selectNodeContents(node);
            found.push({ text: node.textContent, title: cut ? cut.title : null,
                         right: (cut || range).getBoundingClientRect().right,
                         inside: Boolean(node.parentElement.closest(selector)) });
          }
          return found;
        }""",
        [LONG_ID, shown_in],
    )
    assert any(place["inside"] for place in shown), f"the {name} page does not show the id in {shown_in}"
    for place in shown:
        assert LONG_ID in place["text"], place["text"]
        assert place["title"] is None or LONG_ID in place["title"], place
        assert place["right"] <= widths["client"], f"the id on the {name} page ends at {place['right']} px"
