"""The offline commands through the CLI: init, scaffold-case, doctor, list-cases, validate-fixtures, parsing."""

from __future__ import annotations

import json
import subprocess

import pytest

from doc_suites import invoke, make_suite

# eval-kit's bootstrap test pins this exact content, comment line included.
GITIGNORE = "# Keep raw eval result bundles local unless a human curates a summary.\n*\n!README.md\n!.gitignore\n"


@pytest.fixture
def suite(tmp_path, monkeypatch):
    built = make_suite(tmp_path)
    monkeypatch.chdir(built.repo)
    return built


def test_init_writes_the_generic_suite_relative_to_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("init")
    assert result.exit_code == 0, result.stderr
    assert "Wrote evals/eval-kit.config.json" in result.stdout and "doctor" in result.stdout
    config = json.loads((tmp_path / "evals" / "eval-kit.config.json").read_text())
    assert config["adapter"] == "adapter.mjs" and config["methods"]["generate"] == {"enabled": False}
    assert config["cases"] == {"root": "cases", "include": ["*"]}
    assert (tmp_path / "evals" / "results" / ".gitignore").read_text() == GITIGNORE
    assert "keeps run bundles local by default" in (tmp_path / "evals" / "results" / "README.md").read_text()
    assert "gradeCandidate" in (tmp_path / "evals" / "adapter.mjs").read_text()


def test_init_outside_a_repository_writes_the_suite_and_warns_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("init")
    assert result.exit_code == 0 and "Wrote evals/eval-kit.config.json" in result.stdout
    warning = result.stderr.strip()
    assert warning.startswith(f"Warning: {tmp_path} is not inside a git repository")
    assert "no repository root" in warning and f"run `git init` in {tmp_path}" in warning
    assert "no repository root" in invoke("doctor").stderr  # what the warning predicted
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)  # the fix the warning names
    assert invoke("doctor").exit_code == 0
    assert invoke("init", "--force").stderr == ""


