"""A hook that fails says so on one `Execution failed:` line, with what really happened: an error whose
message spans lines (an assertion's diff, a schema error) is joined onto the line, and node ended by an
exception nothing caught is not taken for a `process.exit()`."""

from __future__ import annotations

import shutil

import pytest

from doc_suites import invoke, make_suite

RUN = ("run-case", "--case", "case-one", "--candidate", "candidates/good.md", "--run-id", "r")
node_needed = pytest.mark.skipif(shutil.which("node") is None, reason="node is required for .mjs adapters")


@pytest.fixture
def suite(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    monkeypatch.delenv("ASSAY_DOC_HOOK_TIMEOUT", raising=False)
    built = make_suite(tmp_path, adapter="")
    monkeypatch.chdir(built.repo)
    return built


def _failure_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("Execution failed:")]


def _mjs(suite, grade: str, report: str = "return '# Report';") -> None:
    suite.update_config(adapter="adapter.mjs")
    (suite.evals / "adapter.mjs").write_text(
        f"export function gradeCandidate() {{\n  {grade}\n}}\n"
        f"export function renderDeterministicReport() {{\n  {report}\n}}\n"
    )


def test_a_python_error_over_several_lines_is_told_on_one(suite):
    # Before: "…ValueError: the items are wrong:" on one line, then "- goal has no id (adapter.py:2)" on another.
    suite.update_config(adapter="adapter.py")
    (suite.evals / "adapter.py").write_text(
        "def grade_candidate(grade):\n"
        "    raise ValueError('the items are wrong:\\n- goal has no id\\n- limit has no id')\n"
        "def render_report(report):\n    return 'x'\n"
    )
    result = invoke(*RUN)
    assert result.exit_code == 2
    assert result.stderr.strip() == ("Execution failed: grade_candidate failed: ValueError: the items are wrong: "
                                     "- goal has no id - limit has no id (adapter.py:2)")


def test_a_very_long_error_is_cut_and_says_where_to_see_it_whole(suite):
    suite.update_config(adapter="adapter.py")
    (suite.evals / "adapter.py").write_text(
        "def grade_candidate(grade):\n    raise ValueError('schema:\\n' + 'x' * 5000)\n"
        "def render_report(report):\n    return 'x'\n"
    )
    result = invoke(*RUN)
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert len(line) < 700 and line.endswith("… (`assay --debug` shows it whole) (adapter.py:2)")


@node_needed
def test_a_javascript_assertion_diff_is_told_on_one_line(suite):
    _mjs(suite, "assert.deepStrictEqual({ a: 1 }, { a: 2 });")
    adapter = suite.evals / "adapter.mjs"
    adapter.write_text('import assert from "node:assert";\n' + adapter.read_text())
    result = invoke(*RUN)
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Execution failed: gradeCandidate failed: AssertionError: Expected values to be strictly "
                           "deep-equal: ")
    assert "+ a: 1 - a: 2" in line and line.endswith("(adapter.mjs:3)")


@node_needed
def test_an_error_thrown_in_a_timer_is_named_not_taken_for_process_exit(suite):
    # Before: "gradeCandidate ended node …: node exited with code 1 before the hook returned; a hook must return
    # or throw, not call process.exit(); stderr tail: file:///…" and node's whole report, over a dozen lines.
    _mjs(suite, "setTimeout(() => { throw new Error('late failure'); }, 1);\n  return new Promise(() => {});")
    result = invoke(*RUN)
    assert result.exit_code == 2
    adapter = suite.evals / "adapter.mjs"
    assert _failure_lines(result) == [
        f"Execution failed: node stopped while gradeCandidate ran ({adapter}): nothing caught Error: late failure "
        "(adapter.mjs:2), so node exited with code 1; a hook must await the promises it starts and catch what its "
        "callbacks (timers, events) throw"
    ]
    assert result.stderr.strip().splitlines()[-1].startswith("Execution failed:")  # node's own report came first
    assert not (suite.results / "r" / "manifest.json").exists()


@node_needed
def test_a_promise_rejected_with_no_error_and_never_awaited_is_named(suite):
    _mjs(suite, "Promise.reject('no such item');\n  return new Promise(() => {});")
    result = invoke(*RUN)
    assert result.exit_code == 2
    assert _failure_lines(result) == [
        f"Execution failed: node stopped while gradeCandidate ran ({suite.evals / 'adapter.mjs'}): a promise nothing "
        "awaited rejected with 'no such item', so node exited with code 1; a hook must await the promises it starts "
        "and catch what its callbacks (timers, events) throw"
    ]


@node_needed
def test_process_exit_with_output_before_it_still_says_process_exit_on_one_line(suite):
    _mjs(suite, "console.error('about to leave');\n  console.error('now');\n  process.exit(1);")
    result = invoke(*RUN)
    assert result.exit_code == 2
    assert _failure_lines(result) == [
        f"Execution failed: gradeCandidate ended node while it ran ({suite.evals / 'adapter.mjs'}): node exited with "
        "code 1 before the hook returned; a hook must return or throw, not call process.exit(); stderr tail: "
        "about to leave now"
    ]


@node_needed
def test_process_exit_while_the_module_loads_names_the_module_not_the_bridge(suite):
    # Before: "adapter command '/usr/bin/node …/bridge.mjs' exited unexpectedly (exit code 2); stderr tail: (empty)".
    suite.update_config(adapter="adapter.mjs")
    adapter = suite.evals / "adapter.mjs"
    adapter.write_text("process.exit(2);\n")
    result = invoke("doctor")
    assert result.exit_code == 2
    assert _failure_lines(result) == [
        f"Execution failed: failed to load adapter module from {adapter}: node stopped while it loaded: node exited "
        "with code 2; an adapter must not call process.exit()"
    ]


@node_needed
def test_an_error_thrown_in_a_timer_while_the_module_loads_is_named_on_one_line(suite):
    suite.update_config(adapter="adapter.mjs")
    adapter = suite.evals / "adapter.mjs"
    adapter.write_text("setTimeout(() => { throw new Error('load timer'); }, 1);\n"
                       "await new Promise((settle) => setTimeout(settle, 300));\n"
                       "export const gradeCandidate = () => ({ verdict: 'green', findings: [] });\n")
    result = invoke("doctor")
    assert result.exit_code == 2
    assert _failure_lines(result) == [
        f"Execution failed: failed to load adapter module from {adapter}: node stopped while it loaded: nothing caught "
        "Error: load timer (adapter.mjs:1), so node exited with code 1"
    ]
    assert result.stderr.strip().splitlines()[-1].startswith("Execution failed:")


@node_needed
def test_a_rejection_nothing_awaited_at_load_is_named_whenever_node_stops(suite):
    # Node stops once the module's promises are settled: just after it loaded, so doctor's closing found it gone
    # (before: the bridge's command line, "exited unexpectedly" and node's whole report, over a dozen lines).
    suite.update_config(adapter="adapter.mjs")
    adapter = suite.evals / "adapter.mjs"
    adapter.write_text("Promise.reject(new Error('load reject'));\n"
                       "export const gradeCandidate = () => ({ verdict: 'green', findings: [] });\n")
    result = invoke("validate-fixtures")
    assert result.exit_code == 2
    [line] = _failure_lines(result)
    assert line.startswith((f"Execution failed: node stopped while no hook was running ({adapter}): ",
                            f"Execution failed: failed to load adapter module from {adapter}: node stopped while it "
                            "loaded: ")), line
    assert "nothing caught Error: load reject (adapter.mjs:1), so node exited with code 1" in line
