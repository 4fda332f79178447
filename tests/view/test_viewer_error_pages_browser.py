"""What the viewer shows when a page cannot be shown (a run id that is not in the store, a hand-edited
address), a video run's Traces page, and the Agreement page of a store nobody has labelled yet. Checked
in a real browser (Debian's Chromium through Playwright)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest
from browser import Page, browser_fixture, expect, open_ready, page_fixture, serving, serving_store, skip_without_browser

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import ViewData
from assay.view.export import ExportLimits, export_site
from assay.view.labelling import LabelSession
from assay.view.server import create_view_app

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()

RUN = "video-20260101T000000Z-aaaaaaaa"
UNIT = "clip/lamp/0@1s#1"
MISSING = "video-20990101T000000Z-deadbeef"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory):
    database = tmp_path_factory.mktemp("pass-errors") / "assay.db"
    publish_run(RunManifest(RUN, "video", "2026-01-01T00:00:00Z", title="one"),
                [UnitResult(UNIT, "failed", "clip/lamp", expected="red", observed="green")], database=database)
    return database


@pytest.fixture(scope="module")
def origin(database) -> Iterator[str]:
    with serving_store(database) as served:
        yield served


@pytest.mark.parametrize("address", [f"#/run/{MISSING}", f"#/unit/{MISSING}/x", f"#/compare/{MISSING}/{RUN}", f"#/trend/{MISSING}"])
def test_a_page_that_fails_does_not_keep_the_top_bar_of_the_page_before(page: Page, origin: str, address: str) -> None:
    open_ready(page, f"{origin}/#/unit/{RUN}/{quote(UNIT, safe='')}")
    expect(page.locator("#crumbs")).to_contain_text(UNIT)
    open_ready(page, f"{origin}/{address}")
    expect(page.locator("#view-error")).to_contain_text(f"no run '{MISSING}'")
    # The top bar named the unit of the page before, as if the error were about it.
    expect(page.locator("#crumbs")).to_have_text("runs")
    assert RUN not in page.locator("#crumbs").inner_text()


def test_an_exported_page_that_is_not_included_does_not_keep_the_top_bar_of_the_page_before(page: Page, database, tmp_path) -> None:
    store = SqliteRunStore(database, read_only=True)
    try:
        export_site(ViewData(store), tmp_path / "site")
    finally:
        store.close()
    index = (tmp_path / "site" / "index.html").as_uri()
    open_ready(page, f"{index}#/unit/{RUN}/{quote(UNIT, safe='')}")
    expect(page.locator("#crumbs")).to_contain_text(UNIT)
    open_ready(page, f"{index}#/run/{MISSING}")
    # A run the export does not hold is named as such, not as a view left out.
    expect(page.locator("#view-error")).to_have_text(
        f"No run '{MISSING}' in this export: it holds the 1 run(s) listed on its first page.")
    expect(page.locator("#crumbs")).to_have_text("runs")
    open_ready(page, f"{index}#/compare/{RUN}/{MISSING}")
    expect(page.locator("#view-error")).to_contain_text(f"No run '{MISSING}' in this export")
    open_ready(page, f"{index}#/unit/{RUN}/no-such-unit")  # the run is there, whole: it has no such unit
    # In the live viewer's words (it said "This view is not included in the export.", as if an export could hold it).
    expect(page.locator("#view-error")).to_have_text(f"run {RUN} has no unit 'no-such-unit'")
    open_ready(page, f"{index}#/traces/{RUN}")  # a page the export leaves out is still said to be left out
    expect(page.locator("#view-error")).to_have_text("This view is not included in the export.")


def test_an_export_of_part_of_a_run_says_a_unit_it_left_out_is_left_out(page: Page, tmp_path) -> None:
    database = tmp_path / "assay.db"
    publish_run(RunManifest(RUN, "video", "2026-01-01T00:00:00Z", title="three"),
                [UnitResult(f"clip/lamp/{index}@1s#1", "passed", "clip/lamp") for index in range(3)], database=database)
    store = SqliteRunStore(database, read_only=True)
    try:
        export_site(ViewData(store), tmp_path / "site", limits=ExportLimits(units_per_run=1))
    finally:
        store.close()
    index = (tmp_path / "site" / "index.html").as_uri()
    open_ready(page, f"{index}#/unit/{RUN}/no-such-unit")
    expect(page.locator("#view-error")).to_have_text(
        "Unit 'no-such-unit' is not in this export: it holds the first 1 units of each run and its failing ones; "
        "`assay view` shows any unit.")


def test_a_run_that_set_no_gate_says_so_under_its_gates_heading(page: Page, origin: str) -> None:
    open_ready(page, f"{origin}/#/run/{RUN}")
    expect(page.locator("#no-gates")).to_have_text("No gate was set for this run.")
    expect(page.locator("#gates")).to_have_count(0)


def test_a_hand_edited_offset_is_named_as_it_was_given(page: Page, origin: str) -> None:
    open_ready(page, f"{origin}/#/run/{RUN}?offset=abc")
    expect(page.locator("#view-error")).to_have_text("offset must be a nonnegative integer, got 'abc'")


def test_the_traces_page_of_a_kind_without_traces_says_so_once(page: Page, origin: str) -> None:
    open_ready(page, f"{origin}/#/traces/{RUN}")
    expect(page.locator("#main")).to_contain_text("Runs of kind video have no traces.")
    # Not also "No attempt of this run received spans", nor a pager over traced attempts it cannot have.
    expect(page.locator("#main")).not_to_contain_text("received spans")
    expect(page.locator("#main .pager")).to_have_count(0)


def test_the_agreement_page_of_a_store_without_labels_names_no_labeller(page: Page, origin: str) -> None:
    open_ready(page, f"{origin}/#/agreement")
    expect(page.locator("#agreement-empty")).to_be_visible()
    expect(page.locator("#main")).not_to_contain_text("One labeller so far.")
    expect(page.locator("#main")).to_contain_text("No labeller yet.")


@pytest.fixture(scope="module")
def labelled_origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A store with one label, by ann, served in label mode (the agreement page is the same in both)."""
    database = tmp_path_factory.mktemp("pass-agreement") / "assay.db"
    publish_run(RunManifest(RUN, "video", "2026-01-01T00:00:00Z", title="one"),
                [UnitResult(UNIT, "failed", "clip/lamp", expected="red", observed="green")], database=database)
    store = SqliteRunStore(database)
    data = ViewData(store)
    session = LabelSession(data, "ann")
    session.put_label({"run_id": RUN, "unit_id": UNIT, "verdict": "fail"})
    try:
        with serving(lambda binding: create_view_app(data, binding, labelling=session)) as served:
            yield served
    finally:
        store.close()


