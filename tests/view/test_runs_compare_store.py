"""`runs compare` on the store: SQLite pairs the runs and reads their evidence, with the result the
pairing of every verdict in Python gives, and without the work the default output does not show."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from assay.core.history.compare import compare_stored_runs, history_of
from assay.core.history.shown import compared
from assay.core.history.store import history_tallies, run_tallies
from assay.core.history.verdict import VerdictSettings
from assay.core.interop.unit_map import UnitIdMap
from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.core.run_diff import compare_verdicts

VERDICT_CYCLE = ("passed", "passed", "failed", "passed", "errored", "passed", "skipped", "passed", "ignored")


def _units(index: int) -> list[UnitResult]:
    """Two trials of most units, verdicts that move from run to run; the last run drops some units and adds others."""
    last = index == 3
    units = []
    for unit in range(40 if last else 36):
        if last and unit in (3, 17):
            continue  # removed
        for trial in (1, 2) if unit % 3 else (1,):
            verdict = VERDICT_CYCLE[(unit * 7 + trial + index * (unit % 4 == 0)) % len(VERDICT_CYCLE)]
            units.append(UnitResult(f"exp/g{unit % 3}/sub{unit % 2}/u{unit:02d}#{trial}", verdict,
                                    group=f"exp/g{unit % 3}/sub{unit % 2}"))
    units.append(UnitResult(f"doc-style-{index}", "passed", group="docs"))  # an id without trials
    return units


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    database = tmp_path_factory.mktemp("compare") / "assay.db"
    for index in range(4):
        manifest = RunManifest(f"agent-{index}", "agent", f"2026-03-0{index + 1}T00:00:00Z", identity={"project": "/p"})
        publish_run(manifest, _units(index), database=database)
    return database


def _in_python(store, first, second, history: int, group_depth: int):
    """The comparison as pairing every verdict in Python makes it (what compare did before SQLite paired); the
    candidate is never part of the history, even where the baseline was recorded after it."""
    history_ids = history_of(store, first, second, history)
    return compare_verdicts(
        first.run_id, store.verdicts(first.run_id), second.run_id, store.verdicts(second.run_id),
        history=history_tallies(store, history_ids), history_runs=len(history_ids), group_depth=group_depth,
        tallies=(run_tallies(store, first.run_id), run_tallies(store, second.run_id)), settings=VerdictSettings(),
    )


@pytest.mark.parametrize("history", [1, 2, 10])
@pytest.mark.parametrize("group_depth", [0, 1, 2, 3])
@pytest.mark.parametrize("pair", [("agent-2", "agent-3"), ("agent-3", "agent-1"), ("agent-0", "agent-0")])
def test_sqlite_pairs_two_stored_runs_as_pairing_their_verdicts_in_python_does(store_path, history, group_depth, pair) -> None:
    with SqliteRunStore(store_path, read_only=True) as store:
        first, second = (store.get_run(run_id) for run_id in pair)
        found = compare_stored_runs(store, first, second, history=history, group_depth=group_depth)
        expected = _in_python(store, first, second, history, group_depth)
    assert json.dumps(found.to_json(), sort_keys=False) == json.dumps(expected.to_json(), sort_keys=False)
    if pair == ("agent-2", "agent-3"):
        assert found.units["removed"] and found.units["new"] and found.units["changed_other"] and found.counts.both_passed


def test_runs_compare_reads_no_group_table_and_brings_only_changed_units_to_python(store_path) -> None:
    """A run of 100,000 agent evals has as many groups; the comparison does not show them, so it does
    not read them (they took 0.3 s a run). Units that passed in both runs stay in SQLite."""
    statements: list[str] = []
    with SqliteRunStore(store_path, read_only=True) as store:
        store._connection.set_trace_callback(statements.append)
        compared(store, "agent-2", "agent-3", UnitIdMap.parse([]), VerdictSettings(), history=10, group_depth=1, limit=5)
        changed = store.changed_pairs("agent-2", "agent-3")
        both = store.verdicts("agent-2").items() & store.verdicts("agent-3").items()
    assert not [statement for statement in statements if "run_groups" in statement]
    assert {unit_id for unit_id, _, _ in changed}.isdisjoint(unit_id for unit_id, verdict in both if verdict == "passed")


def test_a_comparison_where_no_unit_changed_draws_no_bootstrap_and_imports_no_numpy() -> None:
    """Every resample of a difference that is 0 for every unit is 0: the interval is [0, 0] without
    numpy's generator (which costs a `runs compare` of identical runs ~0.1 s to import)."""
    script = (
        "import sys\n"
        "from assay.core.stats import PairedCounts, PairedDifferences, cluster_bootstrap_interval, paired_test\n"
        "test = paired_test(PairedCounts(90000, 0, 0, 10000))\n"
        "print(test.interval_low, test.interval_high, cluster_bootstrap_interval(PairedDifferences((0.0,) * 1000)),\n"
        "      'numpy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["0.0", "0.0", "(0.0,", "0.0)", "False"]


def test_the_interval_without_draws_is_the_one_the_draws_gave() -> None:
    import numpy

    from assay.core.stats import PairedCounts, PairedDifferences, bootstrap_difference_interval, cluster_bootstrap_interval

    counts = PairedCounts(700, 0, 0, 300)
    draws = numpy.random.default_rng(0).multinomial(counts.total, [0.7, 0.0, 0.0, 0.3], size=2000)
    assert bootstrap_difference_interval(counts) == tuple(
        float(value) for value in numpy.quantile((draws[:, 2] - draws[:, 1]) / counts.total, [0.025, 0.975]))
    assert cluster_bootstrap_interval(PairedDifferences((0.5,) * 30)) == (0.5, 0.5)
    assert cluster_bootstrap_interval(PairedDifferences((0.5,) * 30 + (0.0,)))[0] < 0.5


def test_a_store_without_history_rows_pairs_the_same(store_path, tmp_path) -> None:
    """A read-only store an earlier assay made has no `unit_history`; its evidence is computed from the units."""
    import shutil
    import sqlite3

    database = tmp_path / "assay.db"
    shutil.copy(store_path, database)
    with sqlite3.connect(database) as connection:
        connection.execute("DELETE FROM unit_history")
        connection.execute("PRAGMA user_version = 0")
    connection.close()
    with SqliteRunStore(database, read_only=True) as store:
        assert not store.has_history_rows
        first, second = store.get_run("agent-2"), store.get_run("agent-3")
        found = compare_stored_runs(store, first, second, history=10)
        assert found.to_json() == _in_python(store, first, second, 10, 1).to_json()


def _pairing_plan(store, first: str, second: str) -> list[str]:
    """EXPLAIN QUERY PLAN of the statement `changed_pairs` runs, as SQLite traced it (values in place)."""
    statements: list[str] = []
    store._connection.set_trace_callback(statements.append)
    store.changed_pairs(first, second)
    store._connection.set_trace_callback(None)
    [statement] = statements
    return [row[3] for row in store._connection.execute(f"EXPLAIN QUERY PLAN {statement}")]


def test_pairing_two_runs_reads_ids_and_verdicts_from_the_covering_index_not_the_unit_rows(store_path) -> None:
    """A unit row is its whole body (~3 KB for an agent attempt, a page each): pairing two 100,000-unit
    runs through `units_verdicts` reads none of them (0.07 s of CPU against 0.43)."""
    with SqliteRunStore(store_path, read_only=True) as store:
        plan = _pairing_plan(store, "agent-2", "agent-3")
    searches = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
    assert len(searches) == 2 and all("USING COVERING INDEX units_verdicts" in step for step in searches), plan


def _without_the_verdicts_index(store_path, database) -> None:
    """A copy of the store as the schema before `units_verdicts` made it (the unique `units_by_id` instead)."""
    import shutil
    import sqlite3

    shutil.copytree(store_path.parent / "records", database.parent / "records")
    shutil.copy(store_path, database)
    with sqlite3.connect(database) as connection:
        connection.execute("DROP INDEX units_verdicts")
        connection.execute("CREATE UNIQUE INDEX units_by_id ON units (run_id, unit_id)")
    connection.close()


def _has_the_verdicts_index(database) -> bool:
    """Whether the store has `units_verdicts`, which then replaces the old unique `units_by_id` (one index, not two, to write)."""
    import sqlite3

    with sqlite3.connect(database) as connection:
        indexes = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    connection.close()
    assert ("units_verdicts" in indexes) != ("units_by_id" in indexes), indexes
    return "units_verdicts" in indexes


def test_a_store_made_before_the_verdicts_index_compares_the_same_and_gets_it_when_opened_for_writing(store_path, tmp_path) -> None:
    database = tmp_path / "assay.db"
    _without_the_verdicts_index(store_path, database)
    with SqliteRunStore(store_path, read_only=True) as store:
        expected = [compare_stored_runs(store, store.get_run(first), store.get_run(second), history=10).to_json()
                    for first, second in (("agent-2", "agent-3"), ("agent-3", "agent-1"))]
    with SqliteRunStore(database, read_only=True) as store:  # where it may not be changed: read as it is
        assert not any("units_verdicts" in step for step in _pairing_plan(store, "agent-2", "agent-3"))
        assert [compare_stored_runs(store, store.get_run(first), store.get_run(second), history=10).to_json()
                for first, second in (("agent-2", "agent-3"), ("agent-3", "agent-1"))] == expected
        assert store.units_only_in("agent-3", "agent-2") and store.verdicts("agent-3")
    assert not _has_the_verdicts_index(database)
    SqliteRunStore(database).close()  # opened for writing: the index is made
    assert _has_the_verdicts_index(database)
    with SqliteRunStore(database, read_only=True) as store:
        assert all("units_verdicts" in step for step in _pairing_plan(store, "agent-2", "agent-3") if "SEARCH" in step)
        assert compare_stored_runs(store, store.get_run("agent-2"), store.get_run("agent-3"), history=10).to_json() == expected[0]



def _compare_json(database, first: str, second: str) -> dict:
    import os

    done = subprocess.run([sys.executable, "-m", "assay", "runs", "compare", first, second, "--json"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "ASSAY_STORE": str(database)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_runs_reindex_of_a_store_made_before_the_verdicts_index_builds_it(store_path, tmp_path) -> None:
    import os

    database = tmp_path / "assay.db"
    _without_the_verdicts_index(store_path, database)
    done = subprocess.run([sys.executable, "-m", "assay", "runs", "reindex"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ASSAY_STORE": str(database)})
    assert done.returncode == 0 and "Indexed 4 run(s)" in done.stdout, done.stdout + done.stderr
    assert _has_the_verdicts_index(database)
    with SqliteRunStore(database, read_only=True) as store:
        assert all("units_verdicts" in step for step in _pairing_plan(store, "agent-2", "agent-3") if "SEARCH" in step)
    assert _compare_json(database, "agent-2", "agent-3") == _compare_json(store_path, "agent-2", "agent-3")
