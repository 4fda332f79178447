"""History from the results store: `runs compare` weighing earlier runs, `runs flaky`, `runs trend`."""

from __future__ import annotations

import json
import sqlite3

import numpy
import pytest
from damaged_store import assay

from assay.core.history.store import history_tallies, run_tallies, series_before
from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run

UNITS = 60
FLAKY = 12  # u00 … u11 pass half the time


def _publish_series(database, runs: int, *, broken=(), project="/repo/agent", seed=3, kind="agent", start=0) -> list[str]:
    rng = numpy.random.default_rng(seed)
    ids = []
    for index in range(runs):
        run_id = f"{kind}-{project.rsplit('/', 1)[-1]}-{start + index:02d}"
        last = index == runs - 1
        units = []
        for unit in range(UNITS):
            passed = rng.random() < 0.5 if unit < FLAKY else not (last and unit in broken)
            group = f"exp/{'flaky' if unit < FLAKY else 'steady'}"
            units.append(UnitResult(f"exp/u{unit:02d}#1", "passed" if passed else "failed", group=group))
        manifest = RunManifest(run_id, kind, f"2026-02-{1 + start + index:02d}T00:00:00Z", identity={"project": project})
        publish_run(manifest, units, database=database)
        ids.append(run_id)
    return ids


def test_each_run_keeps_one_history_row_per_unit_and_a_series_reads_them_in_one_query(tmp_path) -> None:
    database = tmp_path / "assay.db"
    ids = _publish_series(database, 12)
    _publish_series(database, 2, project="/repo/other", seed=9)
    with SqliteRunStore(database, read_only=True) as store:
        series = series_before(store, store.get_run(ids[-2]), 10)
        assert series == ids[-2::-1][:10]  # newest first, the other project's runs left out
        past = history_tallies(store, series)
        assert past["exp/u30"] == (10, 0, 10)  # a steady unit: 10 trials, none failed, in 10 runs
        trials, failed, runs = past["exp/u03"]
        assert trials == 10 and runs == 10 and 0 < failed < 10
        assert run_tallies(store, ids[0])["exp/u30"] == ("exp/steady", 1, 0)


def test_a_store_indexed_before_history_existed_gets_its_rows_when_opened_for_writing(tmp_path) -> None:
    database = tmp_path / "assay.db"
    ids = _publish_series(database, 3)
    with sqlite3.connect(database) as connection:  # as an earlier assay left it
        connection.execute("DELETE FROM unit_history")
        connection.execute("PRAGMA user_version = 0")
    with SqliteRunStore(database, read_only=True) as store:  # read-only: computed from the units instead
        assert not store.has_history_rows and history_tallies(store, ids)["exp/u40"] == (3, 0, 3)
    SqliteRunStore(database).close()
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT COUNT(*) FROM unit_history").fetchone()[0] == 3 * UNITS


def test_compare_with_history_calls_a_broken_steady_unit_a_regression_that_one_run_alone_cannot(tmp_path) -> None:
    database = tmp_path / "assay.db"
    _publish_series(database, 11, broken={40, 41})
    with_history = json.loads(assay(database, "runs", "compare", "latest", "--json").stdout)
    assert with_history["verdict"] == "regressed" and with_history["history_runs"] == 10
    decided = with_history["judgement"]["decided_by"]
    assert decided["family"] == "stable-pass" and decided["flips"] == ["exp/u40", "exp/u41"]
    alone = json.loads(assay(database, "runs", "compare", "latest", "--history", "1", "--json").stdout)
    assert alone["verdict"] != "regressed" and alone["history_runs"] == 1
    gated = assay(database, "runs", "compare", "latest", "--fail-on-regression")
    assert gated.returncode == 1 and with_history["sentence"] in gated.stdout.splitlines()
    assert "evidence: 10 run(s) of history; paired units stable in it 48, flaky 12" in gated.stdout
    groups = with_history["judgement"]["groups"]
    assert set(groups) == {"exp"}
    by_target = json.loads(assay(database, "runs", "compare", "latest", "--group-depth", "2", "--json").stdout)
    assert by_target["judgement"]["groups"]["exp/steady"]["verdict"] == "regressed"
    assert by_target["judgement"]["groups"]["exp/flaky"]["verdict"] != "regressed"


