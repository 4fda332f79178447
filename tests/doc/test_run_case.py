"""`run-case` and `report`: verdict exit codes, the bundle, the manifest written last, and containment."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from doc_suites import invoke, make_suite


@pytest.fixture
def suite(tmp_path, monkeypatch):
    built = make_suite(tmp_path)
    monkeypatch.chdir(built.repo)
    return built


def run_case(candidate="candidates/good.md", run_id="run-1", case="case-one"):
    args = ["run-case", "--case", case, "--candidate", candidate]
    return invoke(*args, *(["--run-id", run_id] if run_id else []))


def test_green_run_writes_the_full_bundle_with_hashes(suite):
    result = run_case()
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["Verdict: green", "Results: evals/results/run-1"]
    run_dir = suite.results / "run-1"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["output_files"] == [
        "manifest.json",
        "grades.json",
        "report.md",
        "cases/case-one/candidate.md",
        "cases/case-one/grader-output.json",
    ]
    assert [a["role"] for a in manifest["artifacts"]] == ["grades", "report", "candidate_markdown", "grader_output"]
    for artifact in manifest["artifacts"]:
        data = (run_dir / artifact["path"]).read_bytes()
        assert artifact["sha256"] == hashlib.sha256(data).hexdigest() and artifact["size_bytes"] == len(data)
        assert artifact["redaction_status"] == "public-safe"
    assert manifest["run_type"] == "deterministic" and manifest["runner"]["id"] == "fake-suite-eval-case"
    assert manifest["status"] == "completed" and manifest["case_ids"] == ["case-one"]
    assert (run_dir / "cases/case-one/candidate.md").read_bytes() == (suite.repo / "candidates/good.md").read_bytes()
    grades = json.loads((run_dir / "grades.json").read_text())
    assert grades["verdict"] == "green" and [f["id"] for f in grades["findings"]] == ["goal", "limit"]
    assert json.loads((run_dir / "cases/case-one/grader-output.json").read_text()) == {"findings": grades["findings"]}
    assert (run_dir / "report.md").read_text().endswith("candidate=candidates/good.md\n")
    assert (run_dir / "manifest.json").read_text().endswith("}\n")


def test_yellow_exits_zero_and_red_exits_one_after_writing_the_bundle(suite):
    assert run_case("candidates/partial.md", "yellow-run").exit_code == 0
    red = run_case("candidates/bad.md", "red-run")
    assert red.exit_code == 1 and "Verdict: red" in red.stdout
    assert "Deterministic grading failed (verdict red)" in red.stderr  # eval-kit's line, on stderr
    assert (suite.results / "red-run" / "manifest.json").exists()


def test_default_run_id_is_deterministic_with_a_timestamp(suite):
    result = run_case(run_id=None)
    assert result.exit_code == 0
    (run_dir,) = list(suite.results.iterdir())
    assert run_dir.name.startswith("deterministic-20") and run_dir.name.endswith("Z")
    assert ":" not in run_dir.name and "." not in run_dir.name


def test_invalid_grades_fail_closed_without_a_manifest(suite):
    (suite.evals / "full_adapter.py").write_text(
        "def grade_candidate(grade):\n    return {'verdict': 'amber', 'findings': []}\n"
        "def render_report(report):\n    return 'x'\n"
    )
    result = run_case()
    assert result.exit_code == 2
    assert "grades failed schema validation: /verdict must be equal to one of the allowed values" in result.stderr
    assert not (suite.results / "run-1" / "manifest.json").exists()


def test_failed_rerun_removes_the_old_manifest(suite):
    assert run_case().exit_code == 0
    (suite.evals / "full_adapter.py").write_text(
        "def grade_candidate(grade):\n    raise RuntimeError('grader broke')\n"
        "def render_report(report):\n    return 'x'\n"
    )
    result = run_case()
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: grade_candidate failed: RuntimeError: grader broke (full_adapter.py:2)"
    )
    assert not (suite.results / "run-1" / "manifest.json").exists()


def test_async_grader_and_camel_case_names_work_in_python(suite):
    (suite.evals / "full_adapter.py").write_text(
        "async def gradeCandidate(grade):\n    return {'verdict': 'great', 'findings': []}\n"
        "def renderDeterministicReport(report):\n    return 'ok'\n"
    )
    result = run_case()
    assert result.exit_code == 0 and "Verdict: great" in result.stdout


def test_an_adapter_without_a_grader_or_reporter_says_so_in_eval_kits_words(suite):
    (suite.evals / "full_adapter.py").write_text("def renderDeterministicReport(report):\n    return 'ok'\n")
    result = run_case()
    assert result.exit_code == 2
    assert "grader module does not export a grading function" in result.stderr, result.stderr
    (suite.evals / "full_adapter.py").write_text("def gradeCandidate(grade):\n    return {'verdict': 'great', 'findings': []}\n")
    result = run_case()
    assert result.exit_code == 2
    assert "reporter module does not export a report rendering function" in result.stderr, result.stderr


def test_legacy_grader_and_reporter_maps_are_used_without_an_adapter(suite):
    (suite.evals / "grader.py").write_text(
        "def grade_candidate(grade):\n    return {'verdict': 'green', 'findings': []}\n"
    )
    (suite.evals / "reporter.py").write_text("def render_report(report):\n    return 'legacy'\n")
    suite.update_config(adapter=None, graders={"kw": "grader.py"}, reporters={"md": "reporter.py"})
    assert run_case().exit_code == 0
    assert (suite.results / "run-1" / "report.md").read_text() == "legacy\n"
    suite.update_config(reporters=None)
    assert "no reporter configured" in run_case().stderr


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        ("../outside.md", "escapes"),
        ("candidates/missing.md", "candidate path does not exist: candidates/missing.md"),
    ],
)
def test_candidates_must_exist_inside_the_repo(suite, tmp_path, candidate, message):
    (tmp_path / "outside.md").write_text("ship the importer, no new services")
    result = run_case(candidate)
    assert result.exit_code == 2 and message in result.stderr


def test_a_candidate_not_found_says_where_candidate_paths_start(suite, monkeypatch):
    """Paths are the repository root's (eval-kit's rule), and "candidate not found" said nothing more when the
    file was right there in the current folder, or when the path was a folder."""
    monkeypatch.chdir(suite.repo / "candidates")
    config = ("--config", str(suite.config_path))
    here = invoke("run-case", "--case", "case-one", "--candidate", "good.md", *config)
    assert here.exit_code == 2
    assert (f"candidate path does not exist: good.md (candidate paths are relative to the repository root {suite.repo}, not the "
            "current folder: give candidates/good.md or an absolute path)") in here.stderr, here.stderr
    folder = invoke("run-case", "--case", "case-one", "--candidate", ".", *config)
    assert folder.exit_code == 2 and "candidate path does not exist: . (that is a folder; give the candidate file)" in folder.stderr
    missing = invoke("run-case", "--case", "case-one", "--candidate", "nope.md", *config)
    assert f"candidate path does not exist: nope.md (candidate paths are relative to the repository root {suite.repo})" in missing.stderr


def test_absolute_candidate_outside_the_repo_and_symlink_escape_are_refused(suite, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("ship the importer, no new services")
    assert "escapes" in run_case(str(outside)).stderr
    os.symlink(outside, suite.repo / "candidates" / "link.md")
    assert "escapes" in run_case("candidates/link.md").stderr
    inside = run_case(str(suite.repo / "candidates" / "good.md"))
    assert inside.exit_code == 0


@pytest.mark.parametrize("run_id", ["../escape", "a/b", ".hidden", "run\n"])
def test_unsafe_run_ids_are_refused(suite, run_id):
    result = run_case(run_id=run_id)
    assert result.exit_code == 2 and "run id must be an id, not a path" in result.stderr
    assert not (suite.evals / "escape").exists()


def test_case_id_with_a_trailing_newline_is_refused(suite):
    result = run_case(case="case-one\n")
    assert result.exit_code == 2 and "case id must be an id, not a path" in result.stderr


def test_disabled_method_fails_on_the_gate_before_argument_checks(suite):
    suite.update_config(methods={"deterministic": {"enabled": False}})
    result = invoke("run-case")
    assert result.exit_code == 2
    assert result.stderr.strip() == "Execution failed: run-case is disabled by methods.deterministic.enabled=false"
    suite.update_config(methods={})
    missing = invoke("run-case", "--case", "case-one")
    assert missing.stderr.strip() == "Execution failed: missing required argument --candidate"


def test_report_compiles_earlier_runs_into_a_bundle(suite):
    assert run_case().exit_code == 0
    result = invoke("report", "--run-id", "combined", "--deterministic", "run-1")
    assert result.exit_code == 0, result.stderr
    run_dir = suite.results / "combined"
    report = (run_dir / "report.md").read_text()
    assert report.startswith("# Manual Combined Report\n\n## Deterministic Run results\n\n# Eval Report: case-one")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["run_type"] == "manual-report" and manifest["case_ids"] == ["case-one"]
    assert manifest["output_files"] == ["manifest.json", "report.md", "deterministic_grades.json"]
    assert [a["role"] for a in manifest["artifacts"]] == ["report", "deterministic_grades"]


def test_report_failures(suite):
    assert "missing required argument --run-id" in invoke("report").stderr
    assert (
        "--deterministic run id must be an id, not a path"
        in invoke("report", "--run-id", "r", "--deterministic", "../x").stderr
    )
    suite.update_config(methods={"report": {"enabled": False}})
    assert "report is disabled by methods.report.enabled=false" in invoke("report", "--run-id", "r").stderr


def test_report_artifact_outside_the_run_dir_is_refused(suite):
    (suite.evals / "full_adapter.py").write_text(
        "def compile_report(request):\n"
        "    return {'report_content': 'x', 'case_ids': [], 'artifacts': [{'role': 'leak', 'path': '../run-1/grades.json'}]}\n"
    )
    result = invoke("report", "--run-id", "r")
    assert result.exit_code == 2 and "escapes" in result.stderr
    assert not (suite.results / "r" / "manifest.json").exists()


def _line_of(path, text):
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_an_adapter_exception_names_its_type_message_and_adapter_line(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert invoke("init", "--adapter-language", "python").exit_code == 0
    assert invoke("scaffold-case", "--case", "first").exit_code == 0
    expected = tmp_path / "evals" / "cases" / "first" / "expected-items.json"
    expected.write_text(json.dumps({"items": [{"id": "no-text"}]}))  # the generic adapter needs required_text
    (tmp_path / "c.md").write_text("anything")
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    line = _line_of(tmp_path / "evals" / "adapter.py", "needs required_text, a non-empty string")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: grade_candidate failed: ValueError: expected-items.json: expected item no-text needs "
        f"required_text, a non-empty string (adapter.py:{line})"
    )


def test_the_location_is_the_innermost_line_in_the_adapter_file_not_a_library_frame(suite):
    (suite.evals / "helper.py").write_text("import json\n\n\ndef parse(text):\n    return json.loads(text)\n")
    (suite.evals / "full_adapter.py").write_text(
        "import helper\n"
        "\n"
        "def _items(grade):\n"
        "    return helper.parse('{broken')\n"
        "\n"
        "def grade_candidate(grade):\n"
        "    return _items(grade)\n"
        "\n"
        "def render_report(report):\n"
        "    return 'x'\n"
    )
    result = run_case()
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("Execution failed: grade_candidate failed: JSONDecodeError: Expecting")
    assert result.stderr.strip().endswith(" (full_adapter.py:4)")


def test_a_red_verdict_exits_1_and_a_broken_eval_exits_2(suite):
    assert run_case("candidates/bad.md", "red").exit_code == 1
    broken = {
        "usage": invoke("run-case", "--case", "case-one", "--bogus"),
        "missing argument": invoke("run-case", "--case", "case-one"),
        "missing candidate": run_case("candidates/absent.md"),
        "unknown case": run_case(case="nope"),
    }
    (suite.repo / "blocker").write_text("a file, so no directory can be made under it")
    broken["red, but the JUnit report cannot be written"] = invoke(
        "run-case", "--case", "case-one", "--candidate", "candidates/bad.md", "--junit", "blocker/report.xml"
    )
    suite.config_path.write_text("{broken")
    broken["config"] = run_case()
    assert {name: result.exit_code for name, result in broken.items()} == dict.fromkeys(broken, 2)


def test_a_red_verdict_lists_the_items_that_failed_between_the_verdict_and_the_bundle(suite):
    red = run_case("candidates/bad.md", "red-run")
    assert red.exit_code == 1, red.stderr
    assert red.stdout.splitlines() == [
        "Verdict: red",
        "  FAILED deterministic goal (critical): missing - missing ship the importer",
        "  FAILED deterministic limit (medium): missing - missing no new services",
        "Results: evals/results/red-run",
    ]
    yellow = run_case("candidates/partial.md", "yellow-run")  # not red: only the verdict, as eval-kit prints it
    assert yellow.stdout.splitlines() == ["Verdict: yellow", "Results: evals/results/yellow-run"]


def test_an_unknown_case_suggests_the_case_meant(suite):
    suite.add_case("release-notes")
    result = run_case(case="release-note")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: case manifest not found for case: release-note (did you mean release-notes?)"
    )


def test_a_case_whose_manifest_is_not_json_is_reported_with_line_and_column_as_doctor_does(suite):
    manifest = suite.add_case("release-notes") / "case-manifest.json"
    manifest.write_text('{\n  "schema_version": "eval-kit.case.v1",\n  "case_id": "release-notes"\n  "artifacts": []\n}\n')
    result = run_case(case="release-notes")
    assert result.exit_code == 2
    message = "case manifest cases/release-notes/case-manifest.json is not valid JSON: Expecting ',' delimiter: line 4 column 3"
    assert message in result.stderr and "not found" not in result.stderr
    assert message in invoke("doctor").stderr  # the same words doctor has for it
    # Another case is still found; the broken manifest is only mentioned for a case nobody has.
    assert run_case().exit_code == 0
    unknown = run_case(case="ghost")
    assert unknown.exit_code == 2 and "1 case manifest(s) name no case id (cases/release-notes/case-manifest.json)" in unknown.stderr


def test_a_case_whose_manifest_fails_its_schema_says_what_is_wrong(suite):
    manifest = suite.add_case("release-notes") / "case-manifest.json"
    manifest.write_text(json.dumps({"schema_version": "eval-kit.case.v1", "id": "release-notes", "artifacts": []}))
    result = run_case(case="release-notes")
    assert result.exit_code == 2
    assert "case manifest cases/release-notes/case-manifest.json failed schema validation" in result.stderr
    assert "'case_id'" in result.stderr and "not found" not in result.stderr


@pytest.mark.parametrize("candidate", ["a" * 5000, "a/" * 2500])
def test_a_candidate_path_no_file_system_can_hold_is_a_usage_error_naming_the_option(suite, candidate):
    result = run_case(candidate)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("Execution failed: --candidate a") and line.endswith("(5,000 characters) cannot be used: File name too long")
    assert "internal error" not in line and len(line) < 300


def test_runs_compare_latest_pairs_a_doc_run_with_the_previous_run_of_its_own_suite(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from assay.cli.app import app

    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    first, other = make_suite(tmp_path / "first"), make_suite(tmp_path / "other")
    for suite, candidate, run_id in ((first, "good", "a-1"), (other, "bad", "b-1"), (first, "bad", "a-2")):
        monkeypatch.chdir(suite.repo)
        assert run_case(f"candidates/{candidate}.md", run_id).exit_code in (0, 1)
    compared = CliRunner().invoke(app, ["runs", "compare", "latest", "--json"], catch_exceptions=False)
    assert compared.exit_code == 0, compared.output
    document = json.loads(compared.stdout)
    assert document["counts"]["regressions"] == 1  # a-1 (green) → a-2 (red), not b-1 (red) → a-2
    assert document["baseline_chosen"].startswith(f"Baseline: {document['before']}, the doc run of the same project")


def test_a_doc_run_is_stored_under_the_run_id_shape_of_every_kind_and_its_bundle_keeps_its_name(tmp_path, monkeypatch):
    import re

    from typer.testing import CliRunner

    from assay.cli.app import app

    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    suite = make_suite(tmp_path / "suite")
    monkeypatch.chdir(suite.repo)
    assert run_case(run_id=None).exit_code == 0
    listed = CliRunner().invoke(app, ["runs", "list", "--json"], catch_exceptions=False)
    [run] = json.loads(listed.stdout)["runs"]
    assert re.fullmatch(r"doc-\d{8}T\d{6}Z-[0-9a-f]{8}", run["run_id"])  # as video-… and agent-… ids read
    [bundle] = [path.name for path in suite.results.iterdir()]
    assert re.fullmatch(r"deterministic-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z", bundle)  # eval-kit's name
    assert run["identity"]["bundle_run_id"] == bundle
