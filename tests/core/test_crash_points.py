"""SIGKILL at the points `benchmarks/crash.py` aims at (issue 23): between a run's last result and its
seal, inside the store's transaction, in the middle of a result-bundle write.

Real `assay` processes are killed from inside, at an exact point, by a hook installed with
`python -c` before assay loads (assay has no crash hook of its own): the same as a `kill -9` that
lands there, only without the luck."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "doc"))
sys.path.insert(0, str(TESTS / "video"))
from agent_projects import agent_project
from doc_suites import make_suite
from video_evals import number_eval

from assay.core.fsutil import STALE_TEMPORARY_AGE_S

HOOK = '''
import os, re, signal


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def install():
    stage = os.environ.get("CRASH_AT")
    if stage == "finish":  # every result durable; nothing reported, recorded or sealed yet
        import assay.core.run.pipeline as pipeline

        original_finish = pipeline._finish

        def _finish(events, finished, *rest):
            if finished.build_manifest is not None:
                die()
            return original_finish(events, finished, *rest)

        pipeline._finish = _finish
    elif stage == "index-mid":  # reports out, record written, the store's transaction half done
        import assay.core.results_store as results_store

        original_lines = results_store.unit_lines

        def unit_lines(units):
            yield from original_lines(units)
            die()

        results_store.unit_lines = unit_lines
    elif stage == "interrupt-mid-index":  # Ctrl-C after the summary, inside the store's transaction
        import assay.core.results_store as results_store

        original_lines = results_store.unit_lines

        def unit_lines(units):
            yield from original_lines(units)
            os.kill(os.getpid(), signal.SIGINT)

        results_store.unit_lines = unit_lines
    elif stage == "mid-write":  # half of the bytes of a file whose path matches CRASH_PATH
        pattern = re.compile(os.environ["CRASH_PATH"])
        real_write = os.write

        def write(fd, data):
            if pattern.search(os.readlink(f"/proc/self/fd/{fd}")):
                real_write(fd, bytes(data[: max(1, len(data) // 2)]))
                os.fsync(fd)
                die()
            return real_write(fd, data)

        os.write = write
'''
BOOT = "import sys; sys.path.insert(0, {hook!r}); import crash_hook; crash_hook.install(); from assay.cli.app import main; main()"
TEMPORARY = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")


@pytest.fixture
def assay(tmp_path: Path):
    """Run the real CLI in a child process, optionally armed to die at `crash` (CRASH_* variables)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "crash_hook.py").write_text(HOOK)

    def run(*args: Any, cwd: Path, crash: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        environment = {key: value for key, value in os.environ.items() if not key.startswith("CRASH_")}
        environment.update({"PYTHONUNBUFFERED": "1", "ASSAY_STORE": str(tmp_path / "store" / "assay.db"), **(crash or {})})
        return subprocess.run(
            [sys.executable, "-c", BOOT.format(hook=str(hook)), *map(str, args)],
            check=False, capture_output=True, text=True, env=environment, cwd=cwd, timeout=120,
        )  # fmt: skip

    return run


def listed_runs(assay: Any, cwd: Path, kind: str) -> list[dict[str, Any]]:
    listed = assay("runs", "list", "--json", "--kind", kind, cwd=cwd)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    return json.loads(listed.stdout)["runs"]


def temporaries(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if TEMPORARY.fullmatch(path.name))


# ---------------------------------------------------------------------------------------------
# An agent run killed after its last result, before its seal


AGENT_EXPERIMENT = '''
import os
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message


async def send(turn_input, ctx):
    with open({sends!r}, "a") as handle:
        handle.write(turn_input.text + "\\n")
    return Turn([message("The answer is 42.")])


crash = Experiment(agent=define_agent(name="crash", send=send, evidence_coverage=complete_evidence_coverage))
'''
AGENT_EVALS = '''
from assay.agent import define_eval, includes


def make(index):
    async def test(t):
        await t.send(f"question {index}")
        t.succeeded()
        t.check(t.reply, includes("43" if index == 2 else "42"))
    return define_eval(test)


EVALS = {f"e{index}": make(index) for index in range(3)}
'''


def crash_project(tmp_path: Path) -> tuple[Path, Path]:
    """An agent project of three evals (the third fails) whose agent logs each question it is sent to `sends`."""
    project, sends = tmp_path / "project", tmp_path / "sends.txt"
    agent_project(project)
    (project / "experiments" / "crash.py").write_text(AGENT_EXPERIMENT.format(sends=str(sends)))
    (project / "evals" / "crash_eval.py").write_text(AGENT_EVALS)
    return project, sends


def attempts_of(stdout: str) -> dict[str, str]:
    lines = [json.loads(line) for line in stdout.splitlines()]
    return {line["attempt"]["eval_id"]: line["attempt"]["verdict"] for line in lines if line.get("type") == "attempt"}


def receipt_of(stdout: str) -> dict[str, Any] | None:
    lines = [json.loads(line) for line in stdout.splitlines()]
    return next((line["receipt"] for line in lines if line.get("type") == "receipt"), None)


def test_an_agent_run_killed_between_its_last_result_and_its_seal_is_reported_by_resume_then_listed(
    tmp_path: Path, assay: Any
) -> None:
    project, sends = crash_project(tmp_path)
    junit = project / "junit.xml"
    verdicts = {"crash/e0": "passed", "crash/e1": "passed", "crash/e2": "failed"}

    # Killed with every result durable and shown, before any report, record or seal.
    first = assay("agent", "run", "--project", project, "--json", "--junit", junit, cwd=project, crash={"CRASH_AT": "finish"})
    assert first.returncode == -signal.SIGKILL, first.stdout + first.stderr
    assert attempts_of(first.stdout) == verdicts and receipt_of(first.stdout) is None
    [checkpoint] = (project / ".assay" / "runs" / "checkpoints").iterdir()
    assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "in_progress"
    assert not junit.exists() and not (tmp_path / "store" / "assay.db").exists()

    # Resumed, and killed again after its reporters, inside the store's transaction: the checkpoint
    # is sealed only after the record, so it is still open; the cut transaction left nothing behind.
    second = assay("agent", "run", "--project", project, "--resume", checkpoint, "--json", "--junit", junit,
                   cwd=project, crash={"CRASH_AT": "index-mid"})  # fmt: skip
    assert second.returncode == -signal.SIGKILL, second.stdout + second.stderr
    assert receipt_of(second.stdout) is not None and junit.exists()
    assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "in_progress"
    with sqlite3.connect(tmp_path / "store" / "assay.db") as store:
        assert store.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    store.close()
    assert listed_runs(assay, project, "agent") == []

    # The next resume evaluates nothing, reports the run again, records it and seals it.
    junit.unlink()
    third = assay("agent", "run", "--project", project, "--resume", checkpoint, "--json", "--junit", junit, cwd=project)
    assert third.returncode == 1, third.stdout + third.stderr
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("3", "1")
    receipt = receipt_of(third.stdout)
    assert receipt is not None and receipt["completion"] == "completed"
    assert (receipt["counts"]["passed"], receipt["counts"]["failed"]) == (2, 1)
    assert sorted(sends.read_text().splitlines()) == ["question 0", "question 1", "question 2"]  # asked once each
    assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "complete"
    [run] = listed_runs(assay, project, "agent")
    assert (run["counts"]["passed"], run["counts"]["failed"]) == (2, 1)
    assert run["summary"]["checkpoint"] == str(checkpoint)


def resumed_command(stderr: str) -> list[str]:
    """The arguments of the `Resume with `assay …`.` line a stopped run printed (without `assay`)."""
    [line] = [line for line in stderr.splitlines() if line.startswith("Resume with `")]
    return shlex.split(line[len("Resume with `"):-len("`.")])[1:]


def test_ctrl_c_while_a_finished_agent_run_is_recorded_says_so_and_its_resume_records_it_asking_nothing(
    tmp_path: Path, assay: Any
) -> None:
    project, sends = crash_project(tmp_path)

    # The summary is shown; Ctrl-C lands inside the store's transaction. It was "Interrupted." alone: nothing
    # said the run was not recorded, nor how to record it (its checkpoint was left, unnamed).
    stopped = assay("agent", "run", "--project", project, cwd=project, crash={"CRASH_AT": "interrupt-mid-index"})
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert "FAILED" in stopped.stdout and "Traceback" not in stopped.stderr
    assert "Interrupted while recording the run, which may not be in the results store yet" in stopped.stderr
    [checkpoint] = (project / ".assay" / "runs" / "checkpoints").iterdir()
    assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "in_progress"
    assert listed_runs(assay, project, "agent") == []

    resumed = assay(*resumed_command(stopped.stderr), cwd=project)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert sorted(sends.read_text().splitlines()) == ["question 0", "question 1", "question 2"]  # asked once each
    [run] = listed_runs(assay, project, "agent")
    assert (run["counts"]["passed"], run["counts"]["failed"]) == (2, 1)
    assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "complete"


def test_ctrl_c_while_a_finished_video_run_is_recorded_keeps_its_checkpoint_for_the_resume_that_records_it(
    tmp_path: Path, assay: Any
) -> None:
    eval_dir = number_eval(tmp_path, until=0.3)
    run = ("video", "run", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator")
    reads_numbers = {"PYTHONPATH": str(TESTS)}  # the adapter reads the frame numbers with tests/media.py
    stopped = assay(*run, cwd=tmp_path, crash={"CRASH_AT": "interrupt-mid-index", **reads_numbers})
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert "Interrupted while recording the run" in stopped.stderr and "Traceback" not in stopped.stderr
    assert listed_runs(assay, tmp_path, "video") == []

    resumed = assay(*resumed_command(stopped.stderr), cwd=tmp_path, crash=reads_numbers)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr  # (no threshold: failed samples exit 0)
    assert "0 evaluated in this run, 3 reused from the checkpoint" in resumed.stdout
    [recorded] = listed_runs(assay, tmp_path, "video")
    assert (recorded["counts"]["passed"], recorded["counts"]["failed"]) == (1, 2)


# ---------------------------------------------------------------------------------------------
# A doc run-case killed in the middle of a bundle write


def test_a_doc_run_case_killed_mid_write_leaves_no_torn_file_and_no_temporary_after_the_next_run(
    tmp_path: Path, assay: Any
) -> None:
    suite = make_suite(tmp_path)
    repo, bundle = suite.repo, suite.results / "nightly"
    run_case = ("doc", "run-case", "--case", "case-one", "--candidate", "candidates/partial.md")

    killed = assay(*run_case, "--run-id", "nightly", cwd=repo,
                   crash={"CRASH_AT": "mid-write", "CRASH_PATH": r"/results/nightly/\.?grades\.json"})  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    [left] = temporaries(repo)  # the kill landed inside the write: its temporary holds half the bytes
    assert left.parent == bundle and left.name.startswith(".grades.json.")
    assert not (bundle / "grades.json").exists() and not (bundle / "manifest.json").exists()
    for path in bundle.rglob("*.json"):  # what was written before the kill reads back whole
        json.loads(path.read_text())

    # Run again at once under the same id (CI retrying the job): it finishes the bundle.
    again = assay(*run_case, "--run-id", "nightly", cwd=repo)
    assert again.returncode == 0, again.stdout + again.stderr
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert json.loads((bundle / "grades.json").read_text())["verdict"] == "yellow"
    assert {entry["path"] for entry in manifest["artifacts"]} >= {"grades.json", "report.md"}

    # The next run-case, a minute later, under its own id: nothing a killed write left remains.
    past = time.time() - STALE_TEMPORARY_AGE_S - 5
    for path in temporaries(repo):
        os.utime(path, (past, past))
    following = assay(*run_case, cwd=repo)
    assert following.returncode == 0, following.stdout + following.stderr
    assert temporaries(repo) == []
    for path in suite.results.rglob("*.json"):
        json.loads(path.read_text())
    assert len(listed_runs(assay, repo, "doc")) == 2
