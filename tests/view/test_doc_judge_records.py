"""`assay doc judge-coverage` and `judge-pairwise` record their runs, against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

DOC_TESTS = str(Path(__file__).resolve().parents[1] / "doc")
if DOC_TESTS not in sys.path:
    sys.path.insert(0, DOC_TESTS)

from doc_judges import judge_responder
from doc_suites import invoke, make_suite
from filled_store import invoke_runs

MODEL_ARGS = ["--model", "judge-model", "--provider", "openai", "--effort", "low"]


@pytest.fixture
def suite(tmp_path, monkeypatch):
    built = make_suite(tmp_path)
    built.enable("judge_coverage", "judge_pairwise")
    monkeypatch.chdir(built.repo)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    return built


def _env(server):
    return {"ASSAY_JUDGE_BASE_URL": server.base_url, "ASSAY_JUDGE_API_KEY": "test-key"}


def _latest_unit() -> dict:
    document = json.loads(invoke_runs("runs", "show", "latest", "--json").output)
    run_id = document["run_id"]
    from assay.core.results_store import open_store

    with open_store(read_only=True) as store:
        unit = store.unit_page(run_id).units[0]
    return {"run": document, "unit": unit}


def test_coverage_judge_records_verdicts_and_model(suite, fake_openai) -> None:
    fake_openai.respond_with(judge_responder("pointwise", verdict="missing"))
    result = invoke("judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *MODEL_ARGS,
                    "--run-id", "cov-1", env=_env(fake_openai))
    assert result.exit_code == 0, result.stderr
    latest = _latest_unit()
    assert latest["run"]["identity"]["model"] == "judge-model"
    unit = latest["unit"]
    assert unit.unit_id == "case-one/judge-coverage" and unit.verdict == "failed"
    assert unit.observed["missing"] == 2 and "missing" in unit.reason
    assert [item["verdict"] for item in unit.detail["judgements"]] == ["missing", "missing"]
    assert unit.detail["candidate"]


def test_pairwise_judge_records_the_winner_as_ignored(suite, fake_openai) -> None:
    fake_openai.respond_with(judge_responder("pairwise"))
    result = invoke("judge-pairwise", "--case", "case-one", "--candidate-a", "candidates/good.md", "--candidate-b",
                    "candidates/bad.md", *MODEL_ARGS, "--seed", "0", "--run-id", "pair-1", env=_env(fake_openai))
    assert result.exit_code == 0, result.stderr
    unit = _latest_unit()["unit"]
    assert unit.unit_id == "case-one/judge-pairwise" and unit.verdict == "ignored"
    assert unit.observed["winner"] in ("candidate_a", "candidate_b", "tie", "unknown")
    assert len(unit.detail["candidates"]) == 2
