"""Audit of the model-driven `assay doc` commands against eval-kit (spec doc.md §2.7-2.9, §3, §4.4), 6 December.

Each test pins one deviation that was fixed: the prompt/rubric version line as eval-kit reads it, the
pairwise echo mismatch in eval-kit's compact JSON, `canonicalizeExpectedItemMetadata` called whenever the
adapter has it (with `_expectedItemsForCanonicalization` as returned), canonicalised items the schema refuses
named with the hook and the item the judge left out, `validatePointwiseRunMetadata`'s
`requiredArtifactRoles`, and the model fields of a run manifest in eval-kit's key order.
"""

from __future__ import annotations

import json
import shutil

import pytest

from doc_judges import judge_env, judge_responder
from doc_suites import invoke

MODEL_ARGS = ["--model", "judge-model", "--provider", "openai", "--effort", "low"]
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is required for .mjs adapters")


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))


def _coverage(server, run_id="cov-1"):
    return invoke("judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *MODEL_ARGS,
                  "--run-id", run_id, env=judge_env(server))


# ---- §2.8 step 5: the version lines, read as eval-kit reads them ----------------------------------------------------


def test_a_version_value_may_follow_a_line_break_as_in_eval_kit():
    from assay.doc.prompts import extract_version

    template = "# Judge\n\nPrompt version:\n`team-prompt-v3`\n\nRubric version:   `team-rubric-v2`\n"
    assert extract_version(template, "Prompt version") == "team-prompt-v3"
    assert extract_version(template, "Rubric version") == "team-rubric-v2"


def test_an_empty_version_value_is_passed_over_for_the_next_one():
    from assay.doc.prompts import extract_version

    template = "Prompt version: ``\nPrompt version: `{{ prompt_version }}`\nPrompt version: `real-v1`\n"
    assert extract_version(template, "Prompt version") == "real-v1"


def test_a_template_whose_only_version_is_empty_is_refused_before_the_model_is_asked(model_suite, fake_openai):
    (model_suite.evals / "judge.md").write_text(
        "Prompt version: ``\nRubric version: `r1`\n\n{{ case_id }} {{ model }} {{ provider }} {{ prompt_version }}\n"
        "{{ rubric_version }} {{ source_material }} {{ case_rubric }} {{ expected_items }} {{ candidate_path }}\n"
        "{{ candidate }}\n"
    )
    model_suite.update_config(prompt_templates={"pointwise_judge": "judge.md"})
    result = _coverage(fake_openai)
    assert result.exit_code == 2, result.stdout
    assert "Could not find Prompt version in prompt template judge.md" in result.stderr
    assert fake_openai.chat_requests == []  # (it used to blame the hook: "returned an empty prompt_version")


# ---- §2.9: an echoed order that does not match is said in eval-kit's words (JSON.stringify) --------------------------


def test_a_pairwise_order_mismatch_shows_the_orders_as_compact_json(model_suite, fake_openai):
    def swap(answer):
        answer["candidate_order"] = list(reversed(answer["candidate_order"]))

    fake_openai.respond_with(judge_responder("pairwise", tweak=swap))
    result = invoke("judge-pairwise", "--case", "case-one", "--candidate-a", "candidates/good.md", "--candidate-b",
                    "candidates/bad.md", *MODEL_ARGS, "--seed", "4", "--run-id", "pair-1", env=judge_env(fake_openai))
    assert result.exit_code == 2
    assert ('candidate_order mismatch in pairwise judge output: expected ["candidate_b","candidate_a"], '
            'received ["candidate_a","candidate_b"]') in result.stderr, result.stderr


# ---- §2.8 step 12: canonicalizeExpectedItemMetadata, called as eval-kit calls it ------------------------------------

