"""Running agent evals from Python: a project through the pipeline (sync and async), or evals built in code."""

from __future__ import annotations

import asyncio
import re
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


@pytest.mark.parametrize("options, message", [
    ({"attempts": 0}, "attempts must be > 0"),
    ({"concurrency": 0}, "concurrency must be > 0"),
    ({"timeout": -1}, "timeout must be > 0"),
    ({"budget": -1}, "budget must be >= 0"),
    ({"attempts": 10**9}, "attempts must be at most"),
    ({"rerun": "faild"}, "rerun"),
    ({"evals": [3]}, "evals must be a string or a sequence of strings"),
    # Not a sequence at all: a TypeError traceback ("'int' object is not iterable"); an empty selector ran every eval.
    ({"evals": 5}, "evals must be a string or a sequence of strings, got 5"),
    ({"tags": 5}, "tags must be a string or a sequence of strings, got 5"),
    ({"evals": ""}, "evals holds an empty string (an unset variable?): leave it out to run every eval"),
    ({"evals": ["orders/", " "]}, "evals holds an empty string"),
    ({"tags": ""}, "tags holds an empty string (an unset variable?): leave it out to run every eval whatever its tags"),
    # A value of the wrong type was a TypeError traceback (or ran: attempts=True was one attempt).
    ({"attempts": "3"}, "attempts must be an integer, got '3'"),
    ({"attempts": 2.5}, "attempts must be an integer, got 2.5"),
    ({"attempts": True}, "attempts must be an integer, got True"),
    ({"concurrency": 1.5}, "concurrency must be an integer, got 1.5"),
    ({"timeout": "5"}, "timeout must be a number, got '5'"),
    ({"budget": "1"}, "budget must be a number, got '1'"),
    # Found while planning: the planner's refusal named the command line's `--tag`, not the argument.
    ({"tags": "order"}, "tags 'order': no eval has this tag; did you mean 'orders'?"),
])
def test_options_the_cli_refuses_are_refused_by_the_api_naming_the_argument(project, options, message):
    # Before, the API skipped the CLI's checks: attempts=0 ran nothing and passed, a negative budget or
    # timeout reached the run.
    results = run(project, journal=False, record=False, **options)
    assert (results.exit_code, results.attempts) == (2, ()), results
    assert message in results.error and "--" not in results.error
    assert asyncio.run(run_async(project, journal=False, record=False, **options)).error == results.error
    if "concurrency" not in options and "budget" not in options:
        from assay.agent.api import plan
        from assay.errors import UsageError

        with pytest.raises(UsageError, match=re.escape(message)):
            plan(project, **options)


@pytest.mark.parametrize(("call", "message"), [
    (lambda project: run(project, tag="orders"),
     "run() got an unexpected keyword argument 'tag'; did you mean 'tags'?"),
    (lambda project: run(project, recrod=False),
     "run() got an unexpected keyword argument 'recrod'; did you mean 'record'?"),
    (lambda project: asyncio.run(run_async(project, experimnt="baseline")),
     "run_async() got an unexpected keyword argument 'experimnt'; did you mean 'experiment'?"),
    (lambda project: run_evals({}, {}, attempt=2),
     "run_evals() got an unexpected keyword argument 'attempt'; did you mean 'attempts'?"),
    (lambda project: run(project, executor="ray"),
     "run() got an unexpected keyword argument 'executor'; it takes project, experiment, evals, tags, attempts"),
])
def test_a_misspelt_keyword_names_the_one_meant(project, call, message):
    # Python's own TypeError said only that the keyword was unexpected; `tag=` is the CLI's `--tag`.
    with pytest.raises(TypeError) as refused:
        call(project)
    assert str(refused.value).startswith(message)
    assert not (project / ".assay").exists()  # refused before anything ran


def test_plan_names_a_misspelt_keyword_too(project):
    from assay.agent.api import plan

    meant = "plan() got an unexpected keyword argument 'tag'; did you mean 'tags'?"
    with pytest.raises(TypeError, match=re.escape(meant)):
        plan(project, tag="orders")
    assert asyncio.iscoroutinefunction(run_async)


def test_run_takes_a_shard_as_plan_and_the_cli_do(project):
    """`plan(shard=…)` showed a shard that `run` could not run."""
    first, second = run(project, shard="1/2"), run(project, shard="2/2")
    assert len(first.attempts) + len(second.attempts) == 8 and first.attempts and second.attempts
    assert {a.eval_id for a in first.attempts}.isdisjoint(a.eval_id for a in second.attempts)
    refused = run(project, shard="3/2", journal=False, record=False)
    assert refused.exit_code == 2 and refused.error == "shard 3/2: i must be between 1 and n, here 1 to 2"
    assert asyncio.run(run_async(project, shard="x")).error == "shard must look like i/n (for example 1/4), got 'x'"


def test_one_string_is_one_selector_not_its_characters(project):
    results = run(project, evals="orders/", tags=(), journal=False, record=False)
    assert [a.eval_id for a in results.attempts] == ["orders/refund", "orders/refund_denied", "orders/status"]


