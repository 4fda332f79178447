"""The pytest plugin under xdist (one run per worker was recorded) and in an ordinary test suite (it imported assay)."""

from __future__ import annotations

import os
import shutil
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"


def pytest_in(folder: Path, store: Path, *arguments: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments], cwd=folder,
        env={**os.environ, "ASSAY_STORE": str(store), **env}, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def assay_in(folder: Path, store: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", *arguments], cwd=folder, env={**os.environ, "ASSAY_STORE": str(store)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def recorded_units(project: Path, store: Path, run_id: str) -> list[tuple[str, str]]:
    """(unit id, verdict) of each unit of the run's record, in its order."""
    record = Path(json.loads(assay_in(project, store, "runs", "show", run_id, "--json").stdout)["record_path"])
    units = [json.loads(line) for line in (record / "units.jsonl").read_text(encoding="utf-8").splitlines()]
    return [(unit["unit_id"], unit["verdict"]) for unit in units]


def test_a_session_on_xdist_workers_is_recorded_as_one_run_of_every_worker_s_attempts(tmp_path):
    """Each worker recorded its own share as a run (two runs of four attempts, the latest half the suite); then
    none was recorded. Now the controller records the workers' shares as one run, in collection order, the same
    units a session without -n records."""
    pytest.importorskip("xdist")
    project = tmp_path / "shop"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    store = tmp_path / "store" / "assay.db"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    done = pytest_in(project, store, "-n", "2", TMPDIR=str(temporary))
    assert "1 failed, 7 passed" in done.stdout, done.stdout + done.stderr
    assert "not recorded" not in done.stdout, done.stdout
    [run] = json.loads(assay_in(project, store, "runs", "list", "--json").stdout)["runs"]
    assert run["summary"]["attempts"] == {"passed": 7, "failed": 1}, run

    serial_store = tmp_path / "serial" / "assay.db"
    assert "1 failed, 7 passed" in pytest_in(project, serial_store, "-p", "no:xdist").stdout
    [serial] = json.loads(assay_in(project, serial_store, "runs", "list", "--json").stdout)["runs"]
    assert recorded_units(project, store, run["run_id"]) == recorded_units(project, serial_store, serial["run_id"])
    assert not list(temporary.glob("assay-*")), "the workers' share files are left behind"


def test_an_ordinary_test_suite_imports_nothing_of_assay_beyond_the_plugin(tmp_path):
    suite = tmp_path / "suite"
    (suite / "tests").mkdir(parents=True)
    (suite / "tests" / "test_plain.py").write_text("def test_plain():\n    assert True\n", encoding="utf-8")
    seen = tmp_path / "modules.txt"
    (suite / "conftest.py").write_text(
        "import sys\n\n\ndef pytest_unconfigure(config):\n"
        f"    with open({str(seen)!r}, 'w') as out:\n"
        "        out.write('\\n'.join(sorted(m for m in sys.modules if m.startswith('assay.agent.'))))\n",
        encoding="utf-8",
    )
    done = pytest_in(suite, tmp_path / "store" / "assay.db", "-k", "plain")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
    # Discovery, the project loader and the recording pipeline were imported for every session (~0.2 s).
    assert seen.read_text(encoding="utf-8").split() == ["assay.agent.pytest_plugin"]


def test_the_plugins_evals_folder_name_is_the_projects():
    from assay.agent.project import EVALS_DIR
    from assay.agent.pytest_plugin import _EVALS_DIR

    assert _EVALS_DIR == EVALS_DIR
