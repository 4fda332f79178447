"""Tests for the durable checkpoint journal and checkpoint directories (spec/video.md §14)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from assay.core.journal import (
    Checkpoint,
    Journal,
    JournalRecord,
    ensure_not_complete,
    ensure_plan_unchanged,
    ensure_results_within_plan,
    format_resume_command,
    plan_hash,
    read_manifest,
    resolve_checkpoint_ref,
)
from assay.errors import CheckpointError

TIMESTAMP_PATTERN = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def new_checkpoint(eval_dir: Path, kind: str = "run", **overrides) -> Checkpoint:
    options = {"plan_hash": "a" * 64, "total": 3, "invocation": {"repeat": 1, "adapter_config": {"token": "s"}}}
    options.update(overrides)
    return Checkpoint.create(eval_dir, kind, **options)


# ---------------------------------------------------------------------------------------------
# Journal


def test_appended_record_is_read_back_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with Journal.open(path) as journal:
        written = journal.append("run_result", "0\0case\0t\x000\x000x0.0p+0", {"status": "passed", "n": 1.5})
    with Journal.open(path) as journal:
        records = journal.records()
    assert records == {written.key: written}
    assert records[written.key].payload == {"status": "passed", "n": 1.5}


def test_append_writes_one_compact_sorted_ascii_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with Journal.open(path) as journal:
        record = journal.append("seed_result", "c\0t\x001\x000x1.0p+0", {"z": 1, "a": "é"})
    assert TIMESTAMP_PATTERN.match(record.recorded_at)
    expected = (
        '{"key":"c\\u0000t\\u00001\\u00000x1.0p+0","payload":{"a":"\\u00e9","z":1},'
        f'"recorded_at":"{record.recorded_at}","type":"seed_result"}}\n'
    )
    assert path.read_bytes() == expected.encode("ascii")


def test_open_truncates_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with Journal.open(path) as journal:
        journal.append("run_result", "k1", {"v": 1})
    intact = path.read_bytes()
    with open(path, "ab") as stream:
        stream.write(b'{"key":"k2","payload":{"v":')
    with Journal.open(path) as journal:
        assert path.read_bytes() == intact
        journal.append("run_result", "k3", {"v": 3})
        assert sorted(journal.records()) == ["k1", "k3"]


def test_open_truncates_a_file_that_is_only_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"key":"k1"' + b"x" * 200_000)
    with Journal.open(path) as journal:
        assert path.stat().st_size == 0
        assert journal.records() == {}


def test_corrupt_middle_line_is_reported_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with Journal.open(path) as journal:
        journal.append("run_result", "k1", {})
    with open(path, "ab") as stream:
        stream.write(b"not json\n")
    with Journal.open(path) as journal:
        journal.append("run_result", "k3", {})
        with pytest.raises(CheckpointError, match=r"^checkpoint event log is corrupt at line 2: "):
            journal.records()


@pytest.mark.parametrize("line", [b"[1, 2]", b'"text"', b"null", b'{"key": 1, "payload": {}, "recorded_at": "", "type": "t"}'])
def test_line_that_is_not_an_event_object_is_corrupt(tmp_path: Path, line: bytes) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(line + b"\n")
    with Journal.open(path) as journal, pytest.raises(CheckpointError, match=r"corrupt at line 1: "):
        journal.records()


def test_reading_a_log_that_still_ends_without_newline_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with Journal.open(path) as journal:
        journal.append("run_result", "k1", {})
        with open(path, "ab") as stream:  # torn after open, e.g. by another writer
            stream.write(b'{"key":"k2"')
        with pytest.raises(CheckpointError, match=r"^checkpoint event log is corrupt at line 2: "):
            journal.records()


def test_last_event_for_a_key_wins(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "events.jsonl") as journal:
        journal.append("run_result", "k", {"status": "error", "reason": "adapter_error: boom"})
        journal.append("run_result", "other", {"status": "passed"})
        journal.append("run_result", "k", {"status": "passed"})
        records = journal.records()
        assert [record.key for record in journal.events()] == ["k", "other", "k"]
    assert records["k"].payload == {"status": "passed"}
    assert list(records) == ["k", "other"]


def test_group_commit_writes_all_records_with_one_write_and_one_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_write, real_fsync = os.write, os.fsync

    def counting_write(fd: int, data: bytes) -> int:
        calls.append("write")
        return real_write(fd, data)

    def counting_fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    path = tmp_path / "events.jsonl"
    with Journal.open(path) as journal:
        monkeypatch.setattr(os, "write", counting_write)
        monkeypatch.setattr(os, "fsync", counting_fsync)
        written = journal.append_many([("run_result", f"k{i}", {"i": i}) for i in range(16)])
        monkeypatch.undo()
        assert calls == ["write", "fsync"]
        assert [record.key for record in written] == [f"k{i}" for i in range(16)]
        assert journal.records() == {record.key: record for record in written}
        assert journal.append_many([]) == []


def _writer_batches(tmp_path: Path, submissions: list[float], **options) -> tuple[list[int], list[float]]:
    """Submit one record at each of `submissions` (seconds from the start) through a JournalWriter;
    return the sizes of its fsynced batches and when each record became durable."""
    import asyncio

    from assay.core.journal import JournalWriter

    batches: list[int] = []
    original = Journal.append_lines

    def counting(self, data):
        original(self, data)
        batches.append(data.count(b"\n"))  # one line per record, one call per fsync

    async def scenario() -> list[float]:
        with Journal.open(tmp_path / "events.jsonl") as journal:
            writer = JournalWriter(journal, **options)
            loop = asyncio.get_running_loop()
            started = loop.time()
            durable_at = [0.0] * len(submissions)

            def note(position: int):
                return lambda _: durable_at.__setitem__(position, loop.time() - started)

            futures = []
            for position, at in enumerate(submissions):
                await asyncio.sleep(max(0.0, started + at - loop.time()))
                futures.append(writer.submit("run_result", f"k{position}", {"i": position}))
                futures[-1].add_done_callback(note(position))
            await asyncio.gather(*futures)
            await writer.close()
            assert sorted(journal.records()) == [f"k{position}" for position in range(len(submissions))]
            return durable_at

    Journal.append_lines = counting  # type: ignore[method-assign]
    try:
        return batches, asyncio.run(scenario())
    finally:
        Journal.append_lines = original  # type: ignore[method-assign]


def test_group_commit_waits_for_the_other_submitters_within_its_window(tmp_path: Path) -> None:
    # three workers' results 20 ms apart share one fsync when the window is long enough
    batches, durable_at = _writer_batches(tmp_path, [0.0, 0.02, 0.04], batch_hint=3, batch_window_s=0.5)
    assert batches == [3]
    assert max(durable_at) < 0.4  # committed once the third arrived, not at the end of the window


def test_group_commit_never_holds_a_lone_submitter_or_waits_past_its_window(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "four").mkdir()
    batches, durable_at = _writer_batches(tmp_path / "one", [0.0, 0.3], batch_hint=1, batch_window_s=0.5)
    assert batches == [1, 1] and durable_at[0] < 0.2
    batches, durable_at = _writer_batches(tmp_path / "four", [0.0], batch_hint=4, batch_window_s=0.1)
    assert batches == [1] and 0.09 <= durable_at[0] < 0.4


def test_appends_from_many_threads_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with Journal.open(path) as journal:

        def append_some(worker: int) -> None:
            for i in range(25):
                journal.append("run_result", f"{worker}-{i}", {"blob": "x" * 5000})

        threads = [threading.Thread(target=append_some, args=(worker,)) for worker in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(journal.events()) == 150
        assert len(journal.records()) == 150


def test_journal_file_is_created_with_mode_0600_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        Journal.open(tmp_path / "events.jsonl").close()
    finally:
        os.umask(previous)
    assert mode_of(tmp_path / "events.jsonl") == 0o600


def test_append_after_close_is_an_error(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path / "events.jsonl")
    journal.close()
    journal.close()
    with pytest.raises(CheckpointError, match="closed"):
        journal.append("run_result", "k", {})


# ---------------------------------------------------------------------------------------------
# Checkpoint directories


def test_checkpoint_directory_is_0700_and_its_files_0600(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        with new_checkpoint(tmp_path / "eval") as checkpoint:
            assert mode_of(checkpoint.path) == 0o700
            for name in ("manifest.json", "events.jsonl", "active.lock"):
                assert mode_of(checkpoint.path / name) == 0o600, name
    finally:
        os.umask(previous)
    assert mode_of(tmp_path / "eval" / "runs" / "checkpoints") == 0o755


def test_checkpoint_is_named_kind_utc_stamp_and_eight_hex(tmp_path: Path) -> None:
    with new_checkpoint(tmp_path, kind="seed") as checkpoint:
        assert re.fullmatch(r"seed-\d{8}T\d{6}Z-[0-9a-f]{8}", checkpoint.id)
        assert checkpoint.path == tmp_path / "runs" / "checkpoints" / checkpoint.id
        stamp = checkpoint.manifest["created_at"]
        assert checkpoint.id[5:21] == stamp[0:4] + stamp[5:7] + stamp[8:13] + stamp[14:16] + stamp[17:19] + "Z"


def test_manifest_has_every_field_in_pretty_sorted_json(tmp_path: Path) -> None:
    invocation = {"eval_dir": str(tmp_path), "output_json": "out/report.json", "repeat": 2}
    with new_checkpoint(tmp_path, plan_hash="b" * 64, total=12, invocation=invocation) as checkpoint:
        text = (checkpoint.path / "manifest.json").read_text()
    manifest = json.loads(text)
    assert text == json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    assert set(manifest) == {
        "schema_version", "id", "kind", "status", "eval_dir", "created_at", "updated_at", "plan_hash", "total", "invocation",
    }
    assert manifest["schema_version"] == 1
    assert manifest["id"] == checkpoint.id
    assert manifest["kind"] == "run"
    assert manifest["status"] == "in_progress"
    assert manifest["eval_dir"] == str(tmp_path)
    assert TIMESTAMP_PATTERN.match(manifest["created_at"])
    assert manifest["updated_at"] == manifest["created_at"]
    assert manifest["plan_hash"] == "b" * 64
    assert manifest["total"] == 12
    assert manifest["invocation"] == invocation


def test_manifest_is_replaced_through_a_hidden_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replaced: list[tuple[Path, Path, int]] = []
    real_replace = os.replace

    def spying_replace(source, destination) -> None:
        replaced.append((Path(source), Path(destination), mode_of(Path(source))))
        real_replace(source, destination)

    with new_checkpoint(tmp_path) as checkpoint:
        monkeypatch.setattr(os, "replace", spying_replace)
        checkpoint.mark_complete()
        monkeypatch.undo()
        [(source, destination, source_mode)] = replaced
        assert destination == checkpoint.path / "manifest.json"
        assert source.parent == checkpoint.path
        assert re.fullmatch(r"\.manifest\.json\.[0-9a-f]{12}\.tmp", source.name)
        assert source_mode == 0o600
        assert sorted(entry.name for entry in checkpoint.path.iterdir()) == ["active.lock", "events.jsonl", "manifest.json"]


def test_mark_complete_sets_status_and_updated_at(tmp_path: Path) -> None:
    with new_checkpoint(tmp_path) as checkpoint:
        created_at = checkpoint.manifest["created_at"]
        time.sleep(0.002)
        checkpoint.mark_complete()
        manifest = json.loads((checkpoint.path / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["created_at"] == created_at
    assert manifest["updated_at"] > created_at
    assert checkpoint.manifest == manifest


def test_release_removes_the_lock_and_leaves_the_rest(tmp_path: Path) -> None:
    checkpoint = new_checkpoint(tmp_path)
    checkpoint.journal.append("run_result", "k", {})
    checkpoint.release()
    checkpoint.release()
    assert sorted(entry.name for entry in checkpoint.path.iterdir()) == ["events.jsonl", "manifest.json"]


def test_lock_held_by_a_live_process_is_refused(tmp_path: Path) -> None:
    with new_checkpoint(tmp_path) as checkpoint:
        manifest = read_manifest(checkpoint.path, "run")
        with pytest.raises(CheckpointError) as raised:
            Checkpoint.resume(checkpoint.path, manifest)
        assert str(raised.value) == f"checkpoint is already active in another process: {checkpoint.path}"
        assert json.loads((checkpoint.path / "active.lock").read_text())["token"] == checkpoint.token


def test_lock_of_a_dead_process_is_replaced(tmp_path: Path) -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(finished.stdout)
    checkpoint = new_checkpoint(tmp_path)
    checkpoint.journal.close()
    lock = checkpoint.path / "active.lock"
    lock.write_text(json.dumps({"pid": dead_pid, "started_at": "2026-01-01T00:00:00.000000Z", "token": "old"}))
    with Checkpoint.resume(checkpoint.path, read_manifest(checkpoint.path, "run")) as resumed:
        held = json.loads(lock.read_text())
        assert held["pid"] == os.getpid()
        assert held["token"] == resumed.token != "old"
        assert TIMESTAMP_PATTERN.match(held["started_at"])
    assert not lock.exists()


def test_lock_of_a_killed_process_its_parent_has_not_collected_yet_is_replaced(tmp_path: Path) -> None:
    """Right after `kill -9` of a run that a script started and has not waited for, its pid is a zombie: it exists
    for `kill(pid, 0)`, so `--resume` said "already active in another process" of a run that had ended."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        child.kill()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the kernel has ended it (left for us to collect)
            with open(f"/proc/{child.pid}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
            time.sleep(0.01)
        checkpoint = new_checkpoint(tmp_path)
        checkpoint.journal.close()
        lock = checkpoint.path / "active.lock"
        lock.write_text(json.dumps({"pid": child.pid, "started_at": "2026-01-01T00:00:00.000000Z", "token": "old"}))
        with Checkpoint.resume(checkpoint.path, read_manifest(checkpoint.path, "run")) as resumed:
            assert json.loads(lock.read_text())["token"] == resumed.token != "old"
    finally:
        child.wait()


def test_unreadable_lock_is_respected_while_fresh_and_replaced_once_older_than_five_seconds(tmp_path: Path) -> None:
    checkpoint = new_checkpoint(tmp_path)
    checkpoint.journal.close()
    lock = checkpoint.path / "active.lock"
    lock.write_text("{half")
    manifest = read_manifest(checkpoint.path, "run")
    with pytest.raises(CheckpointError, match="already active in another process"):
        Checkpoint.resume(checkpoint.path, manifest)
    old = time.time() - 6
    os.utime(lock, (old, old))
    with Checkpoint.resume(checkpoint.path, manifest) as resumed:
        assert json.loads(lock.read_text())["token"] == resumed.token


def test_discard_removes_the_checkpoint_and_leaves_nothing_behind(tmp_path: Path) -> None:
    checkpoint = new_checkpoint(tmp_path)
    checkpoint.journal.append("run_result", "k", {"status": "error", "reason": "adapter_error: x"})
    checkpoint.discard()
    assert list((tmp_path / "runs" / "checkpoints").iterdir()) == []


def test_discard_renames_the_directory_aside_before_deleting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renamed: list[str] = []
    real_rename = os.rename

    def spying_rename(source, destination) -> None:
        renamed.append(Path(destination).name)
        real_rename(source, destination)

    checkpoint = new_checkpoint(tmp_path)
    monkeypatch.setattr(os, "rename", spying_rename)
    checkpoint.discard()
    assert renamed == [f".{checkpoint.id}.{checkpoint.token}.discarding"]


def test_resumed_checkpoint_keeps_earlier_records(tmp_path: Path) -> None:
    with new_checkpoint(tmp_path) as checkpoint:
        checkpoint.journal.append("run_result", "k1", {"status": "passed"})
    manifest = read_manifest(checkpoint.path, "run")
    with Checkpoint.resume(checkpoint.path, manifest) as resumed:
        assert resumed.id == checkpoint.id
        assert resumed.kind == "run"
        resumed.journal.append("run_result", "k2", {"status": "passed"})
        assert sorted(resumed.journal.records()) == ["k1", "k2"]


# ---------------------------------------------------------------------------------------------
# Resuming


def test_resume_ref_that_is_absolute_is_used_as_is(tmp_path: Path) -> None:
    target = tmp_path / "somewhere" / "run-x"
    assert resolve_checkpoint_ref(str(target), tmp_path / "eval", tmp_path / "cwd") == target


def test_resume_ref_with_a_directory_part_is_a_path_from_cwd(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    assert resolve_checkpoint_ref("checkpoints/run-x", tmp_path / "eval", cwd) == cwd / "checkpoints" / "run-x"
    assert resolve_checkpoint_ref("./run-x", tmp_path / "eval", cwd) == cwd / "run-x"


def test_resume_ref_existing_relative_to_cwd_wins_over_an_id(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    (cwd / "run-x").mkdir(parents=True)
    assert resolve_checkpoint_ref("run-x", tmp_path / "eval", cwd) == cwd / "run-x"


def test_resume_ref_that_is_a_bare_id_is_looked_up_in_the_eval_dir(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval"
    expected = eval_dir / "runs" / "checkpoints" / "run-x"
    assert resolve_checkpoint_ref("run-x", eval_dir, tmp_path / "cwd") == expected


def test_read_manifest_reports_a_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"^could not read checkpoint manifest ") as raised:
        read_manifest(tmp_path / "run-x", "run")
    assert str(raised.value).startswith(f"could not read checkpoint manifest {tmp_path / 'run-x' / 'manifest.json'}: ")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "invalid checkpoint manifest "),
        (b"\xff\xfe", "invalid checkpoint manifest "),
        (b"[1]", "checkpoint manifest must be an object: "),
        (b'{"schema_version": 2, "kind": "run"}', "unsupported checkpoint schema in {path}: 2"),
        (b'{"kind": "run"}', "unsupported checkpoint schema in {path}: None"),
        (b'{"schema_version": true, "kind": "run"}', "unsupported checkpoint schema in {path}: True"),
        (b'{"schema_version": 1, "kind": "seed"}', "checkpoint {path} is for 'seed', not 'run'"),
    ],
)
def test_read_manifest_rejects_what_it_cannot_resume(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "manifest.json").write_bytes(content)
    with pytest.raises(CheckpointError) as raised:
        read_manifest(tmp_path, "run")
    assert str(raised.value).startswith(message.format(path=tmp_path))


