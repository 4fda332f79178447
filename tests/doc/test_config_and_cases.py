"""Suite config (strict v1 schema, repo root, contained roots) and case discovery and resolution."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from assay.doc.cases import (
    configured_manifest_paths,
    discover_case_ids,
    glob_matches,
    grader_input_key,
    load_grader_inputs,
    resolve_case,
)
from assay.doc.config import find_repo_root, load_suite
from assay.doc.prompts import extract_version, load_prompt_template
from assay.errors import CaseError, ConfigError, UsageError
from doc_suites import make_suite


@pytest.fixture
def suite(tmp_path):
    return make_suite(tmp_path)


def load(suite):
    return load_suite(suite.config_path)


def test_config_loads_with_roots_resolved_from_the_config_directory(suite):
    loaded = load(suite)
    assert loaded.repo_root == suite.repo and loaded.suite_root == suite.evals
    assert loaded.results_root == suite.results and loaded.suite_id == "fake-suite"


def test_unknown_config_field_is_rejected(suite):
    suite.update_config(judge={"model": "x"})
    with pytest.raises(ConfigError, match="must NOT have additional properties \\(judge\\)"):
        load(suite)


def test_wrong_schema_version_and_missing_fields_are_reported_together(suite):
    suite.update_config(schema_version="eval-kit.config.v2", suite_id=None)
    with pytest.raises(ConfigError) as caught:
        load(suite)
    message = str(caught.value)
    assert message.startswith("eval-kit config failed schema validation: ")
    assert "<root> must have required property 'suite_id'" in message
    assert "/schema_version must be equal to constant" in message


def test_a_config_that_fails_its_schema_names_the_file_and_the_key_meant(suite, monkeypatch):
    config = suite.config()
    config["suite_idd"] = config.pop("suite_id")
    config["methods"]["deterministc"] = config["methods"].pop("deterministic")
    config["judge"] = {}
    config["schema_version"] = "eval-kit.config.v2"
    suite.config_path.write_text(json.dumps(config))
    monkeypatch.chdir(suite.repo)
    with pytest.raises(ConfigError) as caught:
        load_suite("evals/eval-kit.config.json")
    message = str(caught.value)
    assert message.startswith("eval-kit config failed schema validation: ")  # eval-kit's words first
    assert "(in evals/eval-kit.config.json;" in message
    assert "suite_idd should be suite_id" in message
    assert "methods.deterministc should be methods.deterministic" in message
    assert "remove judge" in message
    assert 'schema_version must be "eval-kit.config.v1"' in message


def test_missing_repo_marker_is_an_error_not_a_fallback_to_the_filesystem_root(tmp_path, monkeypatch):
    (tmp_path / "evals").mkdir()
    real_exists = Path.exists
    # Hide any stray .git above tmp_path on this machine so the walk really reaches `/`.
    monkeypatch.setattr(
        Path, "exists", lambda self: real_exists(self) and (self.name != ".git" or self.is_relative_to(tmp_path))
    )
    with pytest.raises(ConfigError, match="no repository root found"):
        find_repo_root(tmp_path / "evals")


def test_git_file_marks_the_repo_root_too(tmp_path):
    (tmp_path / ".git").write_text("gitdir: elsewhere\n")
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert find_repo_root(tmp_path / "a" / "b") == tmp_path


@pytest.mark.parametrize("field", ["suite_root", "results_root"])
def test_roots_outside_the_repo_are_refused(suite, field):
    suite.update_config(**{field: "../.."})
    with pytest.raises(ConfigError, match=f"{field.replace('_', ' ')} escapes"):
        load(suite)


def test_results_root_symlinked_out_of_the_repo_is_refused(suite, tmp_path):
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", suite.evals / "results")
    with pytest.raises(ConfigError, match="results root escapes"):
        load(suite)


def test_adapter_outside_the_repo_is_refused(suite, tmp_path):
    (tmp_path / "evil.py").write_text("")
    suite.update_config(adapter=str(tmp_path / "evil.py"))
    loaded = load(suite)
    with pytest.raises(ConfigError, match="escapes"):
        loaded.module_path(loaded.raw["adapter"], "adapter")


def test_glob_only_star_is_special_and_must_match_whole_name():
    assert glob_matches("case-*", "case-one") and glob_matches("*", "x")
    assert not glob_matches("case", "case-one") and not glob_matches("case?", "case1")
    assert glob_matches("a.b", "a.b") and not glob_matches("a.b", "axb")


def test_glob_matching_is_linear_even_with_many_stars():
    import time

    started = time.perf_counter()
    assert not glob_matches("*a" * 40 + "*b", "a" * 255)
    assert glob_matches("*a" * 40 + "*", "a" * 255)
    assert time.perf_counter() - started < 0.1
    assert glob_matches("a*b*c", "abc") and glob_matches("a*b*c", "aXbYc") and not glob_matches("a*b*c", "acb")
    assert glob_matches("ab*ba", "aba" + "ba") and not glob_matches("ab*ba", "aba")
    assert glob_matches("x*", "x\ny")  # `*` crosses newlines, as the DOTALL regex did


def test_a_config_that_is_not_utf8_names_the_file_and_line(suite):
    suite.config_path.write_bytes(suite.config_path.read_bytes().replace(b'"fake-suite"', b'"fake-\xffsuite"'))
    with pytest.raises(ConfigError) as caught:
        load(suite)
    assert str(caught.value) == (
        f"config {suite.config_path}: line 3, column 21: byte 0xff is not valid UTF-8; save the file as UTF-8"
    )


def test_a_deeply_nested_config_is_a_config_error_naming_the_file(suite):
    suite.config_path.write_text('{"runner_defaults": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ConfigError, match=r"^config .*eval-kit.config.json: line 1, column 84: nested more than 64"):
        load(suite)


def test_a_nul_in_a_config_path_is_refused_before_it_reaches_the_file_system(suite):
    suite.update_config(results_root="results\u0000x")
    with pytest.raises(ConfigError, match=r"eval-kit.config.json: results_root: contains a NUL character; remove it$"):
        load(suite)


def test_a_hostile_manifest_is_a_case_error_naming_it_and_discovery_skips_it(suite):
    manifest = suite.evals / "cases" / "case-one" / "case-manifest.json"
    manifest.write_text('{"case_id": "case-one", "metadata": ' + "[" * 5000 + "]" * 5000 + "}")
    assert discover_case_ids(load(suite)) == []
    with pytest.raises(CaseError, match=r"^case manifest cases/case-one/case-manifest.json: line 1, column \d+: nested"):
        from assay.doc.cases import resolve_case_manifest_path

        resolve_case_manifest_path(load(suite), manifest)


def test_an_artifact_name_longer_than_the_file_system_allows_is_a_case_error(suite):
    _set_artifact_path(suite, "x" * 300 + ".json")
    with pytest.raises(
        CaseError,
        match=r"^case manifest cases/case-one/case-manifest.json: artifact x{77}\.\.\. cannot be used: File name too long$",
    ):
        resolve_case(load(suite), "case-one")


def test_a_grader_input_with_a_huge_number_names_the_artifact(suite):
    (suite.evals / "cases" / "case-one" / "expected-items.json").write_text('{"items": [' + "9" * 5000 + "]}")
    with pytest.raises(CaseError) as caught:
        load_grader_inputs(resolve_case(load(suite), "case-one"))
    assert str(caught.value) == (
        "case case-one grader_input expected-items.json: line 1, column 12: an integer with 5,000 digits; "
        "assay reads at most 4,300, write it as a string"
    )


def test_discovery_applies_include_exclude_and_skips_broken_manifests(suite):
    suite.add_case("case-two")
    suite.add_case("skip-me")
    (suite.evals / "cases" / "broken").mkdir()
    (suite.evals / "cases" / "broken" / "case-manifest.json").write_text("{not json")
    (suite.evals / "cases" / "empty").mkdir()
    (suite.evals / "cases" / "a-file").write_text("not a directory")
    suite.update_config(cases={"root": "cases", "include": ["*"], "exclude": ["skip-*"]})
    loaded = load(suite)
    assert discover_case_ids(loaded) == ["case-one", "case-two"]
    names = [path.parent.name for path in configured_manifest_paths(loaded)]
    assert names == ["broken", "case-one", "case-two", "empty"]


def test_case_manifests_list_replaces_discovery(suite):
    suite.add_case("case-two")
    suite.update_config(case_manifests=["cases/case-two/case-manifest.json"])
    assert discover_case_ids(load(suite)) == ["case-two"]


def test_case_identity_comes_from_the_manifest_not_the_directory(suite):
    suite.add_case("renamed-id", directory="dir-name")
    case = resolve_case(load(suite), "renamed-id")
    assert case.case_dir.name == "dir-name"


def test_unknown_case_and_unsafe_case_ids(suite):
    loaded = load(suite)
    with pytest.raises(CaseError, match="^case manifest not found for case: nope$"):
        resolve_case(loaded, "nope")
    with pytest.raises(UsageError, match="case id must be an id, not a path"):
        resolve_case(loaded, "case-one\n")


def _set_artifact_path(suite, path):
    manifest_path = suite.evals / "cases" / "case-one" / "case-manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["artifacts"][1]["path"] = path
    manifest_path.write_text(json.dumps(manifest))


@pytest.mark.parametrize("path", ["../../eval-kit.config.json", "../case-one/../../eval-kit.config.json"])
def test_artifact_dot_dot_escape_is_refused(suite, path):
    _set_artifact_path(suite, path)
    with pytest.raises(CaseError, match="escapes"):
        resolve_case(load(suite), "case-one")


def test_absolute_artifact_path_is_refused(suite):
    _set_artifact_path(suite, str(suite.evals / "cases" / "case-one" / "expected-items.json"))
    with pytest.raises(CaseError, match="must be a relative path"):
        resolve_case(load(suite), "case-one")


def test_artifact_symlink_escaping_the_case_is_refused(suite, tmp_path):
    (tmp_path / "secret.json").write_text("{}")
    os.symlink(tmp_path / "secret.json", suite.evals / "cases" / "case-one" / "link.json")
    _set_artifact_path(suite, "link.json")
    with pytest.raises(CaseError, match="escapes"):
        resolve_case(load(suite), "case-one")


def test_missing_artifact_names_the_file(suite):
    (suite.evals / "cases" / "case-one" / "rubric.md").unlink()
    with pytest.raises(CaseError, match="not found: evals/cases/case-one/rubric.md"):
        resolve_case(load(suite), "case-one")


def test_manifest_schema_failure_is_located(suite):
    manifest_path = suite.evals / "cases" / "case-one" / "case-manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["artifacts"][0]["extra"] = True
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(
        CaseError,
        match="case manifest cases/case-one/case-manifest.json failed schema validation: /artifacts/0 must NOT have additional properties",
    ):
        resolve_case(load(suite), "case-one")


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("expected-items.json", "expectedItems"),
        ("expected-facts.json", "expectedFacts"),
        ("expected-boundaries.json", "expectedBoundaries"),
        ("notes.txt", "notes.txt"),
        ("a-B-c.json", "a-BC"),
    ],
)
def test_grader_input_keys_are_camel_cased_file_names(name, key):
    assert grader_input_key(name) == key


def test_grader_input_colliding_with_candidate_text_is_refused(suite):
    case_dir = suite.evals / "cases" / "case-one"
    (case_dir / "candidate-text.json").write_text('"sneaky"')
    _set_artifact_path(suite, "candidate-text.json")
    with pytest.raises(CaseError, match="would replace candidateText"):
        load_grader_inputs(resolve_case(load(suite), "case-one"))


def test_prompt_templates_resolve_by_precedence_and_alias(suite):
    (suite.evals / "my-prompt.md").write_text("Prompt version: `{{ prompt_version }}`\nPrompt version: `mine-v2`\n")
    suite.update_config(
        prompt_templates={"pointwise_judge": "my-prompt.md", "generation": "@eval-kit/generation"},
        methods={"judge_coverage": {"enabled": True, "prompt": "ignored.md"}},
    )
    loaded = load(suite)
    pointwise = load_prompt_template(loaded, "pointwise_judge")
    assert pointwise.source == "my-prompt.md" and extract_version(pointwise.text, "Prompt version") == "mine-v2"
    assert load_prompt_template(loaded, "generation").source == "bundled"
    with pytest.raises(ConfigError, match="^Could not find Rubric version in prompt$"):
        extract_version(pointwise.text, "Rubric version")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("@eval-kit/other", "^unknown eval-kit prompt alias: @eval-kit/other "),  # eval-kit's words
        ("@eval-kit/other", "unknown alias"),  # the spec's
        ("@eval-kit/pairwise", "does not fit"),
        ("../../x.md", "escapes"),
    ],
)
def test_bad_prompt_template_values_are_refused(suite, value, message):
    suite.update_config(prompt_templates={"generation": value})
    with pytest.raises((ConfigError, CaseError), match=message):
        load_prompt_template(load(suite), "generation")
