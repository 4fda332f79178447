"""Indexing an imported run: how the store's tallies read a large run's rows (docs/benchmarks.md,
"Importing other tools' logs")."""

from __future__ import annotations

import sqlite3

import pytest

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


def _junit(path, count: int) -> None:
    cases = "".join(f'<testcase classname="t" name="case{index}" time="0.1"/>' for index in range(count))
    path.write_text(f'<testsuite name="s" tests="{count}" failures="0">{cases}</testsuite>', encoding="utf-8")


def test_an_import_cut_short_between_its_record_and_its_index_is_imported_again(tmp_path, monkeypatch):
    """Ctrl-C after the record was written and before it was indexed left a record the store did not list; importing
    the file again was refused with `FileExistsError` for good."""
    from assay.core import results_store
    from assay.core.interop.formats import detect_format
    from assay.core.interop.importing import import_log

    log = tmp_path / "junit.xml"
    _junit(log, 5)

    def interrupted(store, manifest, units, record_path=None):
        for _ in units:  # each line written to the record as its row would be inserted: the record is whole
            pass
        raise KeyboardInterrupt  # before the index commits

    with monkeypatch.context() as patched:
        patched.setattr(results_store.SqliteRunStore, "add_run", interrupted)
        with pytest.raises(KeyboardInterrupt):
            import_log(log, detect_format(log))
    assert [record.name for record in (store_path().parent / "records").iterdir()]  # the record is there, unindexed
    done = import_log(log, detect_format(log))
    assert (done.already, done.unit_count, done.counts["passed"]) == (False, 5, 5)
    assert import_log(log, detect_format(log)).already


def test_ctrl_c_during_runs_import_keeps_the_files_before_says_how_to_finish_and_exits_130(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from assay.cli.runs import runs_app
    from assay.core.interop import importing

    first, second = tmp_path / "first.xml", tmp_path / "second.xml"
    _junit(first, 2)
    _junit(second, 3)
    real = importing.import_log

    def import_log(path, log_format, **options):
        if path.name == "second.xml":
            raise KeyboardInterrupt
        return real(path, log_format, **options)

    monkeypatch.setattr(importing, "import_log", import_log)
    done = CliRunner().invoke(runs_app, ["import", str(first), str(second)])
    assert done.exit_code == 130
    assert done.stdout.startswith("Imported imported-") and "first.xml (junit), 2 units" in done.stdout
    assert done.stderr == (f"Interrupted while importing {second}: run the same command again to finish (a file already "
                           "imported is recognised, not imported twice)\n")
