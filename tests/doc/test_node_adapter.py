"""An eval-kit `adapter.mjs`, unchanged, through the node bridge: every hook, the resolver, and failures."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from assay.adapters.node_bridge import NodeHookError, NodeModuleBridge
from assay.doc.config import load_suite
from assay.doc.hooks import RESOLVER_MARKER
from assay.errors import AdapterError
from doc_judges import judge_responder
from doc_suites import invoke, make_suite
from servers.fake_openai import chat_reply

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is required for .mjs adapters")

MODEL_ARGS = ["--model", "judge-model", "--provider", "openai", "--effort", "medium"]


@pytest.fixture
def suite(tmp_path, monkeypatch):
    built = make_suite(tmp_path, adapter="full_adapter.mjs")
    built.enable("generate", "judge_coverage", "judge_pairwise")
    monkeypatch.chdir(built.repo)
    return built


def test_every_hook_runs_through_the_bridge(suite, fake_openai):
    env = {"ASSAY_JUDGE_BASE_URL": fake_openai.base_url}
    assert invoke("validate-fixtures").exit_code == 0
    graded = invoke("run-case", "--case", "case-one", "--candidate", "candidates/partial.md", "--run-id", "det")
    assert graded.exit_code == 0 and "Verdict: yellow" in graded.stdout
    report_md = (suite.results / "det" / "report.md").read_text()
    assert "- limit: missing" in report_md and "candidate=candidates/partial.md" in report_md
    manifest = json.loads((suite.results / "det" / "manifest.json").read_text())
    assert manifest["tool_versions"]["node"].startswith("v")

    compiled = invoke("report", "--run-id", "combined", "--deterministic", "det")
    assert compiled.exit_code == 0, compiled.stderr
    assert json.loads((suite.results / "combined" / "manifest.json").read_text())["case_ids"] == ["case-one"]

    fake_openai.enqueue(chat_reply("# Plan\n\nship the importer\n"))
    generated = invoke("generate", "--case", "case-one", *MODEL_ARGS, "--run-id", "gen", env=env)
    assert generated.exit_code == 0, generated.stderr
    assert "The team will ship the importer." in fake_openai.chat_requests[-1].prompt

    fake_openai.respond_with(judge_responder("pointwise"))
    judged = invoke(
        "judge-coverage",
        "--case",
        "case-one",
        "--candidate",
        "candidates/good.md",
        *MODEL_ARGS,
        "--run-id",
        "cov",
        env=env,
    )
    assert judged.exit_code == 0, judged.stderr
    assert "_expectedItemsForCanonicalization" not in fake_openai.chat_requests[-1].prompt
    items = json.loads((suite.results / "cov" / "pointwise-result.json").read_text())["items"]
    assert [item["kind"] for item in items] == ["goal", "constraint"]

    fake_openai.respond_with(judge_responder("pairwise"))
    compared = invoke(
        "judge-pairwise",
        "--case",
        "case-one",
        "--candidate-a",
        "candidates/bad.md",
        "--candidate-b",
        "candidates/good.md",
        *MODEL_ARGS,
        "--seed",
        "3",
        "--run-id",
        "pair",
        env=env,
    )
    assert compared.exit_code == 0, compared.stderr
    assert "Winner: candidate_b" in compared.stdout


def test_adapter_stdout_logging_does_not_break_the_protocol(suite):
    result = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r")
    assert result.exit_code == 0, result.stderr
    assert "grading on stdout must not break the protocol" not in result.stdout


def test_a_throwing_hook_reports_its_error_name_message_and_adapter_line(suite):
    (suite.evals / "full_adapter.mjs").write_text(
        "export const gradeCandidate = () => { throw new Error('boom from js'); };\n"
        "export const renderReport = () => 'x';\n"
    )
    result = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r")
    assert result.exit_code == 2
    assert result.stderr.strip() == "Execution failed: gradeCandidate failed: Error: boom from js (full_adapter.mjs:1)"


def test_a_hook_that_ends_node_is_named_with_its_adapter(suite):
    """`process.exit(3)` in a hook read as the bridge failing: neither the hook nor the adapter file was named."""
    adapter = suite.evals / "full_adapter.mjs"
    adapter.write_text("export const gradeCandidate = () => { process.exit(3); };\nexport const renderReport = () => 'x';\n")
    result = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r")
    assert result.exit_code == 2
    # (Not the bridge's own command line and "exited unexpectedly": what to change in the adapter.)
    assert result.stderr.strip() == (f"Execution failed: gradeCandidate ended node while it ran ({adapter}): node exited "
                                     "with code 3 before the hook returned; a hook must return or throw, not call "
                                     "process.exit()"), result.stderr


def _line_of(path, text):
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_the_generic_javascript_adapter_names_its_own_line_when_a_fixture_is_wrong(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert invoke("init").exit_code == 0
    assert invoke("scaffold-case", "--case", "first").exit_code == 0
    expected = tmp_path / "evals" / "cases" / "first" / "expected-items.json"
    expected.write_text(json.dumps({"items": {"id": "not-a-list"}}))
    (tmp_path / "c.md").write_text("anything")
    result = invoke("run-case", "--case", "first", "--candidate", "c.md", "--run-id", "r")
    line = _line_of(tmp_path / "evals" / "adapter.mjs", 'needs "items", a list')
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        'Execution failed: gradeCandidate failed: Error: expected-items.json needs "items", a list of {"id", '
        f'"required_text"}} (adapter.mjs:{line})'
    )


def test_the_javascript_location_is_the_innermost_frame_in_the_adapter_file(suite):
    (suite.evals / "helper.mjs").write_text("export const parse = (text) =>\n  JSON.parse(text);\n")
    (suite.evals / "full_adapter.mjs").write_text(
        'import { parse } from "./helper.mjs";\n'
        "\n"
        "const items = () =>\n"
        "  parse('{broken');\n"
        "export const gradeCandidate = () => items();\n"
        "export const renderReport = () => 'x';\n"
    )
    result = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r")
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("Execution failed: gradeCandidate failed: SyntaxError: ")
    assert result.stderr.strip().endswith(" (full_adapter.mjs:4)")


def test_a_thrown_non_error_is_reported_as_it_was_thrown(tmp_path):
    module = tmp_path / "m.mjs"
    module.write_text("export const fail = () => {\n  throw 'plain words';\n};\n")

    async def go():
        bridge = await NodeModuleBridge.start(module)
        try:
            with pytest.raises(NodeHookError) as raised:
                await bridge.call("fail", [])
        finally:
            await bridge.close()
        return raised.value

    error = asyncio.run(go())
    assert (str(error), error.name, error.location) == ("plain words", "", None)


def test_a_module_that_fails_to_import_is_named(suite):
    (suite.evals / "full_adapter.mjs").write_text("export const x = ;\n")
    result = invoke("validate-fixtures")
    assert result.exit_code == 2
    assert f"failed to load adapter module from {suite.evals / 'full_adapter.mjs'}: " in result.stderr


def test_missing_hook_is_named(suite, fake_openai):
    (suite.evals / "full_adapter.mjs").write_text("export const gradeCandidate = () => ({});\n")
    result = invoke(
        "generate",
        "--case",
        "case-one",
        *MODEL_ARGS,
        "--run-id",
        "g",
        env={"ASSAY_JUDGE_BASE_URL": fake_openai.base_url},
    )
    assert ("adapter module does not export resolveGenerationVars function: generate requires the adapter to export "
            "resolve_generation_vars or resolveGenerationVars") in result.stderr  # eval-kit's words first
    assert fake_openai.requests == []


def test_javascript_resolver_contains_paths_like_the_python_one(suite, tmp_path):
    probe = suite.evals / "probe.mjs"
    probe.write_text(
        "export const attempt = ({ resolver }, action, value) => {\n"
        "  try { return { ok: resolver[action](value) }; } catch (error) { return { error: error.message }; }\n"
        "};\n"
    )
    (tmp_path / "outside.md").write_text("x")
    (suite.evals / "link").symlink_to(tmp_path)
    loaded = load_suite(suite.config_path)

    async def go():
        from assay.doc.adapter import NodeDocAdapter

        adapter = await NodeDocAdapter.start(probe, loaded)
        try:
            calls = [
                ("resolveRunDir", "run-1"),
                ("resolveRunDir", "../x"),
                ("resolveRunDir", "run\n"),
                ("resolveSuitePath", "../../x"),
                ("resolveSuitePath", "/etc/passwd"),
                ("resolveSuitePath", "link/outside.md"),
                ("resolveSuitePath", "cases/case-one/input.md"),
            ]
            return [await adapter.call("attempt", {"resolver": RESOLVER_MARKER}, *call) for call in calls]
        finally:
            await adapter.aclose()

    results = asyncio.run(go())
    assert results[0] == {"ok": str(suite.results / "run-1")}
    assert results[1] == {"error": "run id must be an id, not a path"}
    assert results[2] == {"error": "run id must be an id, not a path"}
    assert "escapes" in results[3]["error"] and "must be a relative path" in results[4]["error"]
    assert "escapes" in results[5]["error"]
    assert results[6] == {"ok": str(suite.evals / "cases" / "case-one" / "input.md")}


def test_bridge_reports_missing_exports_and_undefined_results(tmp_path):
    module = tmp_path / "m.mjs"
    module.write_text("export const nothing = () => undefined;\nexport default async (x) => x * 2;\n")

    async def go():
        bridge = await NodeModuleBridge.start(module)
        try:
            assert bridge.exports == {"nothing", "default"}
            assert await bridge.call("nothing", []) is None
            assert await bridge.call("default", [21]) == 42
            with pytest.raises(Exception, match="module has no exported function absent"):
                await bridge.call("absent", [])
        finally:
            await bridge.close()

    asyncio.run(go())


def test_bridge_start_fails_for_a_missing_module(tmp_path):
    with pytest.raises(AdapterError, match="failed to load adapter module from"):
        asyncio.run(NodeModuleBridge.start(tmp_path / "absent.mjs"))
    assert issubclass(NodeHookError, AdapterError)


def test_a_syntax_error_in_the_module_names_its_line_and_column_and_one_in_an_import_keeps_nodes_words(tmp_path):
    broken = tmp_path / "adapter.mjs"
    broken.write_text("export function gradeCandidate(grade) {\n  const x = {;\n  return x;\n}\n")
    with pytest.raises(AdapterError) as caught:
        asyncio.run(NodeModuleBridge.start(broken))
    assert str(caught.value) == (
        f"failed to load adapter module from {broken}: Unexpected token ';' (line 2, column 14: const x = {{;)"
    )
    # The module is fine; what it imports is not: node's own message, nothing made up.
    (tmp_path / "helper.mjs").write_text("export const y = );\n")
    importer = tmp_path / "importer.mjs"
    importer.write_text("import { y } from './helper.mjs';\nexport const f = () => y;\n")
    with pytest.raises(AdapterError) as caught:
        asyncio.run(NodeModuleBridge.start(importer))
    assert str(caught.value) == f"failed to load adapter module from {importer}: Unexpected token ')'"


def test_a_hook_returning_what_json_cannot_carry_is_that_hooks_error_and_the_bridge_lives_on(tmp_path):
    module = tmp_path / "adapter.mjs"
    module.write_text("export const big = () => ({ extra: 10n });\n"
                      "export const loop = () => { const o = {}; o.self = o; return o; };\n"
                      "export const fine = () => 42;\n")

    async def go():
        bridge = await NodeModuleBridge.start(module)
        try:
            for name, said in (("big", "BigInt"), ("loop", "circular")):
                with pytest.raises(NodeHookError) as caught:
                    await bridge.call(name, [])
                assert "it returned a value JSON cannot carry: " in str(caught.value) and said in str(caught.value)
            assert await bridge.call("fine", []) == 42  # node did not die of it
        finally:
            await bridge.close()

    asyncio.run(go())


# ---- modules that hang: a start limit, and Ctrl-C that leaves no node behind -----------------------


@pytest.fixture
def node_mark(monkeypatch):
    from adapters.hostile import mark_children, running_with

    mark = mark_children(monkeypatch)
    yield mark
    assert running_with(mark) == [], "node was left running"


def test_a_top_level_await_that_never_settles_fails_the_load_within_the_start_limit(tmp_path, monkeypatch, node_mark):
    import time

    module = tmp_path / "stuck.mjs"
    module.write_text("await new Promise(() => {});\nexport const never = () => 1;\n")
    monkeypatch.setenv("ASSAY_ADAPTER_START_TIMEOUT", "0.5")
    started = time.monotonic()
    with pytest.raises(AdapterError) as caught:
        asyncio.run(NodeModuleBridge.start(module))
    assert str(caught.value) == (
        f"failed to load adapter module from {module}: it did not finish loading within 0.5s "
        "(set by ASSAY_ADAPTER_START_TIMEOUT); a top-level await that never settles does this"
    )
    assert time.monotonic() - started < 0.5 + 1.0


SIGINT_DRIVER = """
import asyncio, sys
from pathlib import Path
from assay.adapters.node_bridge import NodeModuleBridge

