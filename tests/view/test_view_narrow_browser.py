"""The results viewer on a phone (375 px wide) and a narrow window (600 px): the page body never scrolls
sideways (a wide table scrolls inside its own box), the top bar wraps instead of overlapping or cutting its
links off, and the parts a reader came for are on screen. Checked in a real browser (Debian's Chromium
through Playwright) on the runs list, a run page, a unit page, compare and trend, with the real runs of
the shared filled store loaded."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest
from browser import Page, browser_fixture, serving_store, skip_without_browser
from filled_store import FilledStore

pytestmark = skip_without_browser
browser = browser_fixture()

WIDTHS = [375, 600]


@pytest.fixture(scope="module")
def origin(filled_store: FilledStore) -> Iterator[str]:
    with serving_store(filled_store.database) as served:
        yield served


@pytest.fixture(params=WIDTHS, ids=[f"{width}px" for width in WIDTHS])
def page(browser: object, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": request.param, "height": 800})  # type: ignore[attr-defined]
    opened = context.new_page()
    yield opened
    context.close()


def _pages(store: FilledStore) -> dict[str, tuple[str, list[str]]]:
    """name: (address, selectors that must be visible and inside the window's width)."""
    return {
        "runs": ("#/", ["#runs-table", "#kind-filter", "#run-search", "#compare-selected"]),
        "video-run": (f"#/run/{store.video_after}", ["#run-title", "#run-pass-rate", "#groups-table", "#units-table", "#verdict-filter", "#next-page"]),
        "agent-run": (f"#/run/{store.agent}", ["#run-title", "#run-pass-rate", "#units-table", "#trend-link"]),
        "video-unit": (f"#/unit/{store.video_after}/{quote('numbers/number/5@0.5s#1', safe='')}", ["#unit-title", "#unit-expected", "#unit-observed", "#unit-frame"]),
        "compare": (f"#/compare/{store.video_before}/{store.video_after}", ["#verdict", "#compare-stats", "#change-tabs", "#compare-table"]),
        "trend": (f"#/trend/{store.video_after}", ["#trend-charts", ".trend-chart"]),
    }


GEOMETRY = """() => {
  const box = (node) => { const r = node.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height }; };
  return {
    scrollWidth: document.documentElement.scrollWidth,
    bodyScrollWidth: document.body.scrollWidth,
    innerWidth: window.innerWidth,
    topbar: Array.from(document.querySelectorAll('.topbar > :not(.spacer)')).filter((node) => node.textContent.trim()).map((node) => ({ text: node.textContent.trim(), ...box(node), scrollWidth: node.scrollWidth, clientWidth: node.clientWidth })),
    fontSizes: Array.from(document.querySelectorAll('#main td, #main p, #main h1, #main h2, .topbar a')).map((node) => parseFloat(getComputedStyle(node).fontSize)),
  };
}"""


@pytest.mark.parametrize("name", ["runs", "video-run", "agent-run", "video-unit", "compare", "trend"])
def test_each_page_fits_a_phone_and_a_narrow_window_without_sideways_scrolling(
    page: Page, origin: str, filled_store: FilledStore, name: str
) -> None:
    address, selectors = _pages(filled_store)[name]
    page.goto(f"{origin}/{address}")
    page.wait_for_selector("body[data-ready=true]")
    assert not page.locator("#view-error").count(), page.locator("#view-error").text_content()
    for selector in selectors:
        page.wait_for_selector(selector)
    geometry = page.evaluate(GEOMETRY)
    width = geometry["innerWidth"]
    assert geometry["scrollWidth"] <= width, f"{name} scrolls sideways at {width}px: {geometry['scrollWidth']}px wide"
    assert geometry["bodyScrollWidth"] <= width, geometry
    # The top bar wraps: every item whole, inside the window, none over another.
    bar = geometry["topbar"]
    assert {item["text"].split()[0] for item in bar} >= {"assay", "Label", "Agreement"}, bar
    for item in bar:
        assert 0 <= item["left"] and item["right"] <= width + 0.5, item
        assert item["scrollWidth"] <= item["clientWidth"] + 1, f"cut short: {item}"  # crumbs wrap, not cut off
    for index, first in enumerate(bar):
        for second in bar[index + 1:]:
            overlap = min(first["right"], second["right"]) - max(first["left"], second["left"]) > 1 and \
                min(first["bottom"], second["bottom"]) - max(first["top"], second["top"]) > 1
            assert not overlap, (first, second)
    assert min(geometry["fontSizes"]) >= 11, "text too small to read"
    # What the reader came for is on screen: visible, and its box no wider than the window (a wide
    # table scrolls inside its own box, which stays inside the window).
    for selector in selectors:
        target = page.locator(selector).first
        assert target.is_visible(), selector
        left, right = target.evaluate("(node) => { const r = node.getBoundingClientRect(); return [r.left, r.right]; }")
        assert left >= 0 and right <= width + 0.5, f"{selector} reaches {left}..{right} in a {width}px window"


def test_a_wide_table_scrolls_inside_its_own_box_on_a_phone(browser: object, origin: str, filled_store: FilledStore) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 800})  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto(f"{origin}/#/")
        page.wait_for_selector("body[data-ready=true]")
        table = page.locator("#runs-table")
        widths = table.evaluate("(node) => [node.scrollWidth, node.clientWidth, getComputedStyle(node).overflowX]")
        assert widths[0] > widths[1] and widths[2] == "auto", widths  # nine columns do not fit 375 px: it scrolls
        table.evaluate("(node) => { node.scrollLeft = node.scrollWidth; }")
        assert table.evaluate("(node) => node.scrollLeft") > 0
        assert page.evaluate("() => window.scrollX") == 0
        # A run's row still opens its run.
        page.locator(f'tr[data-run="{filled_store.video_after}"] a').click()
        page.wait_for_selector("#run-title")
        assert page.locator("#run-title").text_content() == filled_store.video_after
    finally:
        context.close()
