"""`generate`, `judge-coverage` and `judge-pairwise` against the fake OpenAI-compatible server.

Covers gates, the request sent, echo checks, canonicalisation, pairwise order and every judge-output failure.
"""

from __future__ import annotations

import json

import pytest

from doc_judges import judge_env, judge_responder
from doc_suites import invoke
from servers.fake_openai import chat_reply, error_reply

MODEL_ARGS = ["--model", "judge-model", "--provider", "openai", "--effort", "low"]


@pytest.fixture
def suite(model_suite):
    return model_suite  # (conftest.py)


def coverage(server, *extra, candidate="candidates/good.md", run_id="cov-1"):
    return invoke(
        "judge-coverage",
        "--case",
        "case-one",
        "--candidate",
        candidate,
        *MODEL_ARGS,
        "--run-id",
        run_id,
        *extra,
        env=judge_env(server),
    )


def pairwise(server, *extra, seed="0", a="candidates/good.md", b="candidates/bad.md", run_id="pair-1"):
    return invoke(
        "judge-pairwise",
        "--case",
        "case-one",
        "--candidate-a",
        a,
        "--candidate-b",
        b,
        *MODEL_ARGS,
        "--seed",
        seed,
        "--run-id",
        run_id,
        *extra,
        env=judge_env(server),
    )


# ---- gates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "key"),
    [("generate", "generate"), ("judge-coverage", "judge_coverage"), ("judge-pairwise", "judge_pairwise")],
)
@pytest.mark.parametrize("block", [None, {}, {"enabled": False}])
def test_model_methods_need_explicit_enabling_before_anything_else(suite, fake_openai, command, key, block):
    config = suite.config()
    if block is None:
        config["methods"].pop(key)
    else:
        config["methods"][key] = block
    suite.config_path.write_text(json.dumps(config))
    result = invoke(command, env=judge_env(fake_openai))
    assert result.exit_code == 2
    disabled = block == {"enabled": False}
    said = f"is disabled by methods.{key}.enabled=false" if disabled else f"requires methods.{key}.enabled=true"
    assert result.stderr.strip() == f"Execution failed: {command} {said}"  # eval-kit's two messages
    assert fake_openai.requests == [] and not suite.results.exists()


def test_missing_model_flags_are_reported_after_the_gate(suite):
    result = invoke("generate", "--case", "case-one", "--model", "m")
    assert result.stderr.strip() == "Execution failed: missing required arguments --provider, --effort, --run-id"
    single = invoke("generate", "--case", "case-one", "--model", "m", "--provider", "openai", "--effort", "low")
    assert single.stderr.strip() == "Execution failed: missing required argument --run-id"  # eval-kit's words for one


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--provider", "anthropic"], "unsupported provider anthropic; use openai or openai:<label>"),
        (["--effort", "extreme"], "--effort must be one of low, medium, high, got extreme"),
    ],
)
def test_provider_and_effort_are_validated(suite, fake_openai, extra, message):
    result = coverage(fake_openai, *extra)
    assert result.exit_code == 2 and message in result.stderr and fake_openai.requests == []


