"""Seeded `kill -9` of every command that writes (issue 23's crash figure).

For each command the real CLI runs in a child process and is killed with SIGKILL at `--kills`
seeded points: random delays spread over the run, "after n more results", and points aimed at the
window between the last result and the seal: the moment a report file appears (polled from
outside), and named points inside the process (a hook this script installs in the child with
`python -c`: assay has no crash hook of its own, so nothing in src/ is touched). Then the run is
resumed (`--resume` of its in-progress checkpoint) or run again, until a process finishes on its own.

Checked, per command:
  seen          per kill, the results the killed process had printed or that were durable in its
                journal when it died, summed over the kills;
  lost          a result the killed process printed, or had journaled as durable, that is missing
                from the final result or has another verdict there;
  torn          a JSON / JSONL / YAML / JUnit / SQLite file assay wrote that does not parse, checked
                after every kill and at the end (a torn *last* journal line is allowed: documented);
  unreportable  a finished run missing from `assay runs list --json` (or whose report, checkpoint
                seal or record disagrees with the final result);
  leftover tmp  `.*.tmp` files left under the eval dir / project / store after the next run of the
                same command. Temporaries are removed once older than `STALE_TEMPORARY_AGE_S` (60 s)
                so a live write is never touched; the script ages them past that before the next run,
                as the time between two runs would;
  asked again   results a killed process had journaled as durable that a later process asked the
                adapter for again (work lost, though the value came back the same);
  resume refused  `--resume` of a killed process's checkpoint refused (the run was then started again).

Commands: video-run (a PyAV clip made at run time, a slow Python adapter logging each call),
video-seed (two case files), agent-run (40 instant evals, the agent sleeps a few ms and logs each
send), doc-run-case (a suite with a Python adapter, the deterministic path, no network) and
video-review (a stream of sample saves to a live `assay video review`). The next run is a fresh
`video run` / `agent run` / `video seed`, a `run-case` under a new (the default) run id, the next
`video review` launch. For seed, reportable means the case files are byte for byte what an
uninterrupted seed writes; for review, that the next launch serves the value the file holds.

Run: python benchmarks/crash.py [--kills 20] [--seed N] [--only video-run,video-seed,agent-run,doc-run-case,video-review] [--keep] [-v]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from xml.etree import ElementTree

import yaml

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
sys.path.insert(0, str(TESTS))
from media import (  # tests/media.py
    GREEN,
    RED,
    make_color_sequence_video,
    make_numbered_video,
)

PYTHON = sys.executable
TEMPORARY = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")  # what `write_atomically` names its temporaries
STALE_AGE_S = 60.0  # assay.core.fsutil.STALE_TEMPORARY_AGE_S
AGE_BY_S = STALE_AGE_S + 60.0

# ---------------------------------------------------------------------------------------------
# The hook installed in the killed processes

HOOK = r'''
"""SIGKILL this process at a named point (benchmarks/crash.py). Steered by the environment:

CRASH_AT=write  CRASH_MODE=before|tmp|after  CRASH_PATH=<regex>  [CRASH_NTH=1]  [CRASH_DATA=<text>]
    the n-th `write_atomically` whose path matches (and whose data holds the text): killed before
    it, inside it (half its bytes in its temporary file) or after it.
CRASH_AT=finish     entering the pipeline's `_finish`: every result durable, nothing reported yet
CRASH_AT=reported   after every reporter heard `run_finished`, before the run record
CRASH_AT=index-mid  inside the store's transaction, after the unit rows, before the run row
CRASH_AT=indexed    after the run was indexed in the store, before the checkpoint is sealed
"""
import os
import re
import signal
import sys
from pathlib import Path


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def install():
    stage = os.environ.get("CRASH_AT")
    if not stage:
        return
    if stage == "write":
        import assay.core.fsutil as fsutil  # before any module imports the name from it

        mode = os.environ["CRASH_MODE"]
        pattern = re.compile(os.environ["CRASH_PATH"])
        marker = os.environ.get("CRASH_DATA", "").encode()
        nth = int(os.environ.get("CRASH_NTH", "1"))
        original = fsutil.write_atomically
        seen = [0]

        real_write = os.write

        def write_atomically(path, data, **options):
            raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            if pattern.search(str(path)) and marker in raw:
                seen[0] += 1
                if seen[0] == nth:
                    if mode == "before":
                        die()
                    if mode == "tmp":
                        # The real write, killed once half its bytes are in its temporary file.
                        name = "." + os.path.basename(os.path.realpath(path)) + "."

                        def half_then_die(fd, view):
                            if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(name):
                                real_write(fd, bytes(view[: max(1, len(view) // 2)]))
                                os.fsync(fd)
                                die()
                            return real_write(fd, view)

                        os.write = half_then_die
                    original(path, data, **options)
                    die()
            return original(path, data, **options)

        fsutil.write_atomically = write_atomically
    elif stage == "finish":
        import assay.core.run.pipeline as pipeline

        original_finish = pipeline._finish

        def _finish(events, finished, opened):
            if finished.build_manifest is not None:
                die()
            return original_finish(events, finished, opened)

        pipeline._finish = _finish
    elif stage == "reported":  # every reporter has written; the store publisher (the last one) not yet
        from assay.core.report.store import StorePublisher

        original_publish = StorePublisher.run_finished

        def run_finished(self, finished):
            if finished.build_manifest is not None:
                die()
            original_publish(self, finished)

        StorePublisher.run_finished = run_finished
    elif stage == "index-mid":
        import assay.core.results_store as results_store

        original_lines = results_store.unit_lines

        def unit_lines(units):
            yield from original_lines(units)
            die()

        results_store.unit_lines = unit_lines
    elif stage == "indexed":
        import assay.core.results_store as results_store

        original_add = results_store.SqliteRunStore.add_run

        def add_run(self, *args, **kwargs):
            original_add(self, *args, **kwargs)
            die()

        results_store.SqliteRunStore.add_run = add_run
    else:
        raise SystemExit(f"crash hook: unknown CRASH_AT={stage}")
'''

BOOT = "import sys; sys.path.insert(0, {hook_dir!r}); import crash_hook; crash_hook.install(); from assay.cli.app import main; main()"


# ---------------------------------------------------------------------------------------------
# Kill points


@dataclass(frozen=True)
class Stage:
    """A named point inside the process (see HOOK), with the environment that arms it."""

    name: str
    env: dict[str, str]


def write_stage(name: str, mode: str, path: str, nth: int = 1, data: str = "") -> Stage:
    env = {"CRASH_AT": "write", "CRASH_MODE": mode, "CRASH_PATH": path, "CRASH_NTH": str(nth)}
    if data:
        env["CRASH_DATA"] = data
    return Stage(name, env)


def pipeline_stage(name: str) -> Stage:
    return Stage(name, {"CRASH_AT": name})


CHECKPOINT_MANIFEST = r"/runs/checkpoints/[^/]+/manifest\.json$"
RECORD_MANIFEST = r"/records/[^/]+/manifest\.json$"
SEALED = '"status": "complete"'

PIPELINE_STAGES = [
    pipeline_stage("finish"),
    pipeline_stage("reported"),
    write_stage("record-units", "before", RECORD_MANIFEST),
    write_stage("record-tmp", "tmp", RECORD_MANIFEST),
    pipeline_stage("index-mid"),
    pipeline_stage("indexed"),
    write_stage("seal-tmp", "tmp", CHECKPOINT_MANIFEST, data=SEALED),
    write_stage("sealed", "after", CHECKPOINT_MANIFEST, data=SEALED),
]


@dataclass
class Plan:
    """When to kill one process: `delay` s after start, `results` more results, a `stage`, or a `file`."""

    kind: str  # delay | results | stage | file
    delay: float = 0.0
    results: int = 0
    stage: Stage | None = None
    misses: int = 0

    def describe(self) -> str:
        if self.kind == "delay":
            return f"delay {self.delay:.3f}s"
        if self.kind == "results":
            return f"after {self.results} results"
        if self.kind == "file":
            return "report file appears"
        assert self.stage is not None
        return f"stage {self.stage.name}"


# ---------------------------------------------------------------------------------------------
# Files: torn ones, temporaries


def walk_files(roots: list[Path]) -> Iterator[Path]:
    for root in roots:
        if root.is_file():
            yield root
            continue
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = [name for name in subfolders if name not in ("__pycache__",)]
            for name in files:
                yield Path(folder) / name


def temporaries(roots: list[Path]) -> list[Path]:
    return sorted({path for path in walk_files(roots) if TEMPORARY.fullmatch(path.name)})


def age_temporaries(roots: list[Path]) -> int:
    past = time.time() - AGE_BY_S
    found = temporaries(roots)
    for path in found:
        os.utime(path, (past, past), follow_symlinks=False)
    return len(found)


def torn_reason(path: Path) -> str | None:
    """Why a file assay wrote does not read back, or None. A torn last journal line is allowed, and so
    is a torn units.jsonl in a record that has no manifest yet (documented: an unfinished record)."""
    name = path.name
    if TEMPORARY.fullmatch(name) or name.endswith(("-wal", "-shm")) or name == "active.lock":
        return None
    try:
        if name.endswith(".jsonl"):
            data = path.read_bytes()
            lines = data.split(b"\n")
            tail_may_tear = name == "events.jsonl" or (
                name == "units.jsonl" and not (path.parent / "manifest.json").exists()
            )
            for number, line in enumerate(lines[:-1], 1):
                if line.strip():
                    json.loads(line)
            if lines[-1].strip() and not tail_may_tear:
                return "torn last line"
            return None
        if name.endswith(".json"):
            json.loads(path.read_bytes())
            return None
        if name.endswith((".yaml", ".yml")):
            yaml.safe_load(path.read_text(encoding="utf-8"))
            return None
        if name.endswith(".xml"):
            ElementTree.parse(path)
            return None
        if name.endswith(".db"):
            with sqlite3.connect(path) as connection:
                verdict = connection.execute("PRAGMA integrity_check").fetchall()
                connection.execute("SELECT count(*) FROM runs").fetchall()
            connection.close()
            return None if verdict == [("ok",)] else f"integrity_check: {verdict[:2]}"
    except (ValueError, yaml.YAMLError, ElementTree.ParseError, sqlite3.Error, UnicodeDecodeError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def torn_files(roots: list[Path], skip: Callable[[Path], bool]) -> list[tuple[Path, str]]:
    found = []
    for path in walk_files(roots):
        if skip(path):
            continue
        reason = torn_reason(path)
        if reason is not None:
            found.append((path, reason))
    return found


def journal_records(path: Path) -> list[dict[str, Any]]:
    """The whole lines of a journal (a torn last line was never durable)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_bytes().splitlines(keepends=True):
        if line.endswith(b"\n") and line.strip():
            records.append(json.loads(line))
    return records


