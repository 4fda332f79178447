"""The starter adapters (`assay doc init`, both languages) on a broken expected-items.json: a misspelt
key, a wrong type or an empty value is a broken eval that `doctor` already names (exit 2), never a
verdict. Before, `{"itemz": [...]}`, a list, a misspelt grader_input role or `"required_text": ""`
all graded green."""

from __future__ import annotations

import json

import pytest

from doc_suites import invoke

LANGUAGES = ["javascript", "python"]


@pytest.fixture(params=LANGUAGES)
def starter(request, tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert invoke("init", "--adapter-language", request.param).exit_code == 0
    assert invoke("scaffold-case", "--case", "first").exit_code == 0
    (tmp_path / "c.md").write_text("this has replace this required text inside")
    return tmp_path / "evals" / "cases" / "first"


BROKEN = [
    ({"itemz": [{"id": "a", "required_text": "zzz"}]}, 'expected-items.json needs "items", a list'),
    ({"items": {"id": "a", "required_text": "zzz"}}, 'expected-items.json needs "items", a list'),
    ([{"id": "a", "required_text": "zzz"}], 'expected-items.json needs "items", a list'),
    ({"items": [{"id": "a", "required_text": ""}]}, "expected item a needs required_text, a non-empty string"),
    # A misspelt optional field graded with its default; a missing or numeric id passed doctor, then
    # failed run-case with `grades failed schema validation: /findings/0 ...`, naming no file.
    (
        {"items": [{"id": "a", "severty": "critical", "required_text": "zzz"}]},
        'expected item a has "severty", which is no item field; rename it to "severity"',
    ),
    ({"items": [{"idd": "a", "required_text": "zzz"}]}, 'has "idd", which is no item field; rename it to "id"'),
    ({"items": [{"required_text": "zzz"}]}, "expected item (no id) needs id, a non-empty string"),
    ({"items": [{"id": 5, "required_text": "zzz"}]}, "expected item 5 needs id, a non-empty string"),
    ({"items": [{"id": "a", "kind": "", "required_text": "zzz"}]}, "expected item a needs kind, a non-empty string"),
]


@pytest.mark.parametrize(("content", "message"), BROKEN)
def test_a_broken_expected_items_file_fails_doctor_and_run_case_instead_of_grading(starter, content, message):
    (starter / "expected-items.json").write_text(json.dumps(content))
    doctor = invoke("doctor")
    assert doctor.exit_code == 2 and "cases/first/expected-items.json" in doctor.stderr and message in doctor.stderr
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert message in result.stderr and "Verdict" not in result.stdout


def test_a_misspelt_grader_input_role_fails_doctor_and_run_case_naming_the_fix(starter):
    manifest = starter / "case-manifest.json"
    manifest.write_text(manifest.read_text().replace('"grader_input"', '"grader-input"'))
    doctor = invoke("doctor")
    assert doctor.exit_code == 2
    assert "cases/first/case-manifest.json is missing a grader_input artifact: expected-items.json" in doctor.stderr
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    assert result.exit_code == 2 and "Verdict" not in result.stdout
    assert '"role": "grader_input", "path": "expected-items.json"' in result.stderr


def test_extra_item_fields_of_the_suites_own_are_left_alone(starter):
    items = {"items": [{"id": "a", "note": "why", "source": "input.md", "required_text": "replace this"}]}
    (starter / "expected-items.json").write_text(json.dumps(items))
    assert invoke("doctor").exit_code == 0
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    assert result.exit_code == 0 and "Verdict: green" in result.stdout


def test_an_empty_item_list_still_grades_green_as_eval_kit_does(starter):
    (starter / "expected-items.json").write_text('{"items": []}')
    assert invoke("doctor").exit_code == 0
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    assert result.exit_code == 0 and "Verdict: green" in result.stdout


def test_the_javascript_starter_names_the_file_the_fix_and_its_own_line(tmp_path, monkeypatch):
    """What tests/doc/test_node_adapter.py's generic-adapter test pinned as `items.map is not a function`."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert invoke("init").exit_code == 0
    assert invoke("scaffold-case", "--case", "first").exit_code == 0
    (tmp_path / "evals" / "cases" / "first" / "expected-items.json").write_text(json.dumps({"items": {"id": "x"}}))
    (tmp_path / "c.md").write_text("anything")
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    adapter = (tmp_path / "evals" / "adapter.mjs").read_text().splitlines()
    line = next(number for number, text in enumerate(adapter, 1) if 'needs "items", a list' in text)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        'Execution failed: gradeCandidate failed: Error: expected-items.json needs "items", a list of'
        f' {{"id", "required_text"}} (adapter.mjs:{line})'
    )
