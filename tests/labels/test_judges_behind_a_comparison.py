"""`assay runs compare` (and the viewer's compare page) name the model judges behind the units that changed, with
what people's labels say of each: of those very units, and over every labelled unit (`assay judge agreement`'s
figures, checked here against scikit-learn's κ). A regression a judge decided is only as good as the judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import CHROMIUM, Page, browser_fixture, expect, open_ready, page_fixture, serving_store
from judged_runs import agent_unit, publish
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from assay.cli.app import app
from assay.core.labels.store import LabelBook
from assay.core.labels.units import make_label, read_unit
from assay.core.results_store import SqliteRunStore
from assay.view.data import ViewData

BEFORE = [0.9] * 10 + [0.2, 0.2]  # units 10 and 11 fail before
AFTER = [0.2, 0.2, 0.2, 0.2] + [0.9] * 6 + [0.9, 0.2]  # 0–3 regress (the judge fails them), 10 is fixed, 11 still fails
HUMAN = ["fail", "fail", "fail", "pass"] + ["pass"] * 6 + ["pass", "pass"]  # a person says units 3, 10 and 11 pass


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    database = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(database))
    publish(database, "agent", [agent_unit(i, score) for i, score in enumerate(BEFORE)], run_id="agent-a",
            identity={"project": "/p"}, created_at="2026-12-01T08:00:00Z")
    publish(database, "agent", [agent_unit(i, score) for i, score in enumerate(AFTER)], run_id="agent-b",
            identity={"project": "/p"}, created_at="2026-12-02T08:00:00Z")
    return database


def _label_the_later_run(database: Path) -> None:
    with SqliteRunStore(database) as store:
        LabelBook(store).add([make_label(read_unit(store, "agent-b", f"main/eval{i}#1"), "ann", verdict=verdict)
                              for i, verdict in enumerate(HUMAN)])


def _compare(*arguments: str) -> tuple[list[str], dict]:
    text = CliRunner().invoke(app, ["runs", "compare", "agent-a", "agent-b", *arguments])
    assert text.exit_code == 0, text.output
    document = CliRunner().invoke(app, ["runs", "compare", "agent-a", "agent-b", "--json", *arguments])
    assert document.exit_code == 0, document.output
    return text.stdout.splitlines(), json.loads(document.stdout)


def test_a_judge_nobody_labelled_is_said_to_be_of_unknown_trust(database: Path) -> None:
    lines, document = _compare()
    heading = lines.index("Judges behind these changes (how far to trust each: what people's labels say of it):")
    assert heading < next(index for index, line in enumerate(lines) if line.startswith("Regressions ("))  # above the lists
    assert lines[heading + 1] == (
        "  judge-1 · assay-agent-judge/1:rubric: failed 4 of 4 regressions and 1 of 1 fixes (in the earlier run); nobody "
        "has labelled its verdicts yet, so how far to trust it is unknown (`assay view --label`)")
    [judge] = document["judges_behind"]["judges"]
    assert (judge["model"], judge["regressions"], judge["fixes"], judge["agreement"], judge["labelled_units"]) == (
        "judge-1", 4, 1, None, 0)


def test_labels_of_the_changed_units_and_the_judges_agreement_are_said(database: Path) -> None:
    _label_the_later_run(database)
    lines, document = _compare()
    [judge] = document["judges_behind"]["judges"]
    # A label is about a unit's content, which is the same answer in both runs here: of the 4 regressions, 3 fail as
    # the judge said and unit 3 passes; the judge had failed the fixed unit 10 in the earlier run, which the person
    # says passes.
    assert (judge["confirmed"], judge["disputed"]) == (3, 2)
    judge_said = ["fail" if score < 0.5 else "pass" for score in AFTER]
    kappa = cohen_kappa_score(HUMAN, judge_said)
    agreement = judge["agreement"]
    assert agreement["units"] == 12 and agreement["kappa"] == pytest.approx(kappa)
    assert agreement["agreement"] == pytest.approx(sum(h == j for h, j in zip(HUMAN, judge_said)) / 12)
    line = next(line for line in lines if line.startswith("  judge-1 · "))
    assert line.endswith(f"people labelled 5 of these: 3 failing as the judge said, 2 passing; over all 12 labelled "
                         f"unit(s) it agrees with people on 83.3%, κ {kappa:.2f} "
                         f"[{agreement['kappa_interval'][0]:.2f}, {agreement['kappa_interval'][1]:.2f}]"), line
    # The same figures as `assay judge agreement`.
    report = CliRunner().invoke(app, ["judge", "agreement", "--json"])
    assert json.loads(report.stdout)["judges"][0]["binary"] == agreement


def test_a_unit_counts_by_its_labellers_majority_and_a_tie_counts_neither_way(database: Path) -> None:
    _label_the_later_run(database)
    with SqliteRunStore(database) as store:
        unit = read_unit(store, "agent-b", "main/eval3#1")
        LabelBook(store).add([make_label(unit, "bo", verdict="fail"), make_label(unit, "bo", verdict="fail")])
    _, document = _compare()
    [judge] = document["judges_behind"]["judges"]
    assert (judge["confirmed"], judge["disputed"]) == (3, 1)  # unit 3: ann pass, bo fail (once, however often)


def test_the_changed_units_are_read_by_id_not_by_reading_every_unit_of_the_run(database: Path) -> None:
    """The lookup of a few hundred changed units read every row of the run (0.1 s of a 100,000-unit compare, each row
    a ~3 KB body), as SQLite chose the run's order over the index of unit ids."""
    from assay.core.labels.units import judged_candidates

    with SqliteRunStore(database) as store:
        run = store.get_run("agent-b")
        asked: list[tuple[str, tuple]] = []
        read = store.read
        store.read = lambda sql, parameters=(): asked.append((sql, parameters)) or read(sql, parameters)  # type: ignore[method-assign]
        found = judged_candidates(store, run, ["main/eval0#1", "main/eval3#1"])
        assert [stored.unit.unit_id for stored in found] == ["main/eval0#1", "main/eval3#1"]
        [(sql, parameters)] = asked
        plan = " ".join(str(row) for row in store.read("EXPLAIN QUERY PLAN " + sql, parameters))
    assert "units_verdicts" in plan, plan


