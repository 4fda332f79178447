"""What a newcomer following the doc guides ran into: each mistake or surprise now says what happened,
where, and what to do, instead of a message that sent them looking in the wrong place."""

from __future__ import annotations

import json

import pytest

from doc_judges import judge_env, judge_responder
from doc_suites import invoke, make_suite
from servers.fake_openai import chat_reply

MODEL_ARGS = ["--model", "judge-model", "--provider", "openai", "--effort", "low"]
RUN = ("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r1")


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    monkeypatch.delenv("ASSAY_DOC_HOOK_TIMEOUT", raising=False)
    monkeypatch.delenv("ASSAY_ADAPTER_START_TIMEOUT", raising=False)


@pytest.fixture
def suite(tmp_path, monkeypatch):
    built = make_suite(tmp_path)
    monkeypatch.chdir(built.repo)
    return built


# -- a reporter that returns no Markdown string -----------------------------------------------------
JS_REPORTER_RETURNING_LINES = """
export const gradeCandidate = () => ({verdict: "green", findings: []});
export const renderDeterministicReport = ({ caseId }) => [`# Report: ${caseId}`, "", "Fine."];
"""


def test_a_javascript_reporter_that_returns_its_lines_unjoined_names_the_hook_and_the_fix(suite):
    # Before: "the reporter must return a Markdown string, got list": Python's type name, no hook, no file.
    (suite.evals / "adapter.mjs").write_text(JS_REPORTER_RETURNING_LINES)
    suite.update_config(adapter="adapter.mjs")
    result = invoke(*RUN)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: the reporter must return a Markdown string: renderDeterministicReport in "
        "evals/adapter.mjs returned a list (array) (join the lines with newlines)"
    )


def test_a_python_reporter_that_returns_nothing_says_nothing_not_nonetype(suite):
    (suite.evals / "adapter.py").write_text(
        "def grade_candidate(grade):\n    return {'verdict': 'green', 'findings': []}\n\n\n"
        "def render_report(report):\n    print('# Report')\n"
    )
    suite.update_config(adapter="adapter.py")
    result = invoke(*RUN)
    assert result.exit_code == 2 and "NoneType" not in result.stderr
    assert "render_report in evals/adapter.py returned nothing" in result.stderr


# -- a case the config does not select ----------------------------------------------------------------
def test_a_case_left_out_by_a_misspelt_include_is_named_with_the_setting_to_check(suite):
    # Before: "case manifest not found for case: case-one", while cases/case-one/case-manifest.json was there.
    suite.update_config(cases={"root": "cases", "include": ["case-on"]})
    result = invoke(*RUN)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: case manifest not found for case: case-one; cases/case-one/case-manifest.json is there, "
        "but the config does not select it: check cases.include and cases.exclude in evals/eval-kit.config.json"
    )


def test_a_case_missing_from_case_manifests_names_that_setting(suite):
    suite.add_case("case-two")
    suite.update_config(case_manifests=["cases/case-two/case-manifest.json"])
    result = invoke(*RUN)
    assert result.exit_code == 2
    assert "cases/case-one/case-manifest.json is there, but the config does not select it: check case_manifests" in (
        result.stderr
    )


def test_doctor_and_list_cases_say_which_case_folders_the_config_leaves_out(suite):
    # Before: doctor passed with "ok - 0 case(s) discovered" and list-cases said "No cases found.", nothing more.
    suite.update_config(cases={"root": "cases", "include": ["case-on"]})
    doctor = invoke("doctor")
    assert doctor.exit_code == 0
    assert (
        "ok - 0 case(s) discovered; 1 case folder(s) left out by cases.include and cases.exclude in "
        "evals/eval-kit.config.json: cases/case-one"
    ) in doctor.stdout.splitlines()
    listed = invoke("list-cases")
    assert listed.exit_code == 0 and listed.stdout.strip() == "No cases found."
    assert listed.stderr.strip() == (
        "1 case folder(s) left out by cases.include and cases.exclude in evals/eval-kit.config.json: cases/case-one."
    )


