"""A stranger's eval-kit suite (an `adapter.mjs` run by node), written from the spec, under `assay doc`.

Each test runs the real `assay` command in a temporary git repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="the adapters here are .mjs, run by node")

ASSAY = [sys.executable, "-m", "assay"]

ADAPTER = """
export function gradeCandidate({candidateText, expectedItems}) {
  const findings = expectedItems.items.map(i => ({id: i.item_id, kind: i.kind, severity: i.severity,
    verdict: candidateText.includes(i.text) ? "covered" : "missing", evidence: "looked for " + i.text}));
  return {verdict: findings.every(f => f.verdict === "covered") ? "green" : "red", findings};
}
export function renderDeterministicReport({caseId, grades}) {
  return `# Eval Report: ${caseId}\\n\\nVerdict: ${grades.verdict}`;
}
"""

LEGACY_GRADER = """
export default function ({candidateText, expectedItems}) {
  const findings = expectedItems.items.map(i => ({id: i.item_id, kind: i.kind, severity: i.severity,
    verdict: candidateText.includes(i.text) ? "covered" : "missing", evidence: "e"}));
  return {verdict: findings.every(f => f.verdict === "covered") ? "green" : "yellow", findings};
}
"""
LEGACY_REPORTER = "export function renderReport({caseId, grades}) { return `# Legacy ${caseId}: ${grades.verdict}`; }\n"


def _suite(root: Path, config: dict) -> Path:
    (root / ".git").mkdir(parents=True)
    evals = root / "evals"
    case = evals / "cases" / "c1"
    case.mkdir(parents=True)
    (case / "case-manifest.json").write_text(json.dumps({
        "schema_version": "mine.case.v1", "case_id": "c1",
        "artifacts": [{"role": "grader_input", "path": "expected-items.json"}],
    }))
    (case / "expected-items.json").write_text(json.dumps(
        {"items": [{"item_id": "goal", "kind": "goal", "severity": "critical", "text": "ship the importer"}]}
    ))
    (root / "good.md").write_text("# Notes\n\nWe ship the importer.\n")
    (evals / "eval-kit.config.json").write_text(json.dumps({
        "schema_version": "eval-kit.config.v1", "suite_id": "mine", "suite_root": ".", "results_root": "results",
        **config,
    }))
    return root


def _assay(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_STORE": str(root / "store")}
    return subprocess.run([*ASSAY, "doc", *args], cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_junit_inside_this_runs_own_bundle_is_refused_before_the_run(tmp_path: Path) -> None:
    """`--junit evals/results/<run-id>/manifest.json` was accepted: the XML was written over the manifest the run
    had just finished, so the bundle looked unfinished (or `report.md` no longer matched its sha256), exit 0."""
    root = _suite(tmp_path, {"adapter": "adapter.mjs", "cases": {"root": "cases"}})
    (root / "evals" / "adapter.mjs").write_text(ADAPTER)
    for name in ("manifest.json", "report.md"):
        result = _assay(root, "run-case", "--case", "c1", "--candidate", "good.md", "--run-id", "r1",
                        "--junit", f"evals/results/r1/{name}")
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.strip() == (
            f"Execution failed: --junit evals/results/r1/{name} is inside this run's result bundle evals/results/r1, "
            "which the run writes; give the report a file outside it, e.g. --junit junit.xml"
        )
        assert not (root / "evals" / "results" / "r1").exists()  # refused before anything was written
    # Next to the bundle, not in it, is fine, and the bundle stays whole.
    result = _assay(root, "run-case", "--case", "c1", "--candidate", "good.md", "--run-id", "r1",
                    "--junit", "evals/results/r1.xml")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((root / "evals" / "results" / "r1" / "manifest.json").read_text())
    assert manifest["run_type"] == "deterministic"
    assert (root / "evals" / "results" / "r1.xml").read_text().startswith("<?xml")


def _legacy_suite(root: Path, graders: dict, reporters: dict, defaults: dict) -> Path:
    root = _suite(root, {"case_manifests": ["cases/c1/case-manifest.json"], "graders": graders,
                         "reporters": reporters, "runner_defaults": defaults})
    legacy = root / "evals" / "legacy"
    legacy.mkdir()
    (legacy / "grader.mjs").write_text(LEGACY_GRADER)
    (legacy / "reporter.mjs").write_text(LEGACY_REPORTER)
    return root


GRADERS = {"kw": "legacy/grader.mjs"}
REPORTERS = {"md": "legacy/reporter.mjs"}
DEFAULTS = {"grader": "kw", "reporter": "md"}


def test_doctor_loads_the_legacy_grader_and_reporter_run_case_uses(tmp_path: Path) -> None:
    root = _legacy_suite(tmp_path, GRADERS, REPORTERS, DEFAULTS)
    doctor = _assay(root, "doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert not any("grader and reporter modules" in line for line in doctor.stdout.splitlines())
    assert doctor.stdout.splitlines()[-1] == "Doctor passed (7 checks)."  # eval-kit's count: the modules add no line
    assert _assay(root, "run-case", "--case", "c1", "--candidate", "good.md").returncode == 0


@pytest.mark.parametrize(
    ("graders", "defaults", "said"),
    [
        # a misspelt module path: doctor passed, run-case failed to load it
        ({"kw": "legacy/grader.mj"}, DEFAULTS, "failed to load adapter module from "),
        # `runner_defaults.reporter` naming no reporter: doctor passed, run-case found no reporter
        (GRADERS, {"grader": "kw", "reporter": "mdx"}, "no reporter configured (reporter 'mdx' is not in reporters"),
    ],
)
def test_doctor_fails_where_run_case_would_on_the_legacy_modules(tmp_path: Path, graders, defaults, said) -> None:
    root = _legacy_suite(tmp_path, graders, REPORTERS, defaults)
    run = _assay(root, "run-case", "--case", "c1", "--candidate", "good.md")
    assert run.returncode == 2 and said in run.stderr, run.stderr
    doctor = _assay(root, "doctor")
    assert doctor.returncode == 2, doctor.stdout
    assert "Doctor passed" not in doctor.stdout
    assert said in doctor.stderr, doctor.stderr


def test_doctor_leaves_the_legacy_modules_alone_when_run_case_is_switched_off(tmp_path: Path) -> None:
    root = _legacy_suite(tmp_path, {"kw": "legacy/grader.mj"}, REPORTERS, DEFAULTS)
    config_path = root / "evals" / "eval-kit.config.json"
    config = json.loads(config_path.read_text())
    config["methods"] = {"deterministic": {"enabled": False}}
    config_path.write_text(json.dumps(config))
    doctor = _assay(root, "doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert not any("grader and reporter" in line for line in doctor.stdout.splitlines())


REPORT_ADAPTER = ADAPTER + """
import fs from "node:fs";
export async function compileReport({runs, resultDir, resolver}) {
  const source = resolver.resolveRunDir(runs.deterministic);
  const text = fs.readFileSync(source + "/report.md", "utf8");
  return {reportContent: "# Manual Combined Report\\n\\n" + text, caseIds: ["c1"], artifacts: [], outputFiles: []};
}
"""


@pytest.mark.parametrize("flag", ["--deterministic", "--judge-coverage"])
def test_report_with_the_id_of_a_run_it_reads_is_refused_and_that_run_is_kept(tmp_path: Path, flag: str) -> None:
    """`report --run-id r1 --deterministic r1` cleared and rewrote the bundle it was to read: the graded run's
    manifest became a manual-report one and its report.md was replaced, exit 0."""
    root = _suite(tmp_path, {"adapter": "adapter.mjs", "cases": {"root": "cases"}})
    (root / "evals" / "adapter.mjs").write_text(REPORT_ADAPTER)
    assert _assay(root, "run-case", "--case", "c1", "--candidate", "good.md", "--run-id", "r1").returncode == 0
    bundle = root / "evals" / "results" / "r1"
    before = {path.name: path.read_bytes() for path in bundle.iterdir() if path.is_file()}

    result = _assay(root, "report", "--run-id", "r1", flag, "r1")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == (
        f"Execution failed: --run-id r1 is also the {flag} run the report reads, and the report would be written "
        "over it; give the report an id of its own, e.g. --run-id report-r1"
    )
    assert {path.name: path.read_bytes() for path in bundle.iterdir() if path.is_file()} == before

    result = _assay(root, "report", "--run-id", "report-r1", "--deterministic", "r1")
    assert result.returncode == 0, result.stderr
    assert json.loads((bundle / "manifest.json").read_text())["run_type"] == "deterministic"
    assert "# Eval Report: c1" in (root / "evals" / "results" / "report-r1" / "report.md").read_text()
