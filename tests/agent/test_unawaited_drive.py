"""A drive verb called without `await` never sends its turn: the attempt says so instead of passing on turns it
never took (before, an eval whose last line was `t.send("hi")` passed with only Python's RuntimeWarning)."""

from __future__ import annotations

import asyncio
import gc
import warnings

from agent_helpers import run_one, scripted_agent
from assay.agent import Turn, define_eval, includes, message


def echo():
    return scripted_agent(lambda turn_input, ctx: Turn([message(f"hello {turn_input.text}")]))


def run_quietly(agent, body):
    """The attempt's result, and the warnings Python gave while it ran (a dropped coroutine warns when freed)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_one(agent, define_eval(body))
        gc.collect()
    return result, [str(warning.message) for warning in caught]


def test_a_send_without_await_on_the_last_line_errors_the_attempt_and_names_its_line():
    agent, received = echo()

    async def body(t):
        await t.send("one")
        t.send("two")

    line = body.__code__.co_firstlineno + 2
    result, warned = run_quietly(agent, body)
    assert result.verdict == "errored"
    assert result.error["code"] == "authoring-error"
    assert result.error["message"] == ("t.send(...) was called without `await`, so its turn was never sent: "
                                       "write `await t.send(...)`")
    assert result.error["where"] == f"{__file__}:{line}"
    assert [turn_input.text for turn_input, _ in received] == ["one"]  # the second turn was never sent, nor later
    assert not [text for text in warned if "never awaited" in text]  # said once, by assay, not again by Python


def test_a_dropped_send_is_named_even_when_a_failed_check_follows_it():
    agent, _ = echo()

    async def body(t):
        t.send("hi")
        t.check(t.reply, includes("hello"))

    result, _ = run_quietly(agent, body)
    assert result.verdict == "errored" and "without `await`" in result.error["message"]


def test_when_the_eval_raises_after_a_dropped_send_its_error_keeps_its_own_words_and_adds_the_send():
    agent, _ = echo()

    async def body(t):
        other = t.new_session()
        other.respond_all("approve")
        raise ValueError("boom")

    line = body.__code__.co_firstlineno + 2
    result, warned = run_quietly(agent, body)
    assert result.error["code"] == "eval-exception"
    assert result.error["message"] == (f"ValueError: boom; also, session.respond_all(...) at {__file__}:{line} was called "
                                       "without `await`, so its turn was never sent: write `await session.respond_all(...)`")
    assert result.error["where"] == f"{__file__}:{line + 1}"  # the raise stays the error's line
    assert not [text for text in warned if "never awaited" in text]


def test_sends_awaited_later_or_gathered_pass_and_a_late_drop_after_many_sends_is_still_seen():
    agent, received = echo()

    async def gathered(t):
        pending = t.send("first")
        other = t.new_session()
        await asyncio.gather(other.send("a"), other.send("b"))
        await pending
        t.check(t.reply, includes("hello first"))

    result, _ = run_quietly(agent, gathered)
    assert result.verdict == "passed" and len(received) == 3

    async def many(t):
        for index in range(70):  # more than the runtime keeps before it forgets sends already started
            await t.send(str(index))
        t.send_file("missing.txt")

    result, _ = run_quietly(agent, many)
    assert result.verdict == "errored" and result.error["message"].startswith("t.send_file(...) was called without")


def test_a_dropped_send_before_a_stopping_check_is_the_attempts_error_not_a_plain_failure():
    agent, _ = echo()

    async def body(t):
        t.send("hi")
        await t.check(t.reply, includes("hello")).or_stop()

    result, warned = run_quietly(agent, body)
    assert result.verdict == "errored" and result.error["code"] == "authoring-error"
    assert result.error["message"].startswith("t.send(...) was called without `await`")
    assert not [text for text in warned if "never awaited" in text]
