"""Indexing an imported run: how the store's tallies read a large run's rows (docs/benchmarks.md,
"Importing other tools' logs")."""

from __future__ import annotations

import sqlite3

from assay.core.record import RunManifest, UnitResult, store_path, utc_timestamp
from assay.core.results_store import _TALLY_GROUPS, _TALLY_HISTORY, publish_run


def test_a_runs_tallies_read_its_rows_in_the_order_they_were_stored():
    units = [UnitResult(f"sample-{index}#{trial}", "passed" if (index + trial) % 3 else "failed", group=f"task/{index % 4}")
             for index in range(50) for trial in (1, 2)]
    units.append(UnitResult("carried#1", "passed", group="task/0", carried_from={"run_id": "r0", "unit_id": "carried#1"}))
    manifest = RunManifest(run_id="imported-20261203T110000-0a0b0c", kind="imported", created_at=utc_timestamp())
    publish_run(manifest, units)
    with sqlite3.connect(store_path()) as connection:
        for statement in (_TALLY_GROUPS, _TALLY_HISTORY):
            plan = [row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {statement}", (manifest.run_id,))]
            # The primary key (run_id, seq) holds a run's rows in the order they were inserted, on consecutive
            # pages; `units_by_id` holds them in the ids' order, a page apart (ten times the reading).
            assert any("(run_id=? AND seq>?)" in step for step in plan) and not any("units_by_id" in step for step in plan), plan
            if statement is _TALLY_HISTORY:  # each row's body is tested before the sort, not carried through it
                assert plan[0].startswith("CO-ROUTINE"), plan
        history = dict(((subject, (passed, failed)) for subject, passed, failed in connection.execute(
            "SELECT subject, passed, failed FROM unit_history WHERE run_id = ?", (manifest.run_id,))))
        groups = connection.execute("SELECT grp, passed, failed FROM run_groups WHERE run_id = ? ORDER BY pos",
                                    (manifest.run_id,)).fetchall()
    assert history["sample-0"] == (2, 0) and history["sample-1"] == (1, 1) and history["sample-2"] == (1, 1)
    assert history["carried"] == (0, 0) and len(history) == 51
    assert [group for group, _, _ in groups] == ["task/0", "task/1", "task/2", "task/3"]
    assert sum(passed + failed for _, passed, failed in groups) == 101
