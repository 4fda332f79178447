"""The Python API as a newcomer meets it: a wrong type, a reporter with `console=True`, a wrong experiment
in `results.attempt`, a store path that is a folder. Each is one clear error naming what to give."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, equals, message
from assay.agent.api import plan, run, run_evals

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"


@pytest.fixture(autouse=True)
def store(tmp_path, monkeypatch):
    database = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(database))
    return database


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".assay", "sandbox"))
    return root


@pytest.mark.parametrize("project_given", [5, ["shop"]])
def test_a_project_that_is_no_path_is_a_result_naming_the_argument(project_given):
    results = run(project_given, journal=False, record=False)  # was a raw TypeError from Path()
    assert results.exit_code == 2
    assert results.error.startswith("project must be the project's folder, a str or Path, got ")


@pytest.mark.parametrize("experiment", [["baseline"], Path("baseline")])
def test_an_experiment_that_is_no_string_is_named_not_an_internal_error(project, experiment):
    results = run(project, experiment, journal=False, record=False)  # was "internal error: AttributeError ... 'strip'"
    assert results.exit_code == 2 and "internal error" not in results.error
    assert results.error.startswith("experiment must be one experiment id (a str")
    with pytest.raises(Exception, match="experiment must be one experiment id"):
        plan(project, experiment)


def test_console_keeps_the_callers_reporters(project, capsys):
    heard = []

    class Finished:
        def run_finished(self, event):
            heard.append(event.exit_code)

    results = run(project, evals="orders/", console=True, reporters=[Finished()], journal=False, record=False)
    assert results.exit_code == 0 and heard == [0]  # they were dropped, silently, when console=True
    assert "PASSED" in capsys.readouterr().out  # and the console still prints


def test_attempt_in_a_wrong_experiment_names_the_experiments_not_the_eval_it_found():
    async def send(turn_input, ctx):
        return Turn([message(f"You said: {turn_input.text}")])

    async def repeats(t):
        await t.send("hi")
        t.check(t.reply, equals("You said: hi"))

    echo = define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage)
    results = run_evals({"q": repeats}, {"baseline": Experiment(agent=echo, model="none")})
    with pytest.raises(KeyError) as caught:
        results.attempt("q", "baselin")
    # It said "did you mean 'q'?" of the very eval id given.
    assert caught.value.args[0] == "no attempt of 'q' in 'baselin'; did you mean 'baseline'? (its experiments: baseline)"


@pytest.mark.parametrize("read_only", [False, True])
def test_a_store_path_that_is_a_folder_says_to_name_the_database_file(tmp_path, read_only):
    from assay.core.results_store import open_store
    from assay.errors import UsageError

    folder = tmp_path / "runs"
    folder.mkdir()
    with pytest.raises(UsageError) as caught:
        open_store(folder, read_only=read_only)  # was "cannot be used: disk I/O error" (or "unable to open")
    assert str(caught.value) == (f"the results store's path {folder} is a folder; it names the store's database file "
                                 f"(e.g. {folder / 'assay.db'})")
    assert list(folder.iterdir()) == []  # nothing made in it


def test_run_evals_takes_concurrency_none_as_run_does():
    """`run(concurrency=None)` is the default; `run_evals(concurrency=None)` raised
    "TypeError: '<' not supported between instances of 'int' and 'NoneType'"."""
    from assay.agent import define_eval

    async def send(turn_input, ctx):
        return Turn([message("hi")])

    async def ask(t):
        await t.send("hello")

    experiment = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage))
    results = run_evals({"ask": define_eval(ask)}, experiment, concurrency=None)
    assert results.exit_code == 0 and [attempt.verdict for attempt in results.attempts] == ["passed"]
