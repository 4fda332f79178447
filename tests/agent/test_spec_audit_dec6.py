"""NiceEval's model, audited against spec/agent.md by running small projects (Dec 6): each test pins a rule
assay did not keep before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

from agent_helpers import run_one, scripted_agent

from assay.agent import Message, Turn, equals, message


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"pyproject.toml": "[tool.assay]\n", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _agent_run(project: Path, store: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", "agent", *args, "--project", str(project)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "ASSAY_STORE": str(store)})


_ECHO = """
    from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

    async def send(turn_input, ctx):
        return Turn([message(f"echo {turn_input.text}")])

    echo = Experiment(agent=define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage))
"""


# §3.2: "The Runner records user messages itself; adapters emit only assistant text."

def test_a_user_message_returned_by_the_agent_errors_the_attempt_instead_of_passing_as_the_evals_own(tmp_path,
                                                                                                    monkeypatch):
    """An agent's turn with `role="user"` was kept as evidence: `t.event(event_match("message", role="user", …))`
    then matched a text the eval never sent. The turn is now invalid, naming the event and the rule."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    from assay.agent import event_match

    for returned in (Turn([Message("refund approved", "user"), message("ok")]),
                     {"events": [{"type": "message", "role": "user", "text": "refund approved"}]}):
        agent, _ = scripted_agent([returned])

        async def test(t):
            await t.send("hello")
            t.event(event_match("message", role="user", text="refund approved"))

        result = run_one(agent, test)
        assert result.verdict == "errored", result.assertions
        assert result.error["code"] == "agent-send-failed"
        assert "events[0] is a user message" in result.error["message"]
        assert "reports only the assistant's messages" in result.error["message"]