def test_runs_flaky_lists_the_units_whose_verdicts_disagree_with_a_wilson_interval(tmp_path) -> None:
    from statsmodels.stats.proportion import proportion_confint

    database = tmp_path / "assay.db"
    _publish_series(database, 10)
    done = assay(database, "runs", "flaky", "--json")
    assert done.returncode == 0, done.stderr
    [series] = json.loads(done.stdout)["series"]
    flaky = {unit["unit"]: unit for unit in series["flaky"]}
    assert set(flaky) <= {f"exp/u{index:02d}" for index in range(FLAKY)} and len(flaky) >= FLAKY - 1
    unit = next(iter(flaky.values()))
    low, high = proportion_confint(unit["passed"], unit["passed"] + unit["failed"], method="wilson")
    assert unit["interval"] == pytest.approx([low, high]) and unit["runs"] == 10
    text = assay(database, "runs", "flaky", "--limit", "2")
    assert text.stdout.splitlines()[0].startswith("agent (") and "flaky unit(s) over the last 10 run(s)" in text.stdout
    assert text.stdout.count(" pass rate ") == 2 and "more (--limit, --json)" in text.stdout
    publish_run(RunManifest("video-1", "video", "2026-03-01T00:00:00Z"), [], database=tmp_path / "video.db")
    none = assay(tmp_path / "video.db", "runs", "flaky", "--kind", "doc")
    assert none.returncode == 0 and none.stdout.strip() == "No doc runs recorded yet."


def test_runs_trend_shows_the_pass_rate_over_runs_with_its_interval_and_marks_flaky_units(tmp_path) -> None:
    database = tmp_path / "assay.db"
    ids = _publish_series(database, 6, broken=set(range(20, 60)))
    document = json.loads(assay(database, "runs", "trend", "exp/steady", "--json").stdout)
    points = document["points"]
    assert [point["run_id"] for point in points] == ids  # oldest first
    assert points[0]["pass_rate"] == 1.0 and points[-1]["pass_rate"] == pytest.approx(8 / 48)
    assert points[-1]["interval"][0] < 8 / 48 < points[-1]["interval"][1]
    # Units whose verdicts disagree over these runs, the 40 the last run broke among them.
    assert {unit["unit"] for unit in document["flaky"]} == {f"exp/u{index}" for index in range(20, 60)}
    everything = assay(database, "runs", "trend", "--last", "3")
    lines = everything.stdout.splitlines()
    assert lines[0] == "agent (all units): pass rate over 3 run(s), oldest first (95% Wilson interval)"
    assert [line.split()[0] for line in lines[1:4]] == ids[-3:]
    assert lines[-1].startswith("flaky units (")
    unknown = assay(database, "runs", "trend", "exp/nope")
    assert unknown.returncode == 2 and "no unit of the group 'exp/nope'" in unknown.stderr
    misspelt = assay(database, "runs", "trend", "exp/stedy")  # the group a typo most likely meant is named
    assert misspelt.returncode == 2 and "no unit of the group 'exp/stedy'" in misspelt.stderr
    assert "did you mean 'exp/steady'?" in misspelt.stderr
    assert "did you mean 'exp'?" in assay(database, "runs", "trend", "epx").stderr


def test_shard_runs_are_neither_the_baseline_nor_points_of_a_whole_runs_series(tmp_path) -> None:
    """After `runs merge`, `compare latest` took shard 2/2 as the merged run's baseline (half the units, the rest
    "new") and `runs trend` drew each shard as a point of the series; a shard's own series is its shard's."""
    database = tmp_path / "assay.db"
    whole = [UnitResult(f"e{index}#1", "passed" if index else "failed", group=f"e{index}") for index in range(4)]

    def publish(run_id, day, units, shard=None):
        options = {"shard": shard} if shard else {}
        manifest = RunManifest(run_id, "agent", f"2026-02-0{day}T00:00:00Z", identity={"project": "/repo/p"}, options=options)
        publish_run(manifest, units, database=database)

    publish("agent-whole", 1, whole)
    publish("agent-shard1", 2, whole[:2], "1/2")
    publish("agent-shard2", 3, whole[2:], "2/2")
    publish("agent-merged", 4, whole)
    compared = assay(database, "runs", "compare", "latest")
    assert compared.stdout.startswith("Baseline: agent-whole, the agent run of the same project before agent-merged."), compared.stdout
    trend = json.loads(assay(database, "runs", "trend", "--json").stdout)
    assert [point["run_id"] for point in trend["points"]] == ["agent-whole", "agent-merged"], trend
    for command in ("trend", "flaky"):  # nothing of a kind to show is said alike, exit 0 (trend exited 2)
        none = assay(database, "runs", command, "--kind", "video")
        assert (none.returncode, none.stdout.strip()) == (0, "No video runs recorded yet."), (command, none.stdout, none.stderr)
    publish("agent-shard2-again", 5, whole[2:], "2/2")
    shard = json.loads(assay(database, "runs", "compare", "latest", "--json").stdout)
    assert (shard["before"], shard["after"]) == ("agent-shard2", "agent-shard2-again")


