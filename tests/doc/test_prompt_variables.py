"""A prompt is only sent when every placeholder it has is filled, and a template the config names is found.

An unfilled `{{ name }}` renders empty (promptfoo's rule), so a key misspelt in the hook's answer or in
a suite's template used to reach the model as a prompt without its source or rubric, and be billed.
"""

from __future__ import annotations

import pytest

from doc_judges import judge_responder
from doc_suites import invoke, make_suite
from servers.fake_openai import chat_reply

MODEL_ARGS = ["--model", "judge-model", "--provider", "openai", "--effort", "low"]


@pytest.fixture
def suite(model_suite):
    return model_suite  # (conftest.py)


def _env(server):
    return {"ASSAY_JUDGE_BASE_URL": server.base_url}


def _coverage(server):
    return invoke("judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *MODEL_ARGS,
                  "--run-id", "cov-1", env=_env(server))


def _refused_before_asking(result, server, start):
    """Exit 2 with stderr starting `start`, and no request sent to the model."""
    assert result.exit_code == 2
    assert result.stderr.startswith(start), result.stderr
    assert server.requests == []


def _pairwise(server, *extra):
    return invoke("judge-pairwise", "--case", "case-one", "--candidate-a", "candidates/good.md", "--candidate-b",
                  "candidates/bad.md", *MODEL_ARGS, "--seed", "0", "--run-id", "pair-1", *extra, env=_env(server))


def _misspell_in_adapter(suite, adapter: str, right: str, wrong: str) -> None:
    path = suite.evals / adapter
    text = path.read_text()
    assert text.count(right) >= 1
    path.write_text(text.replace(right, wrong))


def test_a_key_the_pairwise_hook_misspells_is_named_before_the_model_is_asked(suite, fake_openai):
    _misspell_in_adapter(suite, "full_adapter.py", '"case_rubric": _read(pairwise', '"case_rubrc": _read(pairwise')
    fake_openai.respond_with(judge_responder("pairwise"))
    result = _pairwise(fake_openai, "--both-orders")
    assert result.exit_code == 2
    assert result.stderr == (
        "Execution failed: resolve_pairwise_vars did not return case_rubric, which the bundled pairwise_judge prompt"
        " template uses as {{ case_rubric }} (it returned case_rubrc: one of the two is misspelt); return it from"
        " resolve_pairwise_vars or fix the placeholder, so the model is not sent an empty value\n"
    )
    assert fake_openai.requests == [] and not (suite.results / "pair-1" / "manifest.json").exists()


def test_a_key_a_javascript_pairwise_hook_misspells_is_named(tmp_path, monkeypatch, fake_openai):
    suite = make_suite(tmp_path, adapter="full_adapter.mjs")
    suite.enable("judge_pairwise")
    monkeypatch.chdir(suite.repo)
    path = suite.evals / "full_adapter.mjs"
    head, pairwise = path.read_text().split("export const resolvePairwiseVars", 1)
    path.write_text(head + "export const resolvePairwiseVars" + pairwise.replace("source_material:", "sourceMaterial:"))
    fake_openai.respond_with(judge_responder("pairwise"))
    result = _pairwise(fake_openai)
    _refused_before_asking(result, fake_openai, (
        "Execution failed: resolvePairwiseVars did not return source_material, which the bundled pairwise_judge"
        " prompt template uses as {{ source_material }} (it returned sourceMaterial: one of the two is misspelt)"
    ))


def test_a_placeholder_a_suite_template_misspells_is_named_with_the_template(suite, fake_openai):
    (suite.evals / "judge.md").write_text(
        "Prompt version: `mine-v1`\nRubric version: `mine-r1`\n\n{{ case_id }}\n{{ source_materal }}\n"
        "{{ candidate }}\n{{ rubric }}\n"
    )
    suite.update_config(prompt_templates={"pointwise_judge": "judge.md"})
    fake_openai.respond_with(judge_responder("pointwise"))
    result = _coverage(fake_openai)
    _refused_before_asking(result, fake_openai, (
        "Execution failed: resolve_pointwise_vars did not return source_materal, which the"
        " pointwise_judge prompt template judge.md uses as {{ source_materal }} (it returned source_material: one of"
        " the two is misspelt)"
    ))


