"""The results viewer in a real browser: Debian's Chromium driven by Playwright, live and exported."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Page, browser_fixture, expect, page_fixture, serving_store, skip_without_browser
from damaged_store import AFTER, DAMAGED_UNITS_PAGE, assay, live_viewer, make_store
from filled_store import FilledStore

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import ViewData
from assay.view.export import export_site

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()


@pytest.fixture(scope="module")
def origin(filled_store: FilledStore) -> Iterator[str]:
    with serving_store(filled_store.database) as served:
        yield served


def _ready(page: Page) -> None:
    page.wait_for_selector("body[data-ready=true]")


def _stray_text(page: Page) -> list[str]:
    """Text sitting directly in the page body outside any element (where a stray `null` lands)."""
    return page.locator("#main").evaluate(
        "main => Array.from(main.childNodes).filter((node) => node.nodeType === Node.TEXT_NODE).map((node) => node.textContent)"
    )


def _wait_for_image(page: Page, selector: str) -> int:
    """The image's natural width once loaded (polled: the viewer's CSP forbids wait_for_function's eval)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        width = page.locator(selector).evaluate("image => image.complete ? image.naturalWidth : 0")
        if width:
            return width
        time.sleep(0.05)
    raise AssertionError(f"{selector} did not load")


def test_runs_page_filters_by_kind_and_compares_two_runs(page: Page, origin: str, filled_store: FilledStore) -> None:
    page.goto(origin + "/")
    _ready(page)
    expect(page.locator("#runs-table tbody tr")).to_have_count(5)
    page.select_option("#kind-filter", "video")
    expect(page.locator("#runs-table tbody tr")).to_have_count(2)
    for run_id in (filled_store.video_after, filled_store.video_before):
        page.locator(f'tr[data-run="{run_id}"] input[type=checkbox]').check()
    page.click("#compare-selected")
    expect(page.locator("#verdict")).to_contain_text("Regressed: units with too little history (8): 0 changed for the better, 8 for the worse")
    expect(page.locator("#compare-table tbody tr")).to_have_count(8)
    expect(page.locator("#pass-rate-difference")).to_have_text("-100.0 pts")
    page.click('[data-change="fixes"]')
    expect(page.locator("#compare-table tbody tr")).to_have_count(0)


def test_video_run_page_and_frame_drill_down(page: Page, origin: str, filled_store: FilledStore) -> None:
    page.goto(f"{origin}/#/run/{filled_store.video_after}")
    _ready(page)
    expect(page.locator("#run-pass-rate")).to_have_text("0.0%")
    expect(page.locator("#groups-table tbody tr")).to_have_count(1)
    expect(page.locator("#units-table tbody tr")).to_have_count(8)
    expect(page.locator("#gates li", has_text="min_pass_rate")).to_contain_text("fail")
    page.locator('tr[data-unit="numbers/number/5@0.5s#1"]').click()
    expect(page.locator("#unit-expected")).to_have_text("105")
    expect(page.locator("#unit-observed")).to_have_text("5")
    frame = page.locator("#unit-frame")
    expect(frame).to_be_visible()
    assert _wait_for_image(page, "#unit-frame") > 0


def test_agent_unit_shows_transcript_tool_calls_and_assertion_reasons(page: Page, origin: str, filled_store: FilledStore) -> None:
    page.goto(f"{origin}/#/run/{filled_store.agent}?verdict=failed%2Cerrored")
    _ready(page)
    expect(page.locator("#units-table tbody tr")).to_have_count(1)
    page.locator("#units-table tbody tr a").click()
    _ready(page)
    expect(page.locator("#unit-title")).to_contain_text("baseline/wrong_on_purpose#1")
    expect(page.locator("#transcript")).to_contain_text("user: Where is my order 1002?")
    expect(page.locator("#transcript .event.tool").first).to_be_visible()
    expect(page.locator("#assertions")).to_contain_text("cancel_order")


