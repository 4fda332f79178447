"""The viewer's attempt page on runs that use the newer agent features, in Chromium, live and exported: an
assertion's `.label(text)` and `.group(title)` (shown as `assay agent show @LOCATOR` prints them), a gated
measurement below its threshold, an eval group's member and a reused sandbox's task, and carried attempts.

The store is filled by real `assay agent run`s in subprocesses (the shared-sandbox example copied to a
temporary folder and run twice, so that the second run carries every attempt)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import Page, browser_fixture, expect, open_ready, page_fixture, serving_store, skip_without_browser

from assay.core.results_store import SqliteRunStore
from assay.view.data import ViewData
from assay.view.export import export_site

pytestmark = skip_without_browser
browser = browser_fixture()
page = page_fixture()
REPO = Path(__file__).resolve().parents[2]
LONG_GROUP = "a_group_title_without_one_space_that_goes_on_and_on_" * 5

PROJECT = {
    "pyproject.toml": '[tool.assay]\nname = "handles view"\n',
    "agents/echo.py": '''
        from assay.agent import Turn, complete_evidence_coverage, define_agent, message

        async def send(turn_input, ctx):
            return Turn([message(f"echo: {turn_input.text}")])

        echo = lambda: define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage)
    ''',
    "experiments/plain.py": '''
        from agents.echo import echo
        from assay.agent import Experiment

        plain = Experiment(agent=echo(), evals=["handles"])
    ''',
    "experiments/early.py": '''
        from agents.echo import echo
        from assay.agent import Experiment

        # once an attempt passes, the eval's other attempts are not dispatched (one at a time: the first passes)
        early = Experiment(agent=echo(), evals=["once"], attempts=3, concurrency=1, early_exit=True)
    ''',
    "experiments/scoring.py": '''
        from agents.echo import echo
        from assay.agent import Experiment

        scoring = Experiment(agent=echo(), evals=["points"])
    ''',
    "evals/points_eval.py": '''
        from assay.agent import define_score_eval, includes

        @define_score_eval
        async def test(t):
            await t.send("hi")
            t.check(t.reply, includes("hi")).score(2)
    ''',
    "evals/once_eval.py": '''
        from assay.agent import define_eval

        @define_eval
        async def test(t):
            await t.send("hi")
            t.succeeded()
    ''',
    "evals/handles_eval.py": '''
        from assay.agent import define_eval, includes, similarity

        @define_eval
        async def test(t):
            await t.send("hello there")
            t.check(t.reply, includes("hello")).group("reply")
            t.succeeded().label("the turn completed")
            t.check(t.reply, includes("there")).label("names the place").group("reply")
            t.check(t.reply, similarity("echo: hello there")).at_least(0.5).group("quality")
            t.check(t.reply, similarity("something else entirely")).gate(0.9)
            t.check(t.reply, includes("echo")).group(%r)
    ''' % LONG_GROUP,
}


def _run(project: Path, environment: dict[str, str], expected: int) -> None:
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--quiet"],
                          capture_output=True, text=True, timeout=180, env=environment, cwd=project)
    assert done.returncode == expected, done.stdout + done.stderr


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("agent-features-view")
    database = root / "store.db"
    environment = {**os.environ, "ASSAY_STORE": str(database), "ASSAY_SANDBOX_DIR": str(root / "sandboxes")}
    handles = root / "handles"
    for name, text in PROJECT.items():
        path = handles / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    _run(handles, environment, 1)  # the gated similarity is below its threshold: the attempt fails
    with SqliteRunStore(database, read_only=True) as opened:
        handles_run = opened.resolve("latest")
    shared = root / "shared"
    shutil.copytree(REPO / "docs" / "examples" / "shared_sandbox", shared,
                    ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    _run(shared, environment, 0)
    with SqliteRunStore(database, read_only=True) as opened:
        first = opened.resolve("latest")
    _run(shared, environment, 0)  # nothing changed: every attempt is carried from the first run
    with SqliteRunStore(database, read_only=True) as opened:
        second = opened.resolve("latest")
    assert second != first
    site = root / "site"
    with SqliteRunStore(database, read_only=True) as opened:
        export_site(ViewData(opened), site)
    return {"database": database, "handles": handles_run, "first": first, "second": second, "site": site}


@pytest.fixture(scope="module")
def live(store: dict[str, object]) -> Iterator[str]:
    with serving_store(store["database"]) as served:
        yield served + "/"


@pytest.fixture(params=["live", "export"])
def origin(request: pytest.FixtureRequest, store: dict[str, object]) -> str:
    """The live viewer's address, or the static export's index.html: both must show the same."""
    if request.param == "live":
        return request.getfixturevalue("live")
    return (store["site"] / "index.html").as_uri()


def _unit(origin: str, run: object, unit: str) -> str:
    return f"{origin}#/unit/{run}/{quote(unit, safe='')}"


def test_labels_are_shown_before_the_call_and_groups_under_their_heading_after_the_rest(page: Page, origin: str, store) -> None:
    open_ready(page, _unit(origin, store["handles"], "plain/handles#1"))
    table = page.locator("#assertions")
    # The assertions in no group first, in order; a label before its call, as `label (call)`.
    ungrouped = table.locator("tbody").first.locator("tr")
    expect(ungrouped).to_have_count(2)
    expect(ungrouped.nth(0).locator("td").nth(1)).to_have_text("the turn completed (succeeded())")
    expect(ungrouped.nth(0).locator(".assertion-label")).to_have_text("the turn completed")
    expect(ungrouped.nth(1).locator("td").nth(1)).to_have_text('check(similarity("something else entirely"))')
    # Then each group under its heading, in the order the groups were first used.
    groups = table.locator("tbody.assertion-group")
    expect(groups).to_have_count(3)
    assert [groups.nth(index).get_attribute("data-group") for index in range(3)] == ["reply", "quality", LONG_GROUP]
    reply = groups.nth(0)
    expect(reply.locator("th")).to_have_text("reply")
    expect(reply.locator("tr.assertion td:nth-child(2)")).to_have_text(['check(includes("hello"))', 'names the place (check(includes("there")))'])
    expect(groups.nth(1).locator("tr.assertion td:nth-child(2)")).to_have_text(['check(similarity("echo: hello there"))'])
    # A heading as long as a line of words without a space wraps rather than widen the page.
    assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def test_a_gated_measurement_below_its_threshold_reads_below_with_its_score(page: Page, origin: str, store) -> None:
    open_ready(page, _unit(origin, store["handles"], "plain/handles#1"))
    gated = page.locator("#assertions tbody").first.locator("tr").nth(1)
    # `agent show` prints "below … score 0.xxx < 0.9": the page read "passed matched", the attempt's failure hidden.
    expect(gated).to_have_attribute("data-status", "below")
    expect(gated.locator(".verdict")).to_have_text("failed")
    expect(gated.locator(".assertion-score")).to_contain_text("< 0.9")
    shown = page.locator('tbody[data-group="quality"] .assertion-score')
    expect(shown).to_have_text("score 1.000 (at least 0.5: met)")
    expect(page.locator("#assertions thead th")).to_have_text(["status", "assertion", "scope", "score", "reason"])


def test_an_eval_group_member_names_its_group_and_its_task_in_the_shared_sandbox(page: Page, origin: str, store) -> None:
    open_ready(page, _unit(origin, store["first"], "grouped/flow/login#1"))
    expect(page.locator("#eval-group")).to_have_text(
        re.compile(r"^Eval group flow \(definition [0-9a-f]{16}\)$"))
    expect(page.locator("#shared-task")).to_have_text("Shared sandbox: task 2 of grouped: eval group flow")


def test_a_task_of_a_reused_sandbox_says_which_task_it_was(page: Page, origin: str, store) -> None:
    # A task of an experiment with sandbox_reuse=True is in no group: the page said nothing of its shared sandbox.
    open_ready(page, _unit(origin, store["first"], "reused/tasks/notes/three#1"))
    expect(page.locator("#eval-group")).to_have_count(0)
    expect(page.locator("#shared-task")).to_have_text(re.compile(r"^Shared sandbox: task \d of reused: sandbox_reuse$"))


def test_a_carried_attempt_says_where_it_came_from_and_links_there(page: Page, origin: str, store) -> None:
    open_ready(page, _unit(origin, store["second"], "grouped/flow/login#1"))
    carried = page.locator("#carried-from")
    expect(carried).to_contain_text(f"Carried from run {store['first']} (unit grouped/flow/login#1)")
    carried.locator("a").nth(1).click()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#unit-title")).to_contain_text("grouped/flow/login#1")
    expect(page.locator("#crumbs")).to_contain_text(str(store["first"]))
    expect(page.locator("#carried-from")).to_have_count(0)  # the first run ran it
    # The run's units table marks each carried row, as `assay agent show` reads "passed (carried)".
    open_ready(page, f"{origin}#/run/{store['second']}")
    rows = page.locator("#units-table tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.locator("td:nth-child(2)")).to_have_text(["passed (carried)"] * 5)
    open_ready(page, f"{origin}#/run/{store['first']}")
    expect(page.locator("#units-table tbody tr td:nth-child(2)")).to_have_text(["passed"] * 5)


def test_an_attempt_that_was_not_run_says_why_and_one_that_ran_says_why_it_ran(page: Page, origin: str, store) -> None:
    # `agent show` prints "not run: …" (a budget spent, an early exit); the page said only "not run (not_dispatched)".
    open_ready(page, _unit(origin, store["handles"], "early/once#3"))
    expect(page.locator("#unit-title .verdict")).to_have_text("skipped")
    expect(page.locator("#decision")).to_have_text(re.compile(r"^Not run: .+"))
    assert "not_dispatched" not in page.locator("#decision").inner_text()
    open_ready(page, _unit(origin, store["handles"], "early/once#1"))
    expect(page.locator("#decision")).to_have_text("Executed: new eval")
    # A carried attempt's decision is the earlier run's: only where it came from is said.
    open_ready(page, _unit(origin, store["second"], "grouped/flow/login#1"))
    expect(page.locator("#carried-from")).to_be_visible()
    expect(page.locator("#decision")).to_have_count(0)


def test_a_score_evals_attempt_reads_scored_not_ignored(page: Page, origin: str, store) -> None:
    """The store keeps a score eval's attempt out of pass rates as `ignored`, and the pages said "ignored", as if it
    had not run; `assay agent show` says SCORED."""
    open_ready(page, _unit(origin, store["handles"], "scoring/points#1"))
    expect(page.locator("#unit-title .verdict")).to_have_text("scored")
    open_ready(page, f"{origin}#/run/{store['handles']}")
    row = page.locator('tr[data-unit="scoring/points#1"]')
    expect(row.locator(".verdict")).to_have_text("scored")