def test_reporters_or_evals_of_the_wrong_shape_are_named_not_a_traceback(project):
    from assay.errors import UsageError

    assert run(project, reporters=5, journal=False, record=False).error == \
        "reporters must be a list of run-event reporters, got 5"
    assert asyncio.run(run_async(project, reporters="mine", journal=False, record=False)).exit_code == 2
    agent = define_agent(name="a", send=lambda turn_input, ctx: Turn([]), evidence_coverage=complete_evidence_coverage)
    with pytest.raises(UsageError, match=r"^evals must map ids to what to run \(define_eval\(...\)\), got 5$"):
        run_evals(5, Experiment(agent=agent))
    with pytest.raises(UsageError, match=r"^experiments must map ids to what to run \(an Experiment\), got 5$"):
        run_evals({}, 5)
    with pytest.raises(UsageError, match="^reporters must be a list"):
        run_evals({}, Experiment(agent=agent), reporters=5)

    # An agent where an experiment goes failed in the plan ("'DefinedAgent' object has no attribute 'attempts'"),
    # or printed the agent's whole dataclass repr.
    bind = r"got the agent 'a': bind it to an experiment, Experiment\(agent=...\)$"
    with pytest.raises(UsageError, match=r"^experiments\['main'\] must be an Experiment, " + bind):
        run_evals({"e": define_eval(lambda t: None)}, {"main": agent})
    with pytest.raises(UsageError, match=r"^experiments must map ids to what to run \(an Experiment\), " + bind):
        run_evals({"e": define_eval(lambda t: None)}, agent)
    with pytest.raises(UsageError, match=r"^eval ids must be non-empty strings, got 3$"):
        run_evals({3: define_eval(lambda t: None)}, Experiment(agent=agent))

def test_run_evals_refuses_what_the_cli_refuses():
    from assay.errors import UsageError

    agent = define_agent(name="a", send=lambda turn_input, ctx: Turn([]), evidence_coverage=complete_evidence_coverage)
    for options, message in (({"attempts": 0}, "attempts must be > 0"), ({"concurrency": 0}, "concurrency must be > 0"),
                             ({"timeout": 0}, "timeout must be > 0")):
        with pytest.raises(UsageError, match=message):
            run_evals({"e": define_eval(lambda t: None)}, Experiment(agent=agent), **options)


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
    # attempt="1" was "unsupported operand type(s) for -: 'str' and 'int'"; a missing one named nothing that exists.
    with pytest.raises(ValueError, match=r"attempt is a number from 1 \(the first attempt\), got '1'"):
        results.attempt("hello", attempt="1")
    with pytest.raises(ValueError, match="got 0"):
        results.attempt("hello", attempt=0)
    with pytest.raises(KeyError, match="no attempt 3 of 'hello'; its attempts: 1, 2"):
        results.attempt("hello", attempt=3)
    with pytest.raises(KeyError, match=r"no attempt of 'helo'; did you mean 'hello'\? \(eval ids: hello, quiet\)"):
        results.attempt("helo")


def _instant_evals(count):
    """`count` instant evals (every third one failing) and the experiment that runs them."""

    async def send(turn_input, ctx):
        return Turn([message(f"echo {turn_input.text}")])

    def make(index):
        async def test(t):
            await t.send(f"q{index}")
            t.check(t.reply, equals(f"echo q{index}" if index % 3 else "something else"))
        return define_eval(test)

    agent = define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage)
    return {f"e{index:04d}": make(index) for index in range(count)}, Experiment(agent=agent)


def test_run_evals_keeps_summaries_and_reads_each_attempt_back_when_asked():
    import gc

    from assay.agent.record import AttemptResult

    evals, experiment = _instant_evals(300)
    results = run_evals(evals, experiment, concurrency=20)
    gc.collect()
    alive = sum(1 for thing in gc.get_objects() if isinstance(thing, AttemptResult))
    assert alive < 5, f"{alive} attempt results kept alive by a 300-eval run"  # not one per attempt
    # What a caller reads still works: len, indexing (negative too), iteration, slices and the helpers.
    assert len(results.attempts) == 300 and results.exit_code == 1
    assert (results.attempts[7].eval_id, results.attempts[7].verdict) == ("e0007", "passed")
    assert results.attempts[-1].eval_id == "e0299" and [a.eval_id for a in results.attempts[1:3]] == ["e0001", "e0002"]
    assert [a.eval_id for a in results.attempts] == sorted(evals)
    assert [a.eval_id for a in results.failures()] == [f"e{index:04d}" for index in range(0, 300, 3)]
    assert results.failures()[0].failing and results.attempt("e0150").verdict == "failed"
    assert results.attempt("e0151").eval_id == "e0151" and not results.attempt("e0151").failing
    with pytest.raises(KeyError):
        results.attempt("e0151", attempt=2)


def test_run_evals_of_instant_agents_leaves_no_timer_per_send_on_the_loop():
    # An instant agent never yields to the loop, which is what prunes cancelled timers: one timer per
    # send (the silence warning's) stayed in the loop's heap for the whole run.
    import gc

    counted = []
    evals, experiment = _instant_evals(400)
    seen = []

    class Probe:
        def unit_durable(self, event):
            seen.append(event)
            if len(seen) == 400:  # the last send has settled; the run is still on its loop
                counted.append(sum(1 for thing in gc.get_objects() if isinstance(thing, asyncio.TimerHandle)))
            seen[-1] = None

    run_evals(evals, experiment, concurrency=20, reporters=[Probe()])
    assert counted and counted[0] <= 2, f"{counted} timers on the loop after 400 sends"
