"""The worked example of docs/results.md ("The verdict", "Flaky units and trends") runs as written:
ten runs of docs/examples/history, an eleventh with one answer broken, and every line the page quotes
is what `assay runs compare`, `runs flaky` and `runs trend` print (run ids aside)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "history"
PAGE = REPO / "docs" / "results.md"
RUN_ID = re.compile(r"agent-\S*?-[0-9a-f]{8}\b")


def _assay(*arguments: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def _quoted(command: str) -> list[str]:
    """The output lines the page shows under `$ <command>` (up to the next command or the block's end)."""
    text = PAGE.read_text(encoding="utf-8")
    block = text.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    return [line for line in block.split("\n$ ", 1)[0].splitlines() if line.strip() and line != "…"]


def _shown(line: str) -> str:
    return RUN_ID.sub("agent-…", line)


def test_the_history_example_prints_what_the_page_shows(tmp_path):
    project = tmp_path / "history"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    # The runs are recorded by the page's own commands, with `assay` this interpreter's: the page once left out
    # the eleventh run's SHOP_RUN, and a reader who followed it got other figures than the page shows.
    shim = tmp_path / "bin" / "assay"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m assay "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    recording = PAGE.read_text(encoding="utf-8").split("**Worked example**", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(["bash", "-c", "set -u\n" + recording.replace("assay agent run", "assay agent run --quiet")],
                          cwd=project, env={**env, "PATH": f"{shim.parent}{os.pathsep}{env['PATH']}"}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert _assay("runs", "list", "--json", cwd=project, env=env).stdout.count('"run_id"') == 11
    for command, arguments, code in (
        ("assay runs compare latest", ("runs", "compare", "latest"), 0),
        ("assay runs compare latest --history 1", ("runs", "compare", "latest", "--history", "1"), 0),
        ("assay runs flaky", ("runs", "flaky"), 0),
        ("assay runs trend --last 5", ("runs", "trend", "--last", "5"), 0),
    ):
        done = _assay(*arguments, cwd=project, env=env)
        assert done.returncode == code, done.stdout + done.stderr
        printed = [_shown(line) for line in done.stdout.splitlines()]
        for line in _quoted(command):
            expected = _shown(line).replace("agent-…-", "agent-…")
            expected = re.sub(r"agent-…[0-9a-f]{8}", "agent-…", expected)
            assert expected in printed, (command, expected, printed)
    gate = _assay("runs", "compare", "latest", "--fail-on-regression", cwd=project, env=env)
    assert gate.returncode == 1
