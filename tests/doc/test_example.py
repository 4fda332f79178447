"""The shipped `examples/doc` suite: offline grading (the README demo) and its model-judge hooks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from doc_judges import judge_responder
from doc_suites import invoke

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "doc"
CONFIG = "examples/doc/evals/eval-kit.config.json"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    shutil.copytree(EXAMPLE, tmp_path / "examples" / "doc", ignore=shutil.ignore_patterns("results"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_example_grades_good_green_and_weak_red_offline(repo):
    assert invoke("doctor", "--config", CONFIG).exit_code == 0
    good = invoke(
        "run-case", "--config", CONFIG, "--case", "release-notes-v1", "--candidate", "examples/doc/candidates/good.md"
    )
    assert good.exit_code == 0 and good.stdout.startswith("Verdict: green")
    weak = invoke(
        "run-case", "--config", CONFIG, "--case", "release-notes-v1", "--candidate", "examples/doc/candidates/weak.md"
    )
    assert weak.exit_code == 1 and weak.stdout.startswith("Verdict: red")


def test_example_model_judge_config_runs_against_an_openai_compatible_server(repo, fake_openai):
    fake_openai.respond_with(judge_responder("pointwise"))
    result = invoke(
        "judge-coverage",
        "--config",
        "examples/doc/evals/eval-kit.model-judge.config.json",
        "--case",
        "release-notes-v1",
        "--candidate",
        "examples/doc/candidates/good.md",
        "--model",
        "m",
        "--provider",
        "openai",
        "--effort",
        "low",
        "--run-id",
        "cov",
        env={"ASSAY_JUDGE_BASE_URL": fake_openai.base_url},
    )
    assert result.exit_code == 0, result.stderr
    stored = json.loads((repo / "examples/doc/evals/results/cov/pointwise-result.json").read_text())
    assert [item["kind"] for item in stored["items"]] == ["breaking-change", "migration", "support"]


@pytest.mark.parametrize("broken, said", [
    (lambda items: items["items"][1].pop("kind"), "expected-items.json: item migration-flag needs kind, a non-empty string"),
    (lambda items: items.update(itemz=items.pop("items")), 'expected-items.json needs "items", a non-empty list'),
    (lambda items: items["items"][0].update(must_include_all="parquet"),
     "expected-items.json: item breaking-default needs must_include_all"),
])
def test_a_broken_expected_item_fails_doctor_naming_the_file_and_field(repo, broken, said):
    """The judge hooks read every item's kind and severity: a typo there was a KeyError in judge-coverage, after
    doctor had passed."""
    path = repo / "examples" / "doc" / "evals" / "cases" / "release-notes-v1" / "expected-items.json"
    items = json.loads(path.read_text())
    broken(items)
    path.write_text(json.dumps(items))
    result = invoke("doctor", "--config", CONFIG)
    assert result.exit_code == 2
    assert f"validate_fixtures failed: ValueError: cases/release-notes-v1/{said}" in result.stderr, result.stderr


def test_the_examples_report_without_its_run_says_which_flag_to_give(repo):
    """`assay doc report --run-id r` of the example (no `--deterministic`) failed with `KeyError: 'deterministic'`."""
    missing = invoke("report", "--config", CONFIG, "--run-id", "combined")
    assert missing.exit_code == 2
    assert "give its id, assay doc report --run-id ID --deterministic RUN_ID" in missing.stderr, missing.stderr
    unknown = invoke("report", "--config", CONFIG, "--run-id", "combined2", "--deterministic", "nope")
    assert unknown.exit_code == 2 and "--deterministic nope:" in unknown.stderr and "holds no grades.json" in unknown.stderr
    ran = invoke("run-case", "--config", CONFIG, "--case", "release-notes-v1", "--candidate",
                 "examples/doc/candidates/good.md", "--run-id", "det")
    assert ran.exit_code == 0, ran.stderr
    report = invoke("report", "--config", CONFIG, "--run-id", "combined3", "--deterministic", "det")
    assert report.exit_code == 0, report.stderr