def test_a_suite_that_selects_every_case_says_nothing_more(suite):
    assert "left out" not in invoke("doctor").stdout
    assert invoke("list-cases").stderr == ""


# -- a case id given as its folder --------------------------------------------------------------------
@pytest.mark.parametrize("given", ["case-one/", "evals/cases/case-one/"])
def test_a_case_id_completed_as_a_folder_by_the_shell_names_the_id_meant(suite, given):
    # Before: "case id must be an id, not a path", which did not say what the id is.
    result = invoke("run-case", "--case", given, "--candidate", "candidates/good.md")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: case id must be an id, not a path (give the name alone: case-one)"
    )


def test_a_path_that_is_no_folder_name_gets_no_guess(suite):
    result = invoke("run-case", "--case", "../x/", "--candidate", "candidates/good.md")
    assert result.stderr.strip() == "Execution failed: case id must be an id, not a path"


# -- a misspelt module-loading limit ------------------------------------------------------------------
def test_a_misspelt_adapter_start_timeout_is_refused_not_ignored(suite, monkeypatch):
    # Before: ASSAY_ADAPTER_START_TIMOUT=120 was ignored, so node kept its 30 s default and nothing said so.
    monkeypatch.setenv("ASSAY_ADAPTER_START_TIMOUT".replace("TIMEOUT", "TIMOUT"), "120")
    result = invoke(*RUN)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: ASSAY_ADAPTER_START_TIMOUT is no assay setting (did you mean "
        "ASSAY_ADAPTER_START_TIMEOUT?); rename it, or unset it"
    )


def test_the_correct_adapter_start_timeout_is_accepted(suite, monkeypatch):
    monkeypatch.setenv("ASSAY_ADAPTER_START_TIMEOUT", "120")
    assert invoke(*RUN).exit_code == 0


# -- a reply cut off at the model's output limit ------------------------------------------------------
def test_a_judge_reply_cut_off_at_the_output_limit_says_so(model_suite, fake_openai):
    # Before: only "model output was not valid JSON", as if the model had answered in prose.
    fake_openai.enqueue(chat_reply('{"case_id": "case-one", "items": [', finish_reason="length"))
    result = invoke("judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *MODEL_ARGS,
                    "--run-id", "cut", env=judge_env(fake_openai))  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: model output was not valid JSON; the model stopped at its output limit (finish_reason "
        "length), so the reply is incomplete; the raw reply is saved in evals/results/cut/judge-response.json"
    )


def test_a_generated_candidate_cut_off_at_the_output_limit_is_kept_with_a_warning(model_suite, fake_openai):
    # Before: the half document was written as the candidate, exit 0, and nothing said it was cut off.
    fake_openai.enqueue(chat_reply("# Plan\n\nWe ship the imp", finish_reason="length"))
    result = invoke("generate", "--case", "case-one", *MODEL_ARGS, "--run-id", "gen", env=judge_env(fake_openai))
    assert result.exit_code == 0
    assert (
        "Warning: the model stopped at its output limit (finish_reason length), so the model output is incomplete; "
        "see evals/results/gen/judge-response.json"
    ) in result.stderr


def test_a_whole_reply_gets_no_warning(model_suite, fake_openai):
    fake_openai.respond_with(judge_responder("pointwise"))
    result = invoke("judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *MODEL_ARGS,
                    "--run-id", "whole", env=judge_env(fake_openai))  # fmt: skip
    assert result.exit_code == 0 and "output limit" not in result.stderr
    assert json.loads((model_suite.results / "whole" / "manifest.json").read_text())["run_type"]


def test_a_long_list_of_left_out_cases_names_three_and_counts_the_rest(suite):
    for number in range(2, 6):
        suite.add_case(f"case-{number}")
    suite.update_config(cases={"root": "cases", "include": ["nothing-*"]})
    assert invoke("list-cases").stderr.strip() == (
        "5 case folder(s) left out by cases.include and cases.exclude in evals/eval-kit.config.json: "
        "cases/case-2, cases/case-3, cases/case-4 and 2 more."
    )
