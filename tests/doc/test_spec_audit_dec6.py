"""Audit of `assay doc` against eval-kit's behaviour (spec doc.md), 6 December: what the audit found wrong.

Each test pins one deviation that was fixed: the method gate's two messages, the gate for a config outside a
repository, and the pointwise run-metadata helper on an eval-kit (promptfoo) manifest and eval-kit's key names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doc_suites import invoke

MODEL_METHODS = [("generate", "generate"), ("judge-coverage", "judge_coverage"), ("judge-pairwise", "judge_pairwise")]
ALL_METHODS = [("run-case", "deterministic"), ("report", "report"), *MODEL_METHODS]


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))


def _fake_suite_config(methods: dict) -> dict:
    """eval-kit's own test fixture config (tests/fixtures/fake-suite), with `methods` given."""
    return {
        "schema_version": "eval-kit.config.v1",
        "suite_id": "fake-suite",
        "suite_root": ".",
        "results_root": "results",
        "adapter": "adapter.mjs",
        "cases": {"root": "cases", "include": ["case-*"]},
        "methods": methods,
    }


def _write_config(folder: Path, methods: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "eval-kit.config.json"
    path.write_text(json.dumps(_fake_suite_config(methods), indent=2) + "\n")
    return path


# ---- method gate: `enabled: false` is "disabled" for every method, model ones too (eval-kit 0.1.4+) ----------------


@pytest.mark.parametrize(("command", "key"), ALL_METHODS)
def test_a_method_switched_off_says_it_is_disabled(tmp_path, command, key):
    (tmp_path / ".git").mkdir()
    config = _write_config(tmp_path / "evals", {key: {"enabled": False}})
    result = invoke(command, "--config", config)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Execution failed: {command} is disabled by methods.{key}.enabled=false"
    assert "missing required argument" not in result.stderr


@pytest.mark.parametrize(("command", "key"), MODEL_METHODS)
@pytest.mark.parametrize("block", [None, {}])
def test_a_model_method_left_unset_says_it_must_be_enabled(tmp_path, command, key, block):
    (tmp_path / ".git").mkdir()
    config = _write_config(tmp_path / "evals", {} if block is None else {key: block})
    result = invoke(command, "--config", config)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Execution failed: {command} requires methods.{key}.enabled=true"


# ---- the gate comes before the repository check: eval-kit gated a config anywhere (its root fell back to /) -------


@pytest.mark.parametrize(("command", "key"), ALL_METHODS)
def test_the_gate_speaks_first_for_a_config_outside_any_repository(tmp_path, command, key):
    # As eval-kit's own CLI test does: the fixture config copied into a bare temporary folder.
    config = _write_config(tmp_path / "eval-kit-cli", {key: {"enabled": False}})
    result = invoke(command, "--config", config)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Execution failed: {command} is disabled by methods.{key}.enabled=false"


def test_outside_a_repository_an_enabled_method_is_still_refused_for_the_missing_root(tmp_path):
    config = _write_config(tmp_path / "bare", {"deterministic": {"enabled": True}})
    result = invoke("run-case", "--config", config, "--case", "x", "--candidate", "c.md")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error loading config: no repository root found")


# ---- validate_pointwise_run_metadata on eval-kit's own manifest and expected keys (its pointwise test) -------------


def _eval_kit_pointwise_manifest(**overrides):
    manifest = {
        "schema_version": "eval-kit.result-manifest.v2",
        "run_id": "provider-20260704-case-good",
        "run_type": "judge-coverage",
        "runner": {"id": "suite-pointwise-judge", "version": "0.1.8"},
        "case_ids": ["case-alpha"],
        "started_at": "2026-07-04T00:00:00.000Z",
        "ended_at": "2026-07-04T00:00:01.000Z",
        "duration_ms": 1000,
        "status": "completed",
        "git": {"commit": "abc123"},
        "command": "pnpm eval:judge:coverage",
        "tool_versions": {"node": "v26.4.0"},
        "model": "gpt-5.4",
        "provider": "openai:codex-app-server",
        "model_provider": "openai:codex-app-server:gpt-5.4",
        "reasoning_effort": "medium",
        "prompt_version": "pointwise-v1",
        "rubric_version": "rubric-v1",
        "artifacts": [
            {"role": "report", "path": "report.md"},
            {"role": "pointwise_result", "path": "pointwise-result.json"},
            {"role": "promptfoo_config", "path": "promptfooconfig.json"},
            {"role": "raw_promptfoo_results", "path": "promptfoo-results.json"},
            {"role": "promptfoo_html_report", "path": "promptfoo-report.html"},
        ],
        "output_files": [
            "manifest.json", "report.md", "pointwise-result.json", "promptfooconfig.json", "promptfoo-results.json",
            "promptfoo-report.html",
        ],
    }
    manifest.update(overrides)
    return manifest


EVAL_KIT_EXPECTED = {
    "runId": "provider-20260704-case-good",
    "caseId": "case-alpha",
    "model": "gpt-5.4",
    "provider": "openai:codex-app-server",
    "effort": "medium",
    "promptVersion": "pointwise-v1",
    "rubricVersion": "rubric-v1",
    "runnerVersion": "0.1.8",
}


def test_an_eval_kit_pointwise_manifest_validates_with_eval_kit_expected_keys():
    from assay.doc import validate_pointwise_run_metadata

    validate_pointwise_run_metadata(manifest=_eval_kit_pointwise_manifest(), expected=EVAL_KIT_EXPECTED)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"run_id": ""}, "missing run_id"),
        ({"model": "gpt-5.5"}, "model mismatch"),
        ({"artifacts": [{"role": "report", "path": "report.md"}]}, "missing artifact role pointwise_result"),
        ({"output_files": ["manifest.json", "report.md"]}, "output_files missing artifact path pointwise-result.json"),
        ({"prompt_version": "pointwise-v2"}, "prompt_version mismatch"),
        ({"reasoning_effort": "high"}, "reasoning_effort mismatch"),
        ({"run_id": "another-run"}, "run_id mismatch"),
        ({"case_ids": ["case-beta"]}, "case_ids mismatch"),
        ({"runner": {"id": "x", "version": "0.1.7"}}, "runner.version mismatch"),
        (
            {"output_files": ["manifest.json", "report.md", "pointwise-result.json", "./promptfooconfig.json",
                              "promptfoo-results.json", "promptfoo-report.html"]},
            "must not contain . or .. path segments",
        ),
    ],
)
def test_an_eval_kit_pointwise_manifest_fails_closed_as_eval_kit_says(overrides, message):
    from assay.doc import validate_pointwise_run_metadata
    from assay.errors import CaseError

    with pytest.raises(CaseError, match=message.replace(".", r"\.")):
        validate_pointwise_run_metadata(manifest=_eval_kit_pointwise_manifest(**overrides), expected=EVAL_KIT_EXPECTED)


