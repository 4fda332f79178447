"""`assay judge agreement`: judge–human agreement per judge, between labellers and over judge models,
from labels made on stored runs; the figures equal scikit-learn's, scipy's and `krippendorff`'s."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import krippendorff
import numpy
import pytest
from judged_runs import agent_unit, publish
from scipy import stats as scipy_stats
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from assay.cli.app import app
from assay.core.labels.store import LabelBook
from assay.core.labels.units import make_label, read_unit
from assay.core.record import UnitResult
from assay.core.results_store import SqliteRunStore

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SCORES = [0.9, 0.8, 0.2, 0.7, 0.1, 0.95, 0.4, 0.6, 0.3, 0.85]
HUMAN = ["pass", "pass", "fail", "fail", "fail", "pass", "pass", "pass", "fail", "pass"]
HUMAN_SCORES = [5, 4, 1, 2, 2, 5, 3, 4, 1, 4]
BO = ["pass", "fail", "fail", "fail", "pass", "pass", "pass", "pass", "fail", "pass"]
# judge-2 re-judges the same transcripts later (the content is identical), with other scores
SCORES_2 = [0.9, 0.3, 0.2, 0.3, 0.6, 0.9, 0.2, 0.7, 0.1, 0.4]


@pytest.fixture
def database(tmp_path, monkeypatch):
    path = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(path))
    publish(path, "agent", [agent_unit(i, score) for i, score in enumerate(SCORES)], run_id="agent-a",
            identity={"project": "/p"}, created_at="2026-12-01T08:00:00Z")
    publish(path, "agent", [agent_unit(i, score, model="judge-2") for i, score in enumerate(SCORES_2)], run_id="agent-b",
            identity={"project": "/p"}, created_at="2026-12-03T08:00:00Z")
    video = [UnitResult(unit_id=f"c/t/{i}@{i}.0s#1", verdict="passed" if i % 3 else "failed", expected=i, observed=i if i % 3 else -1,
                        artifacts={"video": "/v/clip.mp4", "timestamp_s": float(i)}) for i in range(6)]
    publish(path, "video", video, run_id="video-a", identity={"eval_dir": "/e"}, created_at="2026-12-01T07:00:00Z")
    with SqliteRunStore(path) as store:
        book = LabelBook(store)
        labels = []
        for i in range(10):
            unit = read_unit(store, "agent-a", f"main/eval{i}#1")
            labels.append(make_label(unit, "ann", verdict=HUMAN[i], score=HUMAN_SCORES[i], now=T0 + timedelta(minutes=i)))
            labels.append(make_label(unit, "bo", verdict=BO[i], now=T0 + timedelta(hours=1, minutes=i)))
        for i in range(6):
            unit = read_unit(store, "video-a", f"c/t/{i}@{i}.0s#1")
            labels.append(make_label(unit, "ann", verdict="pass" if i % 2 else "fail", now=T0 + timedelta(hours=2, minutes=i)))
        book.add(labels)
    return path


def _agreement(*arguments):
    result = CliRunner().invoke(app, ["judge", "agreement", "--json", *arguments])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _majority(first, second):
    return [a if a == b else None for a, b in zip(first, second)]


def test_each_judge_is_measured_against_the_labellers_majority_verdict(database):
    report = _agreement("--judge", "judge-1")
    (row,) = report["judges"]
    assert row["judge"] == "judge-1 · assay-agent-judge/1:rubric" and row["units"] == 10
    judge = ["pass" if score >= 0.5 else "fail" for score in SCORES]
    human = _majority(HUMAN, BO)  # two labellers: a tie decides nothing
    pairs = [(h, j) for h, j in zip(human, judge) if h is not None]
    binary = row["binary"]
    assert binary["units"] == len(pairs) == 8
    assert binary["agreement"] == pytest.approx(sum(h == j for h, j in pairs) / len(pairs))
    assert binary["kappa"] == pytest.approx(cohen_kappa_score([h for h, _ in pairs], [j for _, j in pairs]), abs=1e-12)
    matrix = binary["confusion"]["matrix"]
    assert sum(map(sum, matrix)) == 8 and matrix[0][0] == sum(1 for h, j in pairs if h == j == "pass")
    low, high = binary["kappa_interval"]
    assert low <= binary["kappa"] <= high


def test_scores_are_compared_by_rank_and_by_interval_alpha_on_the_label_scale(database):
    (row,) = _agreement("--judge", "judge-1", "--labeller", "ann")["judges"]
    scores = row["scores"]
    assert scores["units"] == 10
    assert scores["spearman"] == pytest.approx(scipy_stats.spearmanr(HUMAN_SCORES, SCORES).statistic, abs=1e-12)
    mapped = [1 + 4 * score for score in SCORES]  # the judge's [0, 1] mapped onto 1–5
    expected = krippendorff.alpha(reliability_data=numpy.array([HUMAN_SCORES, mapped], dtype=float),
                                  level_of_measurement="interval")
    assert scores["alpha"] == pytest.approx(expected, abs=1e-12)


def test_inter_annotator_agreement_between_labellers(database):
    labellers = _agreement()["labellers"]
    assert labellers["labellers"] == ["ann", "bo"]
    (pair,) = labellers["pairs"]
    assert pair["binary"]["units"] == 10
    assert pair["binary"]["kappa"] == pytest.approx(cohen_kappa_score(HUMAN, BO), abs=1e-12)
    data = numpy.array([[1.0 if value == "pass" else 0.0 for value in HUMAN], [1.0 if value == "pass" else 0.0 for value in BO]])
    assert labellers["alpha_verdict"] == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-12)


def test_a_labeller_pairs_confusion_matrix_names_the_two_labellers_not_human_and_judge(database):
    """It said `"rows": "human", "columns": "judge"` of a matrix of ann's answers (rows) against bo's (columns)."""
    (pair,) = _agreement()["labellers"]["pairs"]
    confusion = pair["binary"]["confusion"]
    assert (confusion["rows"], confusion["columns"]) == ("ann", "bo")
    assert confusion["matrix"][0][1] == sum(1 for a, b in zip(HUMAN, BO) if (a, b) == ("pass", "fail"))
    (judge,) = _agreement("--judge", "judge-1")["judges"]
    assert (judge["binary"]["confusion"]["rows"], judge["binary"]["confusion"]["columns"]) == ("human", "judge")


def test_a_new_judge_model_on_the_same_content_is_measured_against_the_same_labels_as_drift(database):
    report = _agreement("--labeller", "ann")
    models = {row["model"]: row for row in report["judges"] if row["kind"] == "judge"}
    assert set(models) == {"judge-1", "judge-2"}
    judge_2 = ["pass" if score >= 0.5 else "fail" for score in SCORES_2]
    assert models["judge-2"]["binary"]["kappa"] == pytest.approx(cohen_kappa_score(HUMAN, judge_2), abs=1e-12)
    (drift,) = report["drift"]
    assert drift["prompt"] == "assay-agent-judge/1:rubric"
    assert [model["model"] for model in drift["models"]] == ["judge-1", "judge-2"]
    assert drift["models"][1]["kappa"] == pytest.approx(cohen_kappa_score(HUMAN, judge_2), abs=1e-12)
    # Per rubric, drift is told per rubric: the heading named no rubric, and each model came once per rubric.
    (by_rubric,) = _agreement("--labeller", "ann", "--by-rubric")["drift"]
    assert "names a city" in by_rubric["rubric"] and drift["rubric"] is None
    assert [model["model"] for model in by_rubric["models"]] == ["judge-1", "judge-2"]
    result = CliRunner().invoke(app, ["judge", "agreement", "--labeller", "ann", "--by-rubric"])
    assert f"Judge drift (assay-agent-judge/1:rubric, rubric {by_rubric['rubric']}), models in" in result.output


def test_deterministic_checks_are_measured_too(database):
    rows = {row["judge"]: row for row in _agreement()["judges"]}
    checks = rows["deterministic checks (video)"]
    human = ["pass" if i % 2 else "fail" for i in range(6)]
    machine = ["pass" if i % 3 else "fail" for i in range(6)]
    assert checks["kind"] == "checks" and checks["binary"]["units"] == 6
    assert checks["binary"]["kappa"] == pytest.approx(cohen_kappa_score(human, machine), abs=1e-12)


def test_the_text_report_names_each_judge_and_its_figures(database):
    result = CliRunner().invoke(app, ["judge", "agreement", "--labeller", "ann", "--rubric", "names a city"])
    assert result.exit_code == 0, result.output
    assert "judge-1 · assay-agent-judge/1:rubric: 10 labelled unit(s) in 1 run(s)" in result.output
    assert "Cohen's κ" in result.output and "Spearman ρ" in result.output
    assert "Judge drift (assay-agent-judge/1:rubric)" in result.output
    assert "deterministic checks" not in result.output  # a rubric was asked for


def test_no_labels_says_how_to_make_them(tmp_path, monkeypatch):
    path = tmp_path / "empty" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(path))
    publish(path, "video", [], run_id="video-0")
    result = CliRunner().invoke(app, ["judge", "agreement"])
    assert result.exit_code == 0 and "assay view --label" in result.output


def test_a_judge_that_could_not_judge_is_not_counted(tmp_path, monkeypatch):
    path = tmp_path / "errored" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(path))
    publish(path, "agent", [agent_unit(0, 0.9), agent_unit(1, None, status="unavailable")], run_id="agent-e")
    with SqliteRunStore(path) as store:
        LabelBook(store).add([make_label(read_unit(store, "agent-e", f"main/eval{i}#1"), "ann", verdict="pass") for i in (0, 1)])
    judges = [row for row in _agreement()["judges"] if row["kind"] == "judge"]
    assert [(row["judge"], row["units"]) for row in judges] == [("judge-1 · assay-agent-judge/1:rubric", 1)]


@pytest.mark.parametrize("arguments, message", [
    (["--labeller", "ANN"], "--labeller 'ANN': no labels by 'ANN'; did you mean 'ann'? (labellers here: ann, bo)"),
    (["--labeller", "nobody"], "--labeller 'nobody': no labels by 'nobody' (labellers here: ann, bo)"),
    (["--judge", "nosuch"], "--judge 'nosuch': no judge of the labelled units matches (--judge takes a model name or part "
                            "of a judge's, --rubric part of a rubric); their judges: judge-1 · assay-agent-judge/1:rubric; "
                            "judge-2 · assay-agent-judge/1:rubric"),
    (["--rubric", "nomatch"], "their judges · rubrics: judge-1 · assay-agent-judge/1:rubric · judge('names a city'"),
])
def test_a_filter_that_matches_nothing_is_a_usage_error_naming_what_would(database, arguments, message):
    """A misspelt labeller said "No labels yet" (false: the store holds 36), and a misspelt judge or rubric printed
    the header alone; both exited 0."""
    result = CliRunner().invoke(app, ["judge", "agreement", *arguments])
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    exported = CliRunner().invoke(app, ["labels", "export", "--labeller", "nobody"])
    assert exported.exit_code == 2 and "no labels by 'nobody'" in exported.output


def test_a_judge_filter_on_labels_no_model_judge_graded_says_only_checks_graded_them(tmp_path, monkeypatch):
    """The help's own example (`--judge gpt-4.1-mini`) on the demo's labels said "their judges: none", beside a
    report whose rows are named "deterministic checks (agent)"."""
    path = tmp_path / "checks" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(path))
    publish(path, "agent", [agent_unit(i, None, status="unavailable") for i in range(2)], run_id="agent-c")
    with SqliteRunStore(path) as store:
        LabelBook(store).add([make_label(read_unit(store, "agent-c", f"main/eval{i}#1"), "ann", verdict="pass") for i in range(2)])
    assert "deterministic checks (agent): 2 labelled unit(s)" in CliRunner().invoke(app, ["judge", "agreement"]).output
    for flag in ("--judge", "--rubric"):
        result = CliRunner().invoke(app, ["judge", "agreement", flag, "gpt-4.1-mini"])
        assert (result.exit_code, result.stdout) == (2, ""), result.output
        assert result.stderr == (f"Error: {flag} 'gpt-4.1-mini': no model judge graded the labelled units, only their "
                                 f"deterministic checks, which --judge and --rubric do not select; leave {flag} out to see "
                                 "the checks' agreement\n")


def test_an_undefined_kappa_says_why_and_a_row_without_rubric_ends_with_its_judge(tmp_path, monkeypatch):
    """κ is 0/0 when both sides gave one and the same answer; it read "Cohen's κ - (95% bootstrap)". By rubric,
    the deterministic checks (no rubric) read "deterministic checks (agent) · : …"."""
    path = tmp_path / "same" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(path))
    publish(path, "agent", [agent_unit(i, 0.9) for i in range(3)], run_id="agent-s")
    with SqliteRunStore(path) as store:
        LabelBook(store).add([make_label(read_unit(store, "agent-s", f"main/eval{i}#1"), "ann", verdict="pass") for i in range(3)])
    result = CliRunner().invoke(app, ["judge", "agreement", "--by-rubric"])
    assert result.exit_code == 0, result.output
    assert "Cohen's κ undefined (both gave the same one answer throughout)" in result.output
    assert "(95% bootstrap)" not in result.output and " · :" not in result.output
    assert "\ndeterministic checks (agent): 3 labelled unit(s)" in result.output


def test_a_relabelled_unit_counts_once_in_the_label_total(database):
    """The latest label of each labeller counts, but the total counted every label made: 84 after relabelling
    the same units (4 were used)."""
    before = _agreement()["labels"]
    with SqliteRunStore(database) as store:
        unit = read_unit(store, "agent-a", "main/eval0#1")
        LabelBook(store).add([make_label(unit, "ann", verdict="pass", now=T0 + timedelta(days=1, minutes=minute))
                              for minute in range(3)])
    assert _agreement()["labels"] == before == 26  # 10 + 10 + 6: ann's three new labels of eval0 replace her first


@pytest.mark.parametrize("arguments", [["judge", "agreement", "--judge", ""], ["judge", "agreement", "--rubric", " "],
                                       ["judge", "agreement", "--labeller", ""], ["labels", "export", "--labeller", ""],
                                       ["labels", "export", "--run", ""]])
def test_an_empty_filter_is_refused_not_read_as_every_judge(database, arguments):
    """`--judge "$JUDGE"` with the variable unset measured every judge, exit 0, as if no filter had been given."""
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{arguments[-2]}': needs a value, and the value given is empty (an unset variable in a " \
           "script?); leave the option out for every" in " ".join(result.output.split())


def _two_rubrics(index: int, first: float, second: float) -> UnitResult:
    """An attempt graded by one judge against two rubrics (two `t.judge` calls), as `assay agent run` records it."""
    unit = agent_unit(index, first, rubric="names a city")
    extra = agent_unit(index, second, rubric="sounds friendly").detail["assertions"][1]
    return UnitResult(unit_id=unit.unit_id, verdict=unit.verdict, group=unit.group,
                      detail={**unit.detail, "assertions": [*unit.detail["assertions"], extra]})


def test_a_judge_graded_on_several_rubrics_passes_a_unit_only_when_it_passed_every_rubric(tmp_path, monkeypatch):
    """The judge's row counted its first rubric of each unit only: a judge that failed the reply on its second
    rubric, as the person did, read as 0% agreement, and the second rubric was nowhere but `--by-rubric`."""
    path = tmp_path / "rubrics" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(path))
    publish(path, "agent", [_two_rubrics(0, 0.9, 0.2), _two_rubrics(1, 0.8, 0.6)], run_id="agent-r")
    with SqliteRunStore(path) as store:
        LabelBook(store).add([make_label(read_unit(store, "agent-r", "main/eval0#1"), "ann", verdict="fail", score=2),
                              make_label(read_unit(store, "agent-r", "main/eval1#1"), "ann", verdict="pass", score=4)])
    (row,) = [row for row in _agreement()["judges"] if row["kind"] == "judge"]
    assert row["units"] == 2 and row["binary"]["agreement"] == 1.0
    assert row["binary"]["confusion"]["matrix"] == [[1, 0], [0, 1]]
    assert row["scores"]["spearman"] == pytest.approx(1.0)  # the mean scores 0.55 and 0.7 rank as the person's 2 and 4
    by_rubric = {row["judge"]: row["binary"]["agreement"] for row in _agreement("--by-rubric")["judges"] if row["kind"] == "judge"}
    assert by_rubric == {"judge-1 · assay-agent-judge/1:rubric · judge('names a city', threshold=0.5)": 0.5,
                         "judge-1 · assay-agent-judge/1:rubric · judge('sounds friendly', threshold=0.5)": 1.0}


def test_a_figure_that_rounds_to_zero_is_not_shown_negative():
    """Chance agreement read `Cohen's κ -0.00 [-0.04, 0.04]` when κ was -0.004."""
    from assay.core.labels.report import agreement_lines

    binary = {"units": 2450, "agreement": 0.499, "kappa": -0.004, "kappa_interval": [-0.04, 0.04],
              "confusion": {"matrix": [[591, 626], [601, 632]]}}
    report = {"labels": 2, "items": 1, "labellers": {"labellers": ["ann"]}, "drift": [],
              "judges": [{"judge": "judge-2 · p", "units": 1, "runs": 1, "first_run_at": "2026-12-05", "last_run_at": "2026-12-05",
                          "binary": binary, "scores": {"units": 3, "spearman": -0.001, "alpha": -0.0049, "alpha_level": "interval"}}]}
    lines = agreement_lines(report)
    assert "  pass/fail: 2450 unit(s), agreement 49.9%, Cohen's κ 0.00 [-0.04, 0.04] (95% bootstrap)" in lines
    assert "  scores: 3 unit(s), Spearman ρ 0.00, Krippendorff's α (interval) 0.00" in lines