def test_init_refuses_to_overwrite_even_in_dry_run_and_force_overwrites(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("init").exit_code == 0
    for args in (["init"], ["init", "--dry-run"]):
        refused = invoke(*args)
        assert refused.exit_code == 2
        assert "refusing to overwrite existing files: evals/eval-kit.config.json, evals/adapter.mjs" in refused.stderr
    forced = invoke("init", "--force")
    assert forced.exit_code == 0 and "Overwrote evals/adapter.mjs" in forced.stdout


def test_init_dry_run_writes_nothing_and_unknown_suite_fails(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dry = invoke("init", "--dry-run")
    assert dry.exit_code == 0 and "Would write evals/results/.gitignore" in dry.stdout
    assert not (tmp_path / "evals").exists()
    unknown = invoke("init", "--suite", "fancy")
    assert unknown.exit_code == 2
    assert "unsupported suite fancy; supported suites: generic" in unknown.stderr


def test_init_python_adapter_suite_passes_doctor_and_grades(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert invoke("init", "--adapter-language", "python").exit_code == 0
    assert invoke("scaffold-case", "--case", "first").exit_code == 0
    (tmp_path / "c.md").write_text("this has replace this required text inside")
    assert invoke("doctor").exit_code == 0
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    assert result.exit_code == 0 and "Verdict: green" in result.stdout


@pytest.mark.parametrize("language", ["javascript", "python"])
def test_a_misspelt_key_in_the_starters_expected_items_is_a_broken_eval_not_a_red_verdict(tmp_path, monkeypatch, language):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert invoke("init", "--adapter-language", language).exit_code == 0
    assert invoke("scaffold-case", "--case", "first").exit_code == 0
    items = tmp_path / "evals" / "cases" / "first" / "expected-items.json"
    items.write_text(items.read_text().replace('"required_text"', '"required_txt"'))
    (tmp_path / "c.md").write_text("this has replace this required text inside")
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "required_text" in result.stderr and "Verdict: red" not in result.stdout


def test_scaffold_case_checks_the_id_before_loading_the_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no config here at all
    result = invoke("scaffold-case", "--case", "../x")
    assert result.exit_code == 2
    assert result.stderr.strip() == "Execution failed: case id must be an id, not a path"


def test_scaffold_case_needs_cases_root_in_eval_kit_words(suite):
    suite.update_config(cases=None)
    result = invoke("scaffold-case", "--case", "new-case")
    assert result.exit_code == 2
    assert result.stderr.strip() == "Execution failed: config must define cases.root to scaffold cases"


def test_scaffold_case_writes_the_starter_files(suite):
    result = invoke("scaffold-case", "--case", "new-case")
    assert result.exit_code == 0, result.stderr
    case_dir = suite.evals / "cases" / "new-case"
    manifest = json.loads((case_dir / "case-manifest.json").read_text())
    assert [a["role"] for a in manifest["artifacts"]] == ["generation_visible", "grader_input", "rubric"]
    assert manifest["case_type"] == "generic-deterministic" and manifest["metadata"]["purpose"]
    items = json.loads((case_dir / "expected-items.json").read_text())["items"]
    assert items[0]["required_text"] == "replace this required text"
    assert "Wrote evals/cases/new-case/case-manifest.json" in result.stdout
    assert invoke("scaffold-case", "--case", "new-case").exit_code == 2


def test_doctor_passes_and_removes_its_probe(suite):
    result = invoke("doctor")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "Doctor passed (8 checks)."
    assert all(line.startswith("ok - ") for line in result.stdout.strip().splitlines()[:-1])
    assert not (suite.results / ".eval-kit-doctor-write-test").exists()


def test_doctor_stops_at_a_duplicate_case_id(suite):
    suite.add_case("case-one", directory="copy-of-one")
    result = invoke("doctor")
    assert result.exit_code == 2
    assert (
        "duplicate case id case-one: cases/case-one/case-manifest.json and cases/copy-of-one/case-manifest.json"
        in result.stderr
    )
    assert "Doctor passed" not in result.stdout


def test_doctor_reports_missing_artifacts_and_missing_judge_endpoint(suite):
    (suite.evals / "cases" / "case-one" / "input.md").unlink()
    missing = invoke("doctor")
    assert missing.exit_code == 2 and "not found: evals/cases/case-one/input.md" in missing.stderr
    suite.add_case("case-one")
    suite.enable("judge_coverage")
    no_endpoint = invoke("doctor", env={"ASSAY_JUDGE_BASE_URL": "", "OPENAI_BASE_URL": ""})
    assert no_endpoint.exit_code == 2 and "no judge endpoint is configured" in no_endpoint.stderr
    ok = invoke("doctor", env={"ASSAY_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"})
    assert ok.exit_code == 0 and "judge endpoint configured for judge_coverage" in ok.stdout



@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ASSAY_JUDGE_BASE_URL": "localhost:8000/v1"}, "ASSAY_JUDGE_BASE_URL localhost:8000/v1 is not an http(s) URL"),
        ({"ASSAY_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "ASSAY_JUDGE_REASONING_EFFORT": "of"},
         "ASSAY_JUDGE_REASONING_EFFORT must be on or off, got 'of'"),
    ],
)
def test_doctor_checks_the_judge_settings_a_model_command_would_refuse(suite, env, message):
    """doctor passed a judge endpoint that every model command then failed on."""
    suite.enable("judge_coverage")
    result = invoke("doctor", env=env)
    assert result.exit_code == 2 and f"Execution failed: {message}" in result.stderr, result.stderr
    assert "Doctor passed" not in result.stdout


def test_doctor_passes_for_an_empty_suite_and_names_a_cases_root_that_is_missing(suite):
    """A suite with no case yet passes; a `cases.root` that does not exist fails with eval-kit's words (its
    `configuredCaseManifestPaths` throws `cases root does not exist: <root>`): a misspelt root was an empty suite."""
    import shutil

    shutil.rmtree(suite.evals / "cases")
    (suite.evals / "cases").mkdir()
    assert invoke("doctor").exit_code == 0
    shutil.rmtree(suite.evals / "cases")
    result = invoke("doctor")
    assert result.exit_code == 2
    assert "Execution failed: cases root does not exist: cases (cases.root in " in result.stderr
    (suite.evals / "cases").write_text("a file")
    assert "Execution failed: cases root is not a directory: cases (" in invoke("doctor").stderr


def test_list_cases_prints_sorted_ids_or_none_found(suite):
    suite.add_case("b-case")
    suite.add_case("a-case")
    assert invoke("list-cases").stdout.splitlines() == ["a-case", "b-case", "case-one"]
    (suite.evals / "empty").mkdir()
    suite.update_config(cases={"root": "empty"})
    result = invoke("list-cases")
    assert result.exit_code == 0 and result.stdout.strip() == "No cases found."
    suite.update_config(cases={"root": "nowhere"})  # a misspelt root: eval-kit's error, not an empty suite
    result = invoke("list-cases")
    assert result.exit_code == 2 and result.stderr.startswith("Execution failed: cases root does not exist: nowhere (")



def test_list_cases_names_each_manifest_it_skipped_on_stderr(suite):
    """A case whose manifest broke vanished from the list without a word (`No cases found.`, exit 0)."""
    (suite.evals / "cases" / "case-one" / "case-manifest.json").write_text("{not json")
    (suite.evals / "cases" / "no-id").mkdir()
    (suite.evals / "cases" / "no-id" / "case-manifest.json").write_text('{"schema_version": "eval-kit.case.v1"}')
    (suite.evals / "cases" / "no-manifest-yet").mkdir()
    result = invoke("list-cases")
    assert (result.exit_code, result.stdout) == (0, "No cases found.\n")  # eval-kit's output and exit code stay
    assert result.stderr.splitlines() == [
        "Skipped case manifest cases/case-one/case-manifest.json is not valid JSON: Expecting property name enclosed"
        " in double quotes: line 1 column 2 (char 1) (`assay doc doctor` checks every manifest).",
        "Skipped case manifest cases/no-id/case-manifest.json has no case_id (`assay doc doctor` checks every manifest).",
    ]


def test_validate_fixtures_succeeds_then_fails_on_hook_and_missing_manifest(suite):
    fixtures = invoke("validate-fixtures")
    assert fixtures.exit_code == 0 and fixtures.stdout == "Fixtures validation completed successfully.\n"  # eval-kit's line
    manifest_path = suite.evals / "cases" / "case-one" / "case-manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["artifacts"] = [a for a in manifest["artifacts"] if a["role"] != "grader_input"]
    manifest_path.write_text(json.dumps(manifest))
    hook = invoke("validate-fixtures")
    assert hook.exit_code == 2
    assert hook.stderr.strip() == (
        "Execution failed: validate_fixtures failed: ValueError: cases/case-one/case-manifest.json has no grader_input"
        " (full_adapter.py:120)"
    )
    suite.update_config(case_manifests=["cases/ghost/case-manifest.json"])
    ghost = invoke("validate-fixtures")
    assert "configured case manifest not found: cases/ghost/case-manifest.json" in ghost.stderr


def test_validate_fixtures_reports_schema_failures_with_the_manifest_label(suite):
    (suite.evals / "cases" / "case-one" / "case-manifest.json").write_text(
        '{"schema_version": "x", "case_id": "case-one"}'
    )
    result = invoke("validate-fixtures")
    assert (
        "case manifest cases/case-one/case-manifest.json failed schema validation: <root> must have required property 'artifacts'"
        in result.stderr
    )


def test_a_broken_expected_items_file_fails_doctor_and_validate_fixtures_as_run_case_does(suite):
    (suite.evals / "cases" / "case-one" / "expected-items.json").write_text('{"items": [{"id": "goal",')
    graded = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r")
    message = graded.stderr.strip()
    assert graded.exit_code == 2
    assert message.startswith("Execution failed: case case-one grader_input expected-items.json is not valid JSON: ")
    validated = invoke("validate-fixtures")
    assert validated.exit_code == 2 and validated.stderr.strip() == message
    checked = invoke("doctor")
    assert checked.exit_code == 2 and checked.stderr.strip() == message
    assert "Doctor passed" not in checked.stdout


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("missing", "case case-one artifact expected-items.json not found: evals/cases/case-one/expected-items.json"),
        (
            "clash",
            "case case-one grader_input expectedItems.json and expected-items.json both map to key expectedItems",
        ),
        ("candidate-text", "case case-one grader_input candidate-text.json would replace candidateText"),
    ],
)
def test_validate_fixtures_refuses_grader_inputs_run_case_would_refuse(suite, damage, message):
    case_dir = suite.evals / "cases" / "case-one"
    manifest = json.loads((case_dir / "case-manifest.json").read_text())
    if damage == "missing":
        (case_dir / "expected-items.json").unlink()
    else:
        name = {"clash": "expectedItems.json", "candidate-text": "candidate-text.json"}[damage]
        (case_dir / name).write_text("{}")
        manifest["artifacts"].append({"role": "grader_input", "path": name})
    (case_dir / "case-manifest.json").write_text(json.dumps(manifest))
    graded = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r")
    assert graded.exit_code == 2 and message in graded.stderr
    validated = invoke("validate-fixtures")
    assert validated.exit_code == 2 and validated.stderr == graded.stderr


