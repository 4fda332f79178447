"""Helpers for the hostile-peer tests: the peer's command line, and the processes a test left behind."""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
import uuid
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
HOSTILE = FIXTURES / "hostile_peer.py"
MARK_VARIABLE = "ASSAY_HOSTILE_TEST"


def hostile(mode: str, argument: object = "") -> str:
    return shlex.join([sys.executable, str(HOSTILE), mode, *([str(argument)] if argument != "" else [])])


def mark_children(monkeypatch) -> bytes:
    """Give every process the test starts (and their descendants) a mark of this test's own."""
    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK_VARIABLE, mark)
    return f"{MARK_VARIABLE}={mark}".encode()


def running_with(mark: bytes) -> list[int]:
    """Processes still running (zombies excluded) that carry `mark` in their environment."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as environ:
                if mark not in environ.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            found.append(int(entry.name))
    return found


def descendants_named(stderr: bytes) -> list[int]:
    return [int(pid) for pid in re.findall(rb"descendant (\d+)", stderr)]


class Stopwatch:
    def __enter__(self) -> "Stopwatch":
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.monotonic() - self.started
