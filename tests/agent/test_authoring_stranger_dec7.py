"""A stranger's evals that passed while checking nothing, and mistakes whose message named no fix: found by writing
evals from docs/agent/evals.md and assertions.md and getting them slightly wrong. Each now errors its attempt with one
message naming the line and what to write instead (never a pass, never Python's words alone)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent_projects import agent_project, attempts_of_bodies

AGENT = """
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message, tool_call, tool_result


async def send(turn_input, ctx):
    return Turn([tool_call("w1", "get_weather", {"city": None}), tool_result("w1", {"sky": "sunny"}),
                 message("It is sunny in Paris")])


e = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage))
"""


def _attempts(tmp_path: Path, evals: dict[str, str]) -> dict[str, dict]:
    return attempts_of_bodies(tmp_path / "project", AGENT, evals, store=tmp_path / "store.db")


def _error(attempt: dict) -> dict:
    assert attempt["verdict"] == "errored", attempt
    return attempt["error"]


def test_an_eval_that_returns_its_check_is_errored_not_passed(tmp_path):
    # `return "rainy" in t.reply` reads as the check, but nothing reads it: the attempt passed on a False.
    attempts = _attempts(tmp_path, {
        "returns_false": """
            await t.send("Paris")
            return "rainy" in t.reply
        """,
        "returns_none": """
            await t.send("Paris")
            return None
        """,
        "returns_its_turn": """
            return await t.send("Paris")
        """,
    })
    error = _error(attempts["returns_false"])
    assert error["code"] == "authoring-error"
    assert error["message"].startswith("the eval returned False, but an eval's return value is never read"), error
    assert "t.check(value, is_true())" in error["message"] and "drop the `return`" in error["message"]
    assert error["where"].endswith("returns_false_eval.py:4"), error  # the eval's `@define_eval` line
    assert "traceback" not in error, error  # assay raised it after the eval ended: its own frames explain nothing
    assert attempts["returns_none"]["verdict"] == "passed"
    assert attempts["returns_its_turn"]["verdict"] == "passed"  # a Turn is no verdict: harmless, allowed


def test_a_score_eval_that_returns_its_points_is_told_to_score_them(tmp_path):
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "e.py").write_text(AGENT)
    (project / "evals" / "points_eval.py").write_text(
        "from assay.agent import define_score_eval\n\n\n@define_score_eval()\nasync def test(t):\n"
        "    await t.send('Paris')\n    return 5\n")
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--quiet"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the eval returned 5" in done.stdout and "t.score(points)" in done.stdout, done.stdout


def test_a_matcher_function_left_uncalled_inside_json_match_or_tool_match_is_refused(tmp_path):
    # `{"city": is_defined}` called is_defined(None) as a predicate: the matcher it returned is truthy, so a
    # missing city matched; an async predicate's coroutine is truthy too.
    attempts = _attempts(tmp_path, {
        "json_uncalled": """
            await t.send("Paris")
            t.check({"city": None}, json_match({"city": is_defined}))
        """,
        "tool_uncalled": """
            turn = await t.send("Paris")
            turn.called_tool(tool_match("get_weather", input={"city": is_defined}))
        """,
        "json_async": """
            async def london(city):
                return city == "London"
            await t.send("Paris")
            t.check({"city": "Paris"}, json_match({"city": london}))
        """,
        "json_returns_matcher": """
            await t.send("Paris")
            t.check({"city": None}, json_match({"city": lambda city: is_defined()}))
        """,
        "satisfies_returns_matcher": """
            await t.send("Paris")
            t.check(t.reply, satisfies("rainy", lambda reply: includes("rainy")))
        """,
        "value_match_returns_matcher": """
            await t.send("Paris")
            t.check(t.reply, define_value_match("rainy", lambda reply: includes("rainy")))
        """,
    })
    assert "json_match got is_defined at $.city, not a matcher: is_defined makes a matcher, so call it" in (
        _error(attempts["json_uncalled"])["message"])
    assert _error(attempts["json_uncalled"])["where"].endswith("json_uncalled_eval.py:7")
    assert "tool_match got is_defined at input.city, not a matcher" in _error(attempts["tool_uncalled"])["message"]
    # Raised while t.check applies the matcher: that assertion is errored, and so is the attempt.
    assert attempts["json_async"]["verdict"] == "errored"
    assert "the predicate london is async" in str(attempts["json_async"])
    assert attempts["json_returns_matcher"]["verdict"] == "errored"
    assert "returned the matcher is_defined() instead of true or false" in str(attempts["json_returns_matcher"])
    for eval_id in ("satisfies_returns_matcher", "value_match_returns_matcher"):
        attempt = attempts[eval_id]
        assert attempt["verdict"] == "errored", attempt
        assert 'returned the matcher includes("rainy") instead of true or false' in str(attempt), attempt


def test_check_given_no_matcher_says_what_to_write(tmp_path):
    attempts = _attempts(tmp_path, {
        "text": """
            await t.send("Paris")
            t.check(t.reply, "sunny")
        """,
        "function": """
            await t.send("Paris")
            t.check(t.reply, is_defined)
        """,
        "klass": """
            await t.send("Paris")
            t.check(t.reply, Matcher)
        """,
        "and_function": """
            await t.send("Paris")
            t.check(t.reply, and_(is_defined, includes("sunny")))
        """,
        "called_tool_function": """
            turn = await t.send("Paris")
            turn.called_tool(tool_match)
        """,
    })
    assert _error(attempts["text"])["message"] == (
        "check(value, matcher) needs a matcher, got str: a text is not a matcher; write "
        "t.check(value, includes('sunny')) or equals('sunny')")
    assert "is_defined makes a matcher, so call it: is_defined(…)" in _error(attempts["function"])["message"]
    assert "Matcher is a class, not a matcher" in _error(attempts["klass"])["message"]
    assert "and_ takes matchers, got function: is_defined makes a matcher, so call it" in (
        _error(attempts["and_function"])["message"])
    assert "tool_match makes a matcher, so call it" in _error(attempts["called_tool_function"])["message"]


def test_two_evals_with_one_id_name_both_files_and_the_fix(tmp_path):
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "e.py").write_text(AGENT)
    (project / "evals" / "weather").mkdir()
    body = "\n\n@define_eval()\nasync def test(t):\n    await t.send('Paris')\n"
    (project / "evals" / "weather" / "paris_eval.py").write_text("from assay.agent import define_eval\n" + body)
    (project / "evals" / "weather_eval.py").write_text(
        "from assay.agent import define_eval\n\n\nasync def paris(t):\n    await t.send('Paris')\n\n\n"
        "EVALS = {'paris': define_eval(paris)}\n")
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "eval id 'weather/paris' is defined twice" in done.stderr and "rename one of them" in done.stderr, done.stderr
