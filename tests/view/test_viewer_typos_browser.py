"""What a stranger sees after a slip: an address with a `%` that starts no escape, a runs filter that
matches nothing, and a note written in label mode before answering or left without Enter. Checked in
a real browser (Debian's Chromium through Playwright)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import Page, browser_fixture, expect, open_ready, page_fixture, serving, serving_store, skip_without_browser

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import ViewData
from assay.view.labelling import LabelSession
from assay.view.server import create_view_app

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()

RUN = "video-20260101T000000Z-aaaaaaaa"
UNITS = ["clip/lamp/0@1s#1", "clip/lamp/1@2s#1", "clip/lamp/2@3s#1"]


def _publish(database: Path) -> Path:
    publish_run(RunManifest(RUN, "video", "2026-01-01T00:00:00Z", title="one"),
                [UnitResult(unit, "failed", "clip/lamp", expected="red", observed="green") for unit in UNITS], database=database)
    return database


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_store(_publish(tmp_path_factory.mktemp("typos") / "assay.db")) as served:
        yield served


def _open(page: Page, address: str) -> None:
    open_ready(page, address, timeout=10_000)


def test_an_address_with_a_stray_percent_sign_is_answered_not_left_loading(page: Page, origin: str) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    _open(page, f"{origin}/#/unit/{RUN}/{quote(UNITS[0], safe='')}")
    _open(page, f"{origin}/#/run/{RUN[:-2]}%A")  # a pasted id cut in the middle of an escape
    expect(page.locator("#view-error")).to_contain_text(f"no run '{RUN[:-2]}%A'")
    expect(page.locator("#crumbs")).to_have_text("runs")
    assert errors == []


def test_an_address_with_no_page_says_so_instead_of_showing_the_runs_list(page: Page, origin: str) -> None:
    """`#/compare/<one id>` (a link cut short) and `#/nosuchpage` showed the runs list without a word."""
    _open(page, f"{origin}/#/compare/{RUN}")
    expect(page.locator("#view-error")).to_have_text(
        f"#/compare/{RUN} is not a whole address: this page's is #/compare/BEFORE/AFTER. The runs list links to every page.")
    _open(page, f"{origin}/#/nosuchpage")
    expect(page.locator("#view-error")).to_have_text(
        "this viewer has no page #/nosuchpage. The runs list links to every page.")
    _open(page, f"{origin}/#/")
    expect(page.locator("#runs-table tbody tr")).to_have_count(1)


def test_a_runs_filter_that_matches_nothing_does_not_say_no_runs_were_recorded(page: Page, origin: str) -> None:
    _open(page, f"{origin}/#/?search=no-such-run")
    expect(page.locator("#no-runs")).to_have_text("No run matches this kind and search: clear the filter to see every run.")
    _open(page, f"{origin}/#/")
    expect(page.locator("#runs-table tbody tr")).to_have_count(1)


@pytest.fixture
def labelling(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    database = _publish(tmp_path / "store" / "assay.db")
    store = SqliteRunStore(database)
    data = ViewData(store)
    try:
        with serving(lambda binding: create_view_app(data, binding, labelling=LabelSession(data, "tester"))) as served:
            yield served, database.parent / "labels.jsonl"
    finally:
        store.close()


def _notes(labels: Path, count: int) -> list[tuple[str, str, str]]:
    deadline = time.monotonic() + 10
    rows: list[tuple[str, str, str]] = []
    while time.monotonic() < deadline:
        lines = labels.read_text(encoding="utf-8").splitlines() if labels.exists() else []
        rows = [(label["unit_id"], label["verdict"], label["note"]) for label in map(json.loads, lines)]
        if len(rows) >= count:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"expected {count} label(s), found {rows}")


def test_a_note_written_before_answering_or_left_without_enter_is_not_lost(page: Page, labelling: tuple[str, Path]) -> None:
    origin, labels = labelling
    _open(page, f"{origin}/#/label")
    expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[0])
    # A note first, then Enter: nothing to save it with yet, and the page says so.
    page.keyboard.press("n")
    page.keyboard.type("the lamp is amber")
    page.keyboard.press("Enter")
    expect(page.locator("#your-label")).to_contain_text("note kept")
    # Moving on and back keeps the note; the answer saves it with the label.
    page.keyboard.press("j")
    expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[1])
    page.keyboard.press("k")
    expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[0])
    expect(page.locator("#label-note")).to_have_value("the lamp is amber")
    page.keyboard.press("f")
    assert _notes(labels, 1) == [(UNITS[0], "fail", "the lamp is amber")]
    # A note added to an answered unit and left with Esc, not Enter, is saved as the person moves on.
    expect(page.locator("#your-label")).to_contain_text("your label: fail")
    page.keyboard.press("n")
    page.keyboard.type(", not red")
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[1])
    assert _notes(labels, 2)[1] == (UNITS[0], "fail", "the lamp is amber, not red")
