"""What a newcomer's mistakes do, run as `python -m assay doc …` in a real process: each is one clear
line on stderr naming what to fix, with exit 2, never a traceback, an OS error or the adapter's own
exit code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doc_suites import make_suite


def assay_doc(suite, *args: str, store: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "ASSAY_STORE": str(store / "assay.db")}
    environment.pop("ASSAY_DOC_HOOK_TIMEOUT", None)
    return subprocess.run(
        [sys.executable, "-m", "assay", "doc", *args], cwd=suite.repo, env=environment,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


RUN = ("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r1")

PYTHON_ADAPTER = '''
import sys


def grade_candidate(grade):
    {grade}
    return {{"verdict": "green", "findings": []}}


def render_report(report):
    {report}
    return "# Report"


def validate_fixtures(fixtures):
    {fixtures}
'''


@pytest.fixture
def python_suite(tmp_path):
    built = make_suite(tmp_path, adapter="")
    built.update_config(adapter="adapter.py")
    return built


def _adapter(suite, grade: str = "pass", report: str = "pass", fixtures: str = "pass") -> None:
    (suite.evals / "adapter.py").write_text(PYTHON_ADAPTER.format(grade=grade, report=report, fixtures=fixtures))


def test_sys_exit_in_a_grader_fails_the_command_instead_of_ending_assay_with_success(python_suite, tmp_path):
    # Before: exit 0, nothing on stdout or stderr, and no finished bundle: CI saw a passing eval.
    _adapter(python_suite, grade="sys.exit()")
    result = assay_doc(python_suite, *RUN, store=tmp_path / "store")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip().splitlines() == [
        "Execution failed: grade_candidate failed: SystemExit: it called sys.exit(); an adapter must return or "
        "raise, not exit the process (adapter.py:6)"
    ]
    assert "Traceback" not in result.stderr
    assert not (python_suite.results / "r1" / "manifest.json").exists()


def test_sys_exit_in_a_reporter_is_not_taken_for_a_red_verdict(python_suite, tmp_path):
    # Before: `sys.exit("bye")` printed "bye" and exited 1, a red verdict's code.
    _adapter(python_suite, report='sys.exit("bye")')
    result = assay_doc(python_suite, *RUN, store=tmp_path / "store")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "render_report failed: SystemExit: it called sys.exit('bye')" in result.stderr
    assert "(adapter.py:11)" in result.stderr


def test_sys_exit_in_validate_fixtures_fails_doctor_with_exit_2_and_a_reason(python_suite, tmp_path):
    # Before: doctor and validate-fixtures stopped with exit 5 and not a word on stderr.
    _adapter(python_suite, fixtures="sys.exit(5)")
    for command in ("doctor", "validate-fixtures"):
        result = assay_doc(python_suite, command, store=tmp_path / "store")
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert result.stderr.strip().splitlines() == [
            "Execution failed: validate_fixtures failed: SystemExit: it called sys.exit(5); an adapter must return "
            "or raise, not exit the process (adapter.py:16)"
        ]


def test_an_adapter_that_fails_at_import_says_what_it_raised_and_where(python_suite, tmp_path):
    # Before: `... from evals/adapter.py: 3` for sys.exit(3), and a bare message without type or line.
    (python_suite.evals / "adapter.py").write_text("import sys\n\nsys.exit(3)\n")
    result = assay_doc(python_suite, *RUN, store=tmp_path / "store")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"Execution failed: failed to load adapter module from {python_suite.evals / 'adapter.py'}: SystemExit: it "
        "called sys.exit(3); an adapter must return or raise, not exit the process (adapter.py:3)"
    )
    (python_suite.evals / "adapter.py").write_text("import json\nimport not_installed_anywhere\n")
    result = assay_doc(python_suite, *RUN, store=tmp_path / "store")
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "adapter.py: ModuleNotFoundError: No module named 'not_installed_anywhere' (adapter.py:2)"
    )


@pytest.mark.parametrize("results_root", ["cases/case-one/input.md", "eval-kit.config.json/results"])
def test_a_results_root_that_is_a_file_names_the_setting_in_doctor_and_run_case(tmp_path, results_root):
    # Before: run-case said `internal error: NotADirectoryError: [Errno 20] Not a directory: '…/r1'`.
    suite = make_suite(tmp_path)
    suite.update_config(results_root=results_root)
    blocking = results_root.removesuffix("/results")
    expected = (
        f"results root evals/{results_root} cannot be made: evals/{blocking} is a file, not a folder; fix "
        "results_root in evals/eval-kit.config.json (it is relative to that file's folder)"
    )
    result = assay_doc(suite, *RUN, store=tmp_path / "store")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip() == f"Execution failed: {expected}"
    result = assay_doc(suite, "doctor", store=tmp_path / "store")
    assert result.returncode == 2
    assert result.stderr.strip() == f"Execution failed: {expected}"


def test_a_run_id_taken_by_a_file_says_so(tmp_path):
    suite = make_suite(tmp_path)
    suite.results.mkdir()
    (suite.results / "r1").write_text("notes\n")
    result = assay_doc(suite, *RUN, store=tmp_path / "store")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip() == (
        "Execution failed: run folder evals/results/r1 is a file, not a folder; give another --run-id or move the file"
    )
    assert (suite.results / "r1").read_text() == "notes\n"  # what the user wrote is left alone


NODE_ADAPTER = """
export const gradeCandidate = () => {returned};
export const renderDeterministicReport = () => "# Report";
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(
    ("returned", "said"),
    [
        ('({verdict: "Green", findings: []})', "returned verdict 'Green'"),
        ("undefined", "returned nothing"),
        ('["green"]', "returned a list, not an object"),
    ],
)
def test_grades_the_schema_refuses_name_the_hook_the_adapter_and_the_shape(tmp_path, returned, said):
    # Before: only `grades failed schema validation: /verdict must be equal to one of the allowed values`,
    # naming neither the adapter nor the verdicts it may return.
    suite = make_suite(tmp_path, adapter="")
    suite.update_config(adapter="adapter.mjs")
    (suite.evals / "adapter.mjs").write_text(NODE_ADAPTER.format(returned=returned))
    result = assay_doc(suite, *RUN, store=tmp_path / "store")
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Execution failed: grades failed schema validation: ")  # eval-kit's words first
    assert line.endswith(
        f"(gradeCandidate in evals/adapter.mjs {said}; it must return {{verdict: red|yellow|green|great, "
        "findings: [{id, kind, severity, verdict, evidence}, ...]}, each finding's fields non-empty strings)"
    )
    assert not (suite.results / "r1" / "manifest.json").exists()


