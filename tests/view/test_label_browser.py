"""Label mode in a real browser (Debian's Chromium through Playwright): a person labels 20 units of a
mixed store (video, agent and doc units) from the keyboard; the labels are in the store and in
`assay labels export`; reloading the page resumes the queue; the agreement page shows the figures."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Page, browser_fixture, expect, page_fixture, serving, skip_without_browser
from filled_store import FilledStore
from mixed_store import MixedStore, build_mixed_store, labels_in
from typer.testing import CliRunner

from assay.cli.app import app
from assay.core.results_store import SqliteRunStore
from assay.view.data import ViewData
from assay.view.labelling import LabelSession
from assay.view.server import create_view_app

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()

ANSWERS = ["p", "f", "4", "p", "2", "f", "5", "p", "1", "f", "3", "p", "f", "p", "4", "f", "p", "5", "f", "p"]


@pytest.fixture(scope="module")
def mixed(filled_store: FilledStore, tmp_path_factory: pytest.TempPathFactory) -> MixedStore:
    return build_mixed_store(tmp_path_factory.mktemp("mixed"), filled_store.database)


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


def _item(page: Page) -> dict[str, str]:
    return page.locator("#label-item").evaluate("node => ({...node.dataset})")


def _stray_text(page: Page) -> list[str]:
    """Text directly inside the unit's container, outside any element (where a stray `null` lands)."""
    return page.locator("#label-item").evaluate(
        "item => Array.from(item.childNodes).filter((node) => node.nodeType === Node.TEXT_NODE).map((node) => node.textContent)"
    )


def _wait_for(page: Page, selector: str) -> None:
    page.wait_for_selector(selector, state="attached", timeout=10_000)


