"""The bundled sandbox example (examples/agent/sandbox): a repository with a failing test, a deterministic
coding agent that fixes it in a sandbox, graded on the diff and on the tests passing afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from assay.agent.sandbox.registry import list_entries
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
    assert list(sandbox_dir.iterdir()) == []  # nothing kept, nothing left behind (the pack cache went at exit)
    assert (EXAMPLE / "fixtures" / "calculator" / "calc.py").read_text().count("a - b") == 1  # the fixture is untouched


def test_a_remote_worker_links_the_sandbox_of_the_attempts_it_is_sent(tmp_path, sandbox_dir):
    """What a Ray worker does with an attempt (the worker side, in process): without linking, a
    sandbox eval errors there with "not linked" while the same eval passes locally."""
    import asyncio

    from assay.agent.discovery import discover_evals, discover_experiments
    from assay.agent.runner import AgentWorker, AttemptRequest, RunOptions

    project = tmp_path / "coding"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    [experiment] = discover_experiments(project)
    [entry] = discover_evals(project)

    async def two_attempts():
        worker = AgentWorker(str(project), RunOptions(handle_sigint=False), keep_sandbox="all")
        try:
            return [await worker.call(AttemptRequest(experiment.id, entry.id, ordinal)) for ordinal in (0, 1)]
        finally:
            await worker.close()

    results = asyncio.run(two_attempts())
    assert [(result.ordinal, result.verdict, result.error) for result in results] == [(0, "passed", None), (1, "passed", None)]
    assert all(result.sandbox["file_changes"]["windows"][0]["changes"][0]["path"] == "calc.py" for result in results)
    assert len(list_entries(sandbox_dir)) == 2  # --keep-sandbox reached the worker: both were kept
