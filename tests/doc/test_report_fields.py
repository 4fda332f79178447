"""`report`: a field of compile_report's result misspelt by one letter is refused, naming the field meant.

The kit reads the fields by exact name, so `artifact` for `artifacts` left the adapter's own files out
of the manifest (no hash, no size) and the run passed, with nothing said."""

from __future__ import annotations

import json

import pytest

from doc_suites import invoke, make_suite

ADAPTER = '''
def grade_candidate(grade):
    return {{"verdict": "green", "findings": []}}


def render_report(report):
    return "# Report"


def compile_report(request):
    (request.result_dir / "summary.json").write_text("{{}}")
    return {returned}
'''


@pytest.fixture
def suite(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    built = make_suite(tmp_path, adapter="")
    built.update_config(adapter="adapter.py")
    monkeypatch.chdir(built.repo)
    return built


def _report(suite, returned: dict) -> object:
    (suite.evals / "adapter.py").write_text(ADAPTER.format(returned=repr(returned)))
    return invoke("report", "--run-id", "combined")


SUMMARY = {"role": "summary", "path": "summary.json", "media_type": "application/json"}


def test_a_misspelt_artifacts_field_is_refused_not_left_out_of_the_manifest(suite):
    result = _report(suite, {"report_content": "# R", "case_ids": ["case-one"], "artifact": [SUMMARY]})
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: compile_report returned 'artifact', which is no field it reads (did you mean artifacts?); "
        "fields are read by exact name (report_content, reportContent, case_ids, caseIds, artifacts, output_files, "
        "outputFiles), so rename it"
    )
    assert not (suite.results / "combined" / "manifest.json").exists()


@pytest.mark.parametrize("key, meant", [("caseIDs", "caseIds"), ("output_file", "output_files")])
def test_a_misspelt_list_is_refused_in_either_spelling_style(suite, key, meant):
    result = _report(suite, {"report_content": "# R", key: ["summary.json"]})
    assert result.exit_code == 2
    assert f"compile_report returned '{key}', which is no field it reads (did you mean {meant}?)" in result.stderr


def test_a_misspelt_artifact_field_is_refused(suite):
    result = _report(suite, {"report_content": "# R", "artifacts": [{**SUMMARY, "mediatype": "x", "media_type": None}]})
    assert result.exit_code == 0  # media_type is given (as null): a key beside it is the adapter's own
    result = _report(suite, {"report_content": "# R", "artifacts": [{"role": "summary", "pth": "summary.json"}]})
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: compile_report returned an artifact with 'pth', which is no field it reads (did you mean "
        "path?); fields are read by exact name (role, path, media_type, mediaType), so rename it"
    )


def test_other_keys_are_left_alone_as_eval_kit_leaves_them(suite):
    result = _report(suite, {"reportContent": "# R", "caseIds": ["case-one"], "artifacts": [SUMMARY], "title": "t",
                             "notes": ["kept by the adapter"]})
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((suite.results / "combined" / "manifest.json").read_text())
    assert [artifact["path"] for artifact in manifest["artifacts"]] == ["report.md", "summary.json"]
