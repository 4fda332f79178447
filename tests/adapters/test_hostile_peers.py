"""Peers that break the process transport on purpose: each run ends within its stated limit, keeps
what was answered, and leaves no process of the adapter's behind (descendants in other sessions too)."""

from __future__ import annotations

import asyncio
import os

import pytest

from adapters.hostile import Stopwatch, descendants_named, hostile, mark_children, running_with
from assay.adapters.message_budget import MessageBudget
from assay.adapters.ndjson import (
    START_TIMEOUT_VARIABLE,
    ProcessTimeouts,
    RequestTimedOut,
    RequestTimeout,
    start_ndjson_process,
    start_timeout,
)
from assay.adapters.process_tree import become_subreaper
from assay.errors import AdapterRuntimeError

FAST = ProcessTimeouts(close_s=0.5, terminate_grace_s=0.3, kill_grace_s=0.5)
HINT = ". Stdout is reserved for NDJSON protocol messages; write adapter logs to stderr"


class Collector:
    def __init__(self) -> None:
        self.data = bytearray()
        self.count = 0

    def __call__(self, chunk: bytes) -> None:
        self.count += len(chunk)
        if len(self.data) < 1 << 16:
            self.data += chunk


@pytest.fixture
def mark(monkeypatch):
    mark = mark_children(monkeypatch)
    yield mark
    assert running_with(mark) == [], "the adapter left processes running"


async def started(mode: str, argument: object = "", **options):
    options.setdefault("stderr_sink", Collector())
    options.setdefault("timeouts", FAST)
    process = await start_ndjson_process(hostile(mode, argument), **options)
    return process, options["stderr_sink"]


async def initialized(mode: str, argument: object = "", **options):
    process, stderr = await started(mode, argument, **options)
    await process.request("initialize", {}, timeout=RequestTimeout(10))
    return process, stderr


def run(coroutine):
    return asyncio.run(coroutine)


def test_assay_is_the_subreaper_of_its_adapters():
    assert become_subreaper()


def test_never_answering_the_first_request_times_out_naming_the_setting(mark, monkeypatch):
    monkeypatch.setenv(START_TIMEOUT_VARIABLE, "0.4")

    async def scenario():
        process, _ = await started("never-answers")
        try:
            with Stopwatch() as watch, pytest.raises(RequestTimedOut) as caught:
                await process.request("initialize", {}, timeout=start_timeout())
        finally:
            await process.force_stop()
        return str(caught.value), watch.seconds, process.returncode

    message, seconds, returncode = run(scenario())
    assert message == (
        f"adapter command '{hostile('never-answers')}' did not answer initialize within 0.4s "
        f"(set by {START_TIMEOUT_VARIABLE})"
    )
    assert 0.4 <= seconds < 1.0
    assert returncode is not None


def test_the_start_timeout_is_30_seconds_by_default_and_checked(monkeypatch):
    monkeypatch.delenv(START_TIMEOUT_VARIABLE, raising=False)
    assert start_timeout().seconds == 30
    assert START_TIMEOUT_VARIABLE in start_timeout().setting
    monkeypatch.setenv(START_TIMEOUT_VARIABLE, "0")
    assert start_timeout().seconds is None
    monkeypatch.setenv(START_TIMEOUT_VARIABLE, "soon")
    with pytest.raises(AdapterRuntimeError, match="must be a number of seconds"):
        start_timeout()


def test_a_call_that_runs_out_of_time_fails_alone_and_earlier_answers_are_kept(mark):
    async def scenario():
        # It answers initialize and one evaluate, then sleeps in the next.
        process, _ = await initialized("sleeps-mid-run", 2, call_timeout=RequestTimeout(0.3, "set by --adapter-timeout"))
        answered = [await process.request("evaluate", {"sample": {"sampleIndex": 0}})]
        with Stopwatch() as watch, pytest.raises(RequestTimedOut) as caught:
            await process.request("evaluate", {"sample": {"sampleIndex": 1}})
        assert process.failure is None  # a slow call is not a broken process
        with Stopwatch() as closing, pytest.raises(AdapterRuntimeError, match="did not complete close within 0.5s"):
            await process.close()
        return answered, str(caught.value), watch.seconds, closing.seconds

    answered, message, seconds, closing = run(scenario())
    assert answered == [{"seen": 0}]
    assert message.endswith("did not answer evaluate within 0.3s (set by --adapter-timeout)")
    assert seconds < 0.8
    assert closing < 0.5 + 0.3 + 0.5 + 0.5


@pytest.mark.parametrize(
    ("mode", "detail"),
    [
        ("garbage", "invalid JSON on stdout: 'utf-8' codec can't decode byte 0xff in position 1: invalid start byte; "
                    "line: '\\x00�not json at all'"),
        ("wrong-id", "stdout response has unknown request id 1002"),
    ],
)
def test_garbage_and_wrong_ids_fail_the_process_at_once(mark, mode, detail):
    async def scenario():
        process, _ = await initialized(mode)
        with Stopwatch() as watch, pytest.raises(AdapterRuntimeError) as caught:
            await process.request("evaluate", {})
        with pytest.raises(AdapterRuntimeError):
            await process.close()
        return str(caught.value), watch.seconds

    message, seconds = run(scenario())
    assert message == f"adapter command protocol error: {detail}{HINT}"
    assert seconds < 0.5


