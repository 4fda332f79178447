"""What a stranger labelling in the viewer meets when saving goes wrong — the viewer stopped, started again on its
port, a note too long for a label, a unit that cannot be loaded — and when two tabs label the same unit. Checked in
a real browser (Debian's Chromium through Playwright); the labels are read back with `assay labels export`."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
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

UNITS = [f"main/eval{index}#1" for index in range(5)]


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    database = tmp_path / "store" / "assay.db"
    database.parent.mkdir()
    monkeypatch.setenv("ASSAY_STORE", str(database))
    publish(database, "agent", [agent_unit(index, score) for index, score in enumerate([0.9, 0.2, 0.7, 0.1, 0.6])])
    return database


@contextlib.contextmanager
def _viewer(database: Path, port: int = 0) -> Iterator[str]:
    """`assay view --label --as ann` of the store, on `port` (0: a free one), stopped on leaving: its origin."""
    store = SqliteRunStore(database)
    data = ViewData(store)
    try:
        with serving(lambda binding: create_view_app(data, binding, labelling=LabelSession(data, "ann")), port) as served:
            yield served
    finally:
        store.close()


def _exported() -> list[dict]:
    exported = CliRunner().invoke(app, ["labels", "export"])
    assert exported.exit_code == 0, exported.output
    return [json.loads(line) for line in exported.stdout.splitlines() if line.strip()]


def _unit(page: Page) -> str:
    return page.locator("#label-item").get_attribute("data-unit")


def _settled(page: Page) -> None:
    """Wait until no label is being saved."""
    expect(page.locator("#label-status")).to_have_attribute("data-pending", "0")


def test_a_label_the_stopped_viewer_did_not_save_is_not_shown_as_saved_and_the_same_key_saves_it(
    database: Path, page: Page
) -> None:
    """A score pressed while the viewer was stopped read "your label: pass, score 4" as if saved, and pressing 4
    again, once the viewer ran, recorded nothing (a key that repeats the label on screen is ignored)."""
    with _viewer(database) as origin:
        port = int(origin.rsplit(":", 1)[1])
        open_ready(page, f"{origin}/#/label")
        assert _unit(page) == UNITS[0]
        page.keyboard.press("p")
        expect(page.locator("#your-label")).to_have_attribute("data-verdict", "pass")
        expect(page.locator("#label-item")).to_have_attribute("data-revealed", "true")
        _settled(page)
    # The viewer is stopped; the person writes a note and adds a score.
    page.keyboard.press("n")
    page.keyboard.type("asks for Paris, names Lyon")
    page.keyboard.press("Escape")
    page.keyboard.press("4")
    expect(page.locator("#label-errors li")).to_have_count(1)
    error = page.locator("#label-errors li").inner_text()
    assert "not saved" in error and "not answering" in error and "Failed to fetch" not in error, error
    # The unit shows the label the store has, not one it lacks; the note is still in its box.
    expect(page.locator("#your-label")).to_have_attribute("data-score", "")
    expect(page.locator("#your-label")).to_have_text("your label: pass · j / → for the next unit")
    expect(page.locator("button[data-answer='4']")).not_to_have_class("answer chosen")
    expect(page.locator("#label-note")).to_have_value("asks for Paris, names Lyon")

    with _viewer(database, port):
        page.keyboard.press("4")
        expect(page.locator("#your-label")).to_have_attribute("data-score", "4")
        _settled(page)
        labels = _exported()
    assert [(label["unit_id"], label["verdict"], label["score"], label["note"]) for label in labels] == [
        (UNITS[0], "pass", None, ""), (UNITS[0], "pass", 4, "asks for Paris, names Lyon")]


def test_a_viewer_started_again_on_its_port_takes_the_open_pages_labels(database: Path, page: Page) -> None:
    """The open page kept the token of the viewer it was loaded from: after `assay view --label --port N` was
    started again, every label was refused ("The X-Assay-Write-Token header is missing or does not match this
    server.") until the page was reloaded."""
    with _viewer(database) as origin:
        port = int(origin.rsplit(":", 1)[1])
        open_ready(page, f"{origin}/#/label")
        page.keyboard.press("f")
        expect(page.locator("#label-item")).to_have_attribute("data-revealed", "true")
        _settled(page)
        page.keyboard.press("j")
        expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[1])
    with _viewer(database, port):
        page.keyboard.press("p")
        expect(page.locator("#your-label")).to_have_attribute("data-verdict", "pass")
        expect(page.locator("#label-item")).to_have_attribute("data-revealed", "true")
        expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[1])
        _settled(page)
        expect(page.locator("#label-errors li")).to_have_count(0)
        labels = _exported()
    assert [(label["unit_id"], label["verdict"]) for label in labels] == [(UNITS[0], "fail"), (UNITS[1], "pass")]


