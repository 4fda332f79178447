"""An import's log read in a forked process while this one records and indexes each unit as it comes
(`core/interop/reader_process.py`, `results_store.publish_run_as_read`; docs/benchmarks.md, "An import in
two processes"): the same run as reading it here, every way the reading can end."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.core import results_store
from assay.core.interop import reader_process
from assay.core.interop.formats import detect_format
from assay.core.interop.importing import import_log
from assay.core.interop.log import ImportFormatError
from assay.core.record import RunManifest, UnitResult, utc_timestamp
from assay.core.results_store import StoreError, publish_run, publish_run_as_read

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the reader is forked on Linux only")


def _junit(path: Path, count: int, *, broken_after: int | None = None) -> Path:
    cases = []
    for index in range(count):
        if index == broken_after:
            cases.append("<testcase classname='t' name='broken'><failure>")  # never closed
            break
        failure = "<failure message='no'>text</failure>" if index % 7 == 0 else ""
        cases.append(f'<testcase classname="t.C{index % 5}" name="case{index}" time="0.01">{failure}</testcase>')
    path.write_text(f'<testsuite name="s" tests="{count}" failures="{len(range(0, count, 7))}">{"".join(cases)}'
                    + ("" if broken_after is not None else "</testsuite>"), encoding="utf-8")
    return path


def _forks(monkeypatch: pytest.MonkeyPatch, allowed: bool) -> list[int]:
    """Whether an import may fork its reader; the pids it forked are appended to the list returned."""
    forked: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(reader_process, "_can_fork", lambda: allowed)
    monkeypatch.setattr(reader_process.os, "fork", fork)
    return forked


def _at_line(monkeypatch: pytest.MonkeyPatch, number: int, action) -> None:
    """`action()` as the record is about to get its `number`th line (this process, mid-import)."""
    written = 0
    real_write = results_store.RecordWriter.write

    def write(writer, line):
        nonlocal written
        written += 1
        if written == number:
            action()
        real_write(writer, line)

    monkeypatch.setattr(results_store.RecordWriter, "write", write)


def _stored(database: Path, run_id: str) -> tuple:
    with sqlite3.connect(database) as connection:
        return tuple(connection.execute(query, (run_id,)).fetchall() for query in (
            "SELECT seq, unit_id, grp, verdict, body FROM units WHERE run_id = ? ORDER BY seq",
            "SELECT subject, grp, passed, failed FROM unit_history WHERE run_id = ? ORDER BY subject",
            "SELECT pos, grp, passed, failed, errored, skipped, ignored FROM run_groups WHERE run_id = ? ORDER BY pos",
            "SELECT unit_count, counts FROM runs WHERE run_id = ?",
        ))


def _record(database: Path, run_id: str) -> tuple[bytes, dict]:
    record = database.parent / "records" / run_id
    manifest = json.loads((record / "manifest.json").read_text())
    del manifest["options"]["imported_at"]  # the time of the import: the only difference between two imports of one file
    return (record / "units.jsonl").read_bytes(), manifest


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_log_read_in_a_forked_process_is_the_same_run_as_one_read_here(tmp_path, monkeypatch, inspect_logs):
    for log in (_junit(tmp_path / "junit.xml", 3_000), inspect_logs["eval"].path, inspect_logs["json"].path):
        runs = {}
        for allowed in (True, False):
            with monkeypatch.context() as patched:
                forked = _forks(patched, allowed)
                database = tmp_path / f"{log.suffix}-{allowed}" / "assay.db"
                done = import_log(log, detect_format(log), database=database)
            assert len(forked) == allowed, forked  # the reader was forked, or not, as allowed
            assert all(_pid_gone(pid) for pid in forked)  # and waited for
            runs[allowed] = (done.run_id, done.counts, _stored(database, done.run_id), _record(database, done.run_id))
        assert runs[True] == runs[False], log
        units, manifest = runs[True][3]
        assert units.count(b"\n") == runs[True][2][3][0][0] > 0
        # the importer's totals, filled as it read (in the reader), reached the manifest
        assert manifest["summary"].get("tests", manifest["summary"].get("total_samples")) == units.count(b"\n")


def test_a_log_that_breaks_part_way_is_the_same_error_either_way_and_leaves_nothing(tmp_path, monkeypatch):
    log = _junit(tmp_path / "junit.xml", 5_000, broken_after=4_000)
    errors = {}
    for allowed in (True, False):
        database = tmp_path / str(allowed) / "assay.db"
        with monkeypatch.context() as patched:
            forked = _forks(patched, allowed)
            with pytest.raises(ImportFormatError) as raised:
                import_log(log, detect_format(log), database=database)
        assert len(forked) == allowed and all(_pid_gone(pid) for pid in forked)
        errors[allowed] = raised.value
        assert not any((database.parent / "records").iterdir())  # no half-written record
        with sqlite3.connect(database) as connection:
            assert connection.execute("SELECT count(*) FROM units").fetchone() == (0,)
    assert str(errors[True]) == str(errors[False]) and str(log) in str(errors[True]), errors
    assert errors[True].option == errors[False].option
    assert "in its reader process" in "".join(errors[True].__notes__)  # its traceback, for --debug


def test_what_is_taken_in_while_the_file_is_hashed_is_bounded(tmp_path, monkeypatch):
    log = _junit(tmp_path / "junit.xml", 20_000)
    monkeypatch.setattr(reader_process, "_DRAINED_AT_MOST", 200_000)
    reader = reader_process.ForkedReader(log, detect_format(log).read(log))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and sum(map(len, reader._pending)) < 200_000:
            reader.drain()  # as the hashing does after each MiB: the reader is far ahead of it here
            time.sleep(0.01)
        taken = sum(map(len, reader._pending))
        assert 200_000 <= taken < 200_000 + reader_process._PIPE_BYTES
        reader.drain()
        assert sum(map(len, reader._pending)) == taken  # past the bound the reader waits on the pipe
        here = [line.unit_id for line in detect_format(log).read(log).units]
        assert [line.unit_id for line in reader] == here and len(here) == 20_000  # and everything still comes, in order
    finally:
        reader.close()


def test_an_error_in_the_forked_reader_keeps_its_type_message_and_traceback(tmp_path, monkeypatch):
    from assay.core.interop import junit_xml

    log = _junit(tmp_path / "junit.xml", 10)
    read = junit_xml.read

    def units_that_break(path):
        imported = read(path)

        def units():
            yield from imported.units
            raise LookupError("an importer's own bug")

        return dataclasses.replace(imported, units=units())

    monkeypatch.setattr(junit_xml, "read", units_that_break)
    forked = _forks(monkeypatch, True)
    with pytest.raises(LookupError, match="an importer's own bug") as raised:
        import_log(log, detect_format(log), database=tmp_path / "assay.db")
    assert forked and _pid_gone(forked[0])
    assert "in units\n    raise LookupError" in "".join(raised.value.__notes__)  # where it was raised, for --debug


def test_an_import_stopped_in_this_process_stops_its_reader_and_leaves_nothing(tmp_path, monkeypatch):
    log = _junit(tmp_path / "junit.xml", 20_000)

    def interrupt():
        raise KeyboardInterrupt

    _at_line(monkeypatch, 500, interrupt)
    forked = _forks(monkeypatch, True)
    database = tmp_path / "assay.db"
    with pytest.raises(KeyboardInterrupt):
        import_log(log, detect_format(log), database=database)
    assert len(forked) == 1 and _pid_gone(forked[0])
    assert not any((database.parent / "records").iterdir())
    monkeypatch.undo()
    assert import_log(log, detect_format(log), database=database).unit_count == 20_000  # and it imports again


def test_a_reader_killed_part_way_is_an_error_saying_so_and_leaves_nothing(tmp_path, monkeypatch):
    log = _junit(tmp_path / "junit.xml", 100_000)
    forked = _forks(monkeypatch, True)
    _at_line(monkeypatch, 100, lambda: os.kill(forked[0], signal.SIGKILL))  # as the kernel's OOM killer would
    database = tmp_path / "assay.db"
    with pytest.raises(ImportFormatError, match=r"junit.xml: the process reading the log stopped before the log's end "
                                                r"\(killed by signal 9\); import it again"):
        import_log(log, detect_format(log), database=database)
    assert _pid_gone(forked[0]) and not any((database.parent / "records").iterdir())


def test_where_no_process_can_be_forked_the_log_is_read_here(tmp_path, monkeypatch):
    log = _junit(tmp_path / "junit.xml", 50)
    monkeypatch.setattr(reader_process, "_can_fork", lambda: True)

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(reader_process.os, "fork", no_fork)
    open_before = len(os.listdir("/proc/self/fd"))
    assert import_log(log, detect_format(log), database=tmp_path / "assay.db").unit_count == 50
    assert len(os.listdir("/proc/self/fd")) == open_before  # the pipe made for it is closed


def test_ctrl_c_during_an_import_ends_the_command_and_its_reader(tmp_path):
    log = _junit(tmp_path / "junit.xml", 150_000)
    command = [sys.executable, "-m", "assay", "runs", "import", str(log)]
    process = subprocess.Popen(command, cwd=tmp_path, env={**os.environ, "ASSAY_STORE": str(tmp_path / "assay.db")},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    records = tmp_path / "records"
    deadline = time.monotonic() + 60
    while not (records.is_dir() and any(records.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.01)  # until the record is being written: the reader runs
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the whole group
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Interrupted while importing" in stderr and "Traceback" not in stderr
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)  # nothing of the group is left: the reader is gone too
    assert not any(records.iterdir())


def _units(count: int, *, pause_at: int | None = None, then=None):
    for index in range(count):
        if index == pause_at:
            then()
        yield UnitResult(f"u{index}#1", "passed" if index % 3 else "failed", group=f"g{index % 4}")


def _can_write(database: Path) -> bool:
    other = sqlite3.connect(database, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:  # database is locked
        return False
    finally:
        other.close()


@pytest.mark.parametrize("bound, writable_mid_run", [(60.0, False), (0.0, True)])
def test_the_write_lock_is_held_while_units_come_only_as_long_as_its_bound(tmp_path, bound, writable_mid_run):
    database = tmp_path / "assay.db"
    publish_run(RunManifest(run_id="earlier", kind="agent", created_at=utc_timestamp()), [UnitResult("x", "passed")],
                database=database)
    seen = []
    manifest = RunManifest(run_id="r1", kind="agent", created_at=utc_timestamp())
    units = _units(3_000, pause_at=2_500, then=lambda: seen.append(_can_write(database)))
    record = publish_run_as_read(manifest, units, database=database, lock_for_at_most_s=bound)
    # Within its bound the index is written as the units come, so others wait; past it, the rows are
    # rolled back (at the 1,024th) and others may write while the rest comes, indexed afterwards.
    assert seen == [writable_mid_run]
    same = tmp_path / "same" / "assay.db"
    publish_run(manifest, _units(3_000), database=same)
    assert _stored(database, "r1") == _stored(same, "r1")
    assert (record / "units.jsonl").read_bytes() == (same.parent / "records" / "r1" / "units.jsonl").read_bytes()


def test_a_store_another_connection_is_writing_is_indexed_after_the_units_not_queued_for(tmp_path):
    database = tmp_path / "assay.db"
    publish_run(RunManifest(run_id="earlier", kind="agent", created_at=utc_timestamp()), [UnitResult("x", "passed")],
                database=database)
    other = sqlite3.connect(database, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a run being stored from another terminal
    manifest = RunManifest(run_id="r1", kind="agent", created_at=utc_timestamp())
    # The other writer finishes while the units are still coming: had the indexing waited for the lock
    # before taking them, it would have waited for ever (here: its 10 s busy timeout, then failed).
    started = time.monotonic()
    publish_run_as_read(manifest, _units(3_000, pause_at=1_500, then=lambda: other.execute("COMMIT")), database=database)
    assert time.monotonic() - started < 5
    other.close()
    assert _stored(database, "r1")[3][0][0] == 3_000


@pytest.mark.parametrize("lines_read", [10, 100])  # part-way, or at its commit
def test_when_only_the_index_fails_the_record_is_still_finished(tmp_path, monkeypatch, lines_read):
    database = tmp_path / "assay.db"

    def failing_index(store, manifest, units, record_path=None):
        for _ in zip(range(lines_read), units):
            pass
        if lines_read == 100:
            next(iter(units), None)  # the last one read: the record is finished before the index commits
        raise StoreError("the results store cannot be used: disk I/O error")

    monkeypatch.setattr(results_store.SqliteRunStore, "add_run", failing_index)
    manifest = RunManifest(run_id="r1", kind="agent", created_at=utc_timestamp())
    with pytest.raises(StoreError, match="disk I/O error"):
        publish_run_as_read(manifest, _units(100), database=database)
    record = database.parent / "records" / "r1"
    assert (record / "units.jsonl").read_text().count("\n") == 100 and (record / "manifest.json").is_file()
