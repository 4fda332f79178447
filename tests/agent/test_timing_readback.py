"""Timing readback: an attempt's phase tree (setup, the eval's run, each send, each judge call, teardown)
as recorded, and as `assay agent show @LOC --timing [--json]` prints it from a real run in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from agent_helpers import run_one, scripted_agent
from assay.agent import Turn, define_eval, message
from servers.fake_openai import json_reply
from traced_projects import write_project


def _tree(timing):
    """(phase, label, parent phase) per row."""
    return [(row["phase"], row.get("label"), timing[row["parent"]]["phase"] if "parent" in row else None)
            for row in timing]


def test_the_phase_tree_holds_setup_each_send_and_each_judge_call_where_it_was_awaited(fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "judge-key")
    # Answered by path, not from a queue: the run's judge preflight asks the endpoint for its models first.
    fake_openai.respond_with(lambda request: json_reply({"reasons": "fine", "score": 0.9}))

    async def setup(ctx):
        pass

    async def teardown(ctx):
        pass

    agent, _ = scripted_agent([Turn([message("Hello!")]), Turn([message("Bye.")])], setup=setup, teardown=teardown)

    async def body(t):
        await t.send("hi")
        await t.judge("The reply greets.").or_stop()  # awaited inside the test: part of eval.run
        await t.send("bye")
        t.judge("The reply is short.")  # resolved after the test: the attempt's own

    result = run_one(agent, define_eval(body, judge={"model": "judge-1", "base_url": fake_openai.base_url}))
    assert result.verdict == "passed", result.assertions
    assert _tree(result.timing) == [
        ("attempt", None, None),
        ("agent.setup", None, "attempt"),
        ("eval.run", None, "attempt"),
        ("agent.send", "turn 1", "eval.run"),
        ("judge", "judge('The reply greets.', threshold=0.5)", "eval.run"),
        ("agent.send", "turn 2", "eval.run"),
        ("agent.teardown", None, "attempt"),
        ("judge", "judge('The reply is short.', threshold=0.5)", "attempt"),  # graded once the agent is done
    ]
    starts = [row["start_offset_ms"] for row in result.timing]
    assert starts == sorted(starts) and all(row["duration_ms"] >= 0 and not row.get("open") for row in result.timing)
    attempt, _, run, first_send, first_judge, *_ = result.timing
    assert first_judge["start_offset_ms"] >= first_send["start_offset_ms"] + first_send["duration_ms"]
    assert run["start_offset_ms"] + run["duration_ms"] <= attempt["duration_ms"] + 0.001


def _assay(*arguments, cwd, env):
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120, check=False)


def test_agent_show_timing_prints_the_tree_and_its_json_from_a_real_run(tmp_path, fake_openai):
    fake_openai.respond_with(lambda request: json_reply({"reasons": "names the order", "score": 1.0}))
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/plain.py": """
            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            async def setup(ctx):
                pass

            async def send(turn_input, ctx):
                return Turn([message(f"Order 1001: {turn_input.text}")])

            plain = Experiment(agent=define_agent(name="plain", send=send, setup=setup,
                                                  evidence_coverage=complete_evidence_coverage))
        """,
        "evals/judged_eval.py": f"""
            from assay.agent import define_eval

            @define_eval(judge={{"model": "judge-1", "base_url": {fake_openai.base_url!r}}})
            async def test(t):
                await t.send("where is it?")
                await t.send("thanks")
                t.judge("The reply names the order.")
        """,
    })
    env = {**os.environ, "OPENAI_API_KEY": "judge-key", "ASSAY_STORE": str(tmp_path / "store.db")}
    ran = _assay("agent", "run", "--project", str(project), cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = _assay("agent", "show", "--json", "--project", str(project), cwd=tmp_path, env=env)
    [attempt] = json.loads(shown.stdout)["attempts"]
    locator = attempt["locator"]

    text = _assay("agent", "show", locator, "--timing", "--project", str(project), cwd=tmp_path, env=env)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"{locator}  timing of plain/judged attempt 1")
    names = [line.split("+")[0].rstrip() for line in lines[1:]]
    assert names == [
        "  attempt", "    agent.setup", "    eval.run", "      agent.send turn 1", "      agent.send turn 2",
        "    judge judge('The reply names the order.', threshold=0.5)",
    ]
    assert all(line.rstrip().endswith("ms") for line in lines[1:])

    as_json = _assay("agent", "show", locator[:6], "--timing", "--json", "--project", str(project), cwd=tmp_path, env=env)
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert document["locator"] == locator and document["attempt_id"] == attempt["attempt_id"]
    assert document["timing"] == attempt["timing"]
    assert [row["phase"] for row in document["timing"]] == [
        "attempt", "agent.setup", "eval.run", "agent.send", "agent.send", "judge",
    ]
    assert {"start_offset_ms", "duration_ms"} <= set(document["timing"][5]) and document["timing"][5]["parent"] == 0

    missing = _assay("agent", "show", "--timing", "--project", str(project), cwd=tmp_path, env=env)
    assert missing.returncode != 0 and "give its locator" in missing.stdout + missing.stderr


def test_a_send_a_timeout_cut_short_is_shown_unfinished_in_text_and_json(tmp_path):
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay]\ntimeout = 1\n",
        "experiments/stuck.py": """
            import asyncio
            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            async def send(turn_input, ctx):
                if turn_input.text == "hang":
                    await asyncio.sleep(30)
                return Turn([message("ok")])

            stuck = Experiment(agent=define_agent(name="stuck", send=send, evidence_coverage=complete_evidence_coverage))
        """,
        "evals/hangs_eval.py": """
            from assay.agent import define_eval

            @define_eval
            async def test(t):
                await t.send("hi")
                await t.send("hang")
        """,
    })
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    ran = _assay("agent", "run", "--project", str(project), cwd=tmp_path, env=env)
    assert ran.returncode == 1 and "timed out after 1s" in ran.stdout, ran.stdout + ran.stderr
    [attempt] = json.loads(_assay("agent", "show", "--json", "--project", str(project), cwd=tmp_path,
                                  env=env).stdout)["attempts"]

    text = _assay("agent", "show", attempt["locator"], "--timing", "--project", str(project), cwd=tmp_path, env=env)
    rows = {line.split("+")[0].strip(): line for line in text.stdout.splitlines()[1:]}
    assert rows["agent.send turn 2"].endswith("ms (unfinished)") and rows["eval.run"].endswith("ms (unfinished)")
    assert not rows["agent.send turn 1"].endswith("(unfinished)") and not rows["attempt"].endswith("(unfinished)")

    as_json = _assay("agent", "show", attempt["locator"], "--timing", "--json", "--project", str(project),
                     cwd=tmp_path, env=env)
    timing = json.loads(as_json.stdout)["timing"]
    assert [(row["phase"], row.get("label"), row.get("open", False)) for row in timing] == [
        ("attempt", None, False), ("eval.run", None, True), ("agent.send", "turn 1", False),
        ("agent.send", "turn 2", True),
    ]
    assert 900 <= timing[3]["duration_ms"] < 5000  # how long it ran before the deadline cut it