def test_without_an_endpoint_nothing_is_called(suite):
    result = invoke("judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *MODEL_ARGS)
    assert result.exit_code == 2 and "no judge endpoint configured" in result.stderr


# ---- generate ------------------------------------------------------------------------------


def test_generate_writes_the_candidate_and_records_the_call(suite, fake_openai):
    fake_openai.enqueue(chat_reply("\n# Generated plan\n\nWe ship the importer.\n\n"))
    result = invoke("generate", "--case", "case-one", *MODEL_ARGS, "--run-id", "gen-1", env=judge_env(fake_openai))
    assert result.exit_code == 0, result.stderr
    run_dir = suite.results / "gen-1"
    assert (run_dir / "cases/case-one/candidate.md").read_text() == "# Generated plan\n\nWe ship the importer.\n"
    prompt = fake_openai.chat_requests[0].prompt
    assert "The team will ship the importer." in prompt and "case `case-one`" in prompt and "Markdown" in prompt
    assert "response_format" not in fake_openai.chat_requests[0].body
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["run_type"] == "generation" and manifest["runner"]["id"] == "fake-suite-generate"
    assert manifest["model_provider"] == "openai:judge-model" and manifest["reasoning_effort"] == "low"
    roles = {a["role"]: a for a in manifest["artifacts"]}
    assert set(roles) == {"report", "judge_request", "raw_judge_response", "candidate_markdown"}
    assert roles["raw_judge_response"]["redaction_status"] == "raw-local"
    report = (run_dir / "report.md").read_text()
    # eval-kit's head, line for line
    assert report.startswith(
        "# Generation Eval Report: case-one\n\nModel: judge-model\nProvider: openai\nAuth mode: api-key\n\n## Outputs\n\n"
        "- Candidate: evals/results/gen-1/cases/case-one/candidate.md\n"
    )


def test_generate_with_empty_output_fails_closed_and_keeps_the_reply(suite, fake_openai):
    fake_openai.enqueue(chat_reply("   ", finish_reason="length"))
    result = invoke("generate", "--case", "case-one", *MODEL_ARGS, "--run-id", "gen-1", env=judge_env(fake_openai))
    assert result.exit_code == 2
    # The reply was dropped (`"calls": []`): a judge's bad answer was kept and pointed at, generate's was not.
    assert result.stderr == (
        "Execution failed: model output was empty; the raw reply is saved in evals/results/gen-1/judge-response.json\n"
    )
    saved = json.loads((suite.results / "gen-1" / "judge-response.json").read_text())
    assert [call["response"]["choices"][0]["finish_reason"] for call in saved["calls"]] == ["length"]
    assert not (suite.results / "gen-1" / "manifest.json").exists()


# ---- judge-coverage ------------------------------------------------------------------------


def test_coverage_judges_items_canonicalises_and_summarises(suite, fake_openai):
    fake_openai.respond_with(judge_responder("pointwise"))
    result = coverage(fake_openai)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == "covered: 2, partial: 0, missing: 0, contradicted: 0, unknown: 0"
    request = fake_openai.chat_requests[0]
    assert request.body["reasoning_effort"] == "low" and request.body["temperature"] == 0
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert "allOf" not in json.dumps(schema)
    assert "_expectedItemsForCanonicalization" not in request.prompt
    assert "We ship the importer this quarter" in request.prompt and "candidates/good.md" in request.prompt
    run_dir = suite.results / "cov-1"
    stored = json.loads((run_dir / "pointwise-result.json").read_text())
    assert [item["kind"] for item in stored["items"]] == ["goal", "constraint"]  # canonicalised
    sent_vars = json.loads((run_dir / "judge-request.json").read_text())["calls"][0]["vars"]
    assert "_expectedItemsForCanonicalization" not in sent_vars
    report = (run_dir / "report.md").read_text()
    assert report.startswith(  # eval-kit's head, line for line
        "# Pointwise Judge Report: case-one\n\nModel: judge-model\nProvider: openai\nAuth mode: api-key\n"
        "Prompt version: assay-pointwise-prompt-v1\nRubric version: assay-pointwise-coverage-rubric-v1\n"
        "Candidate: candidates/good.md\n\n## Coverage Summary\n\n- covered: 2\n- partial: 0"
    )
    assert "Model-judge evidence is manual and advisory. It cannot upgrade deterministic red or yellow results." in report
    assert "## Advisory Pointwise Model-Judge Summary" in report and "- false pass: not reviewed" in report
    assert (
        "- goal (goal, critical): covered [high] evidence=We ship the importer explanation=goal judged covered"
        in report
    )
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["prompt_version"] == "assay-pointwise-prompt-v1"
    assert manifest["rubric_version"] == "assay-pointwise-coverage-rubric-v1"
    assert manifest["runner"]["id"] == "fake-suite-pointwise-judge"


def test_coverage_default_run_id_and_calibration_flags(suite, fake_openai):
    fake_openai.respond_with(judge_responder("pointwise", verdict="missing"))
    result = invoke(
        "judge-coverage",
        "--case",
        "case-one",
        "--candidate",
        "candidates/good.md",
        *MODEL_ARGS,
        "--fixture-label",
        "good-plan",
        "--expected-outcome",
        "expected-good",
        env=judge_env(fake_openai),
    )
    assert result.exit_code == 0, result.stderr
    (run_dir,) = list(suite.results.iterdir())
    assert run_dir.name.startswith("judge-coverage-20")
    report = (run_dir / "report.md").read_text()
    assert "- fixture label: good-plan" in report and "- expected outcome: expected-good" in report
    assert "- false fail: review goal (critical, judged adverse)" in report


def _fenced(answer):
    return "```json\n" + json.dumps(answer) + "\n```"


def _prose(answer):
    return "Here is my assessment.\n" + json.dumps(answer) + "\nThanks!"


@pytest.mark.parametrize("wrap", [_fenced, _prose])
def test_coverage_accepts_fenced_and_prose_wrapped_json(suite, fake_openai, wrap):
    fake_openai.respond_with(judge_responder("pointwise", tweak=wrap))
    assert coverage(fake_openai).exit_code == 0


def _drop_evidence(answer):
    answer["items"][0]["candidate_evidence"] = []


def _extra_key(answer):
    answer["score"] = 9


def _wrong_model(answer):
    answer["model"] = "other-model"


@pytest.mark.parametrize(
    ("tweak", "message"),
    [
        (
            _drop_evidence,
            "pointwise judge output failed schema validation: /items/0/candidate_evidence must NOT have fewer than 1 items",
        ),
        (_extra_key, "must NOT have additional properties (score)"),
        (_wrong_model, "model mismatch in result: expected judge-model, received other-model"),
        (lambda answer: "", "model output was empty"),
        (lambda answer: "I'd rather not say.", "model output was not valid JSON"),
    ],
)
def test_coverage_judge_output_failures_leave_no_manifest(suite, fake_openai, tweak, message):
    fake_openai.respond_with(judge_responder("pointwise", tweak=tweak))
    result = coverage(fake_openai)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    run_dir = suite.results / "cov-1"
    assert not (run_dir / "manifest.json").exists()
    assert (run_dir / "judge-response.json").exists()  # the raw answer is kept for diagnosis


@pytest.mark.parametrize("command", ["judge-coverage", "judge-pairwise"])
def test_a_reply_that_is_not_json_says_where_the_raw_reply_was_saved(suite, fake_openai, command):
    reply = "Sorry, I can only answer in prose today."
    if command == "judge-coverage":
        fake_openai.respond_with(judge_responder("pointwise", tweak=lambda answer: reply))
        result = coverage(fake_openai, run_id="bad-1")
    else:
        fake_openai.respond_with(judge_responder("pairwise", tweak=lambda answer: reply))
        result = pairwise(fake_openai, run_id="bad-1")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Execution failed: model output was not valid JSON; "
        "the raw reply is saved in evals/results/bad-1/judge-response.json"
    )
    saved = json.loads((suite.results / "bad-1" / "judge-response.json").read_text())
    assert saved["calls"][-1]["text"] == reply