def test_a_verdict_over_fewer_units_than_the_pass_rates_says_so(tmp_path) -> None:
    """`pass rate 75.0% → 87.5% (+12.5 points)` above `Unchanged: the pass rate moved +0.0 points`: the verdict
    pairs units, the pass rates count every unit, and nothing said so."""
    database = tmp_path / "assay.db"
    before = [UnitResult(f"e{index}#1", "passed" if index else "failed") for index in range(4)]
    after = [*before, *(UnitResult(f"n{index}#1", "passed") for index in range(4))]
    for run_id, day, units in (("agent-a", 1, before), ("agent-b", 2, after)):
        publish_run(RunManifest(run_id, "agent", f"2026-02-0{day}T00:00:00Z", identity={"project": "/p"}), units,
                    database=database)
    compared = json.loads(assay(database, "runs", "compare", "agent-a", "agent-b", "--json").stdout)
    assert compared["sentence"].endswith(" It covers the 4 paired units only: 4 new units count in the pass rates but "
                                         "not in it."), compared["sentence"]


def test_new_trials_of_paired_units_are_not_said_to_be_left_out_of_the_verdict(tmp_path) -> None:
    """After `--attempts 2` following runs of one attempt, the verdict was decided by the new `#2` trials, yet its
    sentence ended "20 new units count in the pass rates but not in it"."""
    database = tmp_path / "assay.db"
    before = [UnitResult(f"e/u{index}#1", "passed") for index in range(20)]
    after = [UnitResult(f"e/u{index}#{trial}", "failed" if trial == 2 and index < 10 else "passed")
             for index in range(20) for trial in (1, 2)]
    after.append(UnitResult("e/brand-new#1", "passed"))
    for run_id, day, units in (("agent-a", 1, before), ("agent-b", 2, after)):
        publish_run(RunManifest(run_id, "agent", f"2026-02-0{day}T00:00:00Z", identity={"project": "/p"}), units,
                    database=database)
    compared = json.loads(assay(database, "runs", "compare", "agent-a", "agent-b", "--json").stdout)
    assert compared["verdict"] == "regressed" and compared["counts"]["new"] == 21
    assert compared["sentence"].endswith(" It covers the 20 paired units only: 1 new unit counts in the pass rates but "
                                         "not in it."), compared["sentence"]


def test_the_paired_line_counts_trials_and_says_how_many_units_they_are(tmp_path) -> None:
    """With three trials a unit, `paired units 15` sat above `paired units stable in it 5`: the first counted
    trials, the second units, and both said units."""
    database = tmp_path / "assay.db"
    for run_id, day, broken in (("agent-a", 1, False), ("agent-b", 2, True)):
        units = [UnitResult(f"case-{unit}#{trial}", "failed" if broken and unit == 0 else "passed")
                 for unit in range(5) for trial in (1, 2, 3)]
        publish_run(RunManifest(run_id, "agent", f"2026-02-0{day}T00:00:00Z", identity={"project": "/p"}), units,
                    database=database)
    lines = assay(database, "runs", "compare", "agent-a", "agent-b").stdout.splitlines()
    assert "paired trials 15 (5 units): regressions 3, fixes 0, still failing 0, still passing 12; new 0, removed 0" in lines
    # (three trials of history are too few to call a unit stable: it takes five)
    assert "evidence: 1 run(s) of history; paired units stable in it 0, flaky 0, with too little history 5" in lines, lines
    single = [UnitResult(f"case-{unit}#1", "passed") for unit in range(4)]
    for run_id, day in (("agent-c", 3), ("agent-d", 4)):  # one trial a unit: units, as before
        publish_run(RunManifest(run_id, "agent", f"2026-02-0{day}T00:00:00Z", identity={"project": "/q"}), single,
                    database=database)
    assert "paired units 4: regressions 0" in assay(database, "runs", "compare", "agent-c", "agent-d").stdout
