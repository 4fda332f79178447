"""The waterfall, the timing tree and the Traces page of a real traced run, in the viewer's API and in
Debian's Chromium (live and in the static export).

The run is `assay agent run` in a subprocess: each turn of its agent starts a child process that exports
its spans with the OpenTelemetry SDK to the run's receiver (`ctx.telemetry.env`); one eval is graded by
a judge on the fake OpenAI-compatible server, so its phase tree has a judge call."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")

from browser import Page, browser_fixture, expect, page_fixture, serving, skip_without_browser  # noqa: E402
from servers.fake_openai import FakeOpenAIServer, json_reply  # noqa: E402

from assay.core.results_store import SqliteRunStore  # noqa: E402
from assay.view.data import ViewData  # noqa: E402
from assay.view.export import export_site  # noqa: E402
from assay.view.server import create_view_app  # noqa: E402

AGENT_TESTS = Path(__file__).resolve().parents[1] / "agent"
if str(AGENT_TESTS) not in sys.path:
    sys.path.insert(0, str(AGENT_TESTS))

from traced_projects import child_span_project  # noqa: E402

browser = browser_fixture()
page = page_fixture()
NOISY, TWO_TURNS = "shop/orders/noisy#1", "shop/orders/two_turns#1"
RED = "rgb(214, 69, 69)"  # --fail


@dataclass(frozen=True)
class TracedRun:
    database: Path
    run_id: str


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TracedRun]:
    root = tmp_path_factory.mktemp("traced-view")
    judge = FakeOpenAIServer().start()
    try:
        # Answered by path, not from a queue: the run's judge preflight asks the endpoint for its models first.
        judge.respond_with(lambda request: json_reply({"reasons": "it names the order", "score": 1.0}))
        project = child_span_project(root / "project", judge_url=judge.base_url)
        database = root / "store.db"
        env = {**os.environ, "ASSAY_STORE": str(database), "OPENAI_API_KEY": "judge-key"}
        completed = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                                   capture_output=True, text=True, cwd=root, env=env, timeout=120, check=False)
    finally:
        judge.stop()
    assert completed.returncode == 1, completed.stdout + completed.stderr  # two_turns fails on purpose
    assert "telemetry" not in completed.stdout + completed.stderr  # every turn's spans arrived
    with SqliteRunStore(database, read_only=True) as store:
        yield TracedRun(database, store.resolve("latest"))


@pytest.fixture(scope="module")
def data(traced_run: TracedRun) -> Iterator[ViewData]:
    store = SqliteRunStore(traced_run.database, read_only=True)
    try:
        yield ViewData(store)
    finally:
        store.close()


# -- the API the pages read ------------------------------------------------------------------------

def test_the_traces_list_has_one_row_per_attempt_with_spans(data: ViewData, traced_run: TracedRun) -> None:
    page = data.traces({"run": traced_run.run_id})
    assert page["total"] == 2 and page["kind"] == "agent"
    rows = {row["unit_id"]: row for row in page["traces"]}
    noisy, two = rows[NOISY], rows[TWO_TURNS]
    assert (noisy["turns"], noisy["span_count"], noisy["errors"], noisy["verdict"]) == (1, 175, 1, "passed")
    assert (two["turns"], two["turns_with_spans"], two["span_count"], two["errors"], two["verdict"]) == (2, 2, 14, 2, "failed")
    assert two["counts"] == {"model": 4, "tool": 4, "subagent": 2, "other": 4} and two["attributed_by"] == "traceparent"
    assert noisy["duration_ms"] > 0
    assert data.traces({"run": traced_run.run_id, "offset": "1", "limit": "1"})["traces"] == [page["traces"][1]]


def test_the_attempt_page_carries_its_waterfall_per_turn_and_its_timing(data: ViewData, traced_run: TracedRun) -> None:
    unit = data.unit({"run": traced_run.run_id, "unit": TWO_TURNS})
    assert [turn["label"] for turn in unit["waterfall"]["turns"]] == ["turn 1", "turn 2"]
    phases = [(row["phase"], row["depth"]) for row in unit["timing"]]
    assert phases[:3] == [("attempt", 0), ("eval.run", 1), ("agent.send", 2)] and ("judge", 1) in phases


# -- in Chromium -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def origin(data: ViewData) -> Iterator[str]:
    with serving(lambda binding: create_view_app(data, binding)) as served:
        yield served


def _ready(page: Page) -> None:
    page.wait_for_selector("body[data-ready=true]")


def _bar_style(row) -> tuple[float, float, str]:
    """(left %, width %, background colour) of a waterfall row's bar."""
    left, width, colour = row.locator(".wf-bar").evaluate(
        "bar => [bar.style.left, bar.style.width, getComputedStyle(bar).backgroundColor]")
    return float(left.rstrip("%")), float(width.rstrip("%")), colour


