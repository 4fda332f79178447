"""`assay runs …` as a new user meets it: the figures `flaky` prints and what `merge` says of a run it cannot take."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HISTORY = REPO / "docs" / "examples" / "history"


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    """A store of each test's own: the session's shared one may hold a run another test imported from the same
    bytes, which an import then finds "Already imported"."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "own-store" / "assay.db"))


def _assay(*arguments: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=cwd, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=120, check=False)


def test_flaky_counts_the_runs_that_judged_a_unit_not_the_runs_that_carried_it(tmp_path):
    """Runs that carried every attempt forward (no `--rerun`) judged nothing: "2 passed, 8 failed over 10 run(s)"
    read as one trial a run where two of those runs added none."""
    project = tmp_path / "history"
    shutil.copytree(HISTORY, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    env = {"ASSAY_STORE": str(tmp_path / "store.db")}
    for run in (1, 2, 3, 4):
        done = _assay("agent", "run", "--quiet", "--rerun", "all", cwd=project, env={**env, "SHOP_RUN": str(run)})
        assert done.returncode in (0, 1), done.stdout + done.stderr
    for run in (5, 6):  # nothing changed: every attempt is carried from the run before
        done = _assay("agent", "run", "--quiet", cwd=project, env={**env, "SHOP_RUN": str(run)})
        assert done.returncode in (0, 1), done.stdout + done.stderr
    flaky = _assay("runs", "flaky", "--json", cwd=project, env=env)
    assert flaky.returncode == 0, flaky.stderr
    (series,) = json.loads(flaky.stdout)["series"]
    assert len(series["runs"]) == 6
    assert series["flaky"], "the example's lucky answers flip within four runs"
    for unit in series["flaky"]:
        assert unit["passed"] + unit["failed"] == 4
        assert unit["runs"] == 4, unit
    text = _assay("runs", "flaky", cwd=project, env=env).stdout
    assert "failed over 4 run(s))" in text and "over 6 run(s))" not in text


def test_merging_an_imported_run_says_it_is_no_shard_run(tmp_path):
    (tmp_path / "junit.xml").write_text('<testsuite name="s" tests="1"><testcase name="a"/></testsuite>\n')
    imported = _assay("runs", "import", "junit.xml", "--json", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    run_id = json.loads(imported.stdout)["imported"][0]["run_id"]
    done = _assay("runs", "merge", run_id, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"Error: run {run_id} is not a shard run: it is another tool's log, imported with "
                           "`assay runs import`; give the runs `assay video|agent run --shard i/n` recorded\n")
    assert "unknown kind" not in done.stderr and not done.stdout


def test_reindex_where_there_is_no_store_and_no_record_says_so_and_makes_nothing(tmp_path):
    """Run in another folder than the repository's, it made `.assay/assay.db` there and said "Indexed 0 run(s)"."""
    env = {name: value for name, value in os.environ.items() if name != "ASSAY_STORE"}
    done = subprocess.run([sys.executable, "-m", "assay", "runs", "reindex"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr == (f"Error: no results store at {tmp_path / '.assay' / 'assay.db'} and no run records in "
                           f"{tmp_path / '.assay' / 'records'}: nothing to index; run it in the repository whose runs to "
                           "index (or set ASSAY_STORE to its store)\n")
    assert list(tmp_path.iterdir()) == []
    # where there are records, it indexes them as ever
    (tmp_path / "junit.xml").write_text('<testsuite name="s" tests="1"><testcase name="a"/></testsuite>\n')
    imported = subprocess.run([sys.executable, "-m", "assay", "runs", "import", "junit.xml"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
    assert imported.returncode == 0, imported.stderr
    for name in ("assay.db", "assay.db-wal", "assay.db-shm"):
        (tmp_path / ".assay" / name).unlink(missing_ok=True)
    again = subprocess.run([sys.executable, "-m", "assay", "runs", "reindex"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120, check=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("Indexed 1 run(s) into ")
