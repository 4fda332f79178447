"""What a stranger meets who pages past the end, hand-edits a kind, compares a run with itself or with a run
of another kind, narrows the window, or opens a unit's frame (live, and in the static export from disk).
Checked in a real browser (Debian's Chromium through Playwright)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import Page, browser_fixture, expect, open_ready, page_fixture, serving_store, skip_without_browser

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import ViewData
from assay.view.export import export_site

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()

BEFORE, AFTER = "video-20260101T000000Z-aaaaaaaa", "video-20260102T000000Z-bbbbbbbb"
AGENT = "agent-20260103T000000Z-cccccccc"
UNITS = ["clip/lamp/0@1s#1", "clip/lamp/1@2s#1", "clip/lamp/2@3s#1"]
PASSED, FAILED = UNITS[0], UNITS[2]
MISSING_VIDEO = "/nonexistent/recordings/clip.mp4"
# Previews as long as the units table shows them (160 characters), as an agent's assertions or a comparison's
# reason often are.
LONG = " ".join(["the lamp shows a steady amber light"] * 5)[:159]


def _video_units(failing: bool) -> list[UnitResult]:
    return [UnitResult(unit, "failed" if failing and unit == FAILED else "passed", "clip/lamp", expected=LONG,
                       observed=LONG, reason=LONG, artifacts={"video": MISSING_VIDEO, "timestamp_s": float(index + 1)},
                       detail={"timestamp_s": float(index + 1), "case": "clip", "target": "lamp", "trial": 1})
            for index, unit in enumerate(UNITS)]


def _agent_units() -> list[UnitResult]:
    """Two attempts whose app sent spans: the run has a Traces page of two rows."""
    spans = {"turns": [{"session": None, "turn": 1, "trace_id": "ab" * 16, "span_id": "cd" * 8,
                        "start": 1_000_000_000, "end": 1_010_000_000, "spans": []}]}
    detail = {"turns": [{"turn": 1, "status": "completed", "events": []}], "spans": spans, "assertions": []}
    return [UnitResult(f"main/eval{index}#1", "passed", f"main/eval{index}", detail=detail) for index in range(2)]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    database = tmp_path_factory.mktemp("stranger") / "assay.db"
    publish_run(RunManifest(BEFORE, "video", "2026-01-01T00:00:00Z", title="before"), _video_units(False), database=database)
    publish_run(RunManifest(AFTER, "video", "2026-01-02T00:00:00Z", title="after"), _video_units(True), database=database)
    publish_run(RunManifest(AGENT, "agent", "2026-01-03T00:00:00Z", title="agent"), _agent_units(), database=database)
    return database


@pytest.fixture(scope="module")
def origin(database: Path) -> Iterator[str]:
    with serving_store(database) as served:
        yield served


@pytest.fixture(scope="module")
def site(database: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("stranger-site") / "site"
    with SqliteRunStore(database, read_only=True) as store:
        export_site(ViewData(store), folder)
    return (folder / "index.html").as_uri()


def test_an_offset_past_the_end_is_said_and_previous_goes_back_to_the_rows(page: Page, origin: str) -> None:
    """A hand-edited offset read "501–3 of 3"; on the Traces page, "No attempt of this run received spans"."""
    open_ready(page, f"{origin}/#/run/{AFTER}?offset=500")
    expect(page.locator("#page-status")).to_have_text("past the end: 3 unit(s) in all")
    expect(page.locator("#next-page")).to_be_disabled()
    page.evaluate("() => { document.body.dataset.ready = 'false'; }")
    page.click("#previous-page")  # to the last page that has rows, not to offset 400
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#page-status")).to_have_text("1–3 of 3")
    expect(page.locator("#units-table tbody tr")).to_have_count(3)

    open_ready(page, f"{origin}/#/traces/{AGENT}?offset=100")
    expect(page.locator("#traces-status")).to_have_text("past the end: 2 traced attempt(s) in all")
    expect(page.locator("main")).not_to_contain_text("received spans")
    open_ready(page, f"{origin}/#/traces/{AGENT}")
    expect(page.locator("#traces-status")).to_have_text("1–2 of 2 traced attempt(s)")

    open_ready(page, f"{origin}/#/compare/{BEFORE}/{AFTER}?change=regressions&offset=100")
    expect(page.locator("#compare-status")).to_have_text("past the end: 1 unit(s) in all")


@pytest.mark.parametrize("where", ["live", "export"])
def test_a_hand_edited_kind_is_refused_not_listed_as_no_run_under_all_kinds(page: Page, origin: str, site: str, where: str) -> None:
    base = f"{origin}/" if where == "live" else site
    open_ready(page, f"{base}#/?kind=vidoe")
    expect(page.locator("#view-error")).to_contain_text("kind must be one of video, agent, doc, imported, got 'vidoe'")
    open_ready(page, f"{base}#/?kind=video")
    expect(page.locator("#runs-table tbody tr")).to_have_count(2)


def test_a_run_compared_with_itself_is_refused_and_two_kinds_are_said_not_to_pair(page: Page, origin: str) -> None:
    """As `assay runs compare` does: the viewer gave a run compared with itself an "Inconclusive" verdict, and a
    video run against an agent run only "no unit was judged in both runs"."""
    open_ready(page, f"{origin}/#/compare/{AFTER}/{AFTER}")
    expect(page.locator("#view-error")).to_have_text(
        f"both references name the run {AFTER}; a run compared with itself has no changes: give two different runs")
    open_ready(page, f"{origin}/#/compare/{AGENT}/{AFTER}")
    expect(page.locator("#kinds-differ")).to_have_text(
        "These are runs of two kinds (agent, then video), whose units never pair: compare two runs of one kind.")
    open_ready(page, f"{origin}/#/compare/{BEFORE}/{AFTER}")
    expect(page.locator("#verdict")).to_be_visible()
    assert page.locator("#kinds-differ").count() == 0


def test_long_previews_leave_the_unit_ids_readable_in_a_900px_window(browser: object, origin: str) -> None:
    """Three previews cut at a fixed 360px took the whole of a 900px window: the unit ids were squeezed to a
    few letters a line and the page scrolled sideways."""
    context = browser.new_context(viewport={"width": 900, "height": 800})  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        open_ready(page, f"{origin}/#/run/{AFTER}")
        widths = page.evaluate("({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })")
        assert widths["scroll"] <= widths["client"], f"the run page is {widths['scroll']} px wide in a {widths['client']} px window"
        for unit in UNITS:  # each id on one line
            lines = page.locator(f'#units-table tr[data-unit="{unit}"] a').evaluate("link => link.getClientRects().length")
            assert lines == 1, f"{unit} takes {lines} lines"
        expect(page.locator(f'#units-table tr[data-unit="{FAILED}"] td.cell').first).to_have_attribute("title", LONG)
    finally:
        context.close()


def test_a_frame_left_out_of_the_export_is_said_without_asking_for_a_missing_file(page: Page, site: str) -> None:
    """Every passing video unit of an export asked for a frame file the export never writes (an error in the
    console) and said "video moved, or not exported"."""
    failed_loads: list[str] = []
    page.on("requestfailed", lambda request: failed_loads.append(request.url))
    open_ready(page, f"{site}#/unit/{AFTER}/{quote(PASSED, safe='')}")
    expect(page.locator("#no-frame")).to_have_text(
        "Frame not in this export: it holds the frames of failing units only (up to 200 per run); "
        "`assay view` shows any unit's frame.")
    # A failing unit's frame is exported, unless its video cannot be read: then the page says so.
    open_ready(page, f"{site}#/unit/{AFTER}/{quote(FAILED, safe='')}")
    expect(page.locator("#no-frame")).to_contain_text("Frame not in this export: the recorded video could not be read")
    assert page.locator("#unit-frame").count() == 0
    assert [url for url in failed_loads if "/frames/" in url] == []


def test_the_live_viewer_says_why_a_frame_is_not_available(page: Page, origin: str) -> None:
    open_ready(page, f"{origin}/#/unit/{AFTER}/{quote(FAILED, safe='')}")
    expect(page.locator("#no-frame")).to_have_text(f"Frame not available: The recorded video is no longer at {MISSING_VIDEO}.")


def test_an_export_opened_at_a_filtered_address_says_the_filter_is_not_applied(page: Page, site: str) -> None:
    """A live viewer's `?group=` or `?search=` address opened in an export listed every unit without a word."""
    open_ready(page, f"{site}#/run/{AFTER}?group=clip%2Flamp&search=lamp%2F2")
    expect(page.locator("#filter-not-exported")).to_contain_text("filter of this address needs the live viewer")
    page.evaluate("() => { document.body.dataset.ready = 'false'; }")
    page.get_by_role("button", name="clear it").click()
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator("#filter-not-exported").count() == 0
    assert "group=" not in page.url and "search=" not in page.url
    expect(page.locator("#units-table tbody tr")).to_have_count(3)


