"""docs/agent/carry.md works as written: its files are written in page order, each `console` block's
commands are run in that project, and every output line the page shows is printed, in order (run
ids, locators and durations aside)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import page_lines
from page_lines import shown_in_order

PAGE = Path(__file__).resolve().parents[2] / "docs" / "agent" / "carry.md"
BLOCK = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', re.MULTILINE | re.DOTALL)
VARYING = [
    (re.compile(r"agent-\d{8}T\d{6}Z?-[0-9a-f]{6,8}"), "agent-RUN"),
    (re.compile(r"@[0-9A-HJKMNP-TV-Z]{12}"), "@LOCATOR"),
    (re.compile(r"in \d+(\.\d+)?(ms|s)$"), "in TIME"),
]


def normalized(line: str) -> str:
    return page_lines.normalized(line, VARYING)


def test_the_carry_page_runs_as_written(tmp_path):
    project = tmp_path / "shop"
    project.mkdir()
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db"), "COLUMNS": "100"}
    ran = 0
    for language, title, body in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        if title:
            (project / title).parent.mkdir(parents=True, exist_ok=True)
            (project / title).write_text(body, encoding="utf-8")
        elif language == "console":
            commands = [line[2:] for line in body.splitlines() if line.startswith("$ ")]
            assert len(commands) == 1, body
            expected = [normalized(line) for line in body.splitlines() if line and not line.startswith("$ ")]
            arguments = commands[0].split()
            assert arguments[0] == "assay"
            done = subprocess.run([sys.executable, "-m", "assay", *arguments[1:]], cwd=project, env=environment,
                                  capture_output=True, text=True, timeout=60)
            printed = [normalized(line) for line in done.stdout.splitlines()]
            assert not shown_in_order(expected, printed), f"{commands[0]}\nmissing {shown_in_order(expected, printed)}\n" + done.stdout
            ran += 1
    assert ran >= 5
