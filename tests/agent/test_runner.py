import asyncio
import time


from agent_helpers import run_evals, run_one, scripted_agent
from assay.agent import Experiment, Turn, Usage, define_eval, equals, message
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun
from assay.core.run_events import RunEvents


def sleepy_agent(seconds, log=None, name="sleepy"):
    async def answer(turn_input, ctx):
        if log is not None:
            log.append(("start", ctx.experiment_id, time.perf_counter()))
        await asyncio.sleep(seconds)
        if log is not None:
            log.append(("end", ctx.experiment_id, time.perf_counter()))
        return Turn([message("ok")], usage=Usage(input_tokens=1000, output_tokens=0))

    return scripted_agent(answer, name=name)


async def one_send(t):
    await t.send("x")
    t.succeeded()


def test_results_come_back_in_discovery_order_with_attempts():
    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")]))
    outcome = run_evals(agent, {"b": one_send, "a": one_send}, attempts=2)
    assert [(r.eval_id, r.ordinal) for r in outcome.results] == [("b", 0), ("b", 1), ("a", 0), ("a", 1)]
    assert outcome.exit_code == 0 and outcome.count("passed") == 4


def peak(log, experiment=None):
    level = best = 0
    for kind, experiment_id, _ in sorted(log, key=lambda row: row[2]):
        if experiment is not None and experiment_id != experiment:
            continue
        level += 1 if kind == "start" else -1
        best = max(best, level)
    return best


def test_global_and_per_experiment_concurrency_caps():
    log = []
    agent, _ = sleepy_agent(0.02, log)
    evals = [EvalEntry(f"e{i}", define_eval(one_send)) for i in range(12)]
    experiments = [ExperimentEntry("wide", Experiment(agent=agent)), ExperimentEntry("narrow", Experiment(agent=agent, concurrency=2))]
    plan = build_plan(experiments, {"wide": evals, "narrow": evals})
    outcome = asyncio.run(AgentRun(plan, RunOptions(concurrency=5)).run())
    assert outcome.count("passed") == 24
    assert peak(log) == 5
    assert peak(log, "narrow") == 2


def test_a_slow_attempt_times_out_errored_with_its_last_progress_and_a_cancelled_signal():
    signals = []

    async def hang(turn_input, ctx):
        signals.append(ctx.signal)
        ctx.progress("waiting for the model")
        await asyncio.sleep(5)

    agent, _ = scripted_agent(hang)
    started = time.perf_counter()
    result = run_one(agent, one_send, timeout=0.1)
    assert time.perf_counter() - started < 2
    assert result.verdict == "errored"
    assert result.error["code"] == "timeout"
    assert result.error["message"] == "attempt timed out after 0.1s (last progress: waiting for the model)"
    assert signals[0].cancelled and signals[0].reason == "timeout"


def test_timeout_precedence_cli_over_experiment_over_eval_over_config():
    agent, _ = sleepy_agent(0.3)
    slow_eval = define_eval(one_send, timeout=0.05)
    assert run_one(agent, slow_eval).error["code"] == "timeout"
    assert run_one(agent, slow_eval, timeout=5).verdict == "passed"
    assert run_one(agent, slow_eval, timeout=5, options=RunOptions(timeout=0.05)).error["code"] == "timeout"
    assert run_one(agent, one_send, options=RunOptions(config_timeout=0.05)).error["code"] == "timeout"


def test_interrupt_seals_in_flight_attempts_as_interrupted_and_keeps_finished_ones():
    seen_signals = []

    async def answer(turn_input, ctx):
        seen_signals.append(ctx.signal)
        if turn_input.text == "slow":
            await asyncio.sleep(10)
        return Turn([message("ok")])

    agent, _ = scripted_agent(answer)

    async def fast(t):
        await t.send("fast")

    async def slow(t):
        await t.send("slow")

    experiment = ExperimentEntry("x", Experiment(agent=agent))
    entries = [EvalEntry("fast", define_eval(fast)), EvalEntry("slow", define_eval(slow))] + [
        EvalEntry(f"later{i}", define_eval(fast)) for i in range(3)
    ]
    plan = build_plan([experiment], {"x": entries})
    finished = []

    class Listener:
        def run_started(self, event):
            pass

        def unit_durable(self, event):
            finished.append(event.native.eval_id)

        def warning(self, event):
            pass

    async def main():
        run = AgentRun(plan, RunOptions(concurrency=2), RunEvents([Listener()]))
        task = asyncio.ensure_future(run.run())
        while len(seen_signals) < 2:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.02)
        run.interrupt()
        return await task

    started = time.perf_counter()
    outcome = asyncio.run(main())
    assert time.perf_counter() - started < 3
    assert outcome.interrupted and outcome.exit_code == 130
    by_id = {r.eval_id: r for r in outcome.results}
    assert by_id["fast"].verdict == "passed"
    assert by_id["slow"].outcome == "interrupted" and by_id["slow"].verdict is None
    assert all(by_id[f"later{i}"].outcome in ("interrupted", "executed") for i in range(3))
    assert "slow" not in finished
    assert any(signal.reason == "interrupted" for signal in seen_signals)