@pytest.mark.parametrize(
    ("variable", "meant"),
    [("ASSAY_JUDGE_TIMOUT", "ASSAY_JUDGE_TIMEOUT"), ("ASSAY_JUDGE_MAX_ATTEMPT", "ASSAY_JUDGE_MAX_ATTEMPTS"),
     ("ASSAY_JUDGE_RESPONSE_FORMT", "ASSAY_JUDGE_RESPONSE_FORMAT")],
)
def test_a_misspelt_judge_variable_is_refused_naming_the_one_meant(suite, fake_openai, variable, meant):
    """It was ignored: the judge ran with the default it was set to change, and nothing said so."""
    fake_openai.respond_with(judge_responder("pointwise"))
    result = invoke(
        "judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *MODEL_ARGS,
        env={**judge_env(fake_openai), variable: "5"},
    )
    assert result.exit_code == 2
    said = f"{variable} is no judge setting (did you mean {meant}?); rename it, or unset it"
    assert result.stderr == f"Execution failed: {said}\n"
    assert fake_openai.requests == []
    # A name near none of them is someone else's variable.
    other = invoke(
        "judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *MODEL_ARGS,
        env={**judge_env(fake_openai), "ASSAY_JUDGE_MODEL": "x"},
    )
    assert other.exit_code == 0, other.stderr


def test_coverage_http_500_is_reported_at_once_and_fails_closed(suite, fake_openai):
    # The server got the request: resending could bill it twice, so a 5xx is reported as it was.
    fake_openai.enqueue(error_reply(500, "upstream down"), error_reply(500, "upstream down"))
    result = coverage(fake_openai)
    assert result.exit_code == 2
    assert "judge endpoint failed: HTTP 500: upstream down" in result.stderr
    assert len(fake_openai.chat_requests) == 1
    assert not (suite.results / "cov-1" / "manifest.json").exists()


