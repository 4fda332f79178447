import asyncio
import random

import pytest

from assay.core.schedule import run_bounded


def run(coroutine):
    return asyncio.run(coroutine)


def test_results_come_back_in_source_order_whatever_the_completion_order():
    async def work(item):
        await asyncio.sleep(random.Random(item).random() / 200)
        return item * 10

    completed = run(run_bounded(range(40), work, concurrency=8))
    assert [done.value for done in completed] == [item * 10 for item in range(40)]
    assert [done.position for done in completed] == list(range(40))


def test_concurrency_bounds_the_calls_in_flight():
    in_flight = 0
    peak = 0

    async def work(item):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.002)
        in_flight -= 1

    run(run_bounded(range(50), work, concurrency=5))
    assert peak == 5


def test_fail_fast_stops_taking_new_items_but_drains_those_in_flight():
    started = []

    async def work(item):
        started.append(item)
        if item == 3:
            raise ValueError("boom")
        await asyncio.sleep(0.01)
        return item

    completed = run(run_bounded(range(100), work, concurrency=4))
    errors = [done for done in completed if done.error is not None]
    assert [str(done.error) for done in errors] == ["boom"]
    # Items 0-3 started together; at most a few more were pulled before the error was seen.
    assert len(started) < 10
    assert all(done.error is None for done in completed if done.item != 3)


def test_keep_going_runs_everything_and_reports_each_error():
    async def work(item):
        if item % 3 == 0:
            raise RuntimeError(f"bad {item}")
        return item

    completed = run(run_bounded(range(10), work, concurrency=3, keep_going=True))
    assert len(completed) == 10
    assert [str(done.error) for done in completed if done.error] == ["bad 0", "bad 3", "bad 6", "bad 9"]


def test_async_sources_are_pulled_lazily():
    pulled = []

    async def source():
        for item in range(5):
            pulled.append(item)
            yield item

    async def work(item):
        return item

    completed = run(run_bounded(source(), work, concurrency=2))
    assert [done.value for done in completed] == [0, 1, 2, 3, 4]
    assert pulled == [0, 1, 2, 3, 4]


def test_a_failing_source_raises_its_own_error_not_a_group():
    async def source():
        yield 1
        raise LookupError("source broke")

    async def work(item):
        return item

    with pytest.raises(LookupError, match="source broke"):
        run(run_bounded(source(), work, concurrency=3))


def test_on_complete_hears_every_item_including_errors():
    heard = []

    async def work(item):
        if item == 2:
            raise ValueError("x")
        return item

    run(run_bounded(range(5), work, concurrency=2, keep_going=True, on_complete=lambda done: heard.append(done.position)))
    assert sorted(heard) == [0, 1, 2, 3, 4]


def test_concurrency_below_one_is_refused():
    async def work(item):
        return item

    with pytest.raises(ValueError):
        run(run_bounded([1], work, concurrency=0))