def test_run_pages_print_no_stray_null(page: Page, origin: str, filled_store: FilledStore) -> None:
    for run_id in (filled_store.video_after, filled_store.agent, filled_store.doc_after):
        page.goto(f"{origin}/#/run/{run_id}")
        _ready(page)
        expect(page.locator("#groups-table")).to_be_visible()
        assert _stray_text(page) == [], run_id


def test_agent_unit_shows_its_assertions_in_place_of_expected_and_observed(page: Page, origin: str, filled_store: FilledStore) -> None:
    page.goto(f"{origin}/#/run/{filled_store.agent}?search=greetings%2Fcasual")
    _ready(page)
    row = page.locator('tr[data-unit="baseline/greetings/casual#1"]')
    expect(row.locator("td").nth(2)).to_have_text('succeeded(); used_no_tools(); check(includes("Hello"))')
    expect(row.locator("td").nth(3)).to_have_text("3 matched")
    row.locator("a").click()
    _ready(page)
    expect(page.locator("#unit-title")).to_contain_text("baseline/greetings/casual#1")
    expect(page.locator("#assertions tbody tr")).to_have_count(3)
    expect(page.locator("#assertions")).to_contain_text("used_no_tools()")
    expect(page.locator("#unit-expected")).to_have_count(0)
    expect(page.locator("#unit-observed")).to_have_count(0)
    assert _stray_text(page) == []
    expect(page.locator("#main")).not_to_contain_text("null")