def test_coverage_canonicalised_items_are_validated_again(suite, fake_openai):
    adapter = suite.evals / "full_adapter.py"
    adapter.write_text(
        adapter.read_text()
        + "\n\ndef canonicalize_expected_item_metadata(actual, expected):\n    return [{'item_id': 'x'}]\n"
    )
    fake_openai.respond_with(judge_responder("pointwise"))
    result = coverage(fake_openai)
    assert result.exit_code == 2 and "canonicalized pointwise result failed schema validation" in result.stderr


def test_coverage_prompt_without_versions_is_refused(suite, fake_openai):
    (suite.evals / "bare.md").write_text("Judge {{ candidate }}\n")
    suite.update_config(prompt_templates={"pointwise_judge": "bare.md"})
    result = coverage(fake_openai)
    assert result.exit_code == 2 and "Could not find Prompt version in prompt" in result.stderr
    assert fake_openai.requests == []


def test_coverage_cache_dir_reuses_identical_calls(suite, fake_openai, tmp_path):
    fake_openai.respond_with(judge_responder("pointwise"))
    cache = str(tmp_path / "cache")
    assert coverage(fake_openai, "--cache-dir", cache, run_id="c1").exit_code == 0
    assert coverage(fake_openai, "--cache-dir", cache, run_id="c2").exit_code == 0
    assert len(fake_openai.chat_requests) == 1
    response = json.loads((suite.results / "c2" / "judge-response.json").read_text())
    assert response["calls"][0]["cached"] is True


@pytest.mark.parametrize("command", ["judge-coverage", "judge-pairwise"])
def test_an_answer_echoing_another_case_is_not_cached_so_the_fixed_judge_is_asked_again(
    suite, fake_openai, tmp_path, command
):
    kind, run = ("pointwise", coverage) if command == "judge-coverage" else ("pairwise", pairwise)
    cache = str(tmp_path / "cache")
    fake_openai.respond_with(judge_responder(kind, tweak=lambda answer: answer.update(case_id="other")))
    first = run(fake_openai, "--cache-dir", cache, run_id="echo-1")
    assert first.exit_code == 2 and "case_id mismatch" in first.stderr, first.stderr
    assert "the raw reply is saved in evals/results/echo-1/judge-response.json" in first.stderr
    fake_openai.respond_with(judge_responder(kind))  # the judge is fixed: it must be asked, not the cache
    second = run(fake_openai, "--cache-dir", cache, run_id="echo-2")
    assert second.exit_code == 0, second.stderr
    assert len(fake_openai.chat_requests) == 2


def test_a_cache_dir_that_is_a_file_is_refused_before_the_model_is_asked(suite, fake_openai, tmp_path):
    """It was `internal error: NotADirectoryError` after the model had answered (and been billed)."""
    notes = tmp_path / "notes.md"
    notes.write_text("not a folder\n")
    fake_openai.respond_with(judge_responder("pointwise"))
    result = coverage(fake_openai, "--cache-dir", str(notes))
    assert result.exit_code == 2 and result.stderr == f"Execution failed: --cache-dir {notes}: not a folder\n"
    below = coverage(fake_openai, "--cache-dir", str(notes / "cache"))
    assert below.exit_code == 2 and f"not a folder ({notes} is a file)" in below.stderr
    assert fake_openai.requests == []


@pytest.mark.parametrize(
    ("flag", "variable", "value", "named"),
    [
        ("notaurl", None, None, "--base-url notaurl is not an http(s) URL"),
        (None, "ASSAY_JUDGE_BASE_URL", "ftp://judge/v1", "ASSAY_JUDGE_BASE_URL ftp://judge/v1 is not an http(s) URL"),
        (None, "ASSAY_JUDGE_BASE_URL", "localhost:8000/v1", "ASSAY_JUDGE_BASE_URL localhost:8000/v1 is not an http(s) URL"),
        (None, "ASSAY_JUDGE_BASE_URL", "http://h:99999/v1", "ASSAY_JUDGE_BASE_URL http://h:99999/v1 is not a valid URL"),
    ],
)
def test_a_base_url_that_is_not_an_http_url_is_named_where_it_was_set(suite, flag, variable, value, named):
    """It read `judge endpoint returned an invalid response` or `the connection failed once it was open`."""
    extra = ["--base-url", flag] if flag else []
    env = {"ASSAY_JUDGE_BASE_URL": value if variable else "http://127.0.0.1:9/v1"}
    result = invoke("judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *MODEL_ARGS, *extra,
                    env=env)
    assert result.exit_code == 2 and result.stderr.startswith(f"Execution failed: {named}"), result.stderr
    assert "response" not in result.stderr and "connection" not in result.stderr