def _check_traces_list(page: Page) -> None:
    expect(page.locator("#traces-table tbody tr")).to_have_count(2)
    noisy = page.locator(f'#traces-table tr[data-unit="{NOISY}"] td')
    expect(noisy.nth(2)).to_have_text("1")
    expect(noisy.nth(3)).to_have_text("175")
    expect(noisy.nth(6)).to_have_text("1")
    two = page.locator(f'#traces-table tr[data-unit="{TWO_TURNS}"] td')
    expect(two.nth(1)).to_have_text("failed")
    expect(two.nth(2)).to_have_text("2")
    expect(two.nth(3)).to_have_text("14")
    expect(page.locator("#traces-status")).to_have_text("1–2 of 2 traced attempt(s)")


def _check_noisy_waterfall(page: Page) -> None:
    expect(page.locator("#waterfall .trace")).to_have_count(1)
    rows = page.locator("#waterfall .wf-row[data-span]")
    expect(rows).to_have_count(175)
    # Past 150 spans the 170 `other` spans are folded away behind a button.
    expect(page.locator("#waterfall .wf-row[data-span]:visible")).to_have_count(5)
    expect(page.locator(".wf-unfold")).to_have_text("show 170 folded span(s) (other, past 150)")
    root = page.locator('#waterfall .wf-row[data-category="subagent"]')
    left, width, _ = _bar_style(root)
    assert 0 <= left < 100 and 0 < width <= 100 - left
    # The failing tool span is red, its bar too; the others are not.
    failing = page.locator('#waterfall .wf-row[data-error="true"]')
    expect(failing).to_have_count(1)
    expect(failing).to_contain_text("execute_tool refund_order")
    assert _bar_style(failing)[2] == RED
    model = page.locator('#waterfall .wf-row[data-category="model"]').first
    assert _bar_style(model)[2] != RED
    # Drill-down: a click opens the span's attributes (and a tool's io from the send events).
    lookup = page.locator('#waterfall .wf-row[data-category="tool"]', has_text="lookup_order")
    detail = lookup.locator("xpath=following-sibling::div[1]")
    expect(detail).to_be_hidden()
    lookup.click()
    expect(detail).to_be_visible()
    expect(detail.locator(".wf-io")).to_contain_text('"order_id": "1001"')
    expect(detail).to_contain_text("gen_ai.tool.call.id")
    failing.click()
    expect(failing.locator("xpath=following-sibling::div[1]")).to_contain_text("the payment service refused")
    # From the keyboard, as a button: Enter or Space opens and closes a span's detail (Space only scrolled the page).
    lookup.focus()
    page.keyboard.press(" ")
    expect(detail).to_be_hidden()
    page.keyboard.press(" ")
    expect(detail).to_be_visible()
    page.keyboard.press("Enter")
    expect(detail).to_be_hidden()
    page.click(".wf-unfold")
    expect(page.locator("#waterfall .wf-row[data-span]:visible")).to_have_count(175)
    expect(page.locator(".wf-unfold")).to_have_count(0)


def _check_two_turns_and_timing(page: Page) -> None:
    traces = page.locator("#waterfall .trace")
    expect(traces).to_have_count(2)
    expect(traces.nth(0).locator("h3")).to_contain_text("turn 1 — 7 span(s)")
    expect(traces.nth(1).locator("h3")).to_contain_text("turn 2 — 7 span(s)")
    expect(page.locator('#timing .wf-row[data-phase="agent.send"]')).to_have_count(2)
    judge = page.locator('#timing .wf-row[data-phase="judge"]')
    expect(judge).to_have_count(1)
    expect(judge).to_contain_text("judge('The reply names the order.', threshold=0.5)")


@skip_without_browser[0]
@skip_without_browser[1]
def test_the_live_viewer_draws_the_waterfall_folds_it_marks_errors_red_and_drills_down(
    page: Page, origin: str, traced_run: TracedRun,
) -> None:
    page.goto(f"{origin}/#/run/{traced_run.run_id}")
    _ready(page)
    page.click("#traces-link")
    _ready(page)
    _check_traces_list(page)
    page.locator(f'#traces-table tr[data-unit="{NOISY}"] a').click()
    _ready(page)
    expect(page.locator("#unit-title")).to_contain_text(NOISY)
    _check_noisy_waterfall(page)
    page.go_back()
    _ready(page)
    page.locator(f'#traces-table tr[data-unit="{TWO_TURNS}"] a').click()
    _ready(page)
    _check_two_turns_and_timing(page)


@skip_without_browser[0]
@skip_without_browser[1]
def test_the_static_export_has_the_same_traces_waterfall_and_timing(
    page: Page, data: ViewData, traced_run: TracedRun, tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    export_site(data, site)
    index = (site / "index.html").as_uri()
    page.goto(f"{index}#/traces/{traced_run.run_id}")
    _ready(page)
    _check_traces_list(page)
    page.locator(f'#traces-table tr[data-unit="{NOISY}"] a').click()
    _ready(page)
    _check_noisy_waterfall(page)
    page.goto(f"{index}#/unit/{traced_run.run_id}/{TWO_TURNS.replace('#', '%23')}")
    _ready(page)
    _check_two_turns_and_timing(page)
