"""The review editor used as a stranger would, in Chromium: with the keyboard alone, with very long names, and with
a refused value left behind when another target is chosen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from browser import Page, browser_fixture, serving_review, skip_without_browser
from media import numbered_review_eval


pytestmark = skip_without_browser
browser = browser_fixture()

CASE_YAML = """\
video: clip.mp4
targets:
  number:
    samples:
      - range: [0.0, 1.0]
        expect: 0
      - at: 1.5
        expect: 15
  parity:
    samples:
      - at: 2.0
        expect: true
"""

LONG_CASE = "other_" + "long" * 50
LONG_TARGET = "number_" + "n" * 200


@pytest.fixture
def eval_dir(tmp_path: Path) -> Path:
    eval_dir = numbered_review_eval(tmp_path, CASE_YAML)
    other = CASE_YAML.replace("expect: 15", "expect: 16").replace("number:", f"{LONG_TARGET}:")
    (eval_dir / "cases" / f"{LONG_CASE}.yaml").write_text(other, encoding="utf-8")
    return eval_dir


@pytest.fixture
def page(browser: object, eval_dir: Path) -> Iterator[Page]:
    with serving_review(eval_dir) as origin:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{origin}/?case=numbers.yaml&target=number")
        page.wait_for_selector("body[data-ready=true]")
        yield page
        context.close()
        assert not errors, errors


def tab_to(page: Page, selector: str, limit: int = 80) -> None:
    """Press Tab until the focus is on `selector`: what a user without a mouse can reach."""
    for _ in range(limit):
        if page.evaluate("(selector) => document.activeElement.matches(selector)", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reaches {selector}")


def test_cases_targets_and_sample_rows_are_reached_and_opened_with_the_keyboard(page: Page, eval_dir: Path) -> None:
    """The case list, the target list and the sample table answered only clicks: Tab passed them by, so a
    keyboard user could not switch target, select a row or open another case."""
    tab_to(page, "#target-list li[data-target='parity']")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.assayEditor.state.selectedTarget === 'parity'")
    # The list was drawn again; the focus stays on the item, so Tab goes on from there.
    assert page.evaluate("document.activeElement.dataset.target") == "parity"
    page.keyboard.press("Shift+Tab")
    page.keyboard.press(" ")  # Space selects, as Enter does (and does not play the video)
    page.wait_for_function("() => window.assayEditor.state.selectedTarget === 'number'")
    assert page.evaluate("document.getElementById('video').paused")

    tab_to(page, "#samples-body tr[data-group]:nth-child(2)")
    page.keyboard.press("Enter")
    page.wait_for_selector("#insp-value")
    assert page.evaluate("document.activeElement.matches('#samples-body tr[data-group]:nth-child(2)')")
    tab_to(page, "#insp-value")
    page.keyboard.press("Control+A")
    page.keyboard.type("17")
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'", timeout=10_000)
    saved = yaml.safe_load((eval_dir / "cases" / "numbers.yaml").read_text(encoding="utf-8"))
    assert saved["targets"]["number"]["samples"][1] == {"at": 1.5, "expect": 17}

    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Tab")  # out of the inspector; Tab wraps round to the top of the page
    tab_to(page, f"#case-list li[data-case='{LONG_CASE}.yaml']")
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => window.assayEditor.state.doc && window.assayEditor.state.doc.id === '{LONG_CASE}.yaml'")
    assert page.evaluate("document.activeElement.dataset.case") == f"{LONG_CASE}.yaml"
    # Very long names wrap inside their panels (they ran off them, cut at the window's edge).
    for selector in ("#case-title", "#samples-target", "#inspector h2"):
        assert page.evaluate(
            "(s) => { const e = document.querySelector(s); return e.scrollWidth <= e.parentElement.clientWidth; }", selector
        ), selector


def test_a_refused_value_does_not_outlive_the_inspector_when_another_target_is_chosen(page: Page, eval_dir: Path) -> None:
    """A refused tolerance, then another target: the inspector that showed the value is gone, yet the page kept
    saying "Fix the highlighted value to save" (nothing highlighted, the exit guard up) past every later save."""
    page.click("#samples-body tr[data-group]:nth-child(2)")
    page.fill("#insp-tolerance", "-1")
    page.wait_for_selector("#error-tolerance:not([hidden])")
    assert page.get_attribute("#save-status", "data-state") == "invalid"
    page.click("#target-list li[data-target='parity']")
    assert page.get_attribute("#save-status", "data-state") != "invalid"
    page.click("#samples-body tr[data-group]:nth-child(1)")
    page.fill("#insp-comment", "checked")
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'", timeout=10_000)
    saved = yaml.safe_load((eval_dir / "cases" / "numbers.yaml").read_text(encoding="utf-8"))
    assert saved["targets"]["parity"]["samples"] == [{"at": 2.0, "expect": True, "comment": "checked"}]
    assert page.text_content("#save-status") == "All changes saved"