_POINTWISE_HOOK = """
import fs from "node:fs";
const read = (artifacts, role) => fs.readFileSync(artifacts.find((a) => a.role === role).absolutePath, "utf8");
const expectedFor = (artifacts) => JSON.parse(read(artifacts, "grader_input")).items.map((item) => ({
  item_id: item.id, kind: item.kind, severity: item.severity, source_refs: ["input.md"],
}));
export const resolvePointwiseVars = async ({
  caseId, artifacts, candidateContent, candidatePath, promptVersion, rubricVersion, model, provider, resolver,
}) => ({
  case_id: caseId, model, provider, prompt_version: promptVersion, rubric_version: rubricVersion,
  source_material: read(artifacts, "generation_visible"), case_rubric: read(artifacts, "rubric"),
  expected_items: JSON.stringify(expectedFor(artifacts), null, 2),
  candidate_path: resolver.relativeToRepo(candidatePath), candidate: candidateContent,PRIVATE
});
"""
_EVAL_KIT_CANONICALIZE = (  # eval-kit's adapter-contract example
    "export const canonicalizeExpectedItemMetadata = (actualItems, expectedItems) =>\n"
    "  expectedItems.map((expected) => ({\n"
    "    ...actualItems.find((item) => item.item_id === expected.item_id),\n"
    "    kind: expected.kind, severity: expected.severity, source_refs: expected.source_refs,\n"
    "  }));\n"
)


def _javascript_suite(tmp_path, monkeypatch, canonicalize: str, private: bool = False):
    from doc_suites import make_suite

    suite = make_suite(tmp_path, adapter="")
    hook = _POINTWISE_HOOK.replace("PRIVATE", "\n  _expectedItemsForCanonicalization: expectedFor(artifacts)," if private else "")
    (suite.evals / "adapter.mjs").write_text(hook + canonicalize)
    suite.update_config(adapter="adapter.mjs")
    suite.enable("judge_coverage")
    monkeypatch.chdir(suite.repo)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return suite


@needs_node
def test_canonicalize_runs_when_the_vars_hook_returns_no_private_items_and_gets_null(tmp_path, monkeypatch, fake_openai):
    # eval-kit calls the hook whenever the adapter exports it, with `vars._expectedItemsForCanonicalization`
    # (here none); assay used to hand it `expected_items` parsed instead, or skip it silently.
    suite = _javascript_suite(tmp_path, monkeypatch, (
        "export const canonicalizeExpectedItemMetadata = (actualItems, expectedItems) =>\n"
        "  actualItems.map((item) => ({ ...item, kind: expectedItems === null ? 'given-null' : 'given-items' }));\n"
    ))
    fake_openai.respond_with(judge_responder("pointwise"))
    result = _coverage(fake_openai)
    assert result.exit_code == 0, result.stderr
    stored = json.loads((suite.results / "cov-1" / "pointwise-result.json").read_text())
    assert {item["kind"] for item in stored["items"]} == {"given-null"}


@needs_node
def test_eval_kits_canonicalize_without_private_items_fails_saying_what_the_vars_hook_left_out(
    tmp_path, monkeypatch, fake_openai
):
    suite = _javascript_suite(tmp_path, monkeypatch, _EVAL_KIT_CANONICALIZE)
    fake_openai.respond_with(judge_responder("pointwise"))
    result = _coverage(fake_openai)
    assert result.exit_code == 2, result.stdout
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("Execution failed: canonicalizeExpectedItemMetadata failed: TypeError"), line
    assert ("resolvePointwiseVars returned no _expectedItemsForCanonicalization, so canonicalizeExpectedItemMetadata "
            "was given null as its expected items") in line
    assert not (suite.results / "cov-1" / "manifest.json").exists()


@needs_node
def test_canonicalized_items_the_schema_refuses_name_the_hook_and_the_item_the_judge_left_out(
    tmp_path, monkeypatch, fake_openai
):
    suite = _javascript_suite(tmp_path, monkeypatch, _EVAL_KIT_CANONICALIZE, private=True)

    def only_the_first_item(answer):
        answer["items"] = answer["items"][:1]

    fake_openai.respond_with(judge_responder("pointwise", tweak=only_the_first_item))
    result = _coverage(fake_openai)
    assert result.exit_code == 2, result.stdout
    assert ("canonicalized pointwise result failed schema validation: /items/1 must have required property 'item_id' "
            "(canonicalizeExpectedItemMetadata in evals/adapter.mjs returned it; the judge's reply has no item "
            "for limit; the raw reply is saved in evals/results/cov-1/judge-response.json)") in result.stderr
    assert not (suite.results / "cov-1" / "manifest.json").exists()