def test_a_custom_prompt_without_its_version_line_is_named_with_the_line_it_needs(suite, fake_openai):
    (suite.evals / "bare.md").write_text("Prompt version: `mine-v1`\nJudge {{ candidate }}\n")
    suite.update_config(prompt_templates={"pointwise_judge": "bare.md"})
    result = coverage(fake_openai)
    assert result.stderr == (
        "Execution failed: Could not find Rubric version in prompt template bare.md; "
        "add a line like Rubric version: `my-rubric-v1`\n"
    )
    assert result.exit_code == 2 and fake_openai.requests == []


def test_provider_help_does_not_promise_a_default_the_command_does_not_have(suite):
    """`--provider` said `openai (default)`, yet a model command without it fails as a missing argument."""
    from typer.testing import CliRunner

    from assay.cli.app import app

    for command in ("generate", "judge-coverage", "judge-pairwise"):
        shown = CliRunner().invoke(app, ["doc", command, "-h"])
        provider_help = shown.output.split("--provider", 1)[1].split("--effort", 1)[0]
        assert "default" not in provider_help, (command, provider_help)
    missing = invoke("judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", "--model", "m",
                     "--effort", "low")
    assert missing.exit_code == 2 and "missing required argument --provider" in missing.stderr


# ---- judge-pairwise ------------------------------------------------------------------------


def test_pairwise_unswapped_seed_shows_the_original_order(suite, fake_openai):
    fake_openai.respond_with(judge_responder("pairwise"))
    result = pairwise(fake_openai, seed="0")  # digest prefix a4: even, not swapped
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == "Winner: candidate_a"
    prompt = fake_openai.chat_requests[0].prompt
    assert "ship the importer" in prompt.split("<candidate_a>")[1].split("</candidate_a>")[0]
    assert "- displayed candidate order: candidate_a, candidate_b" in prompt
    stored = json.loads((suite.results / "pair-1" / "pairwise-result.json").read_text())
    assert stored["randomization"] == {
        "method": "sha256-seed-parity-v1",
        "seed": 0,
        "original_order": ["candidate_a", "candidate_b"],
        "candidate_order": ["candidate_a", "candidate_b"],
    }
    report = (suite.results / "pair-1" / "report.md").read_text()
    assert report == (  # eval-kit's report, line for line
        "# Pairwise Judge Report: case-one\n\nModel: judge-model\nProvider: openai\nAuth mode: api-key\n"
        "Prompt version: assay-pairwise-prompt-v1\nRubric version: assay-judge-rubric-v1\nSeed: 0\n"
        f"Randomization swapped: false\n\nWinner: candidate_a\nConfidence: {stored['confidence']}\n"
        f"Explanation: {stored['explanation']}\n"
    )


def test_pairwise_swapped_seed_remaps_the_displayed_winner(suite, fake_openai):
    fake_openai.respond_with(judge_responder("pairwise"))
    result = pairwise(fake_openai, seed="4")  # digest prefix f7: odd, swapped
    assert result.exit_code == 0, result.stderr
    prompt = fake_openai.chat_requests[0].prompt
    assert "We rewrite everything" in prompt.split("<candidate_a>")[1].split("</candidate_a>")[0]
    run_dir = suite.results / "pair-1"
    stored = json.loads((run_dir / "pairwise-result.json").read_text())
    assert stored["winner"] == "candidate_a"  # the model said candidate_b (displayed), i.e. good.md
    assert stored["candidate_order"] == ["candidate_a", "candidate_b"]
    assert stored["randomization"]["candidate_order"] == ["candidate_b", "candidate_a"]
    assert "\nRandomization swapped: true\n" in (run_dir / "report.md").read_text()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["run_type"] == "judge" and "randomization" not in manifest


def test_pairwise_both_orders_agreeing_keeps_the_winner(suite, fake_openai):
    fake_openai.respond_with(judge_responder("pairwise"))
    result = pairwise(fake_openai, "--both-orders")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["Winner: candidate_a", "Position consistent: true"]
    first, second = fake_openai.chat_requests
    assert "- displayed candidate order: candidate_a, candidate_b" in first.prompt
    assert "- displayed candidate order: candidate_b, candidate_a" in second.prompt
    orders = json.loads((suite.results / "pair-1" / "pairwise-orders.json").read_text())
    assert orders["position_consistent"] is True
    assert [p["displayed_winner"] for p in orders["passes"]] == ["candidate_a", "candidate_b"]


