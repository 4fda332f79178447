"""Label mode (`#/label`) and the agreement page on a phone (375 px wide) and a narrow window (600 px), as
test_view_narrow_browser.py checks the rest of the viewer: the page body never scrolls sideways (the queue's
run picker, whose options name whole run ids, made it 393 px wide on a phone), the controls are on screen
and usable without a keyboard (previous and next are buttons too: `j` was the only way on from an answered
unit), the unit's transcript, candidate or frame is readable, and a judge's name in a table wraps at a
readable width rather than a few letters a line. In a real browser (Debian's Chromium through Playwright)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Page, browser_fixture, expect, serving, skip_without_browser
from filled_store import FilledStore
from mixed_store import MixedStore, build_mixed_store, labels_in

from assay.core.results_store import SqliteRunStore
from assay.view.data import ViewData
from assay.view.labelling import LabelSession
from assay.view.server import create_view_app

pytestmark = skip_without_browser
browser = browser_fixture()

WIDTHS = [375, 600]
JUDGE = "judge-1 · assay-agent-judge/1:rubric"


@pytest.fixture(scope="module")
def mixed(filled_store: FilledStore, tmp_path_factory: pytest.TempPathFactory) -> MixedStore:
    """The mixed store, with two people's labels of three judged attempts (so the agreement page has rows)."""
    from assay.core.labels.store import LabelBook
    from assay.core.labels.units import make_label, read_unit

    built = build_mixed_store(tmp_path_factory.mktemp("mixed"), filled_store.database)
    with SqliteRunStore(built.database) as store:
        LabelBook(store).add([
            make_label(read_unit(store, built.agent_judged, f"main/weather/{name}#1"), labeller, verdict=verdict, score=score)
            for name, verdict, score in (("paris", "pass", 5), ("lyon", "fail", 2), ("nowhere", "fail", 1))
            for labeller in ("ann", "bo")
        ])
    return built


@pytest.fixture
def database(mixed: MixedStore, tmp_path: Path) -> Path:
    shutil.copytree(mixed.database.parent, tmp_path / "store")
    return tmp_path / "store" / mixed.database.name


@pytest.fixture
def origin(database: Path) -> Iterator[str]:
    store = SqliteRunStore(database)
    data = ViewData(store)
    try:
        with serving(lambda binding: create_view_app(data, binding, labelling=LabelSession(data, "tester"))) as served:
            yield served
    finally:
        store.close()