def test_compare_page_shows_the_cli_verdict_in_the_same_words(page: Page, tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    before = [UnitResult(f"case-{index:02d}", "failed" if index == 15 else "passed") for index in range(16)]
    after = [UnitResult(unit.unit_id, "failed" if index < 4 else unit.verdict) for index, unit in enumerate(before)]
    publish_run(RunManifest("doc-before", "doc", "2026-01-01T00:00:00Z"), before, database=database)
    publish_run(RunManifest("doc-after", "doc", "2026-01-02T00:00:00Z"), after, database=database)
    summary = {"deterministic": True}
    publish_run(RunManifest("doc-before2", "doc", "2026-01-03T00:00:00Z", summary=summary), before, database=database)
    publish_run(RunManifest("doc-after2", "doc", "2026-01-04T00:00:00Z", summary=summary), after, database=database)
    shown = []
    for pair, code, start, css in ((("doc-before", "doc-after"), 0, "Inconclusive: ", "panel sig warn"),
                                   (("doc-before2", "doc-after2"), 1, "Regressed: ", "panel sig bad")):
        cli = assay(database, "runs", "compare", *pair, "--fail-on-regression")
        assert cli.returncode == code, cli.stdout + cli.stderr
        shown.append((pair, next(line for line in cli.stdout.splitlines() if line.startswith(start)), css))
    with serving_store(database) as origin:
        for (before_id, after_id), verdict, css in shown:
            page.goto(f"{origin}/#/compare/{before_id}/{after_id}")
            _ready(page)
            expect(page.locator("#verdict")).to_have_text(verdict)
            expect(page.locator("#verdict")).to_have_class(css)


def test_compare_page_says_why_nothing_was_judged_in_both_as_the_cli_does(page: Page, tmp_path: Path) -> None:
    """A candidate that carried every unit: the page said only "Inconclusive", without the CLI's "Why: …" line."""
    database = tmp_path / "assay.db"
    ids = [f"baseline/eval{index}#1" for index in range(3)]
    publish_run(RunManifest("agent-20261203T100000Z-00000001", "agent", "2026-12-03T10:00:00Z"),
                [UnitResult(unit_id, "passed") for unit_id in ids], database=database)
    carried = [UnitResult(unit_id, "passed", carried_from={"run_id": "agent-20261203T100000Z-00000001", "unit_id": unit_id})
               for unit_id in ids]
    publish_run(RunManifest("agent-20261203T110000Z-00000002", "agent", "2026-12-03T11:00:00Z"), carried, database=database)
    cli = assay(database, "runs", "compare", "agent-20261203T100000Z-00000001", "agent-20261203T110000Z-00000002")
    why = next(line for line in cli.stdout.splitlines() if line.startswith("Why: "))
    with serving_store(database) as origin:
        page.goto(f"{origin}/#/compare/agent-20261203T100000Z-00000001/agent-20261203T110000Z-00000002")
        _ready(page)
        expect(page.locator("#verdict")).to_have_text("Inconclusive: no unit was judged in both runs.")
        expect(page.locator("#verdict-why")).to_have_text(why)


def test_live_viewer_on_a_damaged_store_shows_what_is_wrong(page: Page, tmp_path: Path) -> None:
    database = make_store(tmp_path)
    DAMAGED_UNITS_PAGE(database)
    with live_viewer(database, tmp_path) as viewer:
        page.goto(f"{viewer.origin}/#/run/{AFTER}")
        _ready(page)
        expect(page.locator("#view-error")).to_contain_text(f"the results store {database} is damaged")
        expect(page.locator("#view-error")).to_contain_text("assay runs reindex")
    assert "Traceback" not in viewer.stderr()


def test_doc_unit_shows_candidate_and_findings(page: Page, origin: str, filled_store: FilledStore) -> None:
    page.goto(f"{origin}/#/unit/{filled_store.doc_after}/{'release-notes-v1%2Fdeterministic'}")
    _ready(page)
    expect(page.locator("#unit-observed")).to_have_text("red")
    expect(page.locator("#findings tbody tr")).to_have_count(3)
    expect(page.locator("#candidate")).not_to_be_empty()


def test_run_page_paginates_a_large_run(page: Page, tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    units = [UnitResult(f"g{i % 4}/{i}", "passed" if i % 5 else "failed", f"g{i % 4}") for i in range(2500)]
    publish_run(RunManifest("video-big", "video", "2026-01-01T00:00:00Z", title="big"), units, database=database)
    with serving_store(database) as origin:
        started = time.monotonic()
        page.goto(f"{origin}/#/run/video-big")
        _ready(page)
        expect(page.locator("#units-table tbody tr")).to_have_count(100)
        assert time.monotonic() - started < 5
        expect(page.locator("#page-status")).to_have_text("1–100 of 2500")
        page.click("#next-page")
        expect(page.locator("#page-status")).to_have_text("101–200 of 2500")
        page.select_option("#verdict-filter", "failed,errored")
        expect(page.locator("#page-status")).to_have_text("1–100 of 500")
        page.locator("#unit-search").fill("/25")
        page.locator("#unit-search").press("Enter")
        expect(page.locator("#page-status")).to_have_text("1–3 of 3")  # failing ids containing /25: 25, 250, 255


def test_static_export_opens_from_disk(page: Page, filled_store: FilledStore, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with SqliteRunStore(filled_store.database, read_only=True) as store:
        export_site(ViewData(store), site)
    page.goto((site / "index.html").as_uri())
    _ready(page)
    expect(page.locator("#runs-table tbody tr")).to_have_count(5)
    # The export searches as the live viewer and `runs list --search` do, whatever the case (it found nothing).
    page.goto((site / "index.html").as_uri() + f"#/?search={filled_store.video_after.upper()}")
    _ready(page)
    expect(page.locator("#runs-table tbody tr")).to_have_count(1)
    page.goto((site / "index.html").as_uri() + f"#/run/{filled_store.video_after}")
    _ready(page)
    expect(page.locator("#units-table tbody tr")).to_have_count(8)
    page.locator('tr[data-unit="numbers/number/2@0.2s#1"]').click()
    _ready(page)
    expect(page.locator("#unit-observed")).to_have_text("2")
    assert _wait_for_image(page, "#unit-frame") > 0
    page.goto((site / "index.html").as_uri() + f"#/compare/{filled_store.video_before}/{filled_store.video_after}")
    _ready(page)
    expect(page.locator("#verdict")).to_contain_text("Regressed: units with too little history (8): 0 changed for the better, 8 for the worse")


def test_the_trend_page_charts_each_groups_pass_rate_with_its_band_live_and_exported(page: Page, tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    for index in range(5):  # the steady group breaks in the last run; one unit of the other flips every run
        units = [UnitResult(f"steady/u{unit}#1", "failed" if index == 4 and unit < 3 else "passed", group="steady")
                 for unit in range(6)]
        units += [UnitResult("wobbly/flipper#1", "passed" if index % 2 else "failed", group="wobbly"),
                  UnitResult("wobbly/calm#1", "passed", group="wobbly")]
        publish_run(RunManifest(f"video-{index}", "video", f"2026-04-0{index + 1}T00:00:00Z"), units, database=database)
    cli = assay(database, "runs", "trend", "steady", "--json")
    import json

    expected = [round(point["pass_rate"] * 100, 1) for point in json.loads(cli.stdout)["points"]]
    assert expected == [100.0, 100.0, 100.0, 100.0, 50.0]
    site = tmp_path / "site"
    with SqliteRunStore(database, read_only=True) as store:
        export_site(ViewData(store), site)
    with serving_store(database) as origin:
        _check_trend_page(page, f"{origin}/#/run/video-4", expected)
    _check_trend_page(page, (site / "index.html").as_uri() + "#/run/video-4", expected)


def _check_trend_page(page: Page, run_page: str, expected: list[float]) -> None:
    page.goto(run_page)
    _ready(page)
    page.click("#trend-link")
    _ready(page)
    charts = page.locator("#trend-charts .trend")
    expect(charts).to_have_count(3)  # all units, then the least reliable group first
    assert [charts.nth(index).get_attribute("data-group") for index in range(3)] == ["all units", "wobbly", "steady"]
    steady = page.locator('.trend[data-group="steady"]')
    expect(steady.locator(".trend-point")).to_have_count(5)
    expect(steady.locator(".trend-band")).to_have_count(1)
    titles = steady.locator(".trend-point title").evaluate_all("nodes => nodes.map((node) => node.textContent)")
    assert [float(text.split(": ")[1].split("%")[0]) for text in titles] == expected
    expect(page.locator('.trend[data-group="wobbly"] .flaky-units')).to_contain_text("1 flaky: wobbly/flipper")
    expect(steady.locator(".flaky-units")).to_contain_text("3 flaky")
    # The whole series' panel names them too (it said "no flaky unit" whatever the groups held).
    expect(page.locator('.trend[data-group="all units"] .flaky-units')).to_contain_text("4 flaky")


def test_a_run_that_judged_nothing_is_marked_on_the_trend_chart_and_says_why(page: Page, tmp_path: Path) -> None:
    """A run that carried every unit from the one before (an agent run in which nothing changed) has no pass
    rate: the chart marks it and says why, as `assay runs trend` does, instead of leaving its place blank."""
    database = tmp_path / "assay.db"
    publish_run(RunManifest("agent-1", "agent", "2026-04-01T00:00:00Z"),
                [UnitResult(f"e{unit}#1", "passed" if unit else "failed", group="evals") for unit in range(4)], database=database)
    carried = [UnitResult(f"e{unit}#1", "passed" if unit else "failed", group="evals",
                          carried_from={"run_id": "agent-1", "unit_id": f"e{unit}#1"}) for unit in range(4)]
    publish_run(RunManifest("agent-2", "agent", "2026-04-02T00:00:00Z"), carried, database=database)
    assert "agent-2     n/a  no unit judged (each was carried" in assay(database, "runs", "trend", "evals").stdout
    with serving_store(database) as origin:
        page.goto(f"{origin}/#/trend/agent-2")
        _ready(page)
        whole = page.locator('.trend[data-group="all units"]')
        expect(whole.locator(".trend-point")).to_have_count(1)  # the first run's, judged
        expect(whole.locator(".trend-none")).to_have_count(1)
        assert whole.locator(".trend-none").get_attribute("data-run") == "agent-2"
        assert whole.locator(".trend-none title").text_content() == (
            "agent-2: no unit judged (each was carried from an earlier run, skipped or ignored)")
        expect(whole.locator(".trend-empty")).to_have_count(0)
        page.goto(f"{origin}/#/trend/agent-1")  # a series of one run that judged something: nothing to mark
        _ready(page)
        expect(page.locator(".trend-none")).to_have_count(0)
    publish_run(RunManifest("agent-0", "agent", "2026-03-31T00:00:00Z"), carried, database=tmp_path / "only" / "assay.db")
    with serving_store(tmp_path / "only" / "assay.db") as origin:
        page.goto(f"{origin}/#/trend/agent-0")
        _ready(page)
        expect(page.locator('.trend[data-group="all units"] .trend-empty')).to_have_text("no unit judged in this run")


def test_the_trend_charts_axes_are_labelled_and_the_chart_says_what_it_shows(page: Page, tmp_path: Path) -> None:
    """A trend chart names its axes: y is the pass rate (0%, 50% and 100% ticks, on the heights the points
    are drawn at), x the runs of the series oldest first (the first and the last by number and date); its
    accessible name (aria-label and <title>) says the same, with the latest pass rate."""
    database = tmp_path / "assay.db"
    for index in range(5):  # steady: all six pass, then half of them fail in the last run
        units = [UnitResult(f"steady/u{unit}#1", "failed" if index == 4 and unit < 3 else "passed", group="steady")
                 for unit in range(6)]
        publish_run(RunManifest(f"video-{index}", "video", f"2026-04-0{index + 1}T00:00:00Z"), units, database=database)
    with serving_store(database) as origin:
        page.goto(f"{origin}/#/trend/video-4")
        _ready(page)
        chart = page.locator('.trend[data-group="steady"] svg.trend-chart')
        expect(chart).to_be_visible()
        name = ("steady: pass rate (y axis, 0% to 100%) over 5 runs, oldest first "
                "(#1 · 2026-04-01 to #5 · 2026-04-05) (x axis); latest 50.0%")
        assert chart.get_attribute("role") == "img"
        assert chart.get_attribute("aria-label") == name
        assert chart.locator(":scope > title").text_content() == name
        texts = lambda selector: chart.locator(selector).evaluate_all("nodes => nodes.map((node) => node.textContent)")  # noqa: E731
        assert texts(".trend-y-tick") == ["0%", "50%", "100%"]
        assert texts(".trend-y-title") == ["pass rate"]
        assert texts(".trend-x-tick") == ["#1 · 2026-04-01", "#5 · 2026-04-05"]
        assert [chart.locator(".trend-x-tick").nth(i).get_attribute("data-run") for i in range(2)] == ["video-0", "video-4"]
        assert texts(".trend-x-title") == ["runs, oldest → newest (5)"]
        expect(chart.locator(".trend-x-mark")).to_have_count(5)  # a mark on the x axis per run
        # The ticks stand at the heights the points are drawn at: the first runs at 100%, the last at 50%.
        tick_y = {text: y for text, y in chart.locator(".trend-y-tick").evaluate_all(
            "nodes => nodes.map((node) => [node.textContent, node.getBBox().y + node.getBBox().height / 2])")}
        point_y = chart.locator(".trend-point").evaluate_all("nodes => nodes.map((node) => Number(node.getAttribute('cy')))")
        assert abs(point_y[0] - tick_y["100%"]) < 3 and abs(point_y[-1] - tick_y["50%"]) < 3, (tick_y, point_y)
        assert tick_y["100%"] < tick_y["50%"] < tick_y["0%"]
        # Every label is drawn inside the chart, none over another.
        boxes = chart.locator("text").evaluate_all(
            "nodes => nodes.map((node) => { const r = node.getBoundingClientRect(); return [node.textContent, r.left, r.right, r.top, r.bottom]; })")
        frame = chart.evaluate("node => { const r = node.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; }")
        for text, left, right, top, bottom in boxes:
            assert frame[0] - 0.5 <= left and right <= frame[1] + 0.5 and frame[2] - 0.5 <= top and bottom <= frame[3] + 0.5, (text, frame)
        for index, one in enumerate(boxes):
            for other in boxes[index + 1:]:
                apart = one[2] <= other[1] or other[2] <= one[1] or one[4] <= other[3] or other[4] <= one[3]
                assert apart, (one, other)