def test_agent_setup_and_teardown_run_once_per_attempt_and_teardown_runs_after_errors():
    calls = []

    async def setup(ctx):
        calls.append(("setup", ctx.eval_id))

    def teardown(ctx):
        calls.append(("teardown", ctx.eval_id))

    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")]), setup=setup, teardown=teardown)

    async def boom(t):
        raise ValueError("bug")

    outcome = run_evals(agent, {"ok": one_send, "boom": boom}, concurrency=1)
    assert [r.verdict for r in outcome.results] == ["passed", "errored"]
    assert calls == [("setup", "ok"), ("teardown", "ok"), ("setup", "boom"), ("teardown", "boom")]


def test_agent_setup_failure_errors_the_attempt():
    def setup(ctx):
        raise ConnectionError("no auth")

    agent, _ = scripted_agent([], setup=setup)
    result = run_one(agent, one_send)
    assert result.error["code"] == "agent-setup-failed" and "no auth" in result.error["message"]


def test_experiment_setup_runs_once_and_its_failure_errors_every_attempt_but_teardown_still_runs():
    calls = []

    def setup(ctx):
        calls.append(("setup", ctx.experiment_id))

    def teardown(ctx):
        calls.append(("teardown", ctx.experiment_id))

    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")]))
    outcome = run_evals(agent, {"a": one_send, "b": one_send}, setup=setup, teardown=teardown)
    assert outcome.count("passed") == 2
    assert calls == [("setup", "exp"), ("teardown", "exp")]

    calls.clear()

    def broken(ctx):
        raise RuntimeError("tunnel down")

    outcome = run_evals(agent, {"a": one_send, "b": one_send}, setup=broken, teardown=teardown)
    assert [r.error["code"] for r in outcome.results] == ["experiment-setup-failed"] * 2
    assert "tunnel down" in outcome.results[0].error["message"]
    assert calls == [("teardown", "exp")]
    assert outcome.exit_code == 1


def test_budget_stops_dispatch_and_marks_the_rest_not_dispatched():
    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")], usage=Usage(input_tokens=1_000_000, output_tokens=0)))
    warnings = []

    class Listener:
        def run_started(self, event):
            pass

        def unit_durable(self, event):
            pass

        def warning(self, event):
            warnings.append(event.code)

    evals = {f"e{i}": one_send for i in range(5)}
    outcome = run_evals(agent, evals, model="m", budget=2.0, concurrency=1,
                        options=RunOptions(pricing={"m": {"input": 1.0, "output": 1.0}}), listener=Listener())
    assert [r.outcome for r in outcome.results] == ["executed", "executed", "not_dispatched", "not_dispatched",
                                                    "not_dispatched"]
    assert "budget_exhausted" in warnings
    assert outcome.budget_exhausted == ["exp"] and outcome.exit_code == 1


def test_a_budget_without_prices_warns_that_it_cannot_be_enforced():
    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")]))
    warnings = []

    class Listener:
        def run_started(self, event):
            pass

        def unit_durable(self, event):
            pass

        def warning(self, event):
            warnings.append(event.code)

    outcome = run_evals(agent, {"a": one_send, "b": one_send}, budget=1.0, listener=Listener())
    assert outcome.count("passed") == 2 and warnings == ["budget-unenforceable"]


def test_exit_codes_follow_the_worst_result():
    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")]))

    async def failing(t):
        t.check(1, equals(2))

    async def skipping(t):
        t.skip("later")

    assert run_evals(agent, {"a": one_send, "s": skipping}).exit_code == 0
    assert run_evals(agent, {"a": one_send, "f": failing}).exit_code == 1


def test_journal_records_each_attempt_before_it_is_reported(tmp_path):
    from assay.core.journal import Checkpoint, JournalWriter

    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")]))
    experiment = ExperimentEntry("x", Experiment(agent=agent))
    plan = build_plan([experiment], {"x": [EvalEntry(f"e{i}", define_eval(one_send)) for i in range(20)]})
    checkpoint = Checkpoint.create(tmp_path, "agent", plan_hash="h", total=len(plan), invocation={})
    reported_while_durable = []

    async def main():
        writer = JournalWriter(checkpoint.journal)

        class Listener:
            def run_started(self, event):
                pass

            def unit_durable(self, event):
                keys = {record.key for record in checkpoint.journal.events()}
                reported_while_durable.append(event.native.key in keys)

            def warning(self, event):
                pass

        outcome = await AgentRun(plan, RunOptions(concurrency=4), RunEvents([Listener()]), journal=writer).run()
        await writer.close()
        return outcome

    outcome = asyncio.run(main())
    checkpoint.release()
    assert outcome.count("passed") == 20
    assert reported_while_durable == [True] * 20