def _saved(page: Page, count: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        status = page.locator("#label-status").evaluate("node => ({...node.dataset})")
        if status.get("saved") == str(count) and status.get("pending") == "0":
            return
        time.sleep(0.05)
    raise AssertionError(f"the page did not save {count} labels: {status}")


# `mixed` comes first in each test's arguments: it is built before Chromium starts (the doc commands
# it runs use asyncio.run, which cannot run inside Playwright's event loop).
def test_a_person_labels_twenty_units_of_a_mixed_store_from_the_keyboard(
    mixed: MixedStore, page: Page, origin: str, database: Path, monkeypatch
) -> None:
    page.goto(origin + "/#/label")
    page.wait_for_selector("body[data-ready=true]")
    _wait_for(page, "#label-item[data-index='0']")
    labelled: list[tuple[str, str]] = []
    kinds = set()
    for number, key in enumerate(ANSWERS):
        item = _item(page)
        assert item["index"] == str(number)
        kinds.add(page.locator("#label-unit .muted").inner_text().split(" · ")[1])
        assert item["revealed"] == "false"  # the judge's verdict is hidden until the person answers
        assert _stray_text(page) == []
        expect(page.locator("#judge-panel")).to_have_attribute("data-hidden", "true")
        if number == 3:  # a note, from the keyboard too
            page.keyboard.press("n")
            page.keyboard.type("the reply names no temperature")
            page.keyboard.press("Enter")
        page.keyboard.press(key)
        _wait_for(page, f"#label-item[data-index='{number}'][data-revealed='true']")
        expect(page.locator("#judge-panel")).to_have_attribute("data-hidden", "false")
        labelled.append((item["run"], item["unit"]))
        page.keyboard.press("j")
        _wait_for(page, f"#label-item[data-index='{number + 1}']")
    assert kinds == {"video", "agent", "doc"}
    _saved(page, 20)

    stored = labels_in(database)
    assert [(label["run_id"], label["unit_id"]) for label in stored] == labelled
    assert {label["labeller"] for label in stored} == {"tester"}
    answers = [label["verdict"] if key in "pf" else label["score"] for key, label in zip(ANSWERS, stored)]
    assert answers == [{"p": "pass", "f": "fail"}.get(key) or int(key) for key in ANSWERS]
    assert stored[3]["note"] == "the reply names no temperature" and stored[3]["verdict"] == "pass"
    assert any(label["judgements"] and label["judgements"][0]["model"] == "judge-1" for label in stored)
    monkeypatch.setenv("ASSAY_STORE", str(database))
    exported = CliRunner().invoke(app, ["labels", "export"])
    assert exported.exit_code == 0, exported.output
    assert [(line["run_id"], line["unit_id"]) for line in map(json.loads, exported.stdout.splitlines())] == labelled

    # Reloading resumes the queue at the unit on screen; the labelled units have moved behind it.
    current = _item(page)
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    _wait_for(page, "#label-item[data-index='0']")
    assert (_item(page)["run"], _item(page)["unit"]) == (current["run"], current["unit"])
    assert (current["run"], current["unit"]) not in labelled
    # 22, not 20: the two video samples labelled in the later video run show the same frame and the
    # same observation in the earlier run too, so the labels count there as well.
    expect(page.locator("#label-status")).to_contain_text("22 labelled by you before this page")
    page.keyboard.press("k")  # nothing before the first unit
    assert _item(page)["index"] == "0"


def test_going_back_shows_the_label_given_and_the_judge_and_a_second_answer_adds_to_it(
    mixed: MixedStore, page: Page, origin: str, database: Path
) -> None:
    page.goto(origin + "/#/label?filter=judged")
    _wait_for(page, "#label-item[data-index='0']")
    first = _item(page)["unit"]
    page.keyboard.press("p")
    _wait_for(page, "#label-item[data-index='0'][data-revealed='true']")
    expect(page.locator("#judge-verdicts tbody tr")).to_have_count(1)
    page.keyboard.press("ArrowRight")
    _wait_for(page, "#label-item[data-index='1']")
    page.keyboard.press("ArrowLeft")
    _wait_for(page, "#label-item[data-index='0'][data-revealed='true']")
    expect(page.locator("#your-label")).to_have_attribute("data-verdict", "pass")
    page.keyboard.press("3")  # a score as well: the new label keeps the verdict, and the page stays on the unit
    _saved(page, 2)
    expect(page.locator("#your-label")).to_have_attribute("data-score", "3")
    expect(page.locator("#your-label")).to_have_attribute("data-verdict", "pass")
    assert _item(page)["index"] == "0"
    stored = labels_in(database)
    assert [(label["unit_id"], label["verdict"], label["score"]) for label in stored] == [(first, "pass", None), (first, "pass", 3)]


def test_the_judge_can_be_shown_before_answering_and_the_agreement_page_shows_the_figures(
    mixed: MixedStore, page: Page, origin: str
) -> None:
    page.goto(origin + f"/#/label?filter=judged&hide=0&scope={mixed.agent_judged}")
    _wait_for(page, "#label-item[data-index='0'][data-revealed='true']")
    for key in ("p", "f", "p", "f"):
        index = _item(page)["index"]
        page.keyboard.press(key)  # with the judge shown, an answer moves on at once
        _wait_for(page, f"#label-item[data-index='{int(index) + 1}']")
    _saved(page, 4)
    page.click("#agreement-link")
    page.wait_for_selector("#agreement-table")
    row = page.locator('#agreement-table tr[data-judge="judge-1 · assay-agent-judge/1:rubric"]')
    expect(row).to_have_count(1)
    expect(row.locator("td").nth(2)).to_have_text("4")
    expect(row.locator(".confusion")).to_be_visible()


def test_the_static_export_has_the_agreement_page_and_says_labels_need_the_live_viewer(
    mixed: MixedStore, page: Page, database: Path, tmp_path: Path
) -> None:
    from assay.core.labels.store import LabelBook
    from assay.core.labels.units import make_label, read_unit
    from assay.view.export import export_site

    with SqliteRunStore(database) as store:
        LabelBook(store).add([make_label(read_unit(store, mixed.agent_judged, f"main/weather/{name}#1"), "ann", verdict=verdict)
                              for name, verdict in (("paris", "pass"), ("lyon", "fail"), ("nowhere", "fail"))])
    site = tmp_path / "site"
    with SqliteRunStore(database, read_only=True) as store:
        export_site(ViewData(store), site)
    page.goto((site / "index.html").as_uri() + "#/agreement")
    page.wait_for_selector("body[data-ready=true]")
    row = page.locator('#agreement-table tr[data-judge="judge-1 · assay-agent-judge/1:rubric"]')
    expect(row.locator("td").nth(3)).to_have_text("66.7%")  # lyon: the judge passed it, ann failed it
    page.click("#label-link")
    expect(page.locator("#label-unavailable")).to_contain_text("assay view --label")


def test_reloading_on_a_unit_just_labelled_resumes_at_it_not_at_the_end_of_the_queue(
    mixed: MixedStore, page: Page, origin: str
) -> None:
    """Answered, judge shown, then reloaded before `j`: the unit on screen is now labelled, so the rebuilt
    queue (unlabelled units first) has it near its end; the page showed that end, `j` went nowhere."""
    page.goto(origin + "/#/label")
    _wait_for(page, "#label-item[data-index='0']")
    for number in range(3):
        page.keyboard.press("p")
        _wait_for(page, f"#label-item[data-index='{number}'][data-revealed='true']")
        page.keyboard.press("j")
        _wait_for(page, f"#label-item[data-index='{number + 1}']")
    page.keyboard.press("f")
    _wait_for(page, "#label-item[data-index='3'][data-revealed='true']")
    _saved(page, 4)
    on_screen = _item(page)
    queue_length = page.locator("#label-status").inner_text().split(" of ")[1].split(" ")[0]

    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    _wait_for(page, "#label-item[data-revealed='true']")
    resumed = _item(page)
    assert (resumed["run"], resumed["unit"], resumed["index"]) == (on_screen["run"], on_screen["unit"], "0")
    expect(page.locator("#your-label")).to_have_attribute("data-verdict", "fail")
    expect(page.locator("#label-status")).to_contain_text(f"unit 1 of {queue_length}")
    # `j` goes on to the units still to label, not past the end of the queue.
    page.keyboard.press("j")
    _wait_for(page, "#label-item[data-index='1'][data-revealed='false']")
    expect(page.locator("#your-label")).to_have_text("not labelled by you yet")
    # A second reload on an unlabelled unit resumes there, as before.
    current = _item(page)
    page.reload()
    _wait_for(page, "#label-item[data-index='0']")
    assert (_item(page)["run"], _item(page)["unit"]) == (current["run"], current["unit"])


def test_a_second_key_on_an_answered_unit_neither_moves_on_nor_repeats_the_label(
    mixed: MixedStore, page: Page, origin: str, database: Path
) -> None:
    page.goto(origin + "/#/label?filter=judged")
    _wait_for(page, "#label-item[data-index='0']")
    first = _item(page)["unit"]
    page.keyboard.press("p")
    page.keyboard.press("p")  # pressed twice: the second press comes while the first answer is saved
    _wait_for(page, "#label-item[data-index='0'][data-revealed='true']")
    expect(page.locator("#judge-verdicts tbody tr")).to_have_count(1)  # the judge's verdict is on screen
    _saved(page, 1)
    page.keyboard.press("p")  # again, with the judge shown: nothing to record, and only `j` moves on
    expect(page.locator("#your-label")).to_contain_text("j / → for the next unit")
    page.keyboard.press("j")
    _wait_for(page, "#label-item[data-index='1']")
    assert _item(page)["index"] == "1"
    _saved(page, 1)
    assert [(label["unit_id"], label["verdict"]) for label in labels_in(database)] == [(first, "pass")]


def test_an_address_naming_a_unit_the_queue_lacks_says_so(mixed: MixedStore, page: Page, origin: str) -> None:
    """`#/label?run=…&unit=<typo>` started at the head of the queue without a word."""
    page.goto(origin + f"/#/label?run={mixed.agent_judged}&unit=no-such-unit%231")
    _wait_for(page, "#label-item[data-index='0']")
    expect(page.locator("#label-not-found")).to_contain_text(f"Unit no-such-unit#1 of run {mixed.agent_judged} is not in this queue")


def test_a_queue_setting_the_server_refuses_is_said_above_the_controls_that_correct_it(
    mixed: MixedStore, page: Page, origin: str
) -> None:
    """A sample size of 0 typed into the form (or a run no longer in the store, from an old address) left a
    page holding only the server's message: the queue's controls were gone, so it could not be corrected there."""
    page.goto(origin + "/#/label?sample=0")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#label-refused")).to_contain_text("sample must be a positive number of units")
    expect(page.locator("#label-refused")).to_contain_text("Change them above and press Start")
    assert not page.locator("#view-error").count()
    page.fill("#label-sample", "3")
    page.click("#label-start")
    _wait_for(page, "#label-item[data-index='0']")
    expect(page.locator("#label-status")).to_contain_text("unit 1 of 3")
    expect(page.locator("#label-refused")).to_have_count(0)
    page.goto(origin + "/#/label?scope=no-such-run")
    expect(page.locator("#label-refused")).to_contain_text("no run 'no-such-run' in the store")
    expect(page.locator("#label-scope")).to_have_value("all")
    page.click("#label-start")
    _wait_for(page, "#label-item[data-index='0']")