def test_compare_opens_on_the_first_tab_with_rows_when_nothing_regressed(page: Page, origin: str) -> None:
    """It opened on an empty Regressions table while the Fixes tab held the unit that changed."""
    open_ready(page, f"{origin}/#/compare/{AFTER}/{BEFORE}")
    expect(page.locator('#change-tabs a.active')).to_have_attribute("data-change", "fixes")
    expect(page.locator(f'#compare-table tr[data-unit="{FAILED}"]')).to_have_count(1)
    open_ready(page, f"{origin}/#/compare/{AFTER}/{BEFORE}?change=regressions")  # a tab asked for is kept, empty or not
    expect(page.locator('#change-tabs a.active')).to_have_attribute("data-change", "regressions")
    open_ready(page, f"{origin}/#/compare/{BEFORE}/{AFTER}")
    expect(page.locator('#change-tabs a.active')).to_have_attribute("data-change", "regressions")


def test_the_export_takes_the_start_of_a_run_id_as_the_live_viewer_does(page: Page, site: str) -> None:
    """`#/run/video-20260102` opened the run live, and was "not in this export" in the export."""
    open_ready(page, f"{site}#/run/{AFTER[:-6]}")
    page.wait_for_function("() => decodeURIComponent(location.hash) === '#/run/" + AFTER + "'")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#run-title")).to_have_text(AFTER)
    open_ready(page, f"{site}#/run/video-2026")  # the start of two: named as missing, not guessed
    expect(page.locator("#view-error")).to_contain_text("No run 'video-2026' in this export")