def test_a_manifest_naming_some_promptfoo_files_needs_all_of_eval_kit_roles():
    from assay.doc import validate_pointwise_run_metadata
    from assay.errors import CaseError

    manifest = _eval_kit_pointwise_manifest()
    manifest["artifacts"] = [a for a in manifest["artifacts"] if a["role"] != "promptfoo_html_report"]
    with pytest.raises(CaseError, match="missing artifact role promptfoo_html_report"):
        validate_pointwise_run_metadata(manifest, EVAL_KIT_EXPECTED)


# ---- the artifacts a JavaScript hook is handed carry eval-kit's `absolutePath` --------------------------------------


@pytest.mark.skipif(__import__("shutil").which("node") is None, reason="node is required for .mjs adapters")
def test_a_javascript_hook_reads_an_artifact_by_its_absolute_path(tmp_path, monkeypatch, fake_openai):
    from doc_suites import make_suite
    from servers.fake_openai import chat_reply

    suite = make_suite(tmp_path, adapter="")
    (suite.evals / "adapter.mjs").write_text(
        'import fs from "node:fs";\n'
        "export const gradeCandidate = () => ({ verdict: \"green\", findings: [] });\n"
        'export const renderDeterministicReport = () => "# ok";\n'
        "export const resolveGenerationVars = async ({ artifacts }) => ({\n"
        '  source_material: fs.readFileSync(\n'
        '    artifacts.find((a) => a.role === "generation_visible").absolutePath, "utf8"),\n'
        '  candidate_instructions: "Write it.",\n'
        '  output_format: "Markdown",\n'
        "});\n"
    )
    suite.update_config(adapter="adapter.mjs")
    suite.enable("generate")
    monkeypatch.chdir(suite.repo)
    fake_openai.enqueue(chat_reply("# Plan\n"))
    result = invoke("generate", "--case", "case-one", "--model", "m", "--provider", "openai", "--effort", "low",
                    "--run-id", "gen", env={"ASSAY_JUDGE_BASE_URL": fake_openai.base_url})
    assert result.exit_code == 0, result.stderr
    source = (suite.repo / "evals" / "cases" / "case-one" / "input.md").read_text()
    assert source.strip() and source.strip() in fake_openai.chat_requests[-1].prompt


# ---- run-case without an adapter: what to set ------------------------------------------------------------------


def _hooks_module_only(config):
    config["hooks"] = {"module": config.pop("adapter")}


def _legacy_grader_misnamed(config):
    config["graders"] = {"keyword": config.pop("adapter")}
    config["methods"]["deterministic"]["grader"] = "keywords"


@pytest.mark.parametrize(("edit", "said"), [
    (_hooks_module_only, "run-case does not use hooks.module; name that module in adapter in evals/eval-kit.config.json"),
    (_legacy_grader_misnamed, "grader 'keywords' is not in graders in evals/eval-kit.config.json; it has keyword"),
], ids=["only-hooks-module", "legacy-grader-not-in-the-map"])
def test_run_case_without_a_grader_names_the_setting_to_use(tmp_path, monkeypatch, edit, said):
    from doc_suites import make_suite

    suite = make_suite(tmp_path)
    config = suite.config()
    edit(config)
    suite.config_path.write_text(json.dumps(config))
    monkeypatch.chdir(suite.repo)
    result = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Execution failed: no grader configured ({said})"


# ---- discovery: a shared case id is listed as often as eval-kit lists it; `.json` alone keeps its name ------------


def test_list_cases_lists_an_id_two_manifests_share_twice(tmp_path, monkeypatch):
    from doc_suites import make_suite

    suite = make_suite(tmp_path)
    second = suite.add_case("case-two")
    manifest = json.loads((second / "case-manifest.json").read_text())
    (second / "case-manifest.json").write_text(json.dumps({**manifest, "case_id": "case-one"}))
    monkeypatch.chdir(suite.repo)
    result = invoke("list-cases")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["case-one", "case-one"]
    assert "duplicate case id case-one" in invoke("doctor").stderr


def test_a_grader_input_named_only_json_keeps_its_name_as_node_does():
    from assay.doc.cases import grader_input_key

    assert grader_input_key(".json") == ".json"
    assert grader_input_key("expected-items.json") == "expectedItems"