def test_a_note_too_long_for_a_label_is_named_as_the_cause_and_a_shorter_one_is_saved(database: Path, page: Page) -> None:
    """A pasted note of 70,000 characters was refused as "The request body is larger than 65536 bytes.", which
    does not say that the note is what to shorten."""
    with _viewer(database) as origin:
        open_ready(page, f"{origin}/#/label")
        note = page.locator("#label-note")
        for rambling in ("the reply rambles " * 4000, "the reply rambles " * 600):
            # 72,000 characters (past the request's 64 KiB) and 10,800 (under it, past a note's 10,000 characters): the
            # second was the server's message, the first named the request's 64 KiB, not the note's limit
            note.fill(rambling)
            page.keyboard.press("Escape")
            page.keyboard.press("p")
            expect(page.locator("#label-errors li").last).to_contain_text(f"({len(rambling):,} characters")
            error = page.locator("#label-errors li").last.inner_text()
            assert f"note is too long ({len(rambling):,} characters; a note holds at most 10,000)" in error, error
            expect(page.locator("#your-label")).to_have_text("not labelled by you yet")
            expect(note).to_have_value(rambling)
        note.fill("the reply rambles")
        page.keyboard.press("Escape")
        page.keyboard.press("p")
        expect(page.locator("#label-item")).to_have_attribute("data-revealed", "true")
        _settled(page)
        assert [(label["verdict"], label["note"]) for label in _exported()] == [("pass", "the reply rambles")]


def test_a_unit_that_cannot_be_loaded_is_said_and_the_queue_does_not_skip_it(database: Path, page: Page) -> None:
    """`j` to a unit the viewer did not answer for left the page on the unit before while the queue counted itself
    on the next one: the next `j` skipped a unit, with no word on the page."""
    with _viewer(database) as origin:
        open_ready(page, f"{origin}/#/label?hide=0")
        # The second unit is loaded ahead of time; from now on the viewer answers for no unit.
        page.wait_for_function("() => label.items.has(1) && !(label.items.get(1) instanceof Promise)")
        page.route("**/api/label/item*", lambda route: route.abort())
        page.keyboard.press("j")
        expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[1])
        page.keyboard.press("j")
        expect(page.locator("#label-errors li")).to_have_count(1)
        assert "not answering" in page.locator("#label-errors li").inner_text()
        assert _unit(page) == UNITS[1]
        expect(page.locator("#label-status")).to_contain_text("unit 2 of 5")
        page.unroute("**/api/label/item*")
        page.keyboard.press("j")
        expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[2])


def test_coming_back_to_the_tab_while_a_move_loads_does_not_draw_the_unit_being_loaded(database: Path, page: Page) -> None:
    """Back in the tab while `j` still loaded the next unit, the page read the next unit against the one on screen
    and drew it early; when that move then failed, the page said unit 2 could not be shown while showing it."""
    with _viewer(database) as origin:
        open_ready(page, f"{origin}/#/label")
        page.keyboard.press("p")  # unit 1 labelled: its label differs from unit 2's (none)
        expect(page.locator("#your-label")).to_have_attribute("data-verdict", "pass")
        _settled(page)
        held: list = []
        page.route("**/api/label/item*index=1*", lambda route: held.append(route))  # every read of unit 2 waits until released
        page.evaluate("() => label.items.delete(1)")  # not prefetched: the move asks the viewer
        page.keyboard.press("j")
        page.wait_for_function("() => label.index === 1")
        page.evaluate("""() => {
            Object.defineProperty(document, "visibilityState", { value: "visible", configurable: true });
            document.dispatchEvent(new Event("visibilitychange"));
        }""")
        page.wait_for_timeout(300)  # (a refresh of the wrong unit would have asked for unit 2 again by now)
        for route in held[1:]:
            route.continue_()  # a second read (the refresh) answers first
        page.wait_for_timeout(300)
        held[0].abort()  # and the move itself fails
        expect(page.locator("#label-errors li")).to_have_count(1)
        assert _unit(page) == UNITS[0]  # the page shows the unit the queue stands at, and says unit 2 failed
        assert "Unit 2 could not be shown" in page.locator("#label-errors li").inner_text()
        assert len(held) == 1, "the unit on screen was read again as if it were the one being loaded"
        page.unroute("**/api/label/item*index=1*")
        page.keyboard.press("j")
        expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[1])


