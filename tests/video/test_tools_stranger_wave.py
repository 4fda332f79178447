"""A stranger's first hour with the video tools other than `run`: the review editor in a real browser
(a second tab, an editor beside it, a mistyped time) and the commands around it."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from browser import Page, browser_fixture, serving_review, skip_without_browser
from media import numbered_review_eval


browser = browser_fixture()

CASE_YAML = """\
video: clip.mp4
targets:
  number:
    samples:
      - at: 1.0
        expect: 10
      - at: 2.0
        expect: 20
  parity:
    samples:
      - at: 1.0
        expect: false
"""


@pytest.fixture(autouse=True)
def own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store"))


@pytest.fixture
def eval_dir(tmp_path: Path) -> Path:
    return numbered_review_eval(tmp_path, CASE_YAML)


@pytest.fixture
def origin(eval_dir: Path) -> Iterator[str]:
    with serving_review(eval_dir) as served:
        yield served


@pytest.fixture
def context(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    yield context
    context.close()


def open_tab(context: object, origin: str, target: str = "number") -> Page:
    page = context.new_page()  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{origin}/?case=numbers.yaml&target={target}")
    page.wait_for_selector("body[data-ready=true]")
    page.page_errors = errors  # type: ignore[attr-defined]
    return page


def save_state(page: Page, state: str) -> None:
    page.wait_for_function(f"() => document.getElementById('save-status').dataset.state === '{state}'", timeout=10_000)


def blocks(eval_dir: Path, target: str) -> list[dict]:
    return yaml.safe_load((eval_dir / "cases" / "numbers.yaml").read_text(encoding="utf-8"))["targets"][target]["samples"]


def comment_sample(page: Page, row: int, comment: str) -> None:
    page.click(f"#samples-body tr[data-group]:nth-child({row})")
    page.fill("#insp-comment", comment)


@skip_without_browser[0]
@skip_without_browser[1]
def test_a_second_tab_does_not_silently_undo_what_the_first_tab_saved(context: object, origin: str, eval_dir: Path) -> None:
    """Two tabs on one case: the second tab's save replaced the target's samples with its stale copy, so
    the first tab's saved comment vanished without a word. Now the save is refused and says why."""
    first, second = open_tab(context, origin), open_tab(context, origin)
    comment_sample(first, 1, "from the first tab")
    save_state(first, "saved")
    comment_sample(second, 2, "from the second tab")
    save_state(second, "error")
    banner = second.text_content("#banner")
    assert "numbers.yaml changed on disk after this tab loaded it" in banner and "target number" in banner
    assert blocks(eval_dir, "number") == [{"at": 1.0, "expect": 10, "comment": "from the first tab"},
                                          {"at": 2.0, "expect": 20}]
    # The person chooses: here, their own version wins.
    second.click("#banner button:text('Save mine over it')")
    save_state(second, "saved")
    assert blocks(eval_dir, "number") == [{"at": 1.0, "expect": 10}, {"at": 2.0, "expect": 20, "comment": "from the second tab"}]
    assert first.page_errors == [] and second.page_errors == []  # type: ignore[attr-defined]


@skip_without_browser[0]
@skip_without_browser[1]
def test_tabs_editing_different_targets_both_save(context: object, origin: str, eval_dir: Path) -> None:
    first, second = open_tab(context, origin, "number"), open_tab(context, origin, "parity")
    comment_sample(first, 1, "number's")
    save_state(first, "saved")
    comment_sample(second, 1, "parity's")
    save_state(second, "saved")
    assert blocks(eval_dir, "number")[0]["comment"] == "number's"
    assert blocks(eval_dir, "parity")[0]["comment"] == "parity's"


@skip_without_browser[0]
@skip_without_browser[1]
def test_a_change_made_in_a_text_editor_is_not_overwritten_by_the_open_tab(context: object, origin: str, eval_dir: Path) -> None:
    page = open_tab(context, origin)
    path = eval_dir / "cases" / "numbers.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("expect: 20", "expect: 21"), encoding="utf-8")
    comment_sample(page, 1, "typed in the tab")
    save_state(page, "error")
    assert "changed on disk" in page.text_content("#banner")
    assert blocks(eval_dir, "number") == [{"at": 1.0, "expect": 10}, {"at": 2.0, "expect": 21}]


@skip_without_browser[0]
@skip_without_browser[1]
@pytest.mark.parametrize("typed", ["1.5e", "-"])
def test_a_mistyped_sample_time_is_refused_not_read_as_zero(context: object, origin: str, eval_dir: Path, typed: str) -> None:
    """A number box holding something that is not a number has the value "", which was read as 0 s: the
    sample moved to the start of the video and was saved there."""
    page = open_tab(context, origin)
    page.click("#samples-body tr[data-group]:nth-child(2)")
    assert page.text_content("#inspector h2") == "Sample at 2 s"
    page.click("#insp-time", click_count=3)
    page.keyboard.type(typed)
    page.keyboard.press("Enter")
    page.wait_for_selector("#error-time:not([hidden])")
    assert page.text_content("#error-time") == "Time must be a finite number ≥ 0."
    assert page.get_attribute("#save-status", "data-state") == "invalid"
    page.wait_for_timeout(600)  # longer than the autosave delay
    assert blocks(eval_dir, "number") == [{"at": 1.0, "expect": 10}, {"at": 2.0, "expect": 20}]


@skip_without_browser[0]
@skip_without_browser[1]
def test_a_case_that_cannot_open_says_why_on_the_page(context: object, origin: str, eval_dir: Path) -> None:
    """A config.yaml mistyped while the editor runs blocks every case; the reason went into the banner of a
    case view that was never shown, so the page said only "Choose a case on the left."."""
    (eval_dir / "config.yaml").write_text("min_pass_rat: 1\n", encoding="utf-8")
    page = open_tab(context, origin)
    text = page.text_content("#empty-state")
    assert text.startswith("Could not open numbers.yaml: ") and "config.yaml" in text and "min_pass_rate" in text
    assert page.is_visible("#empty-state")


@skip_without_browser[0]
@skip_without_browser[1]
def test_edits_after_another_case_failed_to_open_go_to_the_case_on_screen(context: object, origin: str, eval_dir: Path) -> None:
    """Opening another case failed (the server did not answer): the page still showed the first case, but
    its edits were then saved into the case that did not open."""
    (eval_dir / "cases" / "other.yaml").write_text(textwrap.dedent(CASE_YAML), encoding="utf-8")
    page = open_tab(context, origin)
    page.route("**/api/case-files/other.yaml", lambda route: route.abort())
    page.click("#case-list li[data-case='other.yaml']")
    page.wait_for_selector("#banner:not([hidden])")
    assert page.text_content("#banner").startswith("Could not open other.yaml: The review server does not answer")
    page.unroute("**/api/case-files/other.yaml")
    comment_sample(page, 1, "for numbers")
    save_state(page, "saved")
    assert blocks(eval_dir, "number")[0] == {"at": 1.0, "expect": 10, "comment": "for numbers"}
    other = yaml.safe_load((eval_dir / "cases" / "other.yaml").read_text(encoding="utf-8"))
    assert other == yaml.safe_load(CASE_YAML)
