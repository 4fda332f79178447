"""The pytest plugin: a project's agent evals run as pytest items, selected with -k and -m, recorded in the store."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    return root


def pytest_in(project: Path, store: Path, *arguments: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *arguments], cwd=project,
        env={**os.environ, "ASSAY_STORE": str(store), **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_every_eval_is_an_item_whose_failure_text_is_its_failing_assertions(project, tmp_path):
    done = pytest_in(project, tmp_path / "store" / "assay.db")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 7 passed" in done.stdout
    assert "FAILED evals/wrong_on_purpose_eval.py::wrong_on_purpose[baseline]" in done.stdout
    assert "mismatched: called_tool('cancel_order')" in done.stdout
    assert "PASSED evals/orders/refund_eval.py::orders/refund[baseline]" in done.stdout


def test_k_and_tag_markers_select_evals(project, tmp_path):
    by_name = pytest_in(project, tmp_path / "a" / "assay.db", "-k", "refund")
    assert by_name.returncode == 0 and "2 passed, 6 deselected" in by_name.stdout, by_name.stdout
    by_tag = pytest_in(project, tmp_path / "b" / "assay.db", "-m", "hitl")
    assert by_tag.returncode == 0 and "deselected" in by_tag.stdout and "passed" in by_tag.stdout, by_tag.stdout


def test_a_misspelt_tag_in_m_names_the_tag_meant(project, tmp_path):
    # `-m ordrs` deselected all eight evals and said nothing; `-m "orders and not hitll"` kept the hitl ones.
    typo = pytest_in(project, tmp_path / "a" / "assay.db", "-m", "ordrs")
    assert typo.returncode == 5, typo.stdout + typo.stderr
    assert ("assay: -m 'ordrs': no eval has the tag 'ordrs'; did you mean 'orders'? "
            "(the evals' tags: hitl, memory, orders, smalltalk)") in typo.stdout
    inside = pytest_in(project, tmp_path / "b" / "assay.db", "-m", "orders and not hitll")
    assert "no eval has the tag 'hitll'; did you mean 'hitl'?" in inside.stdout, inside.stdout
    # Tags that exist, pytest's own markers and a marker of another test are no typo.
    (project / "evals" / "test_plain.py").write_text(
        "import pytest\n\n\n@pytest.mark.slowish\ndef test_plain():\n    pass\n", encoding="utf-8"
    )
    fine = pytest_in(project, tmp_path / "c" / "assay.db", "-m", "(hitl or slowish) and not skip")
    assert fine.returncode == 0 and "no eval has the tag" not in fine.stdout, fine.stdout


def test_the_session_is_recorded_in_the_results_store(project, tmp_path):
    store = tmp_path / "store" / "assay.db"
    pytest_in(project, store)
    listed = subprocess.run(
        [sys.executable, "-m", "assay", "runs", "show", "latest", "--json"], cwd=project,
        env={**os.environ, "ASSAY_STORE": str(store)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    import json

    run = json.loads(listed.stdout)
    assert run["kind"] == "agent" and run["unit_count"] == 8 and run["counts"]["failed"] == 1



def test_a_later_cli_run_carries_what_the_session_ran(project, tmp_path):
    """The session's attempts carry their execution identity: `assay agent run` after `pytest -k refund`
    carried nothing and reran both refund evals, saying they were "recorded before carry"."""
    import json

    store = tmp_path / "store" / "assay.db"
    done = pytest_in(project, store, "-k", "refund")
    assert done.returncode == 0, done.stdout + done.stderr
    dry = subprocess.run(
        [sys.executable, "-m", "assay", "agent", "run", "--dry", "--json"], cwd=project,
        env={**os.environ, "ASSAY_STORE": str(store)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    actions = {slot["eval_id"]: (slot["action"], slot["code"]) for slot in json.loads(dry.stdout)["slots"]}
    assert actions["orders/refund"][0] == "carry" and actions["orders/refund_denied"][0] == "carry", actions
    assert actions["orders/status"] == ("execute", "new-eval"), actions

def test_a_sandbox_eval_runs_under_pytest_too(tmp_path):
    root = tmp_path / "coder"
    shutil.copytree(EXAMPLE / "sandbox", root, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    done = pytest_in(root, tmp_path / "store" / "assay.db")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_the_short_summary_of_a_failed_eval_gives_its_first_failing_assertion(project, tmp_path):
    done = pytest_in(project, tmp_path / "store" / "assay.db", COLUMNS="400")
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("FAILED ")]
    assert line.startswith(
        "FAILED evals/wrong_on_purpose_eval.py::wrong_on_purpose[baseline] - mismatched: called_tool('cancel_order')"
    ), line


def test_a_project_that_cannot_load_is_one_line_per_eval_file_not_assay_frames(project, tmp_path):
    experiment = project / "experiments" / "baseline.py"
    experiment.write_text(experiment.read_text() + "\nthis is (\n")
    done = pytest_in(project, tmp_path / "store" / "assay.db")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"assay project {project}: could not import {experiment}: SyntaxError: '(' was never closed" in done.stdout
    assert "Traceback" not in done.stdout and "pytest_plugin.py" not in done.stdout, done.stdout


SLOW_EVAL = """
import asyncio
from pathlib import Path

from assay.agent import define_eval


@define_eval(timeout=120)
async def test(t):
    Path({started!r}).touch()
    await asyncio.sleep(60)
"""


def test_a_session_stopped_with_ctrl_c_is_not_recorded_as_a_run(tmp_path):
    """As after Ctrl-C in `assay agent run`: `runs compare latest` must not read a cut-short session as a run."""
    import json
    import signal
    import time

    root = tmp_path / "weather"
    root.mkdir()
    made = subprocess.run([sys.executable, "-m", "assay", "agent", "init"], cwd=root, capture_output=True, text=True,
                          timeout=60)
    assert made.returncode == 0, made.stderr
    started = tmp_path / "started"
    (root / "evals" / "zz_slow_eval.py").write_text(SLOW_EVAL.format(started=str(started)))  # after weather_eval.py
    store = tmp_path / "store" / "assay.db"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
        env={**os.environ, "ASSAY_STORE": str(store)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert started.exists(), process.communicate()
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 2, output  # pytest's "interrupted"
    assert f"the session was interrupted, so its 1 finished attempt(s) of {root} are not recorded" in output
    listed = subprocess.run([sys.executable, "-m", "assay", "runs", "list", "--json"], cwd=root, capture_output=True,
                            text=True, env={**os.environ, "ASSAY_STORE": str(store)}, timeout=60)
    assert listed.returncode != 0 or json.loads(listed.stdout) == [], listed.stdout
