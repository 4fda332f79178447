"""The bundled sandbox example (examples/agent/sandbox): a repository with a failing test, a deterministic
coding agent that fixes it in a sandbox, graded on the diff and on the tests passing afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from sandbox_helpers import sandbox_dir  # noqa: F401

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent" / "sandbox"


def test_the_example_agent_fixes_the_failing_test_and_every_assertion_holds(tmp_path, sandbox_dir):
    project = tmp_path / "coding"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json", "--quiet"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    attempts = [json.loads(line)["attempt"] for line in done.stdout.splitlines() if json.loads(line)["type"] == "attempt"]
    assert len(attempts) == 1
    attempt = attempts[0]
    assert attempt["verdict"] == "passed"
    assert [(a["kind"], a["status"]) for a in attempt["assertions"]] == [
        ("check", "matched"), ("called_tool", "matched"), ("changed_paths", "matched"), ("file_changed", "matched"),
        ("not_in_diff", "matched"), ("check", "matched"),
    ]
    window = attempt["sandbox"]["file_changes"]["windows"][0]
    assert [change["path"] for change in window["changes"]] == ["calc.py"]
    assert "-    return a - b\n+    return a + b" in window["changes"][0]["diff"]
    assert list(sandbox_dir.iterdir()) == []  # nothing kept, nothing left behind
    assert (EXAMPLE / "fixtures" / "calculator" / "calc.py").read_text().count("a - b") == 1  # the fixture is untouched
