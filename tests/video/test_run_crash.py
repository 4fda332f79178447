"""`assay video run` checkpoints under fire: SIGKILL at seeded random points, Ctrl-C, and no result
shown before its journal record is durable (issue 4, run half).

Real `python -m assay video run` processes are killed and resumed until they finish on their own;
the adapter logs every call it answers, so repeated calls can be accounted for exactly."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from video_evals import invoke, read_report, run_eval
from media import make_numbered_video

from assay.core import journal as journal_module
from assay.core.journal import Journal
from assay.core.results_store import open_store
from assay.video.checkpoint import run_result_key
from assay.video.report import VideoConsole

TESTS_DIR = Path(__file__).resolve().parents[1]
CONCURRENCY = 4
KILL_COUNT = 15

# Reads the frame number drawn into the pixels. Steered by adapter.yaml:
#   calls: append "<pid> <target> <index> ok|error" per answered call   delay: seconds per call
#   started: append "<pid> <target> <index>" when a call begins          closed: append "<pid>" in close()
#   broken_while_exists: while this file exists, samples in the target config's `fail_at` raise
# Target config `mode: even` answers "is the frame number even", otherwise the number itself.
ADAPTER = '''
import os, time
import numpy as np
from media import read_frame_number


def create_evaluator(config):
    return Evaluator(dict(config.config))


def append_line(path, line):
    with open(path, "a") as handle:
        handle.write(line + "\\n")


class Evaluator:
    def __init__(self, settings):
        self.settings = settings

    def evaluate(self, sample, target):
        settings = self.settings
        if settings.get("started"):
            append_line(settings["started"], f"{os.getpid()} {target.id} {sample.sample_index}")
        time.sleep(settings.get("delay", 0))
        number = read_frame_number(np.asarray(sample.image))
        assert number == sample.frame_index, (number, sample.frame_index)
        broken = sample.sample_index in target.config.get("fail_at", []) and os.path.exists(
            settings.get("broken_while_exists", "")
        )
        if settings.get("calls"):
            # Logged once the answer exists, just before it is returned: the last moment a kill
            # can make this call happen again.
            outcome = "error" if broken else "ok"
            append_line(settings["calls"], f"{os.getpid()} {target.id} {sample.sample_index} {outcome}")
        if broken:
            raise RuntimeError(f"model timed out on frame {number}")
        if target.config.get("mode") == "even":
            return number % 2 == 0
        return number

    def close(self):
        if self.settings.get("closed"):
            append_line(self.settings["closed"], str(os.getpid()))
'''

# 40 frames at 10 fps: frame i shows the number i.
CASE = """
video: clip.mp4
targets:
  parity:
    label: Parity
    config: {mode: even, fail_at: [4, 17, 29]}
    samples:
      - range: [0.0, 4.0]
        every_s: 0.1
        expect: true
  number:
    config: {fail_at: [42]}  # sample indexes count across the case
    samples:
      - at: [0.5, 1.0, 2.5]
        expect: 10
      - at: 3.0
        ignore: lens flare