def test_a_placeholder_no_returned_key_resembles_renders_empty_with_a_warning_as_in_eval_kit(suite, fake_openai):
    """A suite may rely on an optional placeholder rendering empty (promptfoo's way): said, not refused."""
    template = suite.evals / "judge.md"
    template.write_text("Prompt version: `mine-v1`\nRubric version: `mine-r1`\n\n{{ case_id }}\n{{ source_material }}\n"
                        "{{ candidate }}\nNotes: {{ reviewer_notes }}\n")
    suite.update_config(prompt_templates={"pointwise_judge": "judge.md"})
    fake_openai.respond_with(judge_responder("pointwise"))
    result = _coverage(fake_openai)
    assert "Warning: resolve_pointwise_vars did not return reviewer_notes, which the pointwise_judge prompt template" \
           " judge.md uses: rendered empty" in result.stderr, result.stderr
    assert "Notes: \n" in fake_openai.chat_requests[0].prompt


def test_a_placeholder_the_kit_fills_itself_is_not_refused(suite, fake_openai):
    """`generate` adds `case_id` to the hook's variables: a template may use it."""
    (suite.evals / "gen.md").write_text("Write {{ case_id }} from {{ source_material }} as {{ output_format }}.\n")
    suite.update_config(prompt_templates={"generation": "gen.md"})
    fake_openai.enqueue(chat_reply("# Draft\n"))
    result = invoke("generate", "--case", "case-one", *MODEL_ARGS, "--run-id", "gen-1", env=_env(fake_openai))
    assert result.exit_code == 0, result.stderr
    assert "Write case-one from" in fake_openai.chat_requests[0].prompt


def test_an_empty_variable_is_said_to_be_empty_not_missing(suite, fake_openai):
    """It read `did not return case_rubric` for a hook that returned it, empty (an empty rubric.md)."""
    (suite.evals / "cases" / "case-one" / "rubric.md").write_text("")
    result = _coverage(fake_openai)
    assert result.exit_code == 2
    assert result.stderr == "Execution failed: resolve_pointwise_vars returned an empty case_rubric\n"
    assert fake_openai.requests == []


@pytest.mark.parametrize(
    ("change", "setting"),
    [
        ({"prompt_templates": {"pointwise_judge": "prompts/judge.md"}}, "prompt_templates.pointwise_judge"),
        ({"methods": {"judge_coverage": {"enabled": True, "prompt": "prompts/judge.md"}}},
         "methods.judge_coverage.prompt"),
    ],
)
def test_a_prompt_template_that_is_not_there_names_the_setting_and_its_root(suite, fake_openai, change, setting):
    """It said only `could not read pointwise_judge prompt template prompts/judge.md: No such file or directory`."""
    if "methods" in change:
        methods = suite.config()["methods"]
        methods.update(change["methods"])
        change = {"methods": methods}
    suite.update_config(**change)
    result = _coverage(fake_openai)
    assert result.exit_code == 2
    assert result.stderr == (
        "Execution failed: could not read pointwise_judge prompt template prompts/judge.md: No such file or directory"
        f" (fix {setting} in evals/eval-kit.config.json; it is relative to the suite root evals, or use"
        " @eval-kit/pointwise for the bundled prompt)\n"
    )
    assert fake_openai.requests == []


@pytest.mark.parametrize(
    ("syntax", "shown"),
    [
        ("{{ expected_items | tojson }}", "{{ expected_items | tojson }}"),
        ("{{ case.id }}", "{{ case.id }}"),
        ("{% if case_rubric %}{{ case_rubric }}{% endif %}", "{% if case_rubric %}"),
    ],
)
def test_template_syntax_assay_does_not_render_is_refused_before_the_model_is_asked(suite, fake_openai, syntax, shown):
    """An eval-kit prompt (rendered by promptfoo's Nunjucks) may use filters, attributes and tags; assay
    fills only `{{ name }}`, so the rest reached the model as written, with no word said."""
    (suite.evals / "judge.md").write_text(
        "Prompt version: `mine-v1`\nRubric version: `mine-r1`\n\n{{ case_id }}\n{{ source_material }}\n" + syntax + "\n"
    )
    suite.update_config(prompt_templates={"pointwise_judge": "judge.md"})
    fake_openai.respond_with(judge_responder("pointwise"))
    _refused_before_asking(
        _coverage(fake_openai), fake_openai,
        f"Execution failed: the pointwise_judge prompt template judge.md has {shown}, which assay does not render: "
        "only {{ name }} placeholders are filled",
    )