async def main(module, export):
    bridge = await NodeModuleBridge.start(Path(module))
    try:
        print("loaded", flush=True)
        await bridge.call(export, [])
    finally:
        await bridge.close()  # as the doc session does on the way out

try:
    asyncio.run(main(*sys.argv[1:]))
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)
"""


@pytest.mark.parametrize(
    ("source", "ready"),
    [
        ("await new Promise(() => {});\nexport const spin = () => 1;\n", b""),  # Ctrl-C while loading
        ("export const spin = () => { for (;;) {} };\n", b"loaded\n"),  # Ctrl-C in a hook that never returns
    ],
    ids=["while-loading", "in-a-hook"],
)
def test_ctrl_c_is_an_interrupt_that_leaves_no_node_running(tmp_path, node_mark, source, ready):
    import signal
    import subprocess
    import sys
    import time

    module = tmp_path / "hang.mjs"
    module.write_text(source)
    driver = subprocess.Popen(
        [sys.executable, "-c", SIGINT_DRIVER, str(module), "spin"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        if ready:
            assert driver.stdout.readline() == ready
        time.sleep(0.5)  # node is loading the module, or spinning in the hook
        interrupted = time.monotonic()
        driver.send_signal(signal.SIGINT)
        driver.wait(10)
        elapsed = time.monotonic() - interrupted
    finally:
        driver.kill()
        driver.wait()
    assert driver.returncode == 130, driver.stderr.read()
    assert driver.stderr.read().strip().endswith(b"interrupted")
    assert elapsed < 1.5  # no polite close window for a hook that cannot be cancelled


def _never_answering(suite, hook: str) -> None:
    """The suite's adapter.mjs with `hook` replaced by one whose promise never settles."""
    adapter = suite.evals / "full_adapter.mjs"
    adapter.write_text(
        adapter.read_text().replace(f"export const {hook} = ", f"export const {hook} = () => new Promise(() => {{}});\nconst _{hook} = ")
    )


