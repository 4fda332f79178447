"""The SQLite store: indexing, listing, resolving run references, paging units, compare inputs, publishing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from assay.core.record import RunManifest, UnitResult, read_record
from assay.core.run_diff import compare_verdicts
from assay.core.results_store import SqliteRunStore, StoreError, publish_run, publish_run_quietly, reindex, set_damaged_store_aside
from assay.errors import UsageError


def _manifest(run_id: str, created_at: str, kind: str = "video") -> RunManifest:
    return RunManifest(run_id=run_id, kind=kind, created_at=created_at, title=f"title {run_id}", success=True)


def _units(verdicts: dict[str, str]) -> list[UnitResult]:
    return [UnitResult(unit_id, verdict, unit_id.split("/")[0], expected=1, observed=2) for unit_id, verdict in verdicts.items()]


@pytest.fixture
def store(tmp_path: Path) -> SqliteRunStore:
    with SqliteRunStore(tmp_path / "assay.db") as opened:
        yield opened


def test_store_uses_write_ahead_logging(store: SqliteRunStore) -> None:
    mode = sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_runs_list_newest_first_and_filter_by_kind_and_text(store: SqliteRunStore) -> None:
    store.add_run(_manifest("video-1", "2026-01-01T00:00:00Z"), _units({"a/1": "passed"}))
    store.add_run(_manifest("agent-2", "2026-01-02T00:00:00Z", "agent"), _units({"a/1": "failed"}))
    store.add_run(_manifest("video-3", "2026-01-03T00:00:00Z"), _units({"a/1": "passed", "b/1": "errored"}))
    assert [run.run_id for run in store.list_runs()] == ["video-3", "agent-2", "video-1"]
    assert [run.run_id for run in store.list_runs(kind="video")] == ["video-3", "video-1"]
    assert [run.run_id for run in store.list_runs(search="agent")] == ["agent-2"]
    assert store.count_runs(kind="video") == 2
    latest = store.get_run("latest", with_groups=True)
    assert latest.run_id == "video-3"
    assert latest.counts["errored"] == 1 and latest.pass_rate == 0.5
    assert latest.groups == {"a": {"passed": 1, "failed": 0, "errored": 0, "skipped": 0, "ignored": 0},
                             "b": {"passed": 0, "failed": 0, "errored": 1, "skipped": 0, "ignored": 0}}


def test_run_references_resolve_ids_prefixes_and_latest(store: SqliteRunStore) -> None:
    store.add_run(_manifest("video-100", "2026-01-01T00:00:00Z"), [])
    store.add_run(_manifest("video-200", "2026-01-02T00:00:00Z"), [])
    assert store.resolve("video-100") == "video-100"
    assert store.resolve("video-2") == "video-200"
    assert store.resolve("latest~1") == "video-100"
    with pytest.raises(UsageError, match="ambiguous"):
        store.resolve("video-")
    with pytest.raises(UsageError, match="no run 'nope'"):
        store.resolve("nope")
    with pytest.raises(UsageError, match=r"no run 'latest~5' in the store .*: it holds 2 runs, and latest~1 is the oldest$"):
        store.resolve("latest~5")
    store.add_run(_manifest("doc-1", "2026-01-03T00:00:00Z", "doc"), [])
    with pytest.raises(UsageError, match=r"no run 'latest~1' in the store .*: it holds 1 doc run, and latest is the oldest$"):
        store.resolve("latest~1", kind="doc")
    with pytest.raises(UsageError, match=r"no run 'latst' in the store .*; did you mean 'latest'\?$"):
        store.resolve("latst")
    with pytest.raises(UsageError, match=r"did you mean 'latest~1'\?$"):
        store.resolve("lastest~1")


def test_a_reference_or_a_store_path_of_the_wrong_type_is_named_not_a_traceback(store: SqliteRunStore, tmp_path) -> None:
    """`get_run(None)` raised AttributeError from deep inside, `get_run("")` matched every run as a prefix (the
    only run of a store was "found"), and `open_store(5)` raised pathlib's TypeError."""
    from assay.core.results_store import open_store

    store.add_run(_manifest("video-100", "2026-01-01T00:00:00Z"), [])
    for ref in (None, 5, ""):
        with pytest.raises(UsageError, match=rf"^a run reference is a run id, .*; got {ref!r}$"):
            store.get_run(ref)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="^the results store's path must be a path or a string, got 5$"):
        open_store(5)  # type: ignore[arg-type]
    assert open_store(str(tmp_path / "other.db")).count_runs() == 0