def test_complete_checkpoint_cannot_be_resumed(tmp_path: Path) -> None:
    with new_checkpoint(tmp_path) as checkpoint:
        checkpoint.mark_complete()
    manifest = read_manifest(checkpoint.path, "run")
    with pytest.raises(CheckpointError) as raised:
        ensure_not_complete(checkpoint.path, manifest)
    assert str(raised.value) == f"checkpoint is already complete: {checkpoint.path}"
    ensure_not_complete(checkpoint.path, {**manifest, "status": "in_progress"})


def test_changed_plan_hash_refuses_resume(tmp_path: Path) -> None:
    manifest = {"plan_hash": plan_hash({"a": 1})}
    ensure_plan_unchanged(tmp_path, manifest, plan_hash({"a": 1}))
    with pytest.raises(CheckpointError) as raised:
        ensure_plan_unchanged(tmp_path, manifest, plan_hash({"a": 2}))
    assert str(raised.value) == f"checkpoint inputs changed; start a new operation instead of resuming {tmp_path}"


def test_results_outside_the_plan_refuse_resume(tmp_path: Path) -> None:
    ensure_results_within_plan(tmp_path, ["a"], ["a", "b"])
    with pytest.raises(CheckpointError) as raised:
        ensure_results_within_plan(tmp_path, ["a", "c"], ["a", "b"])
    assert str(raised.value) == f"checkpoint contains results outside the selected run plan: {tmp_path}"