"""
FAIL_AT = {("parity", 4), ("parity", 17), ("parity", 29), ("number", 42)}
CALLED_SAMPLES = 40 + 3

RESULT_LINE = re.compile(r"^\s*(?:\[\d+/\d+\] )?(PASSED|FAILED|ERROR|IGNORED) (.+?) @(\S+)s ")
TIMING_KEYS = {
    "duration_seconds", "average_evaluation_seconds_per_attempt", "throughput_attempts_per_second",
    "average_evaluation_seconds_per_sample", "throughput_samples_per_second",
}  # fmt: skip


@pytest.fixture(scope="module")
def video_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_numbered_video(tmp_path_factory.mktemp("video") / "clip.mp4", 40, fps=10)


def make_eval(root: Path, video: Path, case: str = CASE, **settings: Any) -> Path:
    eval_dir = root / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    shutil.copyfile(video, eval_dir / "cases" / "clip.mp4")
    (eval_dir / "cases" / "clip.yaml").write_text(textwrap.dedent(case).lstrip("\n"), encoding="utf-8")
    (eval_dir / "adapter.py").write_text(ADAPTER, encoding="utf-8")
    (eval_dir / "adapter.yaml").write_text(json.dumps(settings), encoding="utf-8")
    return eval_dir


def start_run(
    eval_dir: Path, stdout: Path, stderr: Path, *args: str, ignore_sigint: bool = False
) -> subprocess.Popen[bytes]:
    if not args:
        args = (
            "--eval-dir", str(eval_dir), "--adapter", f"{eval_dir}/adapter.py:create_evaluator",
            "--concurrency", str(CONCURRENCY), "--keep-going", "--verbose",
            "--output-json", str(eval_dir.parent / "report.json"),
        )  # fmt: skip
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "400",  # keep every result on one line
    }
    with stdout.open("wb") as out, stderr.open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "assay", "video", "run", *args],
            stdout=out, stderr=err, env=environment, cwd=eval_dir.parent,
            # As a background job of a non-interactive shell (`assay … &` in a CI script) starts.
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None,
        )  # fmt: skip


@dataclass(frozen=True)
class Call:
    pid: int
    target: str
    index: int
    ok: bool


def calls_of(path: Path) -> list[Call]:
    if not path.exists():
        return []
    calls = []
    for line in path.read_text().splitlines(keepends=True):
        if not line.endswith("\n"):
            continue  # still being written
        pid, target, index, outcome = line.split()
        calls.append(Call(int(pid), target, int(index), outcome == "ok"))
    return calls


def checkpoints(eval_dir: Path) -> list[Path]:
    root = eval_dir / "runs" / "checkpoints"
    return sorted(path for path in root.iterdir() if not path.name.startswith(".")) if root.exists() else []


def resumable_checkpoint(eval_dir: Path) -> Path | None:
    """The checkpoint to resume; a directory a kill left without a manifest is litter, not progress."""
    usable = [path for path in checkpoints(eval_dir) if (path / "manifest.json").exists()]
    assert len(usable) <= 1, usable
    return usable[0] if usable else None


def journal_after_kill(checkpoint: Path | None, scratch: Path) -> dict[tuple[str, int], str]:
    """What the journal holds (sample -> status), opened the way a resume opens it, on a copy."""
    if checkpoint is None or not (checkpoint / "events.jsonl").exists():
        return {}
    copy = scratch / "events-copy.jsonl"
    shutil.copyfile(checkpoint / "events.jsonl", copy)
    lines = copy.read_bytes().split(b"\n")
    # Only the last line may be torn: every earlier write was whole.
    for line in lines[:-2]:
        json.loads(line)
    with Journal.open(copy) as journal:
        events = journal.events()
    copy.unlink()
    held = {}
    for event in events:
        assert event.type == "run_result"
        _, _, target, index, _ = event.key.split("\0")
        held[(target, int(index))] = event.payload["status"]
    return held


def sample_of_line(line: str, samples_by_time: dict[tuple[str, str], int]) -> tuple[str, int] | None:
    match = RESULT_LINE.match(line)
    if match is None:
        return None
    name, time_text = match.group(2), match.group(3)
    target = re.sub(r"^.* \((.+)\)$", r"\1", name)
    return target, samples_by_time[(target, time_text)]


def printed_samples(stdout: Path, samples_by_time: dict[tuple[str, str], int]) -> set[tuple[str, int]]:
    printed = set()
    for line in stdout.read_text(errors="replace").splitlines(keepends=True):
        if line.endswith("\n") and (sample := sample_of_line(line, samples_by_time)) is not None:
            printed.add(sample)
    return printed


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what legitimately differs between runs: timings, paths, checkpoint identity."""

    def result(record: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in record.items() if k not in ("evaluation_duration_seconds", "artifact_image", "artifact_json")}

    return {
        "success": report["success"],
        "cases": report["cases"],
        "gates": report["gates"],
        "stability": report["stability"],
        "summary": {k: v for k, v in report["summary"].items() if k not in TIMING_KEYS},
        "resumable_adapter_errors": report["checkpoint"]["resumable_adapter_errors"],
        "trials": [
            {
                "trial": trial["trial"],
                "success": trial["success"],
                "gates": trial["gates"],
                "summary": {k: v for k, v in trial["summary"].items() if k not in TIMING_KEYS},
                "results": [result(record) for record in trial["results"]],
            }
            for trial in report["trials"]
        ],
    }