def test_an_adapter_that_honours_the_signal_is_still_reported_as_a_timeout():
    async def polite(turn_input, ctx):
        while True:
            ctx.signal.raise_if_cancelled()
            try:
                await asyncio.wait_for(asyncio.shield(ctx.signal.wait()), 0.01)
            except TimeoutError:
                pass

    agent, _ = scripted_agent(polite)
    result = run_one(agent, one_send, timeout=0.05)
    assert result.error["code"] == "timeout"


def test_a_sync_adapter_in_a_thread_sees_the_signal_on_timeout():
    import threading

    seen = threading.Event()

    def blocking_send(turn_input, ctx):
        for _ in range(200):
            if ctx.signal.cancelled:
                seen.set()
                break
            time.sleep(0.005)
        return Turn([message("late")])

    from assay.agent import define_agent, complete_evidence_coverage
    from assay.core.asyncutil import call_user_code

    async def send(turn_input, ctx):
        return await call_user_code(blocking_send, turn_input, ctx)

    agent = define_agent(name="threaded", send=send, evidence_coverage=complete_evidence_coverage)
    result = run_one(agent, one_send, timeout=0.05)
    assert result.error["code"] == "timeout"
    assert seen.wait(2)


def test_an_experiment_teardown_without_setup_still_runs_once_attempts_ran():
    calls = []
    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")]))
    run_evals(agent, {"a": one_send}, teardown=lambda ctx: calls.append(ctx.experiment_id))
    assert calls == ["exp"]


def test_a_send_the_agent_provably_rejected_is_retried_with_backoff_then_gives_up():
    from assay.agent import SendFailure

    calls = []

    def flaky(turn_input, ctx):
        calls.append(turn_input.text)
        if len(calls) < 3:
            raise SendFailure("429 too many requests", acceptance="rejected", code="rate_limit")
        return Turn([message("ok")])

    agent, _ = scripted_agent(flaky)
    result = run_one(agent, one_send, options=RunOptions(retry_base_seconds=0.001))
    assert result.verdict == "passed" and len(calls) == 3

    def always_limited(turn_input, ctx):
        calls.append("again")
        raise SendFailure("429", acceptance="rejected", code="rate_limit")

    calls.clear()
    agent, _ = scripted_agent(always_limited)
    result = run_one(agent, one_send, options=RunOptions(retry_base_seconds=0.001))
    assert len(calls) == 4
    assert result.error["code"] == "rate_limit" and "retries exhausted" in result.error["message"]

    def maybe_started(turn_input, ctx):
        calls.append("once")
        raise SendFailure("connection reset mid-stream", acceptance="unknown")

    calls.clear()
    agent, _ = scripted_agent(maybe_started)
    assert run_one(agent, one_send, options=RunOptions(retry_base_seconds=0.001)).verdict == "errored"
    assert calls == ["once"]


def test_attempts_are_journaled_from_1_and_older_journals_numbered_from_0_still_read():
    from assay.agent.record import AttemptResult

    result = AttemptResult(experiment_id="x", eval_id="e", ordinal=0, attempt_id="r/x/e/1", outcome="executed",
                           verdict="passed", agent="a")
    payload = result.to_json()
    assert payload["attempt"] == 1 and AttemptResult.from_json(payload).ordinal == 0
    older = {key: value for key, value in payload.items() if key != "numbered_from"} | {"attempt": 0}
    assert AttemptResult.from_json(older).key == result.key  # a checkpoint from before still resumes


def test_a_concurrency_far_above_the_slots_runs_no_more_workers_than_slots(monkeypatch):
    import assay.agent.runner as runner

    seen = []
    real_run_bounded = runner.run_bounded

    async def recording_run_bounded(source, work, *, concurrency, **kwargs):
        seen.append(concurrency)
        # An uncapped value would start that many workers; never hand one on.
        return await real_run_bounded(source, work, concurrency=min(concurrency, 64), **kwargs)

    monkeypatch.setattr(runner, "run_bounded", recording_run_bounded)
    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")]))
    outcome = run_evals(agent, {"a": one_send, "b": one_send}, options=RunOptions(concurrency=10**8), attempts=2)
    assert outcome.count("passed") == 4
    assert seen == [4]


def test_a_finished_attempt_leaves_no_reference_cycle_for_the_collector_to_find():
    # Every attempt used to leave ~28 objects in cycles (its runtime and its session lines pointed at
    # each other), which the cyclic collector then had to find: a fifth of the CPU of an instant run.
    import gc

    from assay.agent import includes

    agent, _ = scripted_agent(lambda turn_input, ctx: Turn([message("The answer is 42.")]))

    async def test(t):
        await t.send("question")
        t.succeeded()
        t.check(t.reply, includes("42"))

    run_evals(agent, {"warm-up": test})  # what a first run imports (and the garbage of doing so)
    gc.collect()
    gc.disable()
    try:
        outcome = run_evals(agent, {f"e{index}": test for index in range(200)}, options=RunOptions(concurrency=20))
        found = gc.collect()
    finally:
        gc.enable()
    assert [result.verdict for result in outcome.results] == ["passed"] * 200
    assert found < 200, f"{found} objects in reference cycles after 200 attempts"