def test_pairwise_both_orders_disagreeing_is_a_tie(suite, fake_openai):
    fake_openai.respond_with(judge_responder("pairwise", pick="candidate_a"))  # always the first slot
    result = pairwise(fake_openai, "--both-orders")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["Winner: tie", "Position consistent: false"]
    run_dir = suite.results / "pair-1"
    assert json.loads((run_dir / "pairwise-result.json").read_text())["winner"] == "tie"
    report = (run_dir / "report.md").read_text()
    assert "\nPosition consistent: false\n" in report and "\nPass 2 (candidate_b, candidate_a): candidate_b\n" in report
    assert "\n\nWinner: tie\n" in report


def _swap_echo_order(answer):
    answer["candidate_order"] = list(reversed(answer["candidate_order"]))


def _wrong_seed(answer):
    answer["randomization"]["seed"] = "99"


def _numeric_seed(answer):
    answer["randomization"]["seed"] = 0
    return json.dumps(answer)


@pytest.mark.parametrize(
    ("tweak", "message"),
    [
        (
            _swap_echo_order,
            'candidate_order mismatch in pairwise judge output: expected ["candidate_a","candidate_b"], received ["candidate_b","candidate_a"]',
        ),
        (_wrong_seed, "randomization.seed mismatch in pairwise judge output: expected 0, received 99"),
        (
            lambda answer: answer.update(case_id="other"),
            "case_id mismatch in pairwise judge output: expected case-one, received other",
        ),
        (
            lambda answer: answer.update(winner="both"),
            "pairwise judge output failed schema validation: /winner must be equal to one of the allowed values",
        ),
    ],
)
def test_pairwise_echo_and_schema_failures_leave_no_manifest(suite, fake_openai, tweak, message):
    fake_openai.respond_with(judge_responder("pairwise", tweak=tweak))
    result = pairwise(fake_openai)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert not (suite.results / "pair-1" / "manifest.json").exists()


def test_pairwise_seed_echo_accepts_a_number(suite, fake_openai):
    fake_openai.respond_with(judge_responder("pairwise", tweak=_numeric_seed))
    assert pairwise(fake_openai).exit_code == 0


@pytest.mark.parametrize("seed", ["abc", "1.5", "12abc", "9007199254740993"])
def test_pairwise_seed_must_be_a_safe_integer(suite, fake_openai, seed):
    result = pairwise(fake_openai, seed=seed)
    assert result.exit_code == 2 and "--seed must be" in result.stderr and fake_openai.requests == []


def test_pairwise_requires_every_flag(suite, fake_openai):
    result = invoke("judge-pairwise", "--case", "case-one", env=judge_env(fake_openai))
    assert result.stderr.strip() == (
        "Execution failed: missing required arguments --candidate-a, --candidate-b, --model, --provider, --effort, "
        "--seed, --run-id"
    )


def test_a_judge_commands_record_keeps_what_its_model_calls_cost(suite, fake_openai, monkeypatch, tmp_path):
    """The calls and tokens the endpoint reported are kept with the run and said by `assay runs show` (no price
    table here, so no estimate); eval-kit's own output is unchanged."""
    import os

    from assay.core.history.shown import run_shown
    from assay.core.results_store import SqliteRunStore

    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    fake_openai.respond_with(judge_responder("pointwise"))
    assert coverage(fake_openai).exit_code == 0
    fake_openai.respond_with(judge_responder("pairwise"))
    assert pairwise(fake_openai, "--both-orders").exit_code == 0
    with SqliteRunStore(tmp_path / "store" / "assay.db", read_only=True) as store:
        runs = {run.manifest.title: run.manifest for run in store.list_runs()}
        pointwise_usage = runs["case-one (judge-coverage)"].summary["judge_usage"]
        assert pointwise_usage == {"judge-model": {"calls": 1, "cached": 0, "no_usage": 0, "input_tokens": 10,
                                                   "output_tokens": 5, "cache_read_tokens": 0}}
        assert runs["case-one (judge-pairwise)"].summary["judge_usage"]["judge-model"]["calls"] == 2  # both orders
        shown = "\n".join(run_shown(store, "latest", 5).lines)
    assert "judge judge-model: 2 call(s); 20 input and 10 output tokens" in shown
    assert "pricing" not in shown
