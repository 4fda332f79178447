"""Running agent evals from Python: a project through the pipeline (sync and async), or evals built in code."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, define_eval, equals, message
from assay.agent.api import run, run_async, run_evals

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    return root


def test_a_project_runs_as_the_cli_runs_it_and_returns_typed_results(project, capsys):
    results = run(project)
    assert results.exit_code == 1 and not results.passed
    assert len(results.attempts) == 8 and results.checkpoint is not None and results.checkpoint.is_dir()
    [failed] = results.failures()
    assert failed.eval_id == "wrong_on_purpose" and failed.failing
    assert results.attempt("orders/refund").verdict == "passed"
    assert results.usage["input_tokens"] > 0
    assert capsys.readouterr().out == ""  # nothing printed unless asked for


def test_journal_and_record_can_be_switched_off_and_a_selection_narrows_the_run(project):
    from assay.core.results_store import open_store

    with open_store() as store:
        before = store.count_runs()
    results = run(project, evals=["orders/"], journal=False, record=False)
    assert results.exit_code == 0 and [a.eval_id for a in results.attempts] == [
        "orders/refund", "orders/refund_denied", "orders/status",
    ]
    assert results.checkpoint is None and not (project / ".assay" / "runs").exists()
    with open_store() as store:
        assert store.count_runs() == before


def test_a_user_error_is_a_result_not_an_exception(project):
    results = run(project, experiment="no-such-experiment")
    assert results.exit_code == 2 and "no-such-experiment" in results.error and results.attempts == ()


def test_a_missing_project_folder_is_a_result_with_the_reason_sync_and_async(tmp_path):
    missing = tmp_path / "nope"
    results = run(missing)
    assert (results.exit_code, results.attempts, results.passed) == (2, (), False)
    assert results.error == f"project folder does not exist: {missing}"
    assert asyncio.run(run_async(missing)).error == results.error


def test_run_async_runs_inside_the_callers_loop(project):
    async def main():
        return await run_async(project, tags=["orders"], journal=False)

    results = asyncio.run(main())
    assert {a.eval_id for a in results.attempts} >= {"orders/refund"} and results.checkpoint is None
    assert all("orders" in a.tags for a in results.attempts)


def test_evals_and_experiments_built_in_code(tmp_path):
    async def send(turn_input, ctx):
        return Turn([message(f"echo {turn_input.text}")])

    agent = define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage)

    async def says_hello(t):
        await t.send("hello")
        t.check(t.reply, equals("echo hello"))

    async def says_nothing(t):
        await t.send("hi")
        t.check(t.reply, equals(""))

    results = run_evals({"hello": says_hello, "quiet": define_eval(says_nothing)}, Experiment(agent=agent), attempts=2)
    assert [(a.eval_id, a.ordinal, a.verdict) for a in results.attempts] == [
        ("hello", 0, "passed"), ("hello", 1, "passed"), ("quiet", 0, "failed"), ("quiet", 1, "failed"),
    ]
    assert results.exit_code == 1
