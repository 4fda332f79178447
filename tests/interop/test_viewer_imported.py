"""An imported run in the results viewer (Chromium): its run page and a unit's generic drill-down."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest
from browser import Page, browser_fixture, expect, page_fixture, serving_store, skip_without_browser

from assay.core.interop.importing import import_log, plan_imports
from assay.core.record import store_path

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()


@pytest.fixture(scope="module")
def imported_run(pydantic_evals_report) -> str:
    ((path, log_format),) = plan_imports([pydantic_evals_report.path], None)
    return import_log(path, log_format).run_id


@pytest.fixture(scope="module")
def origin(imported_run: str) -> Iterator[str]:
    with serving_store(store_path()) as served:
        yield served


def test_an_imported_run_page_shows_its_groups_and_units(page: Page, origin: str, imported_run: str) -> None:
    page.goto(f"{origin}/#/run/{imported_run}")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("h2", has_text="Per group")).to_be_visible()
    expect(page.locator("#groups-table tbody tr")).to_have_count(1)
    expect(page.locator("#groups-table tbody tr").first).to_contain_text("capital")
    expect(page.locator("#units-table tbody tr")).to_have_count(8)
    expect(page.locator("#run-pass-rate")).to_have_text("25.0%")
    page.goto(f"{origin}/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#kind-filter option[value=imported]")).to_have_count(1)


def test_an_imported_unit_shows_what_the_tool_recorded(page: Page, origin: str, imported_run: str) -> None:
    page.goto(f"{origin}/#/unit/{quote(imported_run)}/{quote('spain#1')}")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#unit-title")).to_contain_text("spain#1")
    expect(page.locator("#unit-reason")).to_have_text("failed: EqualsExpected")
    expect(page.locator("#unit-expected")).to_have_text("Madrid")
    results = page.locator("table.generic-results")
    expect(results).to_contain_text("EqualsExpected")
    expect(results.locator("tbody tr")).to_have_count(4)  # three assertions and a score
    expect(page.locator("pre.generic-text").first).to_have_text("Spain")
    expect(page.locator("#generic-detail")).to_contain_text("evaluation")
