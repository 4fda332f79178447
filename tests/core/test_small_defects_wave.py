"""Small user-facing defects of the shared machinery (the store's reindex, report paths), each pinned where found."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _assay(*arguments: str, cwd: Path, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=cwd,
                          env={**os.environ, "ASSAY_STORE": str(store)}, capture_output=True, text=True, timeout=120,
                          check=False)


def test_reindex_indexes_a_copied_run_record_once_and_names_the_copy(tmp_path):
    """A run's record folder copied beside it (`cp -r <run> "<run> copy"`) was indexed as a second run: "Indexed 2
    run(s)", with the run pointing at the copy."""
    store = tmp_path / "store" / "assay.db"
    (tmp_path / "junit.xml").write_text('<testsuite name="s" tests="1"><testcase name="a"/></testsuite>\n')
    assert _assay("runs", "import", "junit.xml", cwd=tmp_path, store=store).returncode == 0
    records = store.parent / "records"
    (run,) = records.iterdir()
    shutil.copytree(run, records / f"{run.name} copy")
    shutil.copytree(run, records / "a-backup")  # sorted before the run's own folder
    done = _assay("runs", "reindex", cwd=tmp_path, store=store)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"Indexed 1 run(s) into {store}",
        f"Skipped a copy of a run record: {records / 'a-backup'} (the same run as {run}, which is indexed)",
        f"Skipped a copy of a run record: {records / f'{run.name} copy'} (the same run as {run}, which is indexed)",
    ]
    shown = _assay("runs", "show", run.name, "--json", cwd=tmp_path, store=store)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["record_path"] == str(run)  # the run's own folder, not a copy


POM = ('<?xml version="1.0" encoding="UTF-8"?>\n<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
       "  <modelVersion>4.0.0</modelVersion>\n</project>\n")


def test_an_xml_file_that_is_no_junit_report_is_refused_as_the_junit_path(tmp_path):
    """`--junit pom.xml` (XML, so it passed the check) was replaced by the run's report."""
    from assay.core.fsutil import check_report_path
    from assay.errors import UsageError

    pom = tmp_path / "pom.xml"
    pom.write_text(POM, encoding="utf-8")
    with pytest.raises(UsageError) as refused:
        check_report_path("--junit", pom)
    assert str(refused.value) == (
        f"--junit {pom} is an XML file whose root element is <project>, not a JUnit report (<testsuites> or "
        "<testsuite>), which the report would replace; give the report a file of its own, e.g. --junit junit.xml")
    for report in ('<?xml version="1.0"?>\n<testsuites tests="0"></testsuites>\n', '<testsuite name="other tool"/>\n'):
        earlier = tmp_path / "junit.xml"
        earlier.write_text(report, encoding="utf-8")
        check_report_path("--junit", earlier)  # an earlier report (ours or another tool's) is still replaced


def test_a_run_given_a_pom_as_its_junit_report_leaves_the_pom_alone(tmp_path):
    store = tmp_path / "store" / "assay.db"
    assert _assay("video", "init", "eval", cwd=tmp_path, store=store).returncode == 0
    (tmp_path / "pom.xml").write_text(POM, encoding="utf-8")
    done = _assay("video", "run", "--quiet", "--junit", "pom.xml", cwd=tmp_path, store=store)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--junit pom.xml is an XML file whose root element is <project>" in done.stdout
    assert (tmp_path / "pom.xml").read_text(encoding="utf-8") == POM
    again = _assay("video", "run", "--quiet", "--junit", "junit.xml", cwd=tmp_path, store=store)
    assert again.returncode == 0 and _assay("video", "run", "--quiet", "--junit", "junit.xml", cwd=tmp_path,
                                            store=store).returncode == 0  # its own report is replaced run after run


def test_a_name_with_its_words_swapped_is_suggested():
    """`Experiment(reuse_sandbox=True)` suggested `sandbox`: difflib scores swapped words low."""
    from assay.core.format import did_you_mean

    assert did_you_mean("reuse_sandbox", ["sandbox", "sandbox_reuse", "model"]) == "; did you mean 'sandbox_reuse'?"
    assert did_you_mean("count-evals", ["evals_count", "count"]) == "; did you mean 'evals_count'?"
    assert did_you_mean("sandbox", ["sandbox_reuse", "timeout"]) == "; did you mean 'sandbox_reuse'?"  # as before
