"""An adapter export one typo away from a hook it lacks is refused when the adapter loads, naming the
hook meant. Hooks are found by exact name, so before, a misspelt `validateFixtures` was silently never
run (`doctor` passed), a misspelt `canonicalizeExpectedItemMetadata` silently kept the judge's kinds,
and a misspelt `gradeCandidate` passed `doctor` and failed only in `run-case`."""

from __future__ import annotations

import pytest

from doc_suites import invoke


def _starter(tmp_path, monkeypatch, language):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert invoke("init", "--adapter-language", language).exit_code == 0
    assert invoke("scaffold-case", "--case", "first").exit_code == 0
    (tmp_path / "c.md").write_text("this has replace this required text inside")
    return tmp_path / "evals" / ("adapter.mjs" if language == "javascript" else "adapter.py")


@pytest.mark.parametrize(
    ("language", "hook", "typo"),
    [
        ("javascript", "validateFixtures", "validateFixture"),
        ("javascript", "gradeCandidate", "gradCandidate"),
        ("javascript", "canonicalizeExpectedItemMetadata", "canonicaliseExpectedItemMetadata"),
        ("python", "validate_fixtures", "validate_fixture"),
        ("python", "grade_candidate", "grade_candidat"),
    ],
)
def test_a_misspelt_hook_export_fails_doctor_and_the_run_naming_the_hook(tmp_path, monkeypatch, language, hook, typo):
    adapter = _starter(tmp_path, monkeypatch, language)
    source = adapter.read_text()
    declaration = f"export const {hook} =" if language == "javascript" else f"def {hook}("
    assert declaration in source
    adapter.write_text(source.replace(declaration, declaration.replace(hook, typo)))
    name = "evals/adapter.mjs" if language == "javascript" else "evals/adapter.py"
    said = f"adapter {name} exports {typo}, which is no hook (did you mean {hook}?)"

    doctor = invoke("doctor")
    assert doctor.exit_code == 2 and "Doctor passed" not in doctor.stdout
    assert said in doctor.stderr and "Traceback" not in doctor.stderr
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    assert result.exit_code == 2 and "Verdict" not in result.stdout
    assert result.stderr.strip() == f"Execution failed: {said}; hooks are found by exact name " + (
        f"({' or '.join(n for n in _exports(hook))}), so rename it"
    )


def _exports(hook):
    from assay.doc.hooks import HOOKS

    found = next(h for h in HOOKS.values() if hook in h.exports)
    return [name for name in found.exports if name != "default"]


def test_helpers_named_like_no_hook_are_left_alone(tmp_path, monkeypatch):
    adapter = _starter(tmp_path, monkeypatch, "javascript")
    adapter.write_text(adapter.read_text() + "\nexport const gradeHelper = () => 1;\nexport const renderLine = () => 2;\n")
    assert invoke("doctor").exit_code == 0
    assert invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r").exit_code == 0
