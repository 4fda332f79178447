"""docs/agent/shared-state.md works as written: its files are written in page order and each `console`
block's command is run in that project, every line it shows printed (tokens, pids, hosts and times
aside). The first run is run twice at once, the second printing the page's `waiting …` line; before
the block that shows a dead owner's lease, a run is killed (SIGKILL) while it holds it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import page_lines
from page_lines import shown_in_order

PAGE = Path(__file__).resolve().parents[2] / "docs" / "agent" / "shared-state.md"
BLOCK = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', re.MULTILINE | re.DOTALL)
VARYING = [
    (re.compile(r"\b[0-9a-f]{16}\b"), "TOKEN"),
    (re.compile(r"pid \d+ on host \S+ since \S+"), "pid PID on host HOST since TIME"),
    (re.compile(r"in \d+(\.\d+)?(ms|s)$"), "in TIME"),
]
PAGE_TOKEN = re.compile(r"\b[0-9a-f]{16}\b")


def normalized(line: str) -> str:
    return page_lines.normalized(line, VARYING)


def _lease_files(project: Path) -> list[Path]:
    folder = project / ".assay" / "shared-state"
    return list(folder.glob("*.lease")) if folder.is_dir() else []


def _wait_for_lease(project: Path) -> None:
    """Until a run holds the lease and has written its owner into it: the file is made first and written after, and
    a run killed in between leaves an unreadable lease (a case of its own, `UNKNOWN_TOKEN`), not the page's."""
    deadline = time.monotonic() + 30
    while not any(PAGE_TOKEN.search(_read_or_empty(path)) for path in _lease_files(project)):
        assert time.monotonic() < deadline, "no run took the lease"
        time.sleep(0.01)


def _read_or_empty(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def test_the_shared_state_page_runs_as_written(tmp_path):
    project = tmp_path / "staging"
    project.mkdir()
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db"), "COLUMNS": "200"}
    command = [sys.executable, "-m", "assay"]
    text = PAGE.read_text(encoding="utf-8")
    waiting = [normalized(body.strip()) for language, _, body in BLOCK.findall(text)
               if language == "text" and body.startswith("waiting")]
    assert len(waiting) == 1
    ran, token = 0, None
    for language, title, body in BLOCK.findall(text):
        if title:
            (project / title).parent.mkdir(parents=True, exist_ok=True)
            (project / title).write_text(body, encoding="utf-8")
            continue
        if language != "console":
            continue
        [shown] = [line[2:] for line in body.splitlines() if line.startswith("$ ")]
        expected = [normalized(line) for line in body.splitlines() if line and not line.startswith("$ ")]
        arguments = shown.split()
        assert arguments[0] == "assay"
        if token is not None:
            arguments = [PAGE_TOKEN.sub(token, argument) for argument in arguments]
        done = subprocess.Popen([*command, *arguments[1:]], cwd=project, env=environment, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) if ran == 0 else None
        second = None
        if done is not None:  # the first run, with a second one waiting for it
            _wait_for_lease(project)
            second = subprocess.Popen([*command, *arguments[1:], "--rerun", "all"], cwd=project, env=environment,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if "no longer running" in body:  # a run killed while it holds the lease
            owner = subprocess.Popen([*command, "agent", "run", "--rerun", "all"], cwd=project, env=environment,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _wait_for_lease(project)
            owner.send_signal(signal.SIGKILL)
            owner.wait(timeout=30)
            token = PAGE_TOKEN.search(_lease_files(project)[0].read_text()).group(0)
        if done is None:
            done = subprocess.Popen([*command, *arguments[1:]], cwd=project, env=environment, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        stdout, stderr = done.communicate(timeout=60)
        printed = [normalized(line) for line in (stdout + stderr).splitlines()]
        assert not shown_in_order(expected, printed), f"{shown}\nmissing {shown_in_order(expected, printed)}\n{printed}"
        if second is not None:
            _, second_err = second.communicate(timeout=60)
            assert second.returncode == 0
            assert [normalized(line) for line in second_err.splitlines() if line.startswith("waiting")] == waiting
        ran += 1
    assert ran == 5 and token is not None
    assert not _lease_files(project)
