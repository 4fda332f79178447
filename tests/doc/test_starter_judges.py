"""The suite `assay doc init` writes runs the model judges as written, against an OpenAI-compatible
server (the fake one on 127.0.0.1), and a judge command missing several things says them all at once."""

from __future__ import annotations

import json
import shutil

import pytest

from doc_judges import judge_env, judge_responder
from doc_suites import invoke

JUDGE_CONFIG = "evals/eval-kit.model-judge.config.json"
MODEL_ARGS = ["--model", "judge-model", "--provider", "openai", "--effort", "low"]
LANGUAGES = [
    "python",
    pytest.param("javascript", marks=pytest.mark.skipif(shutil.which("node") is None, reason="node runs adapter.mjs")),
]


@pytest.fixture
def starter(tmp_path, monkeypatch, request):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert invoke("init", "--adapter-language", request.param).exit_code == 0
    assert invoke("scaffold-case", "--case", "release-notes").exit_code == 0
    (tmp_path / "good.md").write_text("# Notes\n\nWe ship the importer; replace this required text.\n")
    (tmp_path / "other.md").write_text("# Notes\n\nNothing yet.\n")
    return tmp_path


@pytest.mark.parametrize("starter", LANGUAGES, indirect=True)
def test_the_starter_judge_config_runs_coverage_and_pairwise_judges(starter, fake_openai):
    assert invoke("doctor", "--config", JUDGE_CONFIG, env=judge_env(fake_openai)).exit_code == 0
    fake_openai.respond_with(judge_responder("pointwise"))
    coverage = invoke(
        "judge-coverage", "--config", JUDGE_CONFIG, "--case", "release-notes", "--candidate", "good.md", *MODEL_ARGS,
        "--run-id", "cov", env=judge_env(fake_openai),
    )  # fmt: skip
    assert coverage.exit_code == 0, coverage.stderr
    assert coverage.stdout.splitlines()[0].startswith("covered: 1,")
    prompt = fake_openai.chat_requests[-1].prompt
    assert "Replace with the source material" in prompt and "replace this required text" in prompt
    [item] = json.loads((starter / "evals" / "results" / "cov" / "pointwise-result.json").read_text())["items"]
    # The judge made up a kind; the starter's canonicalisation puts back the case's own.
    assert (item["item_id"], item["kind"], item["source_refs"]) == ("expected-item-1", "generic", ["input.md"])

    fake_openai.respond_with(judge_responder("pairwise", pick="candidate_a"))
    pairwise = invoke(
        "judge-pairwise", "--config", JUDGE_CONFIG, "--case", "release-notes", "--candidate-a", "good.md",
        "--candidate-b", "other.md", *MODEL_ARGS, "--seed", "1", "--run-id", "pair", env=judge_env(fake_openai),
    )  # fmt: skip
    assert pairwise.exit_code == 0, pairwise.stderr
    assert pairwise.stdout.startswith("Winner: candidate_")


@pytest.mark.parametrize("starter", ["python"], indirect=True)
def test_a_judge_command_says_every_missing_flag_and_hook_in_one_line(starter, fake_openai):
    adapter = starter / "evals" / "adapter.py"
    adapter.write_text(adapter.read_text().replace("def resolve_pointwise_vars(", "def _resolve_pointwise_vars("))
    result = invoke(
        "judge-coverage", "--config", JUDGE_CONFIG, "--case", "release-notes", "--candidate", "good.md",
        env=judge_env(fake_openai),
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Execution failed: missing required arguments --model, --provider, --effort; and adapter module does not "
        "export resolvePointwiseVars function: judge-coverage requires the adapter to export resolve_pointwise_vars "
        "or resolvePointwiseVars"
    ]
    assert fake_openai.requests == []