def test_prefix_wildcards_are_literal(store: SqliteRunStore) -> None:
    store.add_run(_manifest("doc-a", "2026-01-01T00:00:00Z", "doc"), [])
    with pytest.raises(UsageError):
        store.resolve("%")


def test_unit_pages_filter_by_verdict_group_and_text(store: SqliteRunStore) -> None:
    verdicts = {f"g{index % 3}/{index}": ("passed" if index % 2 else "failed") for index in range(250)}
    store.add_run(_manifest("video-1", "2026-01-01T00:00:00Z"), _units(verdicts))
    page = store.unit_page("video-1", offset=200, limit=100)
    assert page.total == 250 and len(page.units) == 50
    assert page.units[0].unit_id == "g2/200"  # run order kept
    failing = store.unit_page("video-1", verdict="failed,errored", limit=1000)
    assert failing.total == 125 and {unit.verdict for unit in failing.units} == {"failed"}
    assert store.unit_page("video-1", group="g1", limit=1).total == 83
    assert [unit.unit_id for unit in store.unit_page("video-1", search="G1/24").units] == [
        "g1/241", "g1/244", "g1/247"]  # case-insensitive substring
    assert store.unit_page("video-1", search="/249").total == 1
    assert store.get_unit("video-1", "g0/3").observed == 2
    assert store.get_unit("video-1", "missing") is None


def test_reindexing_a_run_replaces_it_whole(store: SqliteRunStore) -> None:
    store.add_run(_manifest("video-1", "2026-01-01T00:00:00Z"), _units({"a/1": "passed", "a/2": "passed"}))
    store.add_run(_manifest("video-1", "2026-01-01T00:00:00Z"), _units({"a/1": "failed"}))
    assert store.verdicts("video-1") == {"a/1": "failed"}
    assert store.get_run("video-1").unit_count == 1
    assert store.get_run("video-1", with_groups=True).groups == {"a": {"passed": 0, "failed": 1, "errored": 0, "skipped": 0, "ignored": 0}}
    store.delete_run("video-1")
    assert sqlite3.connect(store.path).execute("SELECT count(*) FROM run_groups").fetchone() == (0,)


def test_groups_are_rows_of_their_own_in_first_seen_order(store: SqliteRunStore) -> None:
    # One JSON value holding 50,000 groups cost SQLite ~20 MiB to build, the largest transient of a
    # 50,000-eval run; each group is a row instead, and the run's JSON column stays empty.
    store.add_run(_manifest("agent-1", "2026-01-01T00:00:00Z", "agent"),
                  _units({"b/1": "passed", "a/1": "failed", "b/2": "skipped", "c/1": "passed"}))
    stored = store.get_run("agent-1", with_groups=True)
    assert list(stored.groups) == ["b", "a", "c"]
    assert stored.groups["b"] == {"passed": 1, "failed": 0, "errored": 0, "skipped": 1, "ignored": 0}
    assert stored.counts == {"passed": 2, "failed": 1, "errored": 0, "skipped": 1, "ignored": 0}
    assert stored.unit_count == 4
    database = sqlite3.connect(store.path)
    assert database.execute("SELECT groups FROM runs").fetchall() == [("{}",)]
    assert database.execute("SELECT pos, grp, passed, failed, skipped FROM run_groups ORDER BY pos").fetchall() == [
        (0, "b", 1, 0, 1), (1, "a", 0, 1, 0), (2, "c", 1, 0, 0)]


_EARLIER_SCHEMA = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, created_at TEXT NOT NULL, title TEXT NOT NULL,
    success INTEGER, unit_count INTEGER NOT NULL, counts TEXT NOT NULL, groups TEXT NOT NULL, record_path TEXT,
    manifest TEXT NOT NULL);