def lines_of(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text(errors="replace").splitlines(keepends=True) if line.endswith("\n")]


def checkpoint_dirs(root: Path, prefix: str) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(
        path for path in root.iterdir()
        if path.name.startswith(prefix) and (path / "manifest.json").is_file()
    )  # fmt: skip


def checkpoint_status(path: Path) -> str:
    return json.loads((path / "manifest.json").read_text())["status"]


def file_identity(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns


# ---------------------------------------------------------------------------------------------
# Tallies


@dataclass
class Tally:
    kills: int = 0
    seen: int = 0
    lost: int = 0
    torn: int = 0
    unreportable: int = 0
    leftover: int = 0
    repeated: int = 0  # durable results asked for again
    refused: int = 0  # resumes refused after a kill
    episodes: int = 0
    processes: int = 0
    wall: float = 0.0
    points: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


@dataclass
class Killed:
    plan: Plan
    pid: int
    seen: dict[Any, str]  # result key -> verdict, printed or journaled when it died
    durable: dict[Any, str]  # the journaled part


# ---------------------------------------------------------------------------------------------
# The commands


class Command:
    """One command under fire. An episode is one fresh workspace (eval dir / project, store): processes
    are started in it, killed at the next points, resumed or run again until one finishes."""

    name = ""
    progress_name = "results"
    stages: ClassVar[list[Stage]] = []
    file_plan = False  # whether a "report file appears" point applies

    def __init__(self, scratch: Path, verbose: bool) -> None:
        self.scratch = scratch / self.name
        self.scratch.mkdir(parents=True)
        self.hook_dir = scratch / "hook"
        self.verbose = verbose
        self.reference_wall = 1.0

    # -- processes ------------------------------------------------------------------------------
    def environment(self, ws: Path, crash: dict[str, str] | None) -> dict[str, str]:
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith(("CRASH_", "ASSAY_"))
        }
        environment.update({
            "PYTHONPATH": os.pathsep.join([str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]),
            "PYTHONUNBUFFERED": "1",
            "COLUMNS": "400",
            "ASSAY_STORE": str(ws / "store" / "assay.db"),
        })  # fmt: skip
        environment.update(crash or {})
        return environment

    def spawn(self, ws: Path, args: list[str], crash: dict[str, str] | None, tag: str, cwd: Path | None = None) -> subprocess.Popen[bytes]:
        boot = BOOT.format(hook_dir=str(self.hook_dir))
        with (ws / f"{tag}.out").open("wb") as out, (ws / f"{tag}.err").open("wb") as err:
            return subprocess.Popen(
                [PYTHON, "-c", boot, *args], stdout=out, stderr=err, env=self.environment(ws, crash), cwd=cwd or ws,
            )  # fmt: skip

    def assay(self, ws: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PYTHON, "-m", "assay", *args], check=False, capture_output=True, text=True,
            env=self.environment(ws, None), cwd=cwd or ws, timeout=120,
        )  # fmt: skip

    # -- what each command supplies -------------------------------------------------------------
    def setup(self) -> None:
        """Shared material and the uninterrupted reference."""

    def new_workspace(self, root: Path) -> Path:
        raise NotImplementedError

    def next_args(self, ws: Path) -> list[str] | None:
        """The arguments of the next process (resume or run again), or None when the run is finished."""
        raise NotImplementedError

    def progress(self, ws: Path) -> int:
        return 0

    def report_file(self, ws: Path) -> Path | None:
        return None

    def printed_by(self, ws: Path, tag: str) -> dict[Any, str]:
        """The results process `tag` printed (whole lines): result key -> verdict."""
        raise NotImplementedError

    def durable(self, ws: Path) -> dict[Any, str]:
        """The results the workspace's journals hold (whole lines): result key -> verdict."""
        return {}

    def calls(self, ws: Path) -> list[tuple[int, Any]] | None:
        """(pid, result key) of every adapter / agent call, when the command logs them."""
        return None

    def final(self, ws: Path, tally: Tally) -> dict[Any, str]:
        """The finished run's results; adds to `unreportable` what cannot be reported."""
        raise NotImplementedError

    def next_run(self, ws: Path, tally: Tally) -> None:
        """The next run of the same command, after the episode."""
        raise NotImplementedError

    def roots(self, ws: Path) -> list[Path]:
        """Where assay writes: eval dir, project, store."""
        raise NotImplementedError

    def skip(self, path: Path) -> bool:
        """Files the harness wrote itself (logs, outputs) are not checked."""
        return path.suffix in (".out", ".err", ".log", ".mp4", ".py", ".md", ".toml") or path.name.endswith(".calls")

    def after_finish(self, ws: Path, process: subprocess.Popen[bytes], tag: str, tally: Tally) -> bool:
        """Check the exit of a process that finished on its own; False when the run must go on."""
        return True

    # -- the loop ---------------------------------------------------------------------------------
    def plans(self, kills: int, rng: random.Random) -> list[Plan]:
        targeted = [Plan("stage", stage=stage) for stage in self.stages]
        if self.file_plan:
            targeted.append(Plan("file"))
        targeted = targeted[: max(0, kills - kills // 3)]  # at least a third random
        rest = []
        for index in range(kills - len(targeted)):
            if index % 2 == 0 or self.progress_name == "":
                rest.append(self.random_delay(rng))
            else:
                rest.append(Plan("results", results=rng.randint(1, self.expected_results())))
        plans = targeted + rest
        rng.shuffle(plans)
        return plans

    def random_delay(self, rng: random.Random) -> Plan:
        return Plan("delay", delay=rng.uniform(0.02, self.reference_wall))

    def expected_results(self) -> int:
        return 10

    def wait_and_kill(self, process: subprocess.Popen[bytes], ws: Path, plan: Plan) -> bool:
        """Apply `plan`; True when the process was killed, False when it ended first."""
        started = time.monotonic()
        deadline = started + (plan.delay if plan.kind == "delay" else 60.0)
        base = self.progress(ws)
        report = self.report_file(ws) if plan.kind == "file" else None
        before = file_identity(report) if report is not None else None
        while process.poll() is None and time.monotonic() < deadline:
            if plan.kind == "results" and self.progress(ws) >= base + plan.results:
                break
            if report is not None:
                now = file_identity(report)
                if now is not None and now != before:
                    break
            time.sleep(0.001)
        if process.poll() is not None:
            # A stage kills the process from inside: it ends by SIGKILL, not on its own.
            return plan.kind == "stage" and process.returncode == -signal.SIGKILL
        process.kill()
        process.wait()
        return True

    def run(self, kills: int, rng: random.Random) -> Tally:
        tally = Tally()
        started = time.monotonic()
        self.setup()
        queue = self.plans(kills, rng)
        episode = 0
        while tally.kills < kills:
            episode += 1
            ws = self.new_workspace(self.scratch / f"episode-{episode:02d}")
            killed: list[Killed] = []
            wanted = min(kills - tally.kills, rng.randint(1, 3))
            attempt = 0
            while attempt < 20:
                args = self.next_args(ws)
                if args is None:
                    break  # the killed process had finished everything
                attempt += 1
                tag = f"p{attempt:02d}"
                plan = queue[0] if len(killed) < wanted and queue else None
                crash = plan.stage.env if plan is not None and plan.kind == "stage" and plan.stage else None
                process = self.spawn(ws, args, crash, tag)
                tally.processes += 1
                if plan is not None:
                    if self.wait_and_kill(process, ws, plan):
                        queue.pop(0)
                        printed, durable = self.printed_by(ws, tag), self.durable(ws)
                        killed.append(Killed(plan, process.pid, {**printed, **durable}, durable))
                        tally.kills += 1
                        label = plan.kind if plan.kind != "stage" else f"stage {plan.stage.name}"  # type: ignore[union-attr]
                        tally.points[label] = tally.points.get(label, 0) + 1
                        self.check_torn(ws, tally, f"after kill ({plan.describe()})")
                        if self.verbose:
                            print(f"  {self.name} ep{episode} {tag}: killed at {plan.describe()}, "
                                  f"{len(printed)} printed, {len(durable)} durable", flush=True)
                        continue
                    # It finished first: the point is tried again later, nearer the start.
                    queue.pop(0)
                    plan.misses += 1
                    if plan.kind == "delay":
                        plan.delay *= 0.5
                    elif plan.kind == "results":
                        plan.results = max(1, plan.results // 2)
                    queue.append(plan if plan.misses < 4 else self.random_delay(rng))
                if process.poll() is None:
                    try:
                        process.wait(timeout=120)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
                        tally.note(f"{tag} hung for 120 s")
                over = self.after_finish(ws, process, tag, tally)
                if self.verbose:
                    print(f"  {self.name} ep{episode} {tag}: finished, exit {process.returncode}", flush=True)
                if over:
                    break
            tally.episodes += 1
            final = self.final(ws, tally)
            for kill in killed:
                tally.seen += len(kill.seen)
                for key, verdict in kill.seen.items():
                    if final.get(key) != verdict:
                        tally.lost += 1
                        tally.note(f"lost: {key} was {verdict} when killed at {kill.plan.describe()}, "
                                   f"finally {final.get(key)} ({ws.name})")
            self.audit_repeats(ws, killed, tally)
            self.check_torn(ws, tally, "at the end")
            # The next run of the same command, once the temporaries are older than the stale age.
            age_temporaries(self.roots(ws))
            self.next_run(ws, tally)
            left = temporaries(self.roots(ws))
            tally.leftover += len(left)
            for path in left:
                tally.note(f"leftover after the next run: {self.describe_path(ws, path)}")
        tally.wall = time.monotonic() - started
        return tally

    def audit_repeats(self, ws: Path, killed: list[Killed], tally: Tally) -> None:
        """Results a killed process had made durable that a later process asked the adapter for again."""
        calls = self.calls(ws)
        if calls is None:
            return
        order = {kill.pid: position for position, kill in enumerate(killed)}
        again = 0
        for pid, key in calls:
            position = order.get(pid, len(killed))  # a process not killed came after every killed one
            if any(key in kill.durable for kill in killed[:position]):
                again += 1
        if again:
            tally.repeated += again
            tally.note(f"{ws.name}: {again} results journaled as durable by a killed process were asked for again")

    def describe_path(self, ws: Path, path: Path) -> str:
        relative = path.relative_to(ws)
        text = re.sub(r"[0-9a-f]{12}\.tmp$", "<hex>.tmp", str(relative))
        text = re.sub(r"(run|agent|seed|video|doc)-\d{8}T\d{6}Z?-[0-9a-f]+", r"\1-<id>", text)
        return text

    def check_torn(self, ws: Path, tally: Tally, when: str) -> None:
        for path, reason in torn_files(self.roots(ws), self.skip):
            tally.torn += 1
            tally.note(f"torn {when}: {self.describe_path(ws, path)}: {reason}")

    # -- shared checks ----------------------------------------------------------------------------
    def listed_runs(self, ws: Path, kind: str, tally: Tally) -> list[dict[str, Any]]:
        listed = self.assay(ws, "runs", "list", "--json", "--kind", kind, "--limit", "1000")
        if listed.returncode != 0:
            tally.unreportable += 1
            tally.note(f"`assay runs list` failed: {listed.stdout.strip()} {listed.stderr.strip()}"[:300])
            return []
        return json.loads(listed.stdout)["runs"]


def count_verdicts(verdicts: dict[Any, str], mapping: dict[str, str] | None = None) -> dict[str, int]:
    counts: dict[str, int] = {}
    for verdict in verdicts.values():
        verdict = (mapping or {}).get(verdict, verdict)
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts


# ---------------------------------------------------------------------------------------------
# video run

VIDEO_ADAPTER = '''
import os, time
import numpy as np
from media import read_frame_number


def create_evaluator(config):
    return Evaluator(dict(config.config))


class Evaluator:
    def __init__(self, settings):
        self.settings = settings

    def evaluate(self, sample, target):
        time.sleep(self.settings.get("delay", 0))
        number = read_frame_number(np.asarray(sample.image))
        with open(self.settings["calls"], "a") as handle:
            handle.write(f"{os.getpid()} {target.id} {sample.sample_index}\\n")
        if target.config.get("mode") == "even":
            return number % 2 == 0
        return number
'''

# 40 frames at 10 fps, frame i shows i. parity: 40 samples, a third of them failing (expect true
# where the frame is odd would fail half: expect even, and every third range is odd-only).
VIDEO_CASE = """
video: clip.mp4
targets:
  parity:
    config: {mode: even}
    samples:
      - range: [0.0, 4.0]
        every_s: 0.1
        expect: true
  number:
    samples:
      - at: [0.5, 1.0, 2.5]
        expect: 10
      - at: 3.0
        ignore: lens flare
"""
RESULT_LINE = re.compile(r"^\s*(PASSED|FAILED|ERROR|IGNORED) (.+?) @(\S+)s ")
VIDEO_VERDICT = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "IGNORED": "ignored"}
STORE_VERDICT = {"passed": "passed", "failed": "failed", "error": "errored", "ignored": "ignored"}


class VideoRun(Command):
    name = "video-run"
    progress_name = "adapter calls"
    stages: ClassVar[list[Stage]] = [
        *PIPELINE_STAGES,
        write_stage("report-tmp", "tmp", r"/report\.json$"),
        write_stage("report-written", "after", r"/report\.json$"),
    ]
    file_plan = True

    def setup(self) -> None:
        self.video = make_numbered_video(self.scratch / "clip.mp4", 40, fps=10)
        ws = self.new_workspace(self.scratch / "reference")
        started = time.monotonic()
        process = self.spawn(ws, self.fresh_args(ws), None, "p01")
        self.reference_code = process.wait(timeout=120)
        self.reference_wall = time.monotonic() - started
        report = json.loads((ws / "report.json").read_text())
        results = report["trials"][0]["results"]
        self.by_time = {(r["target"], f"{r['timestamp_s']:g}"): r["sample_index"] for r in results}
        self.reference = {(r["target"], r["sample_index"]): r["status"] for r in results}
        assert set(self.reference.values()) == {"passed", "failed", "ignored"}, self.reference

    def expected_results(self) -> int:
        return 43

    def new_workspace(self, root: Path) -> Path:
        eval_dir = root / "eval"
        (eval_dir / "cases").mkdir(parents=True)
        shutil.copyfile(self.video, eval_dir / "cases" / "clip.mp4")
        (eval_dir / "cases" / "clip.yaml").write_text(textwrap.dedent(VIDEO_CASE).lstrip("\n"))
        (eval_dir / "adapter.py").write_text(VIDEO_ADAPTER)
        (eval_dir / "adapter.yaml").write_text(json.dumps({"calls": str(root / "adapter.calls"), "delay": 0.02}))
        return root

    def fresh_args(self, ws: Path) -> list[str]:
        return [
            "video", "run", "--eval-dir", str(ws / "eval"), "--concurrency", "4", "--keep-going", "--verbose",
            "--output-json", str(ws / "report.json"),
        ]  # fmt: skip

    def checkpoints(self, ws: Path) -> list[Path]:
        return checkpoint_dirs(ws / "eval" / "runs" / "checkpoints", "run-")

    def next_args(self, ws: Path) -> list[str] | None:
        found = self.checkpoints(ws)
        if not found:
            return self.fresh_args(ws)
        [checkpoint] = found
        if checkpoint_status(checkpoint) == "complete":
            return None
        return ["video", "run", "--resume", str(checkpoint)]

    def progress(self, ws: Path) -> int:
        return len(lines_of(ws / "adapter.calls"))

    def report_file(self, ws: Path) -> Path:
        return ws / "report.json"

    def printed_by(self, ws: Path, tag: str) -> dict[Any, str]:
        printed: dict[Any, str] = {}
        for line in lines_of(ws / f"{tag}.out"):
            match = RESULT_LINE.match(line)
            if match:
                target = re.sub(r"^.* \((.+)\)$", r"\1", match.group(2))
                printed[(target, self.by_time[(target, match.group(3))])] = VIDEO_VERDICT[match.group(1)]
        return printed

    def durable(self, ws: Path) -> dict[Any, str]:
        held: dict[Any, str] = {}
        for checkpoint in self.checkpoints(ws):
            for record in journal_records(checkpoint / "events.jsonl"):
                _, _, target, index, _ = record["key"].split("\0")
                held[(target, int(index))] = record["payload"]["status"]
        return held

    def calls(self, ws: Path) -> list[tuple[int, Any]]:
        return [(int(pid), (target, int(index))) for pid, target, index in map(str.split, lines_of(ws / "adapter.calls"))]

    def after_finish(self, ws: Path, process: subprocess.Popen[bytes], tag: str, tally: Tally) -> bool:
        err = (ws / f"{tag}.err").read_text(errors="replace")
        if process.returncode != self.reference_code or "Traceback" in err or "Warning" in err:
            tally.note(f"{ws.name}/{tag}: exit {process.returncode} (reference {self.reference_code}); "
                       f"stderr: {err.strip()[:300]}")
        return True

    def final(self, ws: Path, tally: Tally) -> dict[Any, str]:
        problems = []
        try:
            report = json.loads((ws / "report.json").read_text())
            final = {(r["target"], r["sample_index"]): r["status"] for r in report["trials"][0]["results"]}
        except (OSError, ValueError) as error:
            problems.append(f"no JSON report: {error}")
            final = {}
        if final and final != self.reference:
            problems.append("the JSON report differs from the uninterrupted one")
        [checkpoint] = self.checkpoints(ws)
        if checkpoint_status(checkpoint) != "complete":
            problems.append("the checkpoint was not sealed")
        runs = [run for run in self.listed_runs(ws, "video", tally)]
        if not runs:
            problems.append("not in `assay runs list`")
        elif runs[0]["counts"] != {**dict.fromkeys(("passed", "failed", "errored", "skipped", "ignored"), 0),
                                   **count_verdicts(self.reference, STORE_VERDICT)}:
            problems.append(f"the listed run's counts differ: {runs[0]['counts']}")
        if len(runs) > 1:
            tally.note(f"one finished run listed {len(runs)} times (a kill after it was indexed, before the seal: "
                       "the resume re-emits the record under a new run id)")
        if problems:
            tally.unreportable += 1
            tally.note(f"unreportable ({ws.name}): {'; '.join(problems)}")
        return final

    def roots(self, ws: Path) -> list[Path]:
        return [ws]

    def next_run(self, ws: Path, tally: Tally) -> None:
        process = self.spawn(ws, self.fresh_args(ws), None, "next")
        process.wait(timeout=120)
        self.after_finish(ws, process, "next", tally)


# ---------------------------------------------------------------------------------------------
# video seed

SEED_ADAPTER = '''
import os, time

def create_evaluator(config):
    return Colours(dict(config.config))


class Colours:
    def __init__(self, settings):
        self.settings = settings

    def evaluate(self, sample, target):
        time.sleep(self.settings.get("delay", 0))
        red, green, _ = sample.image.getpixel((4, 4))
        with open(self.settings["calls"], "a") as handle:
            handle.write(f"{os.getpid()} {target.id} {sample.sample_index}\\n")
        return "red" if red > green else "green"
'''
SEED_CASES = {
    "door": """
        video: clip.mp4
        sampling:
          every_s: 0.5
        targets:
          light:
            samples:
              # red, then green
              - range: [0.5, 7.5]  # the whole clip
                comment: light
              - at: 7.75
                expect: green
          door:
            samples:
              - at: [0.25, 3.75, 4.25, 6.0]
        """,
    "hall": """
        video: clip.mp4
        targets:
          lamp:
            samples:
              - range: [0.0, 8.0]
                every_s: 1.0
          fan:
            samples:
              - at: [1.0, 5.0]  # keep this comment
        """,
}
SEEDED_LINE = re.compile(r"^\s*SEEDED (\S+) @(\S+)s expect='(\w+)'")


class VideoSeed(Command):
    name = "video-seed"
    progress_name = "adapter calls"
    stages: ClassVar[list[Stage]] = [
        write_stage("case-tmp", "tmp", r"/cases/[^/]+\.yaml$", nth=1),
        write_stage("between-cases", "after", r"/cases/[^/]+\.yaml$", nth=1),
        write_stage("second-case-tmp", "tmp", r"/cases/[^/]+\.yaml$", nth=2),
        write_stage("cases-written", "after", r"/cases/[^/]+\.yaml$", nth=2),
        write_stage("seal-tmp", "tmp", CHECKPOINT_MANIFEST, data=SEALED),
        write_stage("sealed", "after", CHECKPOINT_MANIFEST, data=SEALED),
    ]

    def setup(self) -> None:
        self.video = make_color_sequence_video(
            self.scratch / "clip.mp4", [RED] * 8 + [GREEN] * 8, fps=2, width=16, height=16
        )
        ws = self.new_workspace(self.scratch / "reference")
        started = time.monotonic()
        process = self.spawn(ws, self.fresh_args(ws), None, "p01")
        assert process.wait(timeout=120) == 0, (ws / "p01.out").read_text()
        self.reference_wall = time.monotonic() - started
        self.expected_text = {name: self.case(ws, name).read_text() for name in SEED_CASES}
        [checkpoint] = checkpoint_dirs(ws / "eval" / "runs" / "checkpoints", "seed-")
        self.reference = {self.key_of(r["key"]): r["payload"]["expected"] for r in journal_records(checkpoint / "events.jsonl")}
        self.by_time = {(target, time_text): index for (_, target, index, time_text) in self.reference}
        self.total = len(self.reference)

    def expected_results(self) -> int:
        return self.total

    @staticmethod
    def key_of(key: str) -> tuple[str, str, int, str]:
        case, target, index, hex_time = key.split("\0")
        return case, target, int(index), f"{float.fromhex(hex_time):g}"

    def case(self, ws: Path, name: str) -> Path:
        return ws / "eval" / "cases" / f"{name}.yaml"

    def new_workspace(self, root: Path) -> Path:
        eval_dir = root / "eval"
        (eval_dir / "cases").mkdir(parents=True)
        shutil.copyfile(self.video, eval_dir / "cases" / "clip.mp4")
        for name, text in SEED_CASES.items():
            (eval_dir / "cases" / f"{name}.yaml").write_text(textwrap.dedent(text).lstrip("\n"))
        (eval_dir / "adapter.py").write_text(SEED_ADAPTER)
        (eval_dir / "adapter.yaml").write_text(json.dumps({"calls": str(root / "adapter.calls"), "delay": 0.015}))
        return root

    def fresh_args(self, ws: Path) -> list[str]:
        return ["video", "seed", "--eval-dir", str(ws / "eval"), "--concurrency", "2", "--verbose"]

    def checkpoints(self, ws: Path) -> list[Path]:
        return checkpoint_dirs(ws / "eval" / "runs" / "checkpoints", "seed-")

    def next_args(self, ws: Path) -> list[str] | None:
        if all(self.case(ws, name).read_text() == text for name, text in self.expected_text.items()):
            return None  # seeded: there is nothing left to do
        pending = [path for path in self.checkpoints(ws) if checkpoint_status(path) != "complete"]
        if pending and not (ws / "resume-refused").exists():
            self.last_args = ["video", "seed", "--resume", str(pending[-1]), "--eval-dir", str(ws / "eval")]
        else:
            self.last_args = self.fresh_args(ws)
        return self.last_args

    def after_finish(self, ws: Path, process: subprocess.Popen[bytes], tag: str, tally: Tally) -> bool:
        out = (ws / f"{tag}.out").read_text(errors="replace") + (ws / f"{tag}.err").read_text(errors="replace")
        if process.returncode == 0:
            return True
        last = out.strip().splitlines()[-1] if out.strip() else ""
        if "--resume" in self.last_args and "checkpoint inputs changed" in out:
            # What a user does next: the resume is refused, so the seed is started again.
            tally.refused += 1
            message = re.sub(r" /\S+", " <checkpoint>", last)
            tally.note(f"a seed killed after it rewrote a case file (before its seal) cannot be resumed: "
                       f"`--resume` exits {process.returncode}: {message}")
            (ws / "resume-refused").write_text(out)
            return False
        tally.note(f"{ws.name}/{tag}: exit {process.returncode}: {last[:300]}")
        return True

    def progress(self, ws: Path) -> int:
        return len(lines_of(ws / "adapter.calls"))

    def printed_by(self, ws: Path, tag: str) -> dict[Any, str]:
        printed: dict[Any, str] = {}
        for line in lines_of(ws / f"{tag}.out"):
            match = SEEDED_LINE.match(line)
            if match:
                target = re.sub(r"^.* \((.+)\)$", r"\1", match.group(1))
                printed[(target, self.by_time[(target, match.group(2))])] = match.group(3)
        return printed

    def durable(self, ws: Path) -> dict[Any, str]:
        held: dict[Any, str] = {}
        for checkpoint in self.checkpoints(ws):
            for record in journal_records(checkpoint / "events.jsonl"):
                if record["payload"].get("status") == "success":
                    _, target, index, _ = self.key_of(record["key"])
                    held[(target, index)] = record["payload"]["expected"]
        return held

    def calls(self, ws: Path) -> list[tuple[int, Any]]:
        return [(int(pid), (target, int(index))) for pid, target, index in map(str.split, lines_of(ws / "adapter.calls"))]

    def final(self, ws: Path, tally: Tally) -> dict[Any, str]:
        wrong = [name for name, text in self.expected_text.items() if self.case(ws, name).read_text() != text]
        if wrong:
            tally.unreportable += 1
            tally.note(f"unreportable ({ws.name}): case files not as an uninterrupted seed writes them: {wrong}")
            return {}
        # The files are byte for byte what the uninterrupted seed wrote: every value is the reference's.
        return {(target, index): value for (_, target, index, _), value in self.reference.items()}

    def roots(self, ws: Path) -> list[Path]:
        return [ws / "eval", ws / "store"]

    def next_run(self, ws: Path, tally: Tally) -> None:
        process = self.spawn(ws, self.fresh_args(ws), None, "next")
        if process.wait(timeout=120) != 0:
            tally.note(f"{ws.name}: the next seed exited {process.returncode}")


# ---------------------------------------------------------------------------------------------
# agent run

AGENT_EXPERIMENT = '''
import asyncio, os
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

SENDS = {sends!r}


async def send(turn_input, ctx):
    await asyncio.sleep(0.012)
    with open(SENDS, "a") as handle:
        handle.write(f"{{os.getpid()}} {{turn_input.text}}\\n")
    return Turn([message("The answer is 42.")])


crash = Experiment(agent=define_agent(name="crash", send=send, evidence_coverage=complete_evidence_coverage),
                   model="crash-model")
'''
AGENT_EVALS = '''
from assay.agent import define_eval, includes


def make(index):
    async def test(t):
        await t.send(f"question {index}")
        t.succeeded()
        t.check(t.reply, includes("43" if index % 7 == 3 else "42"))
    return define_eval(test)


EVALS = {f"e{index:03d}": make(index) for index in range(40)}
'''


class AgentRun(Command):
    name = "agent-run"
    progress_name = "sends"
    stages: ClassVar[list[Stage]] = [*PIPELINE_STAGES, write_stage("junit-tmp", "tmp", r"/junit\.xml$")]
    file_plan = True

    def setup(self) -> None:
        ws = self.new_workspace(self.scratch / "reference")
        started = time.monotonic()
        process = self.spawn(ws, self.fresh_args(ws), None, "p01")
        self.reference_code = process.wait(timeout=120)
        self.reference_wall = time.monotonic() - started
        self.reference = self.shown(ws)
        assert len(self.reference) == 40 and set(self.reference.values()) == {"passed", "failed"}, self.reference

    def expected_results(self) -> int:
        return 40

    def new_workspace(self, root: Path) -> Path:
        project = root / "project"
        (project / "experiments").mkdir(parents=True)
        (project / "evals").mkdir()
        (project / "pyproject.toml").write_text("[tool.assay]\n")
        (project / "experiments" / "crash.py").write_text(AGENT_EXPERIMENT.format(sends=str(root / "agent.calls")))
        (project / "evals" / "crash_eval.py").write_text(AGENT_EVALS)
        return root

    def fresh_args(self, ws: Path) -> list[str]:
        return ["agent", "run", "--project", str(ws / "project"), "--concurrency", "2", "--json",
                "--junit", str(ws / "project" / "junit.xml")]

    def checkpoints(self, ws: Path) -> list[Path]:
        return checkpoint_dirs(ws / "project" / ".assay" / "runs" / "checkpoints", "agent-")

    def next_args(self, ws: Path) -> list[str] | None:
        found = self.checkpoints(ws)
        if not found:
            return self.fresh_args(ws)
        [checkpoint] = found
        if checkpoint_status(checkpoint) == "complete":
            return None
        return ["agent", "run", "--project", str(ws / "project"), "--resume", str(checkpoint), "--json",
                "--junit", str(ws / "project" / "junit.xml")]

    def progress(self, ws: Path) -> int:
        return len(lines_of(ws / "agent.calls"))

    def report_file(self, ws: Path) -> Path:
        return ws / "project" / "junit.xml"

    def printed_by(self, ws: Path, tag: str) -> dict[Any, str]:
        printed: dict[Any, str] = {}
        for line in lines_of(ws / f"{tag}.out"):
            document = json.loads(line)
            if document.get("type") == "attempt":
                attempt = document["attempt"]
                printed[(attempt["experiment_id"], attempt["eval_id"], attempt["attempt"])] = attempt["verdict"]
        return printed

    def durable(self, ws: Path) -> dict[Any, str]:
        held: dict[Any, str] = {}
        for checkpoint in self.checkpoints(ws):
            for record in journal_records(checkpoint / "events.jsonl"):
                payload = record["payload"]
                if payload.get("verdict") is not None and payload.get("outcome") in ("executed", "reused"):
                    held[(payload["experiment_id"], payload["eval_id"], payload["attempt"])] = payload["verdict"]
        return held

    def calls(self, ws: Path) -> list[tuple[int, Any]]:
        return [
            (int(pid), ("crash", f"crash/e{int(number):03d}", 1))
            for pid, _, number in map(str.split, lines_of(ws / "agent.calls"))
        ]

    def shown(self, ws: Path) -> dict[Any, str]:
        shown = self.assay(ws, "agent", "show", "--project", str(ws / "project"), "--json")
        if shown.returncode != 0:
            raise RuntimeError(shown.stdout + shown.stderr)
        attempts = json.loads(shown.stdout)["attempts"]
        return {(a["experiment_id"], a["eval_id"], a["attempt"]): a["verdict"] for a in attempts}

    def after_finish(self, ws: Path, process: subprocess.Popen[bytes], tag: str, tally: Tally) -> bool:
        err = (ws / f"{tag}.err").read_text(errors="replace")
        if process.returncode != self.reference_code or "Traceback" in err or "Warning" in err:
            tally.note(f"{ws.name}/{tag}: exit {process.returncode} (reference {self.reference_code}); "
                       f"stderr: {err.strip()[:300]}")
        return True

    def final(self, ws: Path, tally: Tally) -> dict[Any, str]:
        problems = []
        try:
            final = self.shown(ws)
        except RuntimeError as error:
            problems.append(f"`agent show` failed: {str(error)[:200]}")
            final = {}
        if final and final != self.reference:
            problems.append("`agent show` differs from the uninterrupted run")
        [checkpoint] = self.checkpoints(ws)
        if checkpoint_status(checkpoint) != "complete":
            problems.append("the checkpoint was not sealed")
        runs = self.listed_runs(ws, "agent", tally)
        if not runs:
            problems.append("not in `assay runs list`")
        elif runs[0]["counts"] != {**dict.fromkeys(("passed", "failed", "errored", "skipped", "ignored"), 0),
                                   **count_verdicts(self.reference)}:
            problems.append(f"the listed run's counts differ: {runs[0]['counts']}")
        if len(runs) > 1:
            tally.note(f"one finished run listed {len(runs)} times (a kill after it was indexed, before the seal: "
                       "the resume re-emits the record under a new run id)")
        try:
            suite = ElementTree.parse(ws / "project" / "junit.xml").getroot().find("testsuite")
            if suite is None or suite.get("tests") != "40":
                problems.append("the JUnit report does not hold the 40 attempts")
        except (OSError, ElementTree.ParseError) as error:
            problems.append(f"no JUnit report: {error}")
        if problems:
            tally.unreportable += 1
            tally.note(f"unreportable ({ws.name}): {'; '.join(problems)}")
        return final

    def roots(self, ws: Path) -> list[Path]:
        return [ws / "project", ws / "store"]

    def next_run(self, ws: Path, tally: Tally) -> None:
        process = self.spawn(ws, self.fresh_args(ws), None, "next")
        process.wait(timeout=120)
        self.after_finish(ws, process, "next", tally)


# ---------------------------------------------------------------------------------------------
# doc run-case

DOC_SLOW_ADAPTER = '''
import time
from full_adapter import grade_candidate as _grade, render_report as _render


def grade_candidate(grade):
    time.sleep(0.15)
    return _grade(grade)


async def render_report(report):
    time.sleep(0.15)
    return await _render(report)
'''


class DocRunCase(Command):
    name = "doc-run-case"
    progress_name = ""
    stages: ClassVar[list[Stage]] = [
        write_stage("bundle-file-tmp", "tmp", r"/results/[^/]+/grades\.json$"),
        write_stage("bundle-manifest-tmp", "tmp", r"/results/[^/]+/manifest\.json$"),
        write_stage("bundle-sealed", "after", r"/results/[^/]+/manifest\.json$"),
        pipeline_stage("reported"),
        write_stage("record-units", "before", RECORD_MANIFEST),
        write_stage("record-tmp", "tmp", RECORD_MANIFEST),
        pipeline_stage("index-mid"),
        write_stage("junit-tmp", "tmp", r"/junit\.xml$"),
    ]
    file_plan = True
    RUN_ID = "crash-1"

    def setup(self) -> None:
        sys.path.insert(0, str(TESTS / "doc"))
        from doc_suites import make_suite

        self.make_suite = make_suite
        ws = self.new_workspace(self.scratch / "reference")
        started = time.monotonic()
        process = self.spawn(ws, self.args(ws), None, "p01", cwd=ws / "repo")
        self.reference_code = process.wait(timeout=120)
        self.reference_wall = time.monotonic() - started
        self.reference = {"case-one": self.bundle_verdict(ws)}
        assert self.reference == {"case-one": "yellow"}, self.reference

    def new_workspace(self, root: Path) -> Path:
        suite = self.make_suite(root)
        (suite.evals / "slow_adapter.py").write_text(DOC_SLOW_ADAPTER)
        suite.update_config(adapter="slow_adapter.py")
        return root

    def args(self, ws: Path) -> list[str]:
        return ["doc", "run-case", "--case", "case-one", "--candidate", "candidates/partial.md", "--run-id", self.RUN_ID,
                "--junit", str(ws / "repo" / "junit.xml")]

    def spawn(self, ws: Path, args: list[str], crash: dict[str, str] | None, tag: str, cwd: Path | None = None) -> subprocess.Popen[bytes]:
        return super().spawn(ws, args, crash, tag, cwd=ws / "repo")

    def bundle(self, ws: Path) -> Path:
        return ws / "repo" / "evals" / "results" / self.RUN_ID

    def bundle_verdict(self, ws: Path) -> str | None:
        if not (self.bundle(ws) / "manifest.json").exists():
            return None
        return json.loads((self.bundle(ws) / "grades.json").read_text())["verdict"]

    def next_args(self, ws: Path) -> list[str] | None:
        if (ws / "finished").exists():
            return None
        return self.args(ws)  # no checkpoint: the same command again

    def report_file(self, ws: Path) -> Path:
        return self.bundle(ws) / "manifest.json"

    def printed_by(self, ws: Path, tag: str) -> dict[Any, str]:
        verdicts = [line.split(": ", 1)[1].strip() for line in lines_of(ws / f"{tag}.out") if line.startswith("Verdict: ")]
        return {"case-one": verdicts[-1]} if verdicts else {}

    def durable(self, ws: Path) -> dict[Any, str]:
        verdict = self.bundle_verdict(ws)  # a bundle with its manifest is a finished result
        return {"case-one": verdict} if verdict is not None else {}

    def after_finish(self, ws: Path, process: subprocess.Popen[bytes], tag: str, tally: Tally) -> bool:
        (ws / "finished").write_text(tag)
        err = (ws / f"{tag}.err").read_text(errors="replace")
        if process.returncode != self.reference_code or err.strip():
            tally.note(f"{ws.name}/{tag}: exit {process.returncode} (reference {self.reference_code}); stderr: {err.strip()[:300]}")
        return True

    def final(self, ws: Path, tally: Tally) -> dict[Any, str]:
        problems = []
        verdict = self.bundle_verdict(ws)
        if verdict is None:
            problems.append("the result bundle has no manifest")
        runs = self.listed_runs(ws, "doc", tally)
        if not runs:
            problems.append("not in `assay runs list`")
        elif runs[0]["counts"]["passed"] != 1:
            problems.append(f"the listed run's counts differ: {runs[0]['counts']}")
        if problems:
            tally.unreportable += 1
            tally.note(f"unreportable ({ws.name}): {'; '.join(problems)}")
        return {"case-one": verdict} if verdict is not None else {}

    def roots(self, ws: Path) -> list[Path]:
        return [ws / "repo", ws / "store"]

    def skip(self, path: Path) -> bool:
        return super().skip(path) or "/candidates/" in str(path) or path.name in ("finished",)

    def next_run(self, ws: Path, tally: Tally) -> None:
        """The next run-case of the suite: the same case and candidate under a new (the default) run id."""
        args = self.args(ws)
        del args[args.index("--run-id"):args.index("--run-id") + 2]
        process = self.spawn(ws, args, None, "next")
        process.wait(timeout=120)
        self.after_finish(ws, process, "next", tally)


# ---------------------------------------------------------------------------------------------
# video review: a stream of saves to a live server

REVIEW_CASE = """\
video: clip.mp4
targets:
  number:
    samples:
      - at: 1.0
        expect: 0  # the value the saves count up
"""


class VideoReview(Command):
    name = "video-review"
    progress_name = "saves"
    stages: ClassVar[list[Stage]] = [
        write_stage("save-tmp", "tmp", r"/cases/clip\.yaml$", nth=3),
        write_stage("saved", "after", r"/cases/clip\.yaml$", nth=3),
        write_stage("first-save-tmp", "tmp", r"/cases/clip\.yaml$", nth=1),
        write_stage("first-saved", "after", r"/cases/clip\.yaml$", nth=1),
    ]

    def setup(self) -> None:
        import httpx

        self.httpx = httpx
        self.video = make_numbered_video(self.scratch / "clip.mp4", 30, fps=10)
        ws = self.new_workspace(self.scratch / "reference")
        started = time.monotonic()
        process, origin = self.serve(ws, None, "p01")
        for value in range(1, 11):
            self.save(origin, value)
        self.reference_wall = (time.monotonic() - started) * 1.5
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)

    def expected_results(self) -> int:
        return 8

    def new_workspace(self, root: Path) -> Path:
        eval_dir = root / "eval"
        (eval_dir / "cases").mkdir(parents=True)
        shutil.copyfile(self.video, eval_dir / "cases" / "clip.mp4")
        (eval_dir / "cases" / "clip.yaml").write_text(REVIEW_CASE)
        return root

    def serve(self, ws: Path, crash: dict[str, str] | None, tag: str) -> tuple[subprocess.Popen[bytes], str]:
        process = self.spawn(ws, ["video", "review", "--eval-dir", str(ws / "eval"), "--no-open"], crash, tag)
        out = ws / f"{tag}.out"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = next((line for line in lines_of(out) if line.startswith("Review UI: ")), None)
            if line is not None:
                origin = line.strip().removeprefix("Review UI: ").rstrip("/")
                break
            if process.poll() is not None:
                raise RuntimeError(f"review exited: {(ws / f'{tag}.err').read_text()}")
            time.sleep(0.01)
        else:
            raise RuntimeError("review never started")
        while True:
            try:
                self.token = self.httpx.get(origin + "/api/eval-directory", timeout=5).json()["write_token"]
                return process, origin
            except self.httpx.ConnectError:
                time.sleep(0.02)

    def save(self, origin: str, value: int) -> int:
        document = self.httpx.get(f"{origin}/api/case-files/clip.yaml", timeout=10).json()
        [sample] = next(target for target in document["targets"] if target["id"] == "number")["samples"]
        body = {"targets": {"number": {"samples": [{**sample, "expect_type": "number", "expect_json": str(value)}]}}}
        response = self.httpx.put(f"{origin}/api/case-files/clip.yaml/samples", json=body,
                                  headers={"x-glasskit-write-token": self.token}, timeout=10)
        return response.status_code

    def value_in_file(self, ws: Path) -> Any:
        data = yaml.safe_load((ws / "eval" / "cases" / "clip.yaml").read_text())
        return data["targets"]["number"]["samples"][0]["expect"]

    def run(self, kills: int, rng: random.Random) -> Tally:
        """Each kill: a server takes saves 1, 2, 3… until the kill point; then the file must hold the
        last acknowledged value (or the one in flight), parse, and a new launch must serve it."""
        tally = Tally()
        started = time.monotonic()
        self.setup()
        queue = self.plans(kills, rng)
        episode = 0
        while tally.kills < kills:
            episode += 1
            ws = self.new_workspace(self.scratch / f"episode-{episode:02d}")
            plan = queue.pop(0)
            process, origin = self.serve(ws, plan.stage.env if plan.stage else None, "p01")
            tally.processes += 1
            acknowledged, in_flight = 0, 0
            deadline = time.monotonic() + 60.0
            if plan.kind == "delay":  # from a timer: the kill may land in the middle of a save
                timer = threading.Timer(plan.delay, process.kill)
                timer.start()
            value = 0
            while time.monotonic() < deadline and process.poll() is None:
                if plan.kind == "results" and acknowledged >= plan.results:
                    break
                value += 1
                in_flight = value
                try:
                    if self.save(origin, value) == 200:
                        acknowledged = value
                except (self.httpx.TransportError, ValueError):
                    break  # the server died under the request
            if plan.kind == "delay":
                timer.join()
            if process.poll() is None:
                process.kill()
            process.wait()
            tally.kills += 1
            tally.episodes += 1
            label = plan.kind if plan.kind != "stage" else f"stage {plan.stage.name}"  # type: ignore[union-attr]
            tally.points[label] = tally.points.get(label, 0) + 1
            tally.seen += acknowledged
            self.check_torn(ws, tally, f"after kill ({plan.describe()})")
            try:
                found = self.value_in_file(ws)
            except Exception as error:  # noqa: BLE001 - counted as torn above; here: lost
                found = f"unreadable: {error}"
            if found not in (acknowledged, in_flight):
                tally.lost += 1
                tally.note(f"lost: acknowledged save {acknowledged}, the file holds {found!r} ({plan.describe()})")
            # The next launch of the same command: it removes what a killed save left, and serves the case.
            age_temporaries(self.roots(ws))
            again, origin = self.serve(ws, None, "next")
            tally.processes += 1
            document = self.httpx.get(f"{origin}/api/case-files/clip.yaml", timeout=10).json()
            served = next(t for t in document["targets"] if t["id"] == "number")["samples"][0].get("expect_json")
            if document.get("status") != "ready" or served != json.dumps(found):
                tally.unreportable += 1
                tally.note(f"the next launch serves {served!r} (status {document.get('status')}), the file holds {found!r}")
            again.send_signal(signal.SIGINT)
            again.wait(timeout=30)
            left = temporaries(self.roots(ws))
            tally.leftover += len(left)
            for path in left:
                tally.note(f"leftover after the next launch: {self.describe_path(ws, path)}")
            if self.verbose:
                print(f"  {self.name} ep{episode}: killed at {plan.describe()}, acknowledged {acknowledged}, "
                      f"file {found!r}", flush=True)
        tally.wall = time.monotonic() - started
        return tally

    def roots(self, ws: Path) -> list[Path]:
        return [ws / "eval"]


# ---------------------------------------------------------------------------------------------

COMMANDS: dict[str, type[Command]] = {
    "video-run": VideoRun,
    "video-seed": VideoSeed,
    "agent-run": AgentRun,
    "doc-run-case": DocRunCase,
    "video-review": VideoReview,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs per command (default 20)")
    parser.add_argument("--seed", type=int, default=20261201, help="seed of the kill points")
    parser.add_argument("--only", default=",".join(COMMANDS), help="comma-separated: " + ",".join(COMMANDS))
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder and print where it is")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per process")
    options = parser.parse_args()
    names = [name.strip() for name in options.only.split(",") if name.strip()]
    unknown = [name for name in names if name not in COMMANDS]
    if unknown:
        parser.error(f"unknown command(s): {', '.join(unknown)}; known: {', '.join(COMMANDS)}")

    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="assay-crash-"))
    (scratch / "hook").mkdir()
    (scratch / "hook" / "crash_hook.py").write_text(HOOK)
    print(f"assay crash benchmark: seed {options.seed}, {options.kills} SIGKILLs per command", flush=True)
    tallies: dict[str, Tally] = {}
    try:
        for name in names:
            rng = random.Random(f"{options.seed}:{name}")
            tallies[name] = COMMANDS[name](scratch, options.verbose).run(options.kills, rng)
            tally = tallies[name]
            print(f"  {name}: done in {tally.wall:.1f} s", flush=True)
    finally:
        if options.keep:
            print(f"scratch kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    header = (f"{'command':<14} {'kills':>5} {'seen':>5} {'lost':>4} {'torn':>4} {'unreportable':>12} "
              f"{'leftover tmp':>12} {'asked again':>11} {'resume refused':>14} {'processes':>9} {'wall':>7}")
    print()
    print(header)
    print("-" * len(header))
    for name, tally in tallies.items():
        print(f"{name:<14} {tally.kills:>5} {tally.seen:>5} {tally.lost:>4} {tally.torn:>4} {tally.unreportable:>12} "
              f"{tally.leftover:>12} {tally.repeated:>11} {tally.refused:>14} {tally.processes:>9} {tally.wall:>6.1f}s")
    print()
    for name, tally in tallies.items():
        points = ", ".join(f"{label} {count}" for label, count in sorted(tally.points.items()))
        print(f"{name} kill points: {points}")
        for note in tally.notes:
            print(f"  note: {note}")
    print(f"\ntotal wall time: {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
