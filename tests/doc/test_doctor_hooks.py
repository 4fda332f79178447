"""`doctor` fails when the adapter lacks a hook an enabled method calls. Before, an adapter with no
`gradeCandidate` (an empty file, a renamed function) passed doctor with `ok - adapter ... loads`,
and the first `run-case` failed with `grader module does not export a grading function`."""

from __future__ import annotations

import json

import pytest

from doc_suites import invoke, make_suite


def test_an_adapter_without_a_grader_fails_doctor_when_run_case_is_on(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert invoke("init").exit_code == 0
    (tmp_path / "evals" / "adapter.mjs").write_text("export const somethingElse = () => 1;\n")
    doctor = invoke("doctor")
    assert doctor.exit_code == 2 and "Doctor passed" not in doctor.stdout
    assert doctor.stderr.strip() == (
        "Execution failed: grader module does not export a grading function: run-case requires the adapter to "
        "export grade_candidate or gradeCandidate (methods.deterministic is enabled in evals/eval-kit.config.json)"
    )
    config_path = tmp_path / "evals" / "eval-kit.config.json"
    config = json.loads(config_path.read_text())
    config["methods"]["deterministic"]["enabled"] = False  # a suite that only judges needs no grader
    config_path.write_text(json.dumps(config))
    assert invoke("doctor").exit_code == 0


@pytest.mark.parametrize(
    ("method", "function", "command"),
    [
        ("judge_coverage", "resolve_pointwise_vars", "judge-coverage"),
        ("judge_pairwise", "resolve_pairwise_vars", "judge-pairwise"),
        ("generate", "resolve_generation_vars", "generate"),
    ],
)
def test_an_adapter_without_an_enabled_model_hook_fails_doctor(tmp_path, monkeypatch, method, function, command):
    suite = make_suite(tmp_path)
    suite.enable(method)
    monkeypatch.chdir(suite.repo)
    monkeypatch.setenv("ASSAY_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    assert invoke("doctor").exit_code == 0
    adapter = suite.evals / "full_adapter.py"
    adapter.write_text(adapter.read_text().replace(f"def {function}(", f"def _unused_{function}("))
    doctor = invoke("doctor")
    assert doctor.exit_code == 2 and "Doctor passed" not in doctor.stdout
    assert f"{command} requires the adapter to export {function}" in doctor.stderr
    assert f"(methods.{method} is enabled in evals/eval-kit.config.json)" in doctor.stderr
