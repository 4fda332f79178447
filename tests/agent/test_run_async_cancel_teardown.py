"""Cancelling `await run_evals_async(...)` / `await run_async(...)` (a notebook cell interrupted, a `wait_for`
timeout, `task.cancel()`): the attempts in flight used to stop where they were, their agent's `teardown`
skipped, so whatever the setup took (a browser, a DB row, a container) leaked. Now the cancellation takes the
path Ctrl-C takes on the command line: the attempts in flight are stopped and torn down, what finished is
journaled, and then CancelledError reaches the caller. A second cancellation may cut the teardown short."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent_projects import agent_project

from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message
from assay.agent.api import run_async, run_evals_async

BOUND = 10  # seconds a cancelled run may take to tear down before the test calls it hung


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store"))


def blocking_agent(hooks: list[str], sending: asyncio.Event, *, sync_hooks: bool):
    """An agent whose send never returns on its own; its setup and teardown are logged in `hooks`."""
    never = asyncio.Event()

    async def send(turn_input, ctx):
        sending.set()
        await never.wait()
        return Turn([message("never")])

    if sync_hooks:
        def setup(ctx):
            hooks.append("setup")

        def teardown(ctx):
            hooks.append("teardown")
    else:
        async def setup(ctx):
            hooks.append("setup")

        async def teardown(ctx):
            hooks.append("teardown")

    return define_agent(name="blocking", send=send, setup=setup, teardown=teardown,
                        evidence_coverage=complete_evidence_coverage)


async def cancelled_while_sending(start, sending: asyncio.Event) -> asyncio.Task:
    """The task of `start()` cancelled once the send has begun, and done within BOUND seconds."""
    task = asyncio.create_task(start())
    await asyncio.wait_for(sending.wait(), BOUND)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=BOUND)
    if not done:
        task.cancel()
        await asyncio.wait({task}, timeout=BOUND)
        pytest.fail(f"the cancelled run was still going {BOUND}s after its cancellation")
    return task


@pytest.mark.parametrize("sync_hooks", [False, True], ids=["async-teardown", "sync-teardown"])
def test_cancelling_run_evals_async_runs_the_teardown_of_the_attempt_in_flight_then_raises_cancelled(sync_hooks):
    hooks: list[str] = []

    async def asks(t):
        await t.send("hello")

    async def notebook_cell():
        sending = asyncio.Event()
        agent = blocking_agent(hooks, sending, sync_hooks=sync_hooks)
        task = await cancelled_while_sending(lambda: run_evals_async({"asks": asks}, Experiment(agent=agent)), sending)
        with pytest.raises(asyncio.CancelledError):
            await task
        return task

    task = asyncio.run(notebook_cell())
    assert task.cancelled()
    assert hooks == ["setup", "teardown"]


def test_a_wait_for_timeout_on_run_evals_async_runs_the_teardown_and_is_a_timeout_for_the_caller():
    hooks: list[str] = []

    async def asks(t):
        await t.send("hello")

    async def notebook_cell():
        agent = blocking_agent(hooks, asyncio.Event(), sync_hooks=False)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(run_evals_async({"asks": asks}, Experiment(agent=agent)), 0.5)

    asyncio.run(asyncio.wait_for(notebook_cell(), BOUND))
    assert hooks == ["setup", "teardown"]


def test_a_second_cancellation_cuts_a_hanging_teardown_short():
    tearing_down = asyncio.Event()

    async def send(turn_input, ctx):
        await asyncio.Event().wait()

    async def teardown(ctx):
        tearing_down.set()
        await asyncio.Event().wait()  # a teardown that never ends

    async def asks(t):
        await t.send("hello")

    async def notebook_cell():
        agent = define_agent(name="stuck", send=send, teardown=teardown, evidence_coverage=complete_evidence_coverage)
        task = asyncio.create_task(run_evals_async({"asks": asks}, Experiment(agent=agent)))
        await asyncio.sleep(0.2)
        task.cancel()
        await asyncio.wait_for(tearing_down.wait(), BOUND)  # the first cancellation began the teardown
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=BOUND)
        assert done, "a second cancellation did not stop the run"
        assert task.cancelled()

    asyncio.run(notebook_cell())


PROJECT_EXPERIMENT = '''
import asyncio, os
from pathlib import Path
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

LOG = Path(os.environ["HOOK_LOG"])


def log(what):
    with LOG.open("a") as f:
        f.write(what + "\\n")


async def send(turn_input, ctx):
    if turn_input.text == "slow":
        log("sending")
        await asyncio.Event().wait()
    return Turn([message("done")])


def setup(ctx):
    log("setup")


def teardown(ctx):
    log("teardown")


e = Experiment(agent=define_agent(name="a", send=send, setup=setup, teardown=teardown,
                                  evidence_coverage=complete_evidence_coverage), concurrency=2)
'''


def test_cancelling_run_async_of_a_project_tears_down_the_attempt_in_flight_and_journals_the_run(
        tmp_path, monkeypatch):
    root = agent_project(tmp_path / "project")
    log = tmp_path / "hooks.log"
    monkeypatch.setenv("HOOK_LOG", str(log))
    (root / "experiments" / "e.py").write_text(PROJECT_EXPERIMENT)
    (root / "evals" / "quick_eval.py").write_text(
        "from assay.agent import define_eval\n\nasync def test(t):\n    await t.send('quick')\n\nquick = define_eval(test)\n")
    (root / "evals" / "slow_eval.py").write_text(
        "from assay.agent import define_eval\n\nasync def test(t):\n    await t.send('slow')\n\nslow = define_eval(test)\n")

    async def notebook_cell():
        task = asyncio.create_task(run_async(root, concurrency=2))
        for _ in range(BOUND * 20):
            if log.exists() and "sending" in log.read_text() and log.read_text().count("teardown") >= 1:
                break  # the slow send has begun, the quick attempt is over
            await asyncio.sleep(0.05)
        else:
            task.cancel()
            pytest.fail(f"the slow send never began: {log.read_text() if log.exists() else ''!r}")
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=BOUND)
        assert done, "the cancelled run did not end"
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(notebook_cell())
    assert log.read_text().split().count("setup") == 2
    assert log.read_text().split().count("teardown") == 2  # the quick attempt's, and the one cancelled mid-send

    # As after Ctrl-C: the checkpoint is kept (to resume), and its journal holds both slots, the one in flight
    # as interrupted (a resume runs it again).
    [journal] = (root / ".assay" / "runs" / "checkpoints").glob("*/events.jsonl")
    records = [json.loads(line)["payload"] for line in journal.read_text().splitlines()]
    assert {record["eval_id"]: record["outcome"] for record in records} == {"quick": "executed", "slow": "interrupted"}
    slow = next(record for record in records if record["eval_id"] == "slow")
    assert "agent.teardown" in [phase["phase"] for phase in slow["timing"]]


def test_cancelling_a_sandbox_run_runs_the_agents_and_the_sandboxs_teardowns_and_leaves_no_sandbox(
        tmp_path, monkeypatch):
    from sandbox_helpers import no_sandbox_left, sandbox_agent

    from assay.agent import define_eval, local_sandbox

    base = tmp_path / "sandboxes"
    monkeypatch.setenv("ASSAY_SANDBOX_DIR", str(base))
    order: list[str] = []

    async def sandbox_teardown(sandbox, ctx):
        order.append("sandbox.teardown")

    async def send(turn_input, ctx):
        order.append("sending")
        await asyncio.Event().wait()

    async def teardown(ctx):
        order.append("agent.teardown")

    async def test(t):
        await t.send("go")

    async def notebook_cell():
        agent = sandbox_agent(send, teardown=teardown)
        evals = {"e": define_eval(test, sandbox=local_sandbox().teardown(sandbox_teardown))}
        task = asyncio.create_task(run_evals_async(evals, Experiment(agent=agent)))
        for _ in range(BOUND * 20):
            if order:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=BOUND)
        assert done, "the cancelled run did not end"
        assert task.cancelled()

    asyncio.run(notebook_cell())
    assert order == ["sending", "agent.teardown", "sandbox.teardown"]
    assert no_sandbox_left(base)
