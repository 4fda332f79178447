"""Real store files damaged the ways disks and people damage them, and the real `assay` process run over them.

Shared by the damaged-store CLI tests and the browser test of the live viewer on such a store.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import select
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import publish_run

TESTS = Path(__file__).resolve().parents[1]
BEFORE, AFTER = "video-20260101T000000-aaaaaa", "video-20260102T000000-bbbbbb"


def make_store(folder: Path) -> Path:
    """A store with two indexed runs and their records; returns the database file."""
    database = folder / "store" / "assay.db"
    before = [UnitResult(f"clip/number/{index}@{index}s#1", "passed", "clip/number") for index in range(16)]
    after = [UnitResult(unit.unit_id, "failed" if index < 4 else "passed", unit.group) for index, unit in enumerate(before)]
    publish_run(RunManifest(BEFORE, "video", "2026-01-01T00:00:00Z", title="before"), before, database=database)
    publish_run(RunManifest(AFTER, "video", "2026-01-02T00:00:00Z", title="after"), after, database=database)
    assert not Path(f"{database}-wal").exists()  # everything is in the main file, where the damage goes
    return database


def _random_bytes(database: Path) -> None:
    database.write_bytes(random.Random(16).randbytes(database.stat().st_size))


def _overwritten_header(database: Path) -> None:
    with open(database, "r+b") as handle:
        handle.write(random.Random(17).randbytes(100))


def _truncated(database: Path) -> None:
    with open(database, "r+b") as handle:
        handle.truncate(database.stat().st_size // 2)


def _damaged_units_page(database: Path) -> None:
    """Garbage over the root pages of the units table and its indexes (`runs compare` reads only
    `units_verdicts`): the file opens and lists runs, then fails on units."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        roots = [row[0] for row in connection.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = 'units'")]
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    with open(database, "r+b") as handle:
        for root in roots:
            handle.seek((root - 1) * page_size)
            handle.write(random.Random(18).randbytes(page_size))


# Damage that stops the store from opening at all.
OPENING_DAMAGE: dict[str, Callable[[Path], None]] = {
    "random bytes": _random_bytes,
    "overwritten header": _overwritten_header,
    "truncated file": _truncated,
}
DAMAGED_UNITS_PAGE = _damaged_units_page


def environment(database: Path) -> dict[str, str]:
    paths = [str(TESTS), os.environ.get("PYTHONPATH", "")]  # the video test adapter imports tests/media.py
    return {**os.environ, "ASSAY_STORE": str(database), "PYTHONPATH": os.pathsep.join(filter(None, paths)),
            "PYTHONUNBUFFERED": "1"}


def assay(database: Path, *args: object, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m assay ARGS` as a user runs it, against `database`."""
    return subprocess.run(
        [sys.executable, "-m", "assay", *map(str, args)], capture_output=True, text=True, timeout=timeout,
        env=environment(database), cwd=cwd, check=False,
    )


@dataclass
class Viewer:
    origin: str
    process: subprocess.Popen[str]
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8")


@contextlib.contextmanager
def live_viewer(database: Path, scratch: Path) -> Iterator[Viewer]:
    """`assay view --no-open` in its own process; stopped (and waited for) on the way out."""
    stderr_path = scratch / "viewer-stderr.txt"
    with open(stderr_path, "w", encoding="utf-8") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "assay", "view", "--no-open", "--port", "0"], stdout=subprocess.PIPE,
            stderr=stderr, text=True, env=environment(database),
        )
    try:
        origin = _read_origin(process)
        yield Viewer(origin, process, stderr_path)
    finally:
        process.terminate()
        process.wait(timeout=20)
        assert process.stdout is not None
        process.stdout.close()


def _read_origin(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.2)
        if ready:
            line = process.stdout.readline()
            found = re.search(r"http://127\.0\.0\.1:\d+", line)
            if found:
                return found.group(0)
            if not line:
                break
        if process.poll() is not None:
            break
    raise AssertionError(f"the viewer did not start (exit code {process.poll()})")