@pytest.fixture(params=WIDTHS, ids=[f"{width}px" for width in WIDTHS])
def page(browser: object, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": request.param, "height": 800})  # type: ignore[attr-defined]
    opened = context.new_page()
    yield opened
    context.close()


CONTROLS = ["#label-scope", "#label-filter", "#label-seed", "#label-sample", "#label-start", "#label-status",
            "#answer-bar button[data-answer='p']", "#answer-bar button[data-answer='f']", "#answer-bar button[data-answer='5']",
            "#answer-bar button[data-answer='s']", "#label-previous", "#label-next", "#label-note", "#judge-panel"]


def _pages(store: FilledStore, mixed: MixedStore) -> dict[str, tuple[str, list[str]]]:
    """name: (address, selectors that must be visible and inside the window's width)."""
    return {
        "label-video": (f"#/label?scope={store.video_after}", [*CONTROLS, "#unit-frame", "#unit-expected", "#unit-observed"]),
        "label-agent": (f"#/label?scope={mixed.agent_judged}&hide=0", [*CONTROLS, "#label-rubrics", "#transcript", "#judge-verdicts"]),
        "label-coverage": (f"#/label?scope={mixed.doc_coverage}&hide=0", [*CONTROLS, "#candidate", "#judge-verdicts"]),
        "label-pairwise": (f"#/label?scope={mixed.doc_pairwise}", [*CONTROLS, "#label-question"]),
        "agreement": ("#/agreement", ["#agreement-judge", "#agreement-rubric", "#agreement-labeller", "#agreement-table", "#labeller-agreement"]),
        "agreement-refused": ("#/agreement?judge=no-such-judge", ["#agreement-judge", "#agreement-refused"]),
    }


GEOMETRY = """() => {
  const box = (node) => { const r = node.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height }; };
  return {
    scrollWidth: document.documentElement.scrollWidth,
    bodyScrollWidth: document.body.scrollWidth,
    innerWidth: window.innerWidth,
    topbar: Array.from(document.querySelectorAll('.topbar > :not(.spacer)')).filter((node) => node.textContent.trim()).map((node) => ({ text: node.textContent.trim(), ...box(node), scrollWidth: node.scrollWidth, clientWidth: node.clientWidth })),
    fontSizes: Array.from(document.querySelectorAll('#main td, #main p, #main h1, #main h2, #main button, .topbar a')).map((node) => parseFloat(getComputedStyle(node).fontSize)),
    judgeCells: Array.from(document.querySelectorAll('#agreement-table > tbody > tr > td:first-child, #judge-verdicts td:first-child')).map((node) => node.getBoundingClientRect().width),
  };
}"""


@pytest.mark.parametrize("name", ["label-video", "label-agent", "label-coverage", "label-pairwise", "agreement", "agreement-refused"])
def test_the_label_and_agreement_pages_fit_a_phone_and_a_narrow_window_without_sideways_scrolling(
    mixed: MixedStore, filled_store: FilledStore, page: Page, origin: str, name: str
) -> None:
    address, selectors = _pages(filled_store, mixed)[name]
    page.goto(f"{origin}/{address}")
    page.wait_for_selector("body[data-ready=true]")
    assert not page.locator("#view-error").count(), page.locator("#view-error").text_content()
    for selector in selectors:
        page.wait_for_selector(selector)
    if name == "label-video":
        page.wait_for_function("() => document.getElementById('unit-frame').complete")
    geometry = page.evaluate(GEOMETRY)
    width = geometry["innerWidth"]
    assert geometry["scrollWidth"] <= width, f"{name} scrolls sideways at {width}px: {geometry['scrollWidth']}px wide"
    assert geometry["bodyScrollWidth"] <= width, geometry
    bar = geometry["topbar"]
    assert {item["text"].split()[0] for item in bar} >= {"assay", "Label", "Agreement"}, bar
    for item in bar:
        assert 0 <= item["left"] and item["right"] <= width + 0.5, item
        assert item["scrollWidth"] <= item["clientWidth"] + 1, f"cut short: {item}"
    assert min(geometry["fontSizes"]) >= 11, "text too small to read"
    # A judge's name ("judge-1 · assay-agent-judge/1:rubric") wraps at a readable width, not a few letters a line.
    assert all(cell >= 120 for cell in geometry["judgeCells"]), geometry["judgeCells"]
    for selector in selectors:
        target = page.locator(selector).first
        assert target.is_visible(), selector
        left, right = target.evaluate("(node) => { const r = node.getBoundingClientRect(); return [r.left, r.right]; }")
        assert left >= 0 and right <= width + 0.5, f"{selector} reaches {left}..{right} in a {width}px window"
    if name == "label-video":  # the frame is shown whole, at the window's width at most
        frame = page.locator("#unit-frame").evaluate("(node) => [node.naturalWidth, node.getBoundingClientRect().width]")
        assert frame[0] > 0 and 0 < frame[1] <= width, frame


def test_a_phone_labels_units_with_its_fingers_alone(mixed: MixedStore, browser: object, origin: str, database: Path) -> None:
    """No keyboard: answer with the buttons (the judge's verdict then shows), move on and back with the
    buttons; the labels are recorded."""
    context = browser.new_context(viewport={"width": 375, "height": 800}, has_touch=True, is_mobile=True)  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto(f"{origin}/#/label?scope={mixed.agent_judged}")
        page.wait_for_selector("#label-item[data-index='0']")
        expect(page.locator("#label-previous")).to_be_disabled()
        first = page.locator("#label-item").get_attribute("data-unit")
        page.tap("#answer-bar button[data-answer='p']")
        page.wait_for_selector("#label-item[data-index='0'][data-revealed='true']")
        page.tap("#label-next")
        page.wait_for_selector("#label-item[data-index='1'][data-revealed='false']")
        second = page.locator("#label-item").get_attribute("data-unit")
        page.tap("#answer-bar button[data-answer='2']")
        page.wait_for_selector("#label-item[data-index='1'][data-revealed='true']")
        page.tap("#label-previous")
        page.wait_for_selector("#label-item[data-index='0'][data-revealed='true']")
        expect(page.locator("#your-label")).to_have_attribute("data-verdict", "pass")
        assert page.evaluate("() => window.scrollX") == 0
    finally:
        context.close()
    assert [(label["unit_id"], label["verdict"], label["score"]) for label in labels_in(database)][-2:] == [
        (first, "pass", None), (second, None, 2)]