def test_config_errors_use_the_loading_prefix(suite):
    suite.config_path.write_text("{broken")
    result = invoke("validate-fixtures")
    assert result.exit_code == 2 and result.stderr.startswith("Error loading config: config ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run-case", "--case"], "Error parsing arguments: missing value for --case"),
        (["run-case", "--case", "--candidate", "x"], "Error parsing arguments: missing value for --case"),
        (["run-case", "stray"], "Error parsing arguments: unexpected positional argument stray"),
        (["run-case", "--bogus", "1"], "Error parsing arguments: unknown option --bogus"),
    ],
)
def test_argument_errors_are_one_line_with_exit_2(suite, args, message):
    result = invoke(*args)
    assert result.exit_code == 2 and result.stderr.strip() == message


def test_last_occurrence_of_a_repeated_flag_wins(suite):
    result = invoke(
        "run-case", "--case", "nope", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r"
    )
    assert result.exit_code == 0, result.stderr


def test_an_unknown_command_says_unknown_command_and_prints_the_help(suite):
    result = invoke("nosuch")
    assert result.exit_code == 2
    assert result.stderr.strip() == "Unknown command: nosuch"
    assert "run-case" in result.stdout and "judge-pairwise" in result.stdout  # the help, on stdout
    typo = invoke("run-cas")
    assert typo.exit_code == 2 and typo.stderr.strip() == "Unknown command: run-cas (did you mean run-case?)"


def test_a_json_file_saved_with_a_byte_order_mark_says_so_in_a_users_words(suite):
    """Windows tools save UTF-8 with a BOM; JSON has none, and eval-kit refuses such a file too. The message was
    Python's advice to programmers: "Unexpected UTF-8 BOM (decode using utf-8-sig)"."""
    expected = suite.evals / "cases" / "case-one" / "expected-items.json"
    expected.write_bytes(b"\xef\xbb\xbf" + expected.read_bytes())
    result = invoke("validate-fixtures")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: case case-one grader_input expected-items.json is not valid JSON: the file starts with a "
        "UTF-8 byte-order mark (BOM), which JSON does not allow; save it as UTF-8 without one: line 1 column 1 (char 0)")
