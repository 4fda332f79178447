"""A misspelt key in a case manifest is named with the key meant, as a misspelt config key is
(`case_idd should be case_id`). Before, the message said only `must have required property 'case_id'`,
with the misspelt key, the one to rename, nowhere in it."""

from __future__ import annotations

import json

import pytest

from doc_suites import invoke, make_suite


@pytest.mark.parametrize(
    ("change", "hint"),
    [
        (lambda manifest: manifest.update(case_idd=manifest.pop("case_id")), "(case_idd should be case_id)"),
        (lambda manifest: manifest.update(artifact=manifest.pop("artifacts")), "(artifact should be artifacts)"),
        (
            lambda manifest: manifest["artifacts"][1].update(pth=manifest["artifacts"][1].pop("path")),
            "must have required property 'path' (artifacts.1.pth should be artifacts.1.path)",
        ),
    ],
)
def test_a_misspelt_manifest_key_names_the_key_meant(tmp_path, monkeypatch, change, hint):
    suite = make_suite(tmp_path)
    monkeypatch.chdir(suite.repo)
    path = suite.evals / "cases" / "case-one" / "case-manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))
    prefix = "Execution failed: case manifest cases/case-one/case-manifest.json failed schema validation: "
    for command in (["doctor"], ["validate-fixtures"], ["run-case", "--case", "case-one", "--candidate", "candidates/good.md"]):
        result = invoke(*command)
        assert result.exit_code == 2 and "Verdict" not in result.stdout
        message = result.stderr.strip()
        assert message.startswith(prefix) and message.endswith(hint), message


def test_a_manifests_own_extra_keys_get_no_hint(tmp_path, monkeypatch):
    suite = make_suite(tmp_path)
    monkeypatch.chdir(suite.repo)
    path = suite.evals / "cases" / "case-one" / "case-manifest.json"
    manifest = json.loads(path.read_text())
    manifest["owner"] = "docs team"  # a manifest may carry any other keys
    manifest["artifacts"] = []
    path.write_text(json.dumps(manifest))
    result = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md")
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("/artifacts must NOT have fewer than 1 items")  # Ajv's words, plural as eval-kit prints them