def kill_at_random_point(process: subprocess.Popen[bytes], calls: Path, rng: random.Random) -> bool:
    """SIGKILL the process when the call log grows by a random amount, or after a random delay
    (which may fall in start-up, before any checkpoint exists). False when it finished first."""
    started = time.monotonic()
    if rng.random() < 0.7:
        target_lines = len(calls_of(calls)) + rng.randint(1, CALLED_SAMPLES)
        deadline = started + 30
    else:
        target_lines = None
        deadline = started + rng.uniform(0.05, 1.2)
    while process.poll() is None and time.monotonic() < deadline:
        if target_lines is not None and len(calls_of(calls)) >= target_lines:
            break
        time.sleep(0.002)
    if process.poll() is not None:
        return False
    process.kill()
    process.wait()
    return True


@dataclass(frozen=True)
class Kill:
    """What a killed process had made durable and had shown when it died."""

    journaled: dict[tuple[str, int], str]
    printed: set[tuple[str, int]]


# ---------------------------------------------------------------------------------------------
# SIGKILL at random points


def test_run_killed_at_random_points_resumes_to_the_uninterrupted_report(tmp_path: Path, video_file: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("x")
    reference_dir = make_eval(tmp_path / "reference", video_file, broken_while_exists=str(broken))
    reference_json = tmp_path / "reference.json"
    reference_run = run_eval(
        reference_dir, "--concurrency", str(CONCURRENCY), "--keep-going", "--verbose", "--output-json", reference_json
    )
    assert reference_run.exit_code == 1, reference_run.output  # the adapter errors fail their gate
    reference = read_report(reference_json)
    results = reference["trials"][0]["results"]
    assert {(r["target"], r["sample_index"]) for r in results if r["status"] == "error"} == FAIL_AT
    assert {r["status"] for r in results} == {"passed", "failed", "error", "ignored"}
    samples_by_time = {(r["target"], f"{r['timestamp_s']:g}"): r["sample_index"] for r in results}

    rng = random.Random(20261130)
    kills = 0
    episode = 0
    while kills < KILL_COUNT:
        episode += 1
        root = tmp_path / f"episode-{episode}"
        calls = root / "calls.txt"
        eval_dir = make_eval(root, video_file, calls=str(calls), delay=0.02, broken_while_exists=str(broken))
        kills_allowed = min(KILL_COUNT - kills, rng.randint(2, 6))
        pids: list[int] = []
        killed: dict[int, Kill] = {}
        for attempt in range(40):
            checkpoint = resumable_checkpoint(eval_dir)
            stdout, stderr = root / f"stdout-{attempt}.txt", root / f"stderr-{attempt}.txt"
            args = ("--resume", str(checkpoint)) if checkpoint is not None else ()
            process = start_run(eval_dir, stdout, stderr, *args)
            pids.append(process.pid)
            if len(killed) < kills_allowed and kill_at_random_point(process, calls, rng):
                killed[process.pid] = Kill(
                    journal_after_kill(resumable_checkpoint(eval_dir), root), printed_samples(stdout, samples_by_time)
                )
                continue
            exit_code = process.wait(timeout=60)
            assert exit_code == 1, stdout.read_text() + stderr.read_text()
            assert "Traceback" not in stderr.read_text()
            break
        else:
            pytest.fail("the run never finished")
        kills += len(killed)
        assert len(set(pids)) == len(pids)

        assert comparable(read_report(root / "report.json")) == comparable(reference)
        assert read_report(root / "report.json")["checkpoint"]["resumed"] == bool(args)

        position = {pid: order for order, pid in enumerate(pids)}
        by_sample: dict[tuple[str, int], list[Call]] = {}
        for call in calls_of(calls):
            by_sample.setdefault((call.target, call.index), []).append(call)
        assert len(by_sample) == CALLED_SAMPLES
        repeats_after: dict[int, int] = {}
        for sample, sample_calls in by_sample.items():
            callers = [call.pid for call in sample_calls]
            assert len(callers) == len(set(callers)), (sample, callers)  # one process never asks twice
            assert callers == sorted(callers, key=position.__getitem__)
            for earlier, later in itertools.pairwise(sample_calls):
                if not earlier.ok:
                    continue  # an adapter error is retried on resume, by design
                # A completed call is asked again only when its process died before journaling it.
                assert earlier.pid in killed, (sample, callers)
                assert sample not in killed[earlier.pid].journaled, (sample, callers)
                repeats_after[earlier.pid] = repeats_after.get(earlier.pid, 0) + 1
            if sample not in FAIL_AT:
                assert sample_calls[-1].ok
        for pid, kill in killed.items():
            # Shown means durable; and nothing shown or durable is asked again by a later process.
            assert kill.printed <= set(kill.journaled), (kill.printed - set(kill.journaled))
            for sample, status in kill.journaled.items():
                if status == "error":
                    continue
                later = [call.pid for call in by_sample.get(sample, []) if position[call.pid] > position[pid]]
                assert later == [], (sample, status, later)
            # Only calls in flight at the kill were lost.
            assert repeats_after.get(pid, 0) <= CONCURRENCY, (pid, repeats_after)

        # Resuming the finished run once the adapter is healthy asks again exactly the failed samples.
        if episode == 1:
            broken.unlink()
            before = len(calls_of(calls))
            checkpoint = resumable_checkpoint(eval_dir)
            assert checkpoint is not None
            process = start_run(eval_dir, root / "stdout-healed.txt", root / "stderr-healed.txt", "--resume", str(checkpoint))
            assert process.wait(timeout=60) == 0, (root / "stdout-healed.txt").read_text()
            retried = calls_of(calls)[before:]
            assert sorted((call.target, call.index) for call in retried) == sorted(FAIL_AT)
            assert all(call.ok for call in retried)
            healed = read_report(root / "report.json")
            assert "error" not in {record["status"] for record in healed["trials"][0]["results"]}
            assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "complete"
            broken.write_text("x")
    assert kills == KILL_COUNT


# ---------------------------------------------------------------------------------------------
# Ctrl-C


def wait_for_lines(path: Path, count: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= count:
            return
        time.sleep(0.002)
    raise AssertionError(f"{path} never reached {count} lines")


def test_ctrl_c_saves_progress_and_the_resume_finishes_without_asking_again(tmp_path: Path, video_file: Path) -> None:
    reference_dir = make_eval(tmp_path / "reference", video_file)
    reference_run = run_eval(reference_dir, "--concurrency", str(CONCURRENCY), "--keep-going", "--verbose", "--output-json", tmp_path / "reference.json")
    assert reference_run.exit_code == 0, reference_run.output
    reference = read_report(tmp_path / "reference.json")

    root = tmp_path / "interrupted"
    calls, closed = root / "calls.txt", root / "closed.txt"
    eval_dir = make_eval(root, video_file, calls=str(calls), closed=str(closed), delay=0.05)
    stdout, stderr = root / "stdout.txt", root / "stderr.txt"
    process = start_run(eval_dir, stdout, stderr)
    wait_for_lines(calls, 8, process)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130, stdout.read_text() + stderr.read_text()
    assert stderr.read_text() == ""
    [checkpoint] = checkpoints(eval_dir)
    assert stdout.read_text().splitlines()[-3:] == [
        "Eval interrupted: progress was saved",
        f"Checkpoint: {checkpoint}",
        f"Resume with `assay video run --resume {checkpoint}`.",
    ]
    assert closed.read_text().split() == [str(process.pid)]  # the adapter was closed
    assert not (checkpoint / "active.lock").exists()
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    assert manifest["status"] == "in_progress"
    journaled = journal_after_kill(checkpoint, root)
    asked = {(call.target, call.index) for call in calls_of(calls)}
    assert len(journaled) < CALLED_SAMPLES + 1, "the run finished before Ctrl-C"
    # A call that returned as Ctrl-C arrived may have missed the journal; only calls in flight.
    assert len(asked - set(journaled)) <= CONCURRENCY

    resumed = start_run(eval_dir, root / "stdout-resumed.txt", root / "stderr-resumed.txt", "--resume", str(checkpoint))
    assert resumed.wait(timeout=60) == 0, (root / "stdout-resumed.txt").read_text()
    again = [(call.target, call.index) for call in calls_of(calls) if call.pid == resumed.pid]
    assert len(again) == len(set(again))
    assert not set(again) & {sample for sample, status in journaled.items()}
    assert {sample for sample in journaled} | set(again) >= {(r["target"], r["sample_index"]) for r in reference["trials"][0]["results"] if r["status"] != "ignored"}
    report = read_report(root / "report.json")
    assert report["checkpoint"]["resumed"] is True
    assert comparable(report) == comparable(reference)


def test_ctrl_c_before_any_result_leaves_no_checkpoint(tmp_path: Path, video_file: Path) -> None:
    root = tmp_path / "interrupted"
    started, closed = root / "started.txt", root / "closed.txt"
    eval_dir = make_eval(root, video_file, started=str(started), closed=str(closed), delay=0.5)
    stdout, stderr = root / "stdout.txt", root / "stderr.txt"
    process = start_run(eval_dir, stdout, stderr)
    wait_for_lines(started, 1, process)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130, stdout.read_text() + stderr.read_text()
    assert stderr.read_text() == ""
    assert stdout.read_text().splitlines()[-1] == "Eval interrupted: no reusable progress was saved"
    assert "Checkpoint:" not in stdout.read_text()
    assert closed.read_text().split() == [str(process.pid)]
    root_dir = eval_dir / "runs" / "checkpoints"
    assert list(root_dir.iterdir()) == []  # neither a checkpoint nor a half-discarded one


# ---------------------------------------------------------------------------------------------
# Durable before shown


def test_no_result_line_is_printed_before_its_journal_record_is_fsynced(
    tmp_path: Path, video_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_dir = make_eval(tmp_path, video_file)
    real_fsync = os.fsync
    lock = threading.Lock()
    durable: set[str] = set()
    journal_fsyncs = [0]

    def recording_fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        is_journal = path.endswith("/" + journal_module.JOURNAL_FILE_NAME)
        if is_journal:
            time.sleep(0.005)  # a slow disk widens the window in which a premature line would show
        real_fsync(fd)
        if is_journal:
            # The writer thread is the only appender, so the file now is exactly what was synced.
            keys = [json.loads(line)["key"] for line in Path(path).read_text().splitlines()]
            with lock:
                durable.update(keys)
                journal_fsyncs[0] += 1

    shown: list[str] = []
    premature: list[str] = []
    real_unit_durable = VideoConsole.unit_durable

    def checked_unit_durable(self: VideoConsole, event: Any) -> None:
        trial, result = event.native.trial, event.native.result
        key = run_result_key(trial, result.case, result.target, result.sample_index, result.timestamp_s)
        with lock:
            if key not in durable:
                premature.append(key)
        shown.append(key)
        real_unit_durable(self, event)

    monkeypatch.setattr(journal_module.os, "fsync", recording_fsync)
    monkeypatch.setattr(VideoConsole, "unit_durable", checked_unit_durable)
    result = run_eval(eval_dir, "--concurrency", str(CONCURRENCY), "--keep-going", "--verbose", "--repeat", "2")
    assert result.exit_code == 0, result.output
    assert len(shown) == 2 * (CALLED_SAMPLES + 1)
    assert premature == []
    assert journal_fsyncs[0] >= 1
    assert "PASSED Parity (parity) @0s" in result.output
    assert "IGNORED number @3s expected=None observed=None reason=lens flare" in result.output


def test_resume_reads_a_journal_with_a_torn_last_line(tmp_path: Path, video_file: Path) -> None:
    calls = tmp_path / "calls.txt"
    broken = tmp_path / "broken"
    broken.write_text("x")
    eval_dir = make_eval(tmp_path, video_file, calls=str(calls), broken_while_exists=str(broken))
    first = run_eval(eval_dir, "--keep-going", "--output-json", tmp_path / "report.json")
    assert first.exit_code == 1
    [checkpoint] = checkpoints(eval_dir)
    events = checkpoint / "events.jsonl"
    whole = events.read_bytes()
    events.write_bytes(whole + whole.splitlines(keepends=True)[0][:25])  # a crash mid-write
    broken.unlink()
    before = len(calls_of(calls))
    resumed = invoke("video", "run", "--resume", str(checkpoint))
    assert resumed.exit_code == 0, resumed.output
    assert sorted((call.target, call.index) for call in calls_of(calls)[before:]) == sorted(FAIL_AT)
    assert events.read_bytes().startswith(whole)


def test_a_closed_stdout_stops_the_run_as_ctrl_c_does_and_the_resume_finishes(tmp_path: Path, video_file: Path) -> None:
    """`assay video run … | head -3`: the reader leaves mid-run; the run must end promptly."""
    root = tmp_path / "piped"
    calls, closed = root / "calls.txt", root / "closed.txt"
    eval_dir = make_eval(root, video_file, calls=str(calls), closed=str(closed), delay=0.05)
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
        "PYTHONUNBUFFERED": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "--keep-going", "--verbose"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, cwd=root,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    lines = [process.stdout.readline() for _ in range(3)]  # what `head -3` takes
    assert all(lines), lines
    wait_for_lines(calls, 2, process)
    process.stdout.close()  # `head` exits
    assert process.wait(timeout=20) == 130
    stderr = process.stderr.read().decode()
    assert "Traceback" not in stderr
    assert closed.read_text().split() == [str(process.pid)]  # the adapter was closed
    [checkpoint] = checkpoints(eval_dir)
    # One line, ending with how to continue (the resume lines went to the stdout nobody reads).
    assert stderr.strip() == ("assay: standard output was closed, so the command stopped as on Ctrl-C; finished "
                              f"results are kept. Resume with `assay video run --resume {checkpoint}`.")
    assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "in_progress"
    assert not (checkpoint / "active.lock").exists()
    journaled = journal_after_kill(checkpoint, root)
    assert 0 < len(journaled) < CALLED_SAMPLES + 1, "the run finished before the pipe closed"
    resumed = start_run(eval_dir, root / "stdout-resumed.txt", root / "stderr-resumed.txt", "--resume", str(checkpoint))
    assert resumed.wait(timeout=60) == 0, (root / "stdout-resumed.txt").read_text()
    again = {(call.target, call.index) for call in calls_of(calls) if call.pid == resumed.pid}
    assert not again & set(journaled)


def test_a_run_killed_after_its_reports_but_before_its_seal_is_reported_again_by_resume(
    tmp_path: Path, video_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint is sealed only after every report was written: `--resume` re-emits them."""
    from assay.video import run_kind

    calls = tmp_path / "calls.txt"
    eval_dir = make_eval(tmp_path, video_file, calls=str(calls))
    report = tmp_path / "report.json"
    store = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(store))
    # Killed right here: the lock of a dead process is as good as released; nothing marks it complete.
    monkeypatch.setattr(run_kind._OpenedVideoRun, "seal", lambda self, finished: self.checkpoint.checkpoint.release())
    first = run_eval(eval_dir, "--keep-going", "--output-json", report)
    assert first.exit_code == 0, first.output
    monkeypatch.undo()
    monkeypatch.setenv("ASSAY_STORE", str(store))
    [checkpoint] = checkpoints(eval_dir)
    assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "in_progress"
    first_report = read_report(report)
    report.unlink()
    asked = len(calls_of(calls))
    resumed = invoke("video", "run", "--resume", str(checkpoint))
    assert resumed.exit_code == 0, resumed.output
    assert len(calls_of(calls)) == asked  # nothing evaluated again
    again = read_report(report)
    assert again["checkpoint"]["resumed"] is True
    assert comparable(again) == comparable(first_report)
    assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "complete"
    # Recorded by both runs under the one id its checkpoint gives: listed once, one record folder.
    with open_store(store, read_only=True) as opened:
        assert [run.run_id for run in opened.list_runs()] == ["video-" + checkpoint.name.split("-", 1)[1]]
    assert len(list((store.parent / "records").iterdir())) == 1


@pytest.mark.parametrize("ignore_sigint", [False, True], ids=["foreground", "sigint-ignored"])
def test_sigterm_stops_the_run_as_ctrl_c_does(tmp_path: Path, video_file: Path, ignore_sigint: bool) -> None:
    root = tmp_path / "terminated"
    calls, closed = root / "calls.txt", root / "closed.txt"
    eval_dir = make_eval(root, video_file, calls=str(calls), closed=str(closed), delay=0.05)
    stdout, stderr = root / "stdout.txt", root / "stderr.txt"
    process = start_run(eval_dir, stdout, stderr, ignore_sigint=ignore_sigint)
    wait_for_lines(calls, 4, process)
    # An evaluated result journaled, so there is progress to keep (a run stopped before any has none, and no
    # checkpoint). The case's ignored sample is journaled first, before any call, and is no reusable work.
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline and not any(
        b'"status":"passed"' in (path / "events.jsonl").read_bytes()
        for path in checkpoints(eval_dir) if (path / "events.jsonl").exists()
    ):
        time.sleep(0.002)
    assert process.poll() is None and time.monotonic() < deadline, "no evaluated result was journaled"
    process.send_signal(signal.SIGTERM)  # a CI job cancelled
    assert process.wait(timeout=30) == 130, stdout.read_text() + stderr.read_text()
    [checkpoint] = checkpoints(eval_dir)
    assert stdout.read_text().splitlines()[-3:] == [
        "Eval interrupted: progress was saved",
        f"Checkpoint: {checkpoint}",
        f"Resume with `assay video run --resume {checkpoint}`.",
    ]
    assert closed.read_text().split() == [str(process.pid)]  # the adapter was closed