def test_an_agreement_filter_that_matches_nobody_is_refused_not_shown_as_no_labels(page: Page, labelled_origin: str) -> None:
    open_ready(page, f"{labelled_origin}/#/agreement")
    expect(page.locator("#agreement-table")).to_contain_text("deterministic checks (video)")
    page.fill("#agreement-labeller", "bob")
    page.press("#agreement-labeller", "Enter")
    # It read "0 label(s) of 0 unit(s) by nobody yet … No labelled unit yet", as if ann had labelled nothing;
    # `assay judge agreement --labeller bob` refuses the typo and names who labelled.
    # Named as the page's filter, not the command's option (it said "--labeller 'bob'", which this page has none of).
    expect(page.locator("#agreement-refused")).to_have_text("the labeller filter 'bob': no labels by 'bob' (labellers here: ann)")
    expect(page.locator("#main")).not_to_contain_text("No labelled unit yet")
    expect(page.locator("#agreement-labeller")).to_have_value("bob")  # the filters stay, to correct it
    page.fill("#agreement-labeller", "ann")
    page.press("#agreement-labeller", "Enter")
    expect(page.locator("#agreement-table")).to_contain_text("deterministic checks (video)")
    open_ready(page, f"{labelled_origin}/#/agreement?judge=zzz")
    # Only the deterministic checks graded the labelled units: said so, not "their judges: none".
    expect(page.locator("#agreement-refused")).to_contain_text("the judge filter 'zzz': no model judge graded the labelled "
                                                               "units, only their deterministic checks, which the judge "
                                                               "filter and the rubric filter do not select; leave the judge "
                                                               "filter out")