@needs_node
def test_eval_kits_canonicalize_with_private_items_restores_the_expected_metadata(tmp_path, monkeypatch, fake_openai):
    suite = _javascript_suite(tmp_path, monkeypatch, _EVAL_KIT_CANONICALIZE, private=True)
    fake_openai.respond_with(judge_responder("pointwise"))  # it answers kind "judge-made-up-kind"
    result = _coverage(fake_openai)
    assert result.exit_code == 0, result.stderr
    stored = json.loads((suite.results / "cov-1" / "pointwise-result.json").read_text())
    assert [(item["item_id"], item["kind"]) for item in stored["items"]] == [("goal", "goal"), ("limit", "constraint")]
    sent = json.loads((suite.results / "cov-1" / "judge-request.json").read_text())["calls"][0]["vars"]
    assert "_expectedItemsForCanonicalization" not in sent  # assay keeps `_` variables from the model


# ---- §4.4: validatePointwiseRunMetadata's `expected.requiredArtifactRoles` ----------------------------------------


def _manifest(roles):
    artifacts = [{"role": role, "path": f"{role}.json"} for role in roles]
    return {
        "run_id": "r1", "run_type": "judge-coverage", "case_ids": ["case-one"], "model": "m", "provider": "openai",
        "reasoning_effort": "low", "prompt_version": "p1", "rubric_version": "r1", "runner": {"version": "0.1.8"},
        "artifacts": artifacts, "output_files": ["manifest.json", *(artifact["path"] for artifact in artifacts)],
    }


def test_eval_kits_required_artifact_roles_key_is_read():
    from assay.doc.pointwise import validate_pointwise_run_metadata
    from assay.errors import CaseError

    manifest = _manifest(["report", "pointwise_result"])
    validate_pointwise_run_metadata(manifest, {"requiredArtifactRoles": ["report", "pointwise_result"]})
    validate_pointwise_run_metadata(manifest, {"requiredArtifactRoles": []})  # none required, as in eval-kit
    with pytest.raises(CaseError, match="missing artifact role grader_notes"):
        validate_pointwise_run_metadata(manifest, {"requiredArtifactRoles": ["report", "grader_notes"]})


# ---- §2.7-2.9: the manifest's keys in eval-kit's order (without its codex fields) -----------------------------------

_HEAD = ["schema_version", "run_id", "run_type", "runner", "case_ids", "started_at", "ended_at", "duration_ms",
         "status", "git", "command", "tool_versions", "model_provider", "model", "provider", "reasoning_effort"]


def test_model_run_manifests_keep_eval_kits_key_order(model_suite, fake_openai):
    from servers.fake_openai import chat_reply

    fake_openai.enqueue(chat_reply("# Plan\n\nWe ship the importer.\n"))
    assert invoke("generate", "--case", "case-one", *MODEL_ARGS, "--run-id", "gen-1",
                  env=judge_env(fake_openai)).exit_code == 0
    fake_openai.respond_with(judge_responder("pointwise"))
    assert _coverage(fake_openai).exit_code == 0
    fake_openai.respond_with(judge_responder("pairwise"))
    assert invoke("judge-pairwise", "--case", "case-one", "--candidate-a", "candidates/good.md", "--candidate-b",
                  "candidates/bad.md", *MODEL_ARGS, "--seed", "0", "--run-id", "pair-1",
                  env=judge_env(fake_openai)).exit_code == 0
    keys = {run: list(json.loads((model_suite.results / run / "manifest.json").read_text())) for run in
            ("gen-1", "cov-1", "pair-1")}
    assert keys["gen-1"] == [*_HEAD, "artifacts", "output_files"]
    assert keys["cov-1"] == keys["pair-1"] == [*_HEAD, "prompt_version", "rubric_version", "artifacts", "output_files"]