def test_a_hook_that_never_answers_fails_the_command_after_the_hook_limit(suite, monkeypatch):
    import time

    _never_answering(suite, "gradeCandidate")
    args = ["run-case", "--case", "case-one", "--candidate", "candidates/good.md"]
    started = time.monotonic()
    result = invoke(*args, "--run-id", "hung", "--hook-timeout", "1")
    assert time.monotonic() - started < 15
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Execution failed: gradeCandidate did not answer within 1s (--hook-timeout); set --hook-timeout or "
        "ASSAY_DOC_HOOK_TIMEOUT to the seconds it needs (0: no limit)"
    ]
    assert not (suite.results / "hung" / "manifest.json").exists()  # fails closed
    monkeypatch.setenv("ASSAY_DOC_HOOK_TIMEOUT", "0.5")  # the same limit for every doc command of a shell or job
    _never_answering(suite, "validateFixtures")
    for command in (args, ["validate-fixtures"], ["doctor"]):
        through_environment = invoke(*command)
        assert through_environment.exit_code == 2
        assert "did not answer within 0.5s (ASSAY_DOC_HOOK_TIMEOUT)" in through_environment.stderr


@pytest.mark.parametrize("value", ["abc", "-1", "nan"])
def test_a_hook_limit_that_is_not_a_number_of_seconds_is_refused(suite, monkeypatch, value):
    refused = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--hook-timeout", value)
    assert refused.exit_code == 2
    assert refused.stderr.strip() == f"Execution failed: --hook-timeout must be a number of seconds (0 for no limit), got {value}"
    monkeypatch.setenv("ASSAY_DOC_HOOK_TIMEOUT", value)
    from_environment = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md")
    assert from_environment.exit_code == 2 and f"ASSAY_DOC_HOOK_TIMEOUT must be a number of seconds (0 for no limit), got '{value}'" in from_environment.stderr