def test_two_tabs_labelling_one_unit_show_the_label_that_counts(database: Path, browser: object) -> None:
    """Tab A answered pass, tab B then fail (the latest counts). Going back to the unit, tab A still read "your
    label: pass", and pressing `p` there recorded nothing, so the store kept fail while the page said pass."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        with _viewer(database) as origin:
            first, second = context.new_page(), context.new_page()
            open_ready(first, f"{origin}/#/label")
            open_ready(second, f"{origin}/#/label")
            first.keyboard.press("p")
            expect(first.locator("#your-label")).to_have_attribute("data-verdict", "pass")
            _settled(first)
            second.keyboard.press("f")
            expect(second.locator("#your-label")).to_have_attribute("data-verdict", "fail")
            _settled(second)
            first.keyboard.press("j")
            expect(first.locator("#label-item")).to_have_attribute("data-unit", UNITS[1])
            first.keyboard.press("k")
            expect(first.locator("#label-item")).to_have_attribute("data-unit", UNITS[0])
            expect(first.locator("#your-label")).to_have_attribute("data-verdict", "fail")
            first.keyboard.press("p")
            expect(first.locator("#your-label")).to_have_attribute("data-verdict", "pass")
            _settled(first)
            labels = _exported()
        assert [label["verdict"] for label in labels] == ["pass", "fail", "pass"]
    finally:
        context.close()


def test_a_label_not_saved_on_a_phone_is_said_without_widening_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: object
) -> None:
    """On a 375 px screen, the line saying a label was not saved named a long unit id as one word: the page grew
    to 1,199 px and scrolled sideways."""
    from dataclasses import replace

    database = tmp_path / "store" / "assay.db"
    database.parent.mkdir()
    monkeypatch.setenv("ASSAY_STORE", str(database))
    long_id = "main/" + "anevalnamedwithoutanyspacesinit" * 5 + "#1"
    publish(database, "agent", [replace(agent_unit(0, 0.4), unit_id=long_id, group=long_id[:-2])])
    context = browser.new_context(viewport={"width": 375, "height": 700}, is_mobile=True, has_touch=True)
    try:
        phone = context.new_page()
        with _viewer(database) as origin:
            open_ready(phone, f"{origin}/#/label")
            phone.route("**/api/label", lambda route: route.abort())
            phone.locator("button[data-answer='p']").tap()
            expect(phone.locator("#label-errors li")).to_have_count(1)
            assert long_id in phone.locator("#label-errors li").inner_text()
            widths = phone.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert widths[0] <= widths[1], widths
    finally:
        context.close()


def test_a_note_not_saved_yet_outlives_a_reload_of_the_tab(database: Path, page: Page) -> None:
    """A note written before answering (or one whose label the viewer could not save) was kept only by the open page:
    a reload, or the viewer's "reload the page" advice after a restart as another labeller, lost it."""
    with _viewer(database) as origin:
        open_ready(page, f"{origin}/#/label")
        assert _unit(page) == UNITS[0]
        page.keyboard.press("n")
        page.keyboard.type("asks for Paris, names Lyon")
        page.keyboard.press("Escape")
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        expect(page.locator("#label-item")).to_have_attribute("data-unit", UNITS[0])
        expect(page.locator("#label-note")).to_have_value("asks for Paris, names Lyon")
        page.keyboard.press("p")
        expect(page.locator("#your-label")).to_have_attribute("data-verdict", "pass")
        _settled(page)
        page.reload()  # saved with the label: the box shows the store's note, and no draft is left behind
        page.wait_for_selector("body[data-ready=true]")
        expect(page.locator("#label-note")).to_have_value("asks for Paris, names Lyon")
        assert page.evaluate("() => Object.keys(sessionStorage).filter((key) => key.startsWith('assay-label-note'))") == []
        labels = _exported()
    assert [(label["unit_id"], label["verdict"], label["note"]) for label in labels] == [
        (UNITS[0], "pass", "asks for Paris, names Lyon")]