def test_plan_hash_is_sha256_of_canonical_json() -> None:
    payload = {"invocation": {"repeat": 2, "adapter": "é"}, "cases": [{"path": "/c.yaml"}]}
    canonical = '{"cases":[{"path":"/c.yaml"}],"invocation":{"adapter":"\\u00e9","repeat":2}}'
    assert plan_hash(payload) == hashlib.sha256(canonical.encode("ascii")).hexdigest()
    assert plan_hash({"b": 1, "a": 2}) == plan_hash({"a": 2, "b": 1})


def test_resume_command_is_quoted_for_a_posix_shell() -> None:
    command = format_resume_command(["glasskit", "eval", "run", "--resume", "/tmp/my evals/run-x"])
    assert command == "glasskit eval run --resume '/tmp/my evals/run-x'"


# ---------------------------------------------------------------------------------------------
# Crashes


CRASHING_WRITER = textwrap.dedent(
    """
    import sys
    from assay.core.journal import Journal

    round_number = sys.argv[2]
    journal = Journal.open(sys.argv[1])
    print("ready", flush=True)
    i = 0
    while True:
        # Large records now and then so a kill can land in the middle of a write.
        blob = "x" * (300_000 if i % 7 == 3 else 50)
        if i % 5 == 4:
            keys = [f"{round_number}-{i}-{j}" for j in range(4)]
            journal.append_many([("run_result", key, {"blob": blob}) for key in keys])
        else:
            keys = [f"{round_number}-{i}"]
            journal.append("run_result", keys[0], {"blob": blob})
        print("\\n".join(keys), flush=True)
        i += 1
    """
)


