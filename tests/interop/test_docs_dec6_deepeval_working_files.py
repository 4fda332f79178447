"""DeepEval keeps three JSON files in `.deepeval/` beside a run, DEEPEVAL_RESULTS_FOLDER or not: the latest run
whole (`.latest_run_full.json`, what the page's test_run_*.json holds), its working copy (`.latest_test_run.json`,
the run wrapped in `testRunData`) and a metric cache. A user without DEEPEVAL_RESULTS_FOLDER who imported the
working copy, the file whose name says "test run", read "cannot tell which tool wrote this file; give --format …",
and with `--format deepeval` "a DeepEval test run needs a `testCases` list": neither named the file to give. The
run here is a real one, by DeepEval's `evaluate` (tools/deepeval_run.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "own-store" / "assay.db"))


def _assay(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False, env=dict(os.environ))


def test_deepevals_working_files_name_the_run_to_import(deepeval_run):
    kept = deepeval_run.path.parent.parent / ".deepeval"  # the folder DeepEval ran in
    full = kept / ".latest_run_full.json"
    assert full.read_bytes() == deepeval_run.path.read_bytes()  # the same run as the page's test_run_*.json
    give = (f"which assay does not read; import {full} beside it (the latest test run, saved whole), or the "
            f"test_run_*.json DeepEval saves when DEEPEVAL_RESULTS_FOLDER is set\n")
    for name, what in ((".latest_test_run.json", "its working copy of the test run in progress"),
                       (".deepeval-cache.json", "its cache of metric results, not a test run")):
        path = kept / name
        assert path.is_file(), sorted(kept.iterdir())
        for given in ([], ["--format", "deepeval"]):
            done = _assay("runs", "import", str(path), *given)
            assert done.returncode == 2, done.stdout
            assert done.stderr == f"Error: {path}: this is DeepEval's {name}, {what}, {give}", done.stderr
    # the file it names imports the run, as the page says
    imported = _assay("runs", "import", str(full), "--json")
    assert imported.returncode == 0, imported.stderr
    (entry,) = json.loads(imported.stdout)["imported"]
    assert entry["format"] == "deepeval" and entry["unit_count"] == len(json.loads(full.read_text())["testCases"])