def test_a_line_over_the_budget_is_refused_without_reading_it_whole(mark):
    budget = MessageBudget(8 << 20)

    async def scenario():
        process, _ = await initialized("huge-line", 1 << 30, budget=budget)
        with Stopwatch() as watch, pytest.raises(AdapterRuntimeError) as caught:
            await process.request("evaluate", {})
        with pytest.raises(AdapterRuntimeError):
            await process.close()
        return str(caught.value), watch.seconds

    message, seconds = run(scenario())
    assert message == (
        f"adapter command '{hostile('huge-line', 1 << 30)}' sent a stdout message over the 8 MiB that assay "
        "holds for adapter messages at once; it was refused and the rest of it discarded unread"
    )
    assert seconds < 2  # a gibibyte was never read


def test_closing_stdout_is_reported_within_the_exit_status_wait(mark):
    async def scenario():
        process, _ = await initialized("closes-stdout")
        with Stopwatch() as watch, pytest.raises(AdapterRuntimeError) as caught:
            await process.request("evaluate", {})
        await process.force_stop()
        return str(caught.value), watch.seconds

    message, seconds = run(scenario())
    assert "closed stdout unexpectedly (no exit status)" in message
    assert seconds < 1


def test_an_exit_is_seen_at_once_even_while_a_descendant_holds_the_pipes(mark):
    async def scenario():
        process, stderr = await initialized("grandchild-holds-pipes")
        with Stopwatch() as watch, pytest.raises(AdapterRuntimeError) as caught:
            await process.request("evaluate", {})
        descendants = descendants_named(bytes(stderr.data))
        assert descendants and all(os.path.exists(f"/proc/{pid}") for pid in descendants)
        with Stopwatch() as closing, pytest.raises(AdapterRuntimeError):
            await process.close()
        return str(caught.value), watch.seconds, closing.seconds

    message, seconds, closing = run(scenario())
    assert message.startswith(f"adapter command '{hostile('grandchild-holds-pipes')}' exited unexpectedly (exit code 5)")
    assert seconds < 0.5
    assert closing < 1


def test_a_descendant_in_its_own_session_is_stopped_after_a_clean_close(mark):
    async def scenario():
        process, stderr = await initialized("setsid-grandchild")
        assert await process.request("evaluate", {"sample": {"sampleIndex": 4}}) == {"seen": 4}
        (descendant,) = descendants_named(bytes(stderr.data))
        assert os.getsid(descendant) == descendant  # not in the adapter's session
        with Stopwatch() as closing:
            await process.close()
        return process.returncode, closing.seconds

    returncode, closing = run(scenario())
    assert returncode == 0
    assert closing < 1


def test_a_peer_that_ignores_sigterm_is_killed_after_the_grace(mark):
    async def scenario():
        process, _ = await initialized("ignores-sigterm")
        with Stopwatch() as closing, pytest.raises(AdapterRuntimeError) as caught:
            await process.close()
        return str(caught.value), process.returncode, closing.seconds

    message, returncode, closing = run(scenario())
    assert message.endswith("did not complete close within 0.5s; the process tree was terminated")
    assert returncode == -9
    assert 0.8 <= closing < 0.5 + 0.3 + 0.5


def test_a_stderr_flood_is_mirrored_while_requests_are_answered(mark):
    async def scenario():
        process, stderr = await initialized("flood-stderr")
        answers = [await process.request("evaluate", {"sample": {"sampleIndex": index}}) for index in range(20)]
        await asyncio.sleep(0.2)
        await process.close()
        return answers, stderr.count, len(process.stderr_tail())

    answers, mirrored, tail = run(scenario())
    assert answers == [{"seen": index} for index in range(20)]
    assert mirrored > 1 << 20
    assert tail <= 64 * 1024


def test_a_peer_that_exits_at_once_fails_the_first_request_with_its_code(mark):
    async def scenario():
        process, _ = await started("exits-at-once")
        with Stopwatch() as watch, pytest.raises(AdapterRuntimeError) as caught:
            await process.request("initialize", {})
        await process.force_stop()
        return str(caught.value), watch.seconds

    message, seconds = run(scenario())
    assert message == f"adapter command '{hostile('exits-at-once')}' exited unexpectedly (exit code 3); stderr tail: cannot start"
    assert seconds < 0.5


def test_a_peer_stalled_half_way_through_a_long_line_does_not_hold_up_the_others(mark, tmp_path):
    """One adapter writes 3 MiB of a reply and stops; another's 2 MiB reply must still arrive."""
    budget = MessageBudget(64 << 20, stall_s=0.3)
    stalled = tmp_path / "stalled.py"
    stalled.write_text(
        "import json, sys, time\n"
        "for raw in sys.stdin:\n"
        "    request = json.loads(raw)\n"
        "    sys.stdout.write('{\"id\":%d,\"result\":\"' % request['id'] + 'x' * (3 << 20)); sys.stdout.flush()\n"
        "    time.sleep(120)\n"
    )

    async def scenario():
        import sys

        stuck = await start_ndjson_process(f"{sys.executable} {stalled}", budget=budget, timeouts=FAST, stderr_sink=Collector())
        healthy, _ = await started("huge-line", 2 << 20, budget=budget)
        stuck_call = asyncio.create_task(stuck.request("evaluate", {}))
        await asyncio.sleep(0.2)  # the stuck line holds the budget's turn
        with Stopwatch() as watch:
            answer = await healthy.request("evaluate", {})
        with pytest.raises(AdapterRuntimeError) as caught:
            await stuck_call
        for process in (stuck, healthy):
            await process.force_stop()
        return len(answer), str(caught.value), watch.seconds

    size, message, seconds = run(scenario())
    assert size == 2 << 20
    assert "in the middle of a 3 MiB stdout message while other adapters waited" in message
    assert seconds < 1.5