def test_the_users_own_message_is_still_an_event_the_eval_can_select(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    from assay.agent import event_match

    agent, _ = scripted_agent([Turn([message("ok")])])

    async def test(t):
        await t.send("hello there")
        t.event(event_match("message", role="user", text="hello there"))

    assert run_one(agent, test).verdict == "passed"


# §2.1: `skip(reason)` ends the eval as skipped; the reason is what a reader needs to see.

def test_the_skip_reason_is_kept_in_the_record_json_show_and_junit(tmp_path):
    """`t.skip("needs a staging key")` was dropped: the attempt read SKIPPED with no word of why, in `--json`,
    `show @LOCATOR` and the JUnit `<skipped message="skipped"/>`."""
    project = _project(tmp_path / "project", {
        "experiments/echo.py": _ECHO,
        "evals/later_eval.py": """
            from assay.agent import define_eval

            @define_eval
            async def test(t):
                t.skip("needs a staging key")
        """,
    })
    store = tmp_path / "store.db"
    junit = tmp_path / "junit.xml"
    done = _agent_run(project, store, "run", "--json", "--junit", str(junit))
    assert done.returncode == 0, done.stderr
    attempt = next(json.loads(line)["attempt"] for line in done.stdout.splitlines()
                   if json.loads(line).get("type") == "attempt")
    assert attempt["verdict"] == "skipped" and attempt["skip_reason"] == "needs a staging key"
    case = ElementTree.parse(junit).getroot().find("testsuite").find("testcase")
    assert case.find("skipped").get("message") == "skipped: needs a staging key"
    shown = _agent_run(project, store, "show", attempt["locator"])
    assert shown.returncode == 0, shown.stderr
    assert "skipped: needs a staging key" in shown.stdout


# §1.6 / §2.6: a score eval's execution error is `errored` with its partial score as an auditable lower bound.

def test_an_errored_score_eval_keeps_its_points_as_a_partial_score_not_a_complete_one(tmp_path, monkeypatch):
    """The points earned before the exception were stored with `score_state: complete`, as if the attempt had
    finished, and `show` did not mention them. They are now `partial` and shown as a lower bound."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    agent, _ = scripted_agent([Turn([message("ok")])])

    async def test(t):
        await t.send("go")
        t.check(1, equals(1)).score(3)
        raise RuntimeError("the grader broke")

    result = run_one(agent, test, score=True)
    assert result.verdict == "errored"
    assert (result.score, result.score_state) == (3.0, "partial")

    from assay.agent.show import attempt_lines

    assert "partial score 3 (a lower bound: the attempt errored before it finished)" in attempt_lines(result)


def test_a_finished_score_eval_still_reads_a_complete_score(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    agent, _ = scripted_agent([Turn([message("ok")])])

    async def test(t):
        await t.send("go")
        t.check(1, equals(1)).score(3)

    result = run_one(agent, test, score=True)
    assert (result.verdict, result.score, result.score_state) == ("scored", 3.0, "complete")


# §2.3: the judge recipes are `turn.judge.autoevals.{closedQA, factuality, summarizes}`.

def test_the_judge_recipes_answer_to_niceevals_autoevals_spelling(tmp_path, monkeypatch):
    """`turn.judge.autoevals.closed_qa(…)` (the spec's `turn.judge.autoevals.closedQA`) was an AttributeError
    that errored the attempt; it is the same recipe as `turn.judge.closed_qa(…)`."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    monkeypatch.delenv("ASSAY_JUDGE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent, _ = scripted_agent([Turn([message("Paris")])])

    async def test(t):
        turn = await t.send("capital of France?")
        turn.judge.autoevals.closed_qa("Does it name Paris?").optional()
        t.judge.autoevals.factuality("Paris", input="q", output="Paris").optional()

    from assay.agent import define_eval

    result = run_one(agent, define_eval(test, judge={"model": "judge-model"}))
    assert result.error is None, result.error
    assert [a["description"].split("(")[0] for a in result.assertions] == ["judge.closed_qa", "judge.factuality"]
    # no key: unavailable without a call, as `turn.judge.closed_qa` would be
    assert all(a["status"] == "unavailable" for a in result.assertions), result.assertions


# §2.4: the matcher catalogue also has includesUrl, hasSections, referencesAnyPath, defineValueMatch and
# defineScoreMatch; none of them existed.

def test_includes_url_and_has_sections_count_what_they_promise(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    from assay.agent.matchers import has_sections, includes_url

    reply = textwrap.dedent("""
        # Weather
        See https://example.com/paris and https://example.com/paris, or http://meteo.example/oslo.
        ```
        # not a heading: inside a fence
        ```
        ## Sources
    """)
    agent, _ = scripted_agent([Turn([message(reply)])])

    async def test(t):
        await t.send("weather?")
        t.check(t.reply, includes_url()).key("one-url")
        t.check(t.reply, includes_url(2)).key("two-distinct")
        t.check(t.reply, includes_url(3)).key("three")  # the repeated URL counts once
        t.check(t.reply, has_sections()).key("two-headings")
        t.check(t.reply, has_sections(3)).key("three-headings")  # the fenced line is code

    result = run_one(agent, test)
    assert {a["key"]: a["status"] for a in result.assertions} == {
        "one-url": "matched", "two-distinct": "matched", "three": "mismatched",
        "two-headings": "matched", "three-headings": "mismatched",
    }, result.assertions


def test_references_any_path_reads_a_tools_json_input(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    from assay.agent import tool_call, tool_match, tool_result
    from assay.agent.matchers import references_any_path

    agent, _ = scripted_agent([Turn([
        tool_call("c1", "shell", {"command": "cat ./config/.env && ls"}), tool_result("c1", "SECRET=1"),
        tool_call("c2", "file_read", {"path": "src/app/models/user.py"}), tool_result("c2", "..."),
        message("done"),
    ])])

    async def test(t):
        await t.send("look around")
        t.called_tool(tool_match("shell", input=references_any_path(".env"))).key("env-anywhere")
        t.called_tool(tool_match("file_read", input=references_any_path(["src/**/*.py"]))).key("deep-glob")
        t.not_called_tool(tool_match("file_read", input=references_any_path("tests/**"))).key("no-tests")
        t.check({"path": "src/app.py"}, references_any_path("*.js")).key("other-suffix")

    result = run_one(agent, test)
    assert {a["key"]: a["status"] for a in result.assertions} == {
        "env-anywhere": "matched", "deep-glob": "matched", "no-tests": "matched", "other-suffix": "mismatched",
    }, result.assertions


def test_custom_value_and_score_matches_behave_like_the_built_in_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    from assay.agent.matchers import define_score_match, define_value_match

    is_even = define_value_match("is_even", lambda value: value % 2 == 0)
    length_ratio = define_score_match("length_ratio", lambda value: min(len(value) / 10, 1.0))
    out_of_range = define_score_match("broken", lambda value: 1.5)
    agent, _ = scripted_agent([Turn([message("hello")])])

    async def test(t):
        await t.send("hi")
        t.check(4, is_even).key("even")
        t.check(3, is_even).key("odd")
        t.check(t.reply, length_ratio).key("soft")  # 0.5, a measurement: soft unless gated
        t.check(t.reply, out_of_range).key("clamped?").optional()

    result = run_one(agent, test)
    by_key = {a["key"]: a for a in result.assertions}
    assert by_key["even"]["status"] == "matched" and by_key["odd"]["status"] == "mismatched"
    assert by_key["soft"]["status"] == "matched" and by_key["soft"]["value"] == 0.5
    assert by_key["clamped?"]["status"] == "errored"  # never clamped
    assert result.verdict == "failed" and result.failing == ["odd"], (result.verdict, result.failing)


def test_an_attempt_left_undispatched_by_an_early_exit_says_why_in_the_record_and_junit(tmp_path):
    """Its recorded reason read `not run (not_dispatched)` (the record, JUnit's skip message, the viewer), where
    `agent show` says why: the experiment's early exit after a passing attempt."""
    project = _project(tmp_path / "p", {
        "experiments/echo.py": _ECHO.replace(
            "echo = Experiment(agent=", "echo = Experiment(attempts=3, early_exit=True, agent="),
        "evals/hi_eval.py": """
            from assay.agent import define_eval

            @define_eval
            async def test(t):
                await t.send("hi")
                t.succeeded()
        """,
    })
    junit = tmp_path / "junit.xml"
    done = _agent_run(project, tmp_path / "store.db", "run", "--concurrency", "1", "--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    messages = [element.get("message") for element in ElementTree.parse(junit).iter("skipped")]
    assert messages and all(message and message.startswith("not run: ") and "not_dispatched" not in message
                            for message in messages), messages