@pytest.mark.parametrize(
    ("junit", "what"),
    [
        ("candidates/good.md", "the --candidate file"),
        ("./candidates/good.md", "the --candidate file"),
        ("evals/eval-kit.config.json", "the suite config"),
        ("evals/full_adapter.py", "the adapter"),
        ("evals/cases/case-one/expected-items.json", "a case file"),
    ],
)
def test_junit_never_overwrites_a_file_the_run_reads(tmp_path, junit, what):
    # Before: `--junit candidates/good.md` (a slip for --candidate) wrote the JUnit XML over the user's
    # document and exited 0.
    suite = make_suite(tmp_path)
    before = (suite.repo / junit).read_bytes()
    result = assay_doc(suite, *RUN, "--junit", junit, store=tmp_path / "store")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip() == (
        f"Execution failed: --junit {junit} is {what}, which the run reads; give the report its own file, "
        "e.g. --junit junit.xml"
    )
    assert (suite.repo / junit).read_bytes() == before
    assert not (suite.results / "r1").exists()


def test_junit_still_replaces_its_own_report(tmp_path):
    suite = make_suite(tmp_path)
    (suite.repo / "junit.xml").write_text("<testsuites name=\"old\"/>")
    result = assay_doc(suite, *RUN, "--junit", "junit.xml", store=tmp_path / "store")
    assert result.returncode == 0, result.stderr
    assert "<testsuites" in (suite.repo / "junit.xml").read_text()
