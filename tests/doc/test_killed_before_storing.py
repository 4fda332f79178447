"""A doc run killed with SIGKILL after it printed its verdict, before the results store had its record
(the store step): the next doc run finds the finished bundle's held record and publishes it, as an
agent or video `--resume` does for theirs.

Real `assay` processes are killed from inside, at the exact point, by a hook installed before assay
loads (the same as a `kill -9` that lands there, without the luck)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from doc_suites import make_suite

HOOK = """
import os, signal


def install():
    import assay.core.results_store as results_store

    stage = os.environ.get("CRASH_AT")
    if stage == "store":  # the verdict is printed; nothing of the run is in the store yet
        def publish_run_quietly(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)

        results_store.publish_run_quietly = publish_run_quietly
    elif stage == "index":  # the record is written, the index not yet
        def _index(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)

        results_store._index = _index
"""
BOOT = "import sys; sys.path.insert(0, {hook!r}); import crash_hook; crash_hook.install(); from assay.cli.app import main; main()"


@pytest.fixture
def assay(tmp_path: Path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "crash_hook.py").write_text(HOOK)

    def run(*args: Any, cwd: Path, crash: str | None = None) -> subprocess.CompletedProcess[str]:
        environment = {key: value for key, value in os.environ.items() if key != "CRASH_AT"}
        environment.update({"PYTHONUNBUFFERED": "1", "ASSAY_STORE": str(tmp_path / "store" / "assay.db")})
        if crash:
            environment["CRASH_AT"] = crash
        return subprocess.run(
            [sys.executable, "-c", BOOT.format(hook=str(hook)), *map(str, args)],
            check=False, capture_output=True, text=True, env=environment, cwd=cwd, timeout=120,
        )  # fmt: skip

    return run


def doc_runs(assay: Any, cwd: Path) -> list[dict[str, Any]]:
    listed = assay("runs", "list", "--kind", "doc", "--json", cwd=cwd)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    return json.loads(listed.stdout)["runs"]


@pytest.mark.parametrize("stage", ["store", "index"])
def test_a_run_case_killed_before_its_record_was_stored_is_published_by_the_next_doc_run(
    tmp_path: Path, assay: Any, stage: str
) -> None:
    suite = make_suite(tmp_path)
    run_case = ("doc", "run-case", "--case", "case-one", "--candidate")
    killed = assay(*run_case, "candidates/bad.md", "--run-id", "killed", cwd=suite.repo, crash=stage)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert killed.stdout.startswith("Verdict: red\n")  # the user saw the verdict…
    assert (suite.results / "killed" / "manifest.json").is_file()
    assert not (tmp_path / "store" / "assay.db").exists()  # …which `assay runs` does not know

    following = assay(*run_case, "candidates/good.md", "--run-id", "following", cwd=suite.repo)
    assert following.returncode == 0, following.stdout + following.stderr
    assert following.stdout.splitlines() == ["Verdict: green", "Results: evals/results/following"]
    [note] = following.stderr.splitlines()
    assert note.startswith("Recorded doc-") and "before storing it" in note
    runs = {run["identity"]["bundle_run_id"]: run for run in doc_runs(assay, suite.repo)}
    assert set(runs) == {"killed", "following"}
    assert runs["killed"]["success"] is False and runs["killed"]["counts"]["failed"] == 1
    assert note.split()[1].rstrip(":") == runs["killed"]["run_id"]
    assert list((tmp_path / "store" / "unpublished").iterdir()) == []

    again = assay(*run_case, "candidates/good.md", "--run-id", "again", cwd=suite.repo)  # published once, not again
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert len(doc_runs(assay, suite.repo)) == 3


def test_a_run_that_is_still_going_keeps_its_held_record(tmp_path: Path) -> None:
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import hold_run, publish_held_runs

    database = tmp_path / "store" / "assay.db"
    held = hold_run(RunManifest("doc-live", "doc", "2026-01-01T00:00:00Z"), [UnitResult("c/deterministic", "passed")],
                    database=database)  # fmt: skip
    assert publish_held_runs(database=database) == []  # this process holds it: it publishes it itself
    held.release()
    assert list((tmp_path / "store" / "unpublished").iterdir()) == []