def test_records_reported_durable_survive_sigkill_at_random_points(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    chooser = random.Random(20261129)
    durable: set[str] = set()
    for round_number in range(30):
        child = subprocess.Popen(
            [sys.executable, "-c", CRASHING_WRITER, str(path), str(round_number)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        time.sleep(chooser.uniform(0.0, 0.04))
        child.send_signal(signal.SIGKILL)
        output, _ = child.communicate()
        assert child.returncode == -signal.SIGKILL
        # A key counts only once its whole line arrived.
        durable.update(output.split("\n")[:-1])
        with Journal.open(path) as journal:
            recorded = journal.records()
        missing = durable - set(recorded)
        assert not missing, f"round {round_number}: lost {sorted(missing)[:5]}"
        assert all(isinstance(record, JournalRecord) for record in recorded.values())
    assert len(durable) > 30



def test_only_glasskit_checkpoint_kinds_sort_their_journal_lines(tmp_path: Path) -> None:
    """GlassKit's run and seed journals are canonical (sorted keys); an agent attempt's transcript
    is written in its own key order, which is a third cheaper to encode and reads back the same."""
    lines = {}
    for kind in ("run", "seed", "agent"):
        checkpoint = Checkpoint.create(tmp_path / kind, kind, plan_hash="a" * 64, total=1, invocation={})
        checkpoint.journal.append("r", "k", {"z": 1, "a": {"y": 2, "b": 3}})
        checkpoint.release()
        lines[kind] = (checkpoint.path / "events.jsonl").read_text(encoding="ascii")
        resumed = Checkpoint.resume(checkpoint.path, checkpoint.manifest)
        resumed.journal.append("r", "k2", {"z": 1, "a": 0})
        assert resumed.journal.records()["k"].payload == {"z": 1, "a": {"y": 2, "b": 3}}
        resumed.release()
        lines[kind] = (checkpoint.path / "events.jsonl").read_text(encoding="ascii")
    assert lines["run"].count('"payload":{"a":') == 2 and lines["seed"].count('"payload":{"a":') == 2
    assert lines["agent"].count('"payload":{"z":') == 2 and '{"y":2,"b":3}' in lines["agent"]
