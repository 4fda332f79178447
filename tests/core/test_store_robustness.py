"""What users do to a store: a deleted assay.db, a torn units.jsonl, a bad manifest, ASSAY_STORE under a
file, a store this user may not write. Each case ends in one line that names the file and the fix."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from assay.core import results_store
from assay.core.record import RunManifest, UnitResult, store_path
from assay.core.results_store import SqliteRunStore, publish_run, reindex, store_error
from assay.errors import ConfigError, UsageError


def _publish(database: Path, run_id: str, verdicts: dict[str, str]) -> Path:
    manifest = RunManifest(run_id=run_id, kind="video", created_at="2026-01-01T00:00:00Z", title=run_id, success=True)
    units = [UnitResult(unit_id, verdict, "g", reason="why " * 20) for unit_id, verdict in verdicts.items()]
    return publish_run(manifest, units, database=database)


def test_a_deleted_store_beside_run_records_points_at_reindex(tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    _publish(database, "video-1", {"a": "passed"})
    for leftover in tmp_path.glob("assay.db*"):
        leftover.unlink()
    with pytest.raises(UsageError) as raised:
        SqliteRunStore(database, read_only=True)
    assert str(raised.value) == (f"no results store at {database}, but run records exist in {tmp_path / 'records'}: "
                                 "`assay runs reindex` rebuilds the index from them")


def test_a_missing_store_without_records_still_says_to_run_an_eval(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="run an eval first"):
        SqliteRunStore(tmp_path / "assay.db", read_only=True)


def test_a_torn_last_unit_line_is_skipped_and_named_not_indexed(tmp_path: Path) -> None:
    """A line cut short keeps its first keys: indexed as it was, every read of its unit said the store
    was damaged, and reindex (the remedy offered) indexed it again."""
    database = tmp_path / "assay.db"
    record = _publish(database, "video-1", {"a": "passed", "b": "failed"})
    units = record / "units.jsonl"
    units.write_bytes(units.read_bytes()[:-30])
    outcome = reindex(database)
    assert outcome.runs == 1
    assert len(outcome.skipped_lines) == 1 and outcome.skipped_lines[0].startswith(f"{units}:2: JSONDecodeError: ")
    with SqliteRunStore(database, read_only=True) as store:
        assert store.verdicts("video-1") == {"a": "passed"}
        assert store.unit_page("video-1").units[0].unit_id == "a"  # reads back: no "damaged" store


def test_an_unreadable_manifest_is_named_as_the_manifest(tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    record = _publish(database, "video-1", {"a": "passed"})
    (record / "manifest.json").write_text('{"schema": "assay.run-record.v1", "run_id": \n', encoding="utf-8")
    outcome = reindex(database)
    assert outcome.unreadable == (record,)
    assert outcome.unreadable_why == ("Expecting value: line 2 column 1 (char 45) in manifest.json",)
    with SqliteRunStore(database, read_only=True) as store:  # the run indexed before is kept
        assert [run.run_id for run in store.list_runs()] == ["video-1"]


def test_assay_store_under_a_file_is_refused_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "report.xml").write_text("<x/>", encoding="utf-8")
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "report.xml" / "store" / "assay.db"))
    with pytest.raises(ConfigError) as raised:
        SqliteRunStore(store_path(), read_only=True)
    assert str(raised.value) == (f"ASSAY_STORE={tmp_path / 'report.xml' / 'store' / 'assay.db'} cannot be used: "
                                 f"{tmp_path / 'report.xml'} is a file, not a folder; name a database file in a folder "
                                 f"(e.g. ASSAY_STORE={tmp_path / 'assay.db'})")


def test_a_store_this_user_may_not_write_names_the_folder_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    database = tmp_path / "assay.db"
    _publish(database, "video-1", {"a": "passed"})
    real_access = os.access
    monkeypatch.setattr(results_store.os, "access", lambda path, mode: False if Path(path) == tmp_path else real_access(path, mode))
    error = sqlite3.OperationalError("attempt to write a readonly database")
    error.sqlite_errorcode = 1544  # SQLITE_READONLY_DIRECTORY
    assert str(store_error(database, error)) == (
        f"the results store {database} cannot be used: no permission to write {tmp_path} (attempt to write a readonly "
        "database); give this user write access to it, or set ASSAY_STORE to a store this user may write"
    )


@pytest.mark.parametrize("damaged", [True, False])
def test_a_stopped_rebuild_leaves_the_store_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damaged: bool) -> None:
    """Ctrl-C half-way through rebuilding a damaged (or deleted) store left an index of the first runs only,
    listed as if it were all of them, with the damaged file already moved aside."""
    database = tmp_path / "assay.db"
    for number in range(3):
        _publish(database, f"video-{number}", {"a": "passed"})
    for leftover in tmp_path.glob("assay.db*"):
        leftover.unlink()
    if damaged:
        database.write_bytes(b"not a database at all" * 100)
    before = sorted(path.name for path in tmp_path.iterdir())
    indexed = SqliteRunStore.add_run

    def stopped_at_the_second(store: SqliteRunStore, manifest: RunManifest, *rest: object) -> None:
        if manifest.run_id == "video-1":
            raise KeyboardInterrupt
        indexed(store, manifest, *rest)

    monkeypatch.setattr(SqliteRunStore, "add_run", stopped_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        reindex(database)
    assert sorted(path.name for path in tmp_path.iterdir()) == before
    if damaged:
        assert database.read_bytes() == b"not a database at all" * 100
    monkeypatch.setattr(SqliteRunStore, "add_run", indexed)
    outcome = reindex(database)
    assert outcome.runs == 3 and (outcome.set_aside is not None) == damaged
    with SqliteRunStore(database, read_only=True) as store:
        assert store.count_runs() == 3
