"""`run_evals` from code that already runs an event loop (a notebook, an async function): it used to fail inside
asyncio ("asyncio.run() cannot be called from a running event loop") and leave a coroutine never awaited;
now it says to use `run_evals_async`, which runs the same evals in the caller's loop."""

from __future__ import annotations

import asyncio
import gc
import time
import warnings

import pytest

from agent_projects import replying_project

from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, includes, message
from assay.agent.api import run, run_evals, run_evals_async
from assay.errors import UsageError


def echo():
    async def send(turn_input, ctx):
        if turn_input.text == "slow":
            await asyncio.sleep(30)
        return Turn([message(f"You said: {turn_input.text}")])

    return define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage)


async def asks(t):
    await t.send("hi")
    t.check(t.reply, includes("You said: hi"))


def test_run_evals_inside_a_running_loop_says_to_await_run_evals_async_and_leaves_nothing_unawaited():
    async def notebook_cell():
        return run_evals({"asks": asks}, Experiment(agent=echo()))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(UsageError) as refused:
            asyncio.run(notebook_cell())
        gc.collect()
    assert str(refused.value) == (
        "run_evals runs its own event loop, and this code already runs in one (a notebook, an async function): "
        "use `results = await run_evals_async(...)`, with the same arguments")
    assert not [str(warning.message) for warning in caught if "never awaited" in str(warning.message)]


def test_run_evals_async_runs_in_the_callers_loop_and_checks_its_arguments_as_run_evals_does():
    async def notebook_cell():
        return await run_evals_async({"asks": asks}, Experiment(agent=echo()), attempts=2)

    results = asyncio.run(notebook_cell())
    assert results.exit_code == 0 and [attempt.verdict for attempt in results.attempts] == ["passed", "passed"]
    with pytest.raises(UsageError, match="attempts must be > 0"):
        asyncio.run(run_evals_async({"asks": asks}, Experiment(agent=echo()), attempts=0))
    with pytest.raises(TypeError, match="did you mean 'attempts'"):
        asyncio.run(run_evals_async({"asks": asks}, Experiment(agent=echo()), attempt=2))


def test_cancelling_run_evals_async_stops_the_run_at_once_and_raises_cancelled():
    async def slow(t):
        await t.send("slow")

    async def notebook_cell():
        task = asyncio.create_task(run_evals_async({"slow": slow}, Experiment(agent=echo())))
        await asyncio.sleep(0.5)
        task.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    assert asyncio.run(notebook_cell()) < 10  # the agent's 30 s send is not waited out


def test_run_of_a_project_inside_a_running_loop_is_a_refused_result_naming_run_async(tmp_path):
    project = replying_project(tmp_path, reply="yes")
    (project / "evals" / "ask_eval.py").write_text(
        "from assay.agent import define_eval\n\nasync def test(t):\n    await t.send('ok?')\n\nask = define_eval(test)\n")

    async def notebook_cell():
        return run(project)

    results = asyncio.run(notebook_cell())
    assert (results.exit_code, results.error) == (2, (
        "run runs its own event loop, and this code already runs in one (a notebook, an async function): "
        "use `results = await run_async(...)`, with the same arguments"))
    assert not (project / ".assay").exists()  # nothing was started

    async def awaited():
        from assay.agent.api import run_async

        return await run_async(project)

    assert asyncio.run(awaited()).exit_code == 0