CREATE TABLE units (run_id TEXT NOT NULL, seq INTEGER NOT NULL, unit_id TEXT NOT NULL, grp TEXT NOT NULL,
    verdict TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
"""


def test_a_store_indexed_by_an_earlier_assay_keeps_its_groups_and_takes_new_runs(tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    earlier = sqlite3.connect(database)
    earlier.executescript(_EARLIER_SCHEMA)
    manifest = _manifest("video-0", "2026-01-01T00:00:00Z")
    earlier.execute("INSERT INTO runs VALUES (?, 'video', ?, 'old', 1, 1, ?, ?, NULL, ?)", (
        "video-0", manifest.created_at, '{"passed": 1}',
        '{"old": {"passed": 1, "failed": 0, "errored": 0, "skipped": 0, "ignored": 0}}', json.dumps(manifest.to_json())))
    earlier.commit()
    earlier.close()
    with SqliteRunStore(database, read_only=True) as reader:  # no `run_groups` table, and none made
        assert list(reader.get_run("video-0", with_groups=True).groups) == ["old"]
    with SqliteRunStore(database) as store:
        assert list(store.get_run("video-0", with_groups=True).groups) == ["old"]
        store.add_run(_manifest("video-1", "2026-01-02T00:00:00Z"), _units({"new/1": "passed"}))
        assert list(store.get_run("video-1", with_groups=True).groups) == ["new"]
        assert list(store.get_run("video-0", with_groups=True).groups) == ["old"]


def test_read_only_store_refuses_a_missing_database(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no results store"):
        SqliteRunStore(tmp_path / "none.db", read_only=True)


def test_compare_pairs_units_by_identity(store: SqliteRunStore) -> None:
    store.add_run(_manifest("before", "2026-01-01T00:00:00Z"), _units(
        {"a/1": "passed", "a/2": "passed", "a/3": "failed", "a/4": "errored", "a/5": "passed", "a/6": "skipped"}))
    store.add_run(_manifest("after", "2026-01-02T00:00:00Z"), _units(
        {"a/1": "passed", "a/2": "failed", "a/3": "passed", "a/4": "failed", "a/7": "passed", "a/6": "passed"}))
    comparison = compare_verdicts("before", store.verdicts("before"), "after", store.verdicts("after"))
    assert comparison.units["regressions"] == ["a/2"]
    assert comparison.units["fixes"] == ["a/3"]
    assert comparison.units["still_failing"] == ["a/4"]
    assert comparison.units["removed"] == ["a/5"]
    assert comparison.units["new"] == ["a/7"]
    assert comparison.units["changed_other"] == ["a/6"]
    assert comparison.before_pass_rate == pytest.approx(3 / 5)
    assert comparison.after_pass_rate == pytest.approx(4 / 6)
    assert comparison.test.p_value == 1.0
    # One regression and one fix among five single-trial units with no history: nothing decides it.
    assert comparison.verdict == "inconclusive" and not comparison.regression


def test_publish_writes_the_record_and_indexes_it(tmp_path: Path) -> None:
    database = tmp_path / "store" / "assay.db"
    record = publish_run(_manifest("doc-1", "2026-01-01T00:00:00Z", "doc"), _units({"c/deterministic": "passed"}), database=database)
    assert record == tmp_path / "store" / "records" / "doc-1"
    assert read_record(record)[0].run_id == "doc-1"
    with SqliteRunStore(database, read_only=True) as store:
        assert store.get_run("doc-1").record_path == str(record)


def test_a_store_failure_is_one_warning_not_an_exception(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    assert publish_run_quietly(lambda: (_manifest("x", "t"), []), database=blocker / "assay.db") is None
    assert publish_run_quietly(lambda: 1 / 0, database=tmp_path / "assay.db") is None
    warnings = capsys.readouterr().err.splitlines()
    assert len(warnings) == 2 and all(line.startswith("Warning: run record not stored: ") for line in warnings)


def test_reindex_rebuilds_the_index_from_records(tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    publish_run(_manifest("doc-1", "2026-01-01T00:00:00Z", "doc"), _units({"c/x": "failed"}), database=database)
    database.unlink()
    (tmp_path / "records" / "unfinished").mkdir()
    assert reindex(database).runs == 1
    with SqliteRunStore(database, read_only=True) as store:
        assert store.verdicts("doc-1") == {"c/x": "failed"}


def _overwrite_header(database: Path) -> None:
    with open(database, "r+b") as handle:
        handle.write(b"not a database at all" * 5)


def test_a_damaged_file_is_a_store_error_that_names_it(tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    publish_run(_manifest("doc-1", "2026-01-01T00:00:00Z", "doc"), _units({"c/x": "passed"}), database=database)
    _overwrite_header(database)
    for read_only in (True, False):
        with pytest.raises(StoreError) as raised:
            SqliteRunStore(database, read_only=read_only)
        assert str(raised.value).startswith(f"the results store {database} is damaged (file is not a database); ")
        assert "`assay runs reindex`" in str(raised.value) and raised.value.exit_code == 2


def test_publishing_into_a_damaged_store_keeps_the_record_and_warns_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    database = tmp_path / "assay.db"
    publish_run(_manifest("doc-1", "2026-01-01T00:00:00Z", "doc"), _units({"c/x": "passed"}), database=database)
    _overwrite_header(database)
    record = publish_run_quietly(lambda: (_manifest("doc-2", "2026-01-02T00:00:00Z", "doc"), _units({"c/x": "failed"})), database=database)
    assert record == tmp_path / "records" / "doc-2" and read_record(record)[0].run_id == "doc-2"
    warnings = capsys.readouterr().err.splitlines()
    assert len(warnings) == 1
    assert warnings[0].startswith(f"Warning: run recorded in {record} but not indexed: the results store {database} is damaged")


def test_reindex_sets_a_damaged_store_aside_with_its_log(tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    publish_run(_manifest("doc-1", "2026-01-01T00:00:00Z", "doc"), _units({"c/x": "failed"}), database=database)
    _overwrite_header(database)
    Path(f"{database}-wal").write_bytes(b"stale log")
    outcome = reindex(database)
    assert outcome.runs == 1 and outcome.damage == "file is not a database"
    assert outcome.set_aside is not None and outcome.set_aside.name.startswith("assay.db.corrupt-")
    assert Path(f"{outcome.set_aside}-wal").read_bytes() == b"stale log"
    with SqliteRunStore(database, read_only=True) as store:
        assert store.verdicts("doc-1") == {"c/x": "failed"}


def test_setting_aside_twice_in_one_second_keeps_both_copies(tmp_path: Path) -> None:
    import datetime as dt

    moment = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    database = tmp_path / "assay.db"
    database.write_bytes(b"first")
    first = set_damaged_store_aside(database, moment)
    database.write_bytes(b"second")
    second = set_damaged_store_aside(database, moment)
    assert first.name == "assay.db.corrupt-20260101T000000Z" and second.name == "assay.db.corrupt-20260101T000000Z-2"
    assert first.read_bytes() == b"first" and second.read_bytes() == b"second"


def test_reindex_reports_unreadable_records_and_skips_unfinished_ones(tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    publish_run(_manifest("doc-1", "2026-01-01T00:00:00Z", "doc"), _units({"c/x": "failed"}), database=database)
    broken = tmp_path / "records" / "doc-broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{ not json", encoding="utf-8")
    (tmp_path / "records" / "unfinished").mkdir()
    outcome = reindex(database)
    assert outcome.runs == 1 and outcome.unreadable == (broken,) and outcome.set_aside is None
    # and why: a manifest that is not JSON and a record without its units file read alike before
    from assay.core.history.shown import reindex_lines

    lines = list(reindex_lines(outcome, database))
    assert any(line.startswith(f"Skipped an unreadable run record: {broken} (Expecting property name") for line in lines), lines


@pytest.mark.parametrize(
    ("damaged", "why"),
    [
        (b'{"unit_id":"c/t/1","verdict":"pas', "JSONDecodeError"),  # torn by a disk error
        (b"\xff\xfe not text\n", "UnicodeDecodeError"),
        (b'{"unit_id":"c/t/1","verdict":"won","group":"c"}\n', "unknown verdict 'won'"),
        (b'{"unit_id":"c/t/0","verdict":"passed","group":"c"}\n', "unit id 'c/t/0' appears twice"),
    ],
)
def test_reindex_keeps_the_readable_units_of_a_record_and_names_the_line_it_could_not_read(
    tmp_path: Path, damaged: bytes, why: str
) -> None:
    database = tmp_path / "assay.db"
    record = publish_run(_manifest("v-1", "2026-01-01T00:00:00Z"), _units({f"c/t/{i}": "passed" for i in range(3)}), database=database)
    units_file = record / "units.jsonl"
    lines = units_file.read_bytes().splitlines(keepends=True)
    units_file.write_bytes(lines[0] + damaged.rstrip(b"\n") + b"\n" + lines[2])
    database.unlink()
    outcome = reindex(database)
    assert outcome.runs == 1 and outcome.unreadable == ()
    [skipped] = outcome.skipped_lines
    assert skipped.startswith(f"{units_file}:2: ") and why in skipped
    with SqliteRunStore(database, read_only=True) as store:
        assert store.verdicts("v-1") == {"c/t/0": "passed", "c/t/2": "passed"}
        assert store.get_run("v-1").unit_count == 2


# ---------------------------------------------------------------------------------------------
# Stores left half-made, and stores this user may only read


def test_a_zero_byte_store_left_by_a_kill_is_initialised_not_rejected(tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    database.write_bytes(b"")  # killed between creating the file and writing its schema
    with SqliteRunStore(database, read_only=True) as store:
        assert store.list_runs() == []
    assert database.stat().st_size > 0
    publish_run(_manifest("v-1", "2026-01-01T00:00:00Z"), _units({"c/t/0": "passed"}), database=database)
    with SqliteRunStore(database, read_only=True) as store:
        assert [run.run_id for run in store.list_runs()] == ["v-1"]


def _as_reader(command: list[str]) -> list[str]:
    """`command` run by someone who may read the store but not write it (root ignores permissions,
    so as root the two capabilities that let it are dropped)."""
    import os
    import shutil

    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is missing: cannot read as a non-writer")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", *command]


def test_a_store_the_user_may_read_but_not_write_can_be_read(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    folder = tmp_path / "store"
    database = folder / "assay.db"
    publish_run(_manifest("v-1", "2026-01-01T00:00:00Z"), _units({"c/t/0": "passed"}), database=database)
    empty = tmp_path / "empty" / "assay.db"
    empty.parent.mkdir()
    empty.write_bytes(b"")  # and a store killed as it was made, which this user cannot initialise
    locked = [folder, folder / "records", folder / "records" / "v-1", empty.parent]
    for path in [database, empty, *(folder / "records" / "v-1").iterdir()]:
        os.chmod(path, 0o444)
    for path in locked:
        os.chmod(path, 0o555)
    try:
        def runs(store: Path, *args: str) -> subprocess.CompletedProcess:
            env = {**os.environ, "ASSAY_STORE": str(store)}
            command = _as_reader([sys.executable, "-m", "assay", "runs", *args])
            return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)

        listed = runs(database, "list")
        assert listed.returncode == 0, listed.stdout + listed.stderr
        assert "v-1" in listed.stdout
        shown = runs(database, "show", "latest")
        assert shown.returncode == 0 and "v-1" in shown.stdout, shown.stdout + shown.stderr
        nothing = runs(empty, "list")
        assert nothing.returncode == 0 and "No runs recorded yet." in nothing.stdout, nothing.stdout + nothing.stderr
        assert sorted(path.name for path in folder.iterdir()) == ["assay.db", "records"]  # nothing written beside it
    finally:
        for path in locked:
            os.chmod(path, 0o755)


# ---------------------------------------------------------------------------------------------
# Whose database a file is


def _application_id(database: Path) -> int:
    with sqlite3.connect(database) as connection:
        value = connection.execute("PRAGMA application_id").fetchone()[0]
    connection.close()
    return value


def test_a_new_store_is_marked_as_assays_and_a_store_an_earlier_assay_made_is_marked_when_written(tmp_path: Path) -> None:
    from assay.core.results_store import APPLICATION_ID

    database = tmp_path / "assay.db"
    publish_run(_manifest("v-1", "2026-01-01T00:00:00Z"), _units({"c/t/0": "passed"}), database=database)
    assert _application_id(database) == APPLICATION_ID
    with sqlite3.connect(database) as connection:
        connection.execute("PRAGMA application_id = 0")  # as every store made before the mark was
    connection.close()
    with SqliteRunStore(database, read_only=True) as store:
        assert [run.run_id for run in store.list_runs()] == ["v-1"]  # still read as assay's
    publish_run(_manifest("v-2", "2026-01-02T00:00:00Z"), _units({"c/t/0": "failed"}), database=database)
    assert _application_id(database) == APPLICATION_ID


@pytest.mark.parametrize("foreign", ["application id", "tables"])
def test_another_programs_database_is_refused_and_left_as_it_was(tmp_path: Path, foreign: str) -> None:
    database = tmp_path / "assay.db"
    with sqlite3.connect(database) as connection:
        if foreign == "application id":
            connection.execute("PRAGMA application_id = 1196444237")  # "GPKG": a GeoPackage
        else:
            connection.execute("CREATE TABLE notes (body TEXT)")
    connection.close()
    before = database.read_bytes()
    for read_only in (False, True):
        with pytest.raises(StoreError, match=f"^the file {database} is not an assay results store: ") as refused:
            SqliteRunStore(database, read_only=read_only)
        assert refused.value.exit_code == 2 and "set ASSAY_STORE to a store of assay's own" in str(refused.value)
    with pytest.raises(StoreError, match="is not an assay results store"):
        reindex(database)
    assert database.read_bytes() == before


def test_a_stored_integer_past_64_bits_reads_back_whole_not_as_a_float(store: SqliteRunStore) -> None:
    # orjson, which reads stored bodies, turns such an integer into a float without an error.
    big = 123456789012345678901234567890
    store.add_run(_manifest("video-1", "2026-01-01T00:00:00Z"),
                  [UnitResult("a/1", "passed", "a", expected=big, observed=[big, 1.5]), UnitResult("a/2", "passed", "a", expected=1, observed=2)])
    found = store.units_by_id("video-1", ["a/1", "a/2"])
    assert found["a/1"].expected == big and isinstance(found["a/1"].expected, int)
    assert found["a/1"].observed == [big, 1.5] and found["a/2"].expected == 1


def test_a_unit_id_given_twice_is_refused_and_the_run_is_not_indexed(store: SqliteRunStore) -> None:
    # No unique index keeps a run's unit ids apart (units_verdicts replaced it): indexing refuses them itself.
    store.add_run(_manifest("video-1", "2026-01-01T00:00:00Z"), _units({"a/1": "passed"}))
    with pytest.raises(ValueError, match="unit id 'a/2' appears twice in run video-2"):
        store.add_run(_manifest("video-2", "2026-01-02T00:00:00Z"), _units({"a/1": "passed", "a/2": "failed"}) + _units({"a/2": "passed"}))
    assert [run.run_id for run in store.list_runs()] == ["video-1"]
    assert store.read("SELECT count(*) FROM units").fetchone()[0] == 1


def test_a_unit_is_found_by_its_id_through_the_verdicts_index(store: SqliteRunStore) -> None:
    store.add_run(_manifest("video-1", "2026-01-01T00:00:00Z"), _units({f"a/{index}": "passed" for index in range(50)}))
    plan = [row[3] for row in store.read("EXPLAIN QUERY PLAN SELECT unit_id, body FROM units WHERE run_id = ? AND unit_id IN (?, ?)",
                                         ("video-1", "a/3", "a/7"))]
    assert any("USING INDEX units_verdicts (run_id=? AND unit_id=?)" in step for step in plan), plan
    assert sorted(store.units_by_id("video-1", ["a/3", "a/7"])) == ["a/3", "a/7"]


def test_a_run_is_found_by_another_id_its_kind_shows(tmp_path):
    """An alias its manifest lists (an eval-kit bundle id), and the checkpoint id of a journaled run recorded
    before manifests listed aliases (GlassKit's `run-<time>-<hex>` for `video-<time>-<hex>`)."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import SqliteRunStore, publish_run
    from assay.errors import UsageError

    database = tmp_path / "assay.db"
    publish_run(RunManifest("doc-20261203T100000Z-0a1b2c3d", "doc", "2026-12-03T10:00:00Z",
                            aliases=("deterministic-2026-12-03T10-00-00-000Z",)), [UnitResult("c/deterministic", "passed")],
                database=database)
    publish_run(RunManifest("video-20261203T110000Z-5e6f7a8b", "video", "2026-12-03T11:00:00Z"), [UnitResult("u", "passed")],
                database=database)
    with SqliteRunStore(database, read_only=True) as store:
        assert store.resolve("deterministic-2026-12-03T10-00-00-000Z") == "doc-20261203T100000Z-0a1b2c3d"
        assert store.resolve("run-20261203T110000Z-5e6f7a8b") == "video-20261203T110000Z-5e6f7a8b"
        assert store.get_run("deterministic-2026-12-03T10-00-00-000Z").manifest.aliases == ("deterministic-2026-12-03T10-00-00-000Z",)
    assert RunManifest.from_json({"run_id": "r", "kind": "doc", "created_at": "t", "aliases": "run-x"}).aliases == ()  # not a list
    # A doc run recorded before manifests listed aliases kept its bundle id in its identity, and is found by it.
    earlier = RunManifest("doc-20261203T120000Z-9c8d7e6f", "doc", "2026-12-03T12:00:00Z",
                          identity={"method": "deterministic", "bundle_run_id": "deterministic-2026-12-03T12-00-00-000Z"})
    document = earlier.to_json()
    assert "aliases" not in document
    record = tmp_path / "records" / earlier.run_id
    record.mkdir(parents=True)
    (record / "manifest.json").write_text(json.dumps(document))
    (record / "units.jsonl").write_text(json.dumps(UnitResult("c/deterministic", "passed").to_json()) + "\n")
    with SqliteRunStore(database) as store:
        store.add_run(RunManifest.from_json(document), [UnitResult("c/deterministic", "passed")], str(record))
        store.write("UPDATE runs SET manifest = ? WHERE run_id = ?", [(json.dumps(document), earlier.run_id)])  # as indexed then
    with SqliteRunStore(database, read_only=True) as store:
        assert store.resolve("deterministic-2026-12-03T12-00-00-000Z") == earlier.run_id
    # Only a doc run's identity says so: another kind's field of that name is no alias.
    assert RunManifest.from_json({**document, "kind": "agent"}).aliases == ()
    with SqliteRunStore(database, read_only=True) as store:
        for unknown in ("run-20261203T110000Z-00000000", "deterministic-2026", "run-20261203T2"):
            with pytest.raises(UsageError, match="no run"):
                store.resolve(unknown)


def test_the_unit_readers_take_any_run_reference_as_get_run_does(store: SqliteRunStore) -> None:
    """`unit_page`, `get_unit` and `verdicts` found nothing for `latest` (the Python API's usual first call)."""
    store.add_run(_manifest("video-old", "2026-01-01T00:00:00Z"), _units({"a/1": "failed", "b/1": "passed"}))
    store.add_run(_manifest("video-new", "2026-01-02T00:00:00Z"), _units({"a/1": "passed"}))
    assert store.verdicts("latest") == {"a/1": "passed"}
    assert store.verdicts("latest~1") == store.verdicts("video-o") == {"a/1": "failed", "b/1": "passed"}
    assert [unit.unit_id for unit in store.unit_page("latest~1", verdict="failed").units] == ["a/1"]
    assert store.get_unit("latest", "a/1").verdict == "passed"
    assert store.get_unit("latest~1", "a/1").verdict == "failed"
    # What names no run (or is ambiguous) still finds nothing, as an unknown id does; a missing unit is None.
    assert store.verdicts("nope") == {} and store.verdicts("video-") == {}
    assert store.unit_page("nope").total == 0 and store.get_unit("latest", "c/1") is None
    assert store.unit_page("video-new", verdict="failed").total == 0  # a run's own id: no second lookup


def test_the_python_api_refuses_a_limit_or_verdict_of_the_wrong_shape_by_name(store: SqliteRunStore) -> None:
    """`list_runs(limit="5")` and `unit_page(verdict=[...])` raised TypeError and AttributeError."""
    store.add_run(_manifest("video-1", "2026-01-01T00:00:00Z"), _units({"a/1": "failed", "b/1": "errored", "c/1": "passed"}))
    assert [unit.unit_id for unit in store.unit_page("latest", verdict=["failed", "errored"]).units] == ["a/1", "b/1"]
    assert store.unit_page("latest", verdict=("passed",)).total == 1
    assert store.unit_page("latest", verdict="passed,").total == 1 and store.unit_page("latest", verdict="").total == 3
    with pytest.raises(UsageError, match=r"^limit must be a nonnegative integer, got '5'$"):
        store.list_runs(limit="5")
    with pytest.raises(UsageError, match=r"^offset must be a nonnegative integer, got -1$"):
        store.unit_page("latest", offset=-1)
    with pytest.raises(UsageError, match=r"^limit must be a nonnegative integer, got True$"):
        store.list_runs(limit=True)
    with pytest.raises(UsageError, match=r"got 'faild'; did you mean 'failed'\?$"):
        store.unit_page("latest", verdict=["faild"])
    with pytest.raises(UsageError, match=r"verdict must be one of passed, failed, errored, skipped, ignored, got 3$"):
        store.unit_page("latest", verdict=[3])
