"""The viewer's run page of a run with many groups (every agent eval is one) reads a page of them, not all."""

from __future__ import annotations

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import GROUP_LIMIT, ViewData


def test_the_run_page_reads_one_page_of_a_runs_groups_and_the_units_page_none(tmp_path) -> None:
    database = tmp_path / "assay.db"
    count = GROUP_LIMIT + 100
    units = [UnitResult(f"main/eval{index:04d}#1", "failed" if index % 7 == 0 else "passed", group=f"main/eval{index:04d}")
             for index in range(count)]
    publish_run(RunManifest("agent-many", "agent", "2026-03-01T00:00:00Z"), units, database=database)
    statements: list[str] = []
    with SqliteRunStore(database, read_only=True) as store:
        data = ViewData(store)
        store._connection.set_trace_callback(statements.append)
        run = data.run({"run": "agent-many"})
        page = data.units({"run": "agent-many", "offset": "0", "limit": "100"})
        store._connection.set_trace_callback(None)
        every = store.get_run("agent-many", with_groups=True).groups
    assert run["groups_total"] == count and len(run["groups"]) == GROUP_LIMIT
    assert run["groups"] == [{"group": name, "counts": counts} for name, counts in list(every.items())[:GROUP_LIMIT]]
    assert run["groups"][7]["counts"]["failed"] == 1 and run["unit_count"] == count
    assert len(page["units"]) == 100 and page["total"] == count
    group_reads = [statement for statement in statements if "FROM run_groups" in statement and "count(" not in statement]
    assert group_reads and all("LIMIT" in statement for statement in group_reads)  # one page, not 600 rows