def test_the_default_hook_limit_is_ten_minutes():
    from assay.doc.adapter import DEFAULT_HOOK_TIMEOUT_S, hook_timeout

    assert DEFAULT_HOOK_TIMEOUT_S == 600 and hook_timeout().seconds == 600
    assert hook_timeout(0).seconds is None  # 0: no limit


def test_a_hook_limit_that_is_no_number_is_refused_for_a_python_adapter_too(tmp_path, monkeypatch):
    """A Python hook runs in-process with no limit, and a typo in the variable was ignored without a word."""
    python_suite = make_suite(tmp_path)  # full_adapter.py
    monkeypatch.chdir(python_suite.repo)
    monkeypatch.setenv("ASSAY_DOC_HOOK_TIMEOUT", "abc")
    refused = invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md")
    assert refused.exit_code == 2
    assert "ASSAY_DOC_HOOK_TIMEOUT must be a number of seconds (0 for no limit), got 'abc'" in refused.stderr
    monkeypatch.setenv("ASSAY_DOC_HOOK_TIMEOUT", "30")
    assert invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md").exit_code == 0


@pytest.mark.parametrize("adapter", ["full_adapter.mjs", "full_adapter.py"])
@pytest.mark.parametrize("name", ["ASSAY_DOC_HOOK_TIMOUT", "ASSAY_DOC_TIMEOUT"])
def test_a_misspelt_hook_limit_variable_is_refused_naming_the_one_meant(tmp_path, monkeypatch, adapter, name):
    """It was ignored without a word, so the hooks ran with the 600 s default it was set to change."""
    built = make_suite(tmp_path, adapter=adapter)
    monkeypatch.chdir(built.repo)
    monkeypatch.setenv(name, "5")
    for command in (["run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r"], ["doctor"]):
        refused = invoke(*command)
        assert refused.exit_code == 2 and "Verdict" not in refused.stdout
        assert refused.stderr.strip() == (
            f"Execution failed: {name} is no assay doc setting (did you mean ASSAY_DOC_HOOK_TIMEOUT?); rename it, or unset it"
        )
    assert not (built.results / "r").exists()
    monkeypatch.delenv(name)
    monkeypatch.setenv("ASSAY_DOC_SOMETHING_ELSE", "1")  # a name close to no setting is none of assay's business
    assert invoke("run-case", "--case", "case-one", "--candidate", "candidates/good.md").exit_code == 0