def test_changes_no_model_judge_made_name_no_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Units that regressed on a deterministic check (the judge passed them) have no judge behind them."""
    database = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(database))
    publish(database, "agent", [agent_unit(i, 0.9) for i in range(6)], run_id="agent-a", created_at="2026-12-01T08:00:00Z")
    publish(database, "agent", [agent_unit(i, 0.9, check="missed" if i < 3 else "matched") for i in range(6)],
            run_id="agent-b", created_at="2026-12-02T08:00:00Z")
    lines, document = _compare()
    assert any(line.startswith("Regressions (3)") for line in lines)
    assert not any(line.startswith("Judges behind") for line in lines) and "judges_behind" not in document


def test_the_viewers_compare_page_says_the_same(database: Path) -> None:
    _label_the_later_run(database)
    lines, _ = _compare()
    with SqliteRunStore(database, read_only=True) as store:
        page = ViewData(store).compare({"a": "agent-a", "b": "agent-b"})
    start = lines.index(page["judges_behind"][0])
    assert page["judges_behind"] == lines[start:start + len(page["judges_behind"])]


browser = browser_fixture()
page = page_fixture()


@pytest.mark.skipif(CHROMIUM is None or Page is None, reason="needs Chromium and Playwright")
def test_the_compare_page_shows_the_judges_behind_the_changes_in_chromium(database: Path, page: Page) -> None:
    _label_the_later_run(database)
    lines, _ = _compare()
    with serving_store(database) as origin:
        open_ready(page, f"{origin}/#/compare/agent-a/agent-b")
        panel = page.locator("#judges-behind")
        expect(panel.locator("b")).to_have_text(lines[lines.index(next(line for line in lines if line.startswith("Judges")))])
        expect(panel.locator("li")).to_have_text([next(line for line in lines if line.startswith("  judge-1")).strip()])
        panel.locator("a").click()
        page.wait_for_selector("#agreement-table")
