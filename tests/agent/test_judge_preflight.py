"""The judge preflight: one cheap probe per judge endpoint before dispatch. An endpoint that refuses
the connection or never answers is never waited on per attempt: its judge assertions come out
unavailable (never passed) and the run warns once, naming it, with the planned and affected counts."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from agent_helpers import scripted_agent, statuses
from assay.agent import Experiment, Turn, define_eval, message
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun
from assay.core.run_events import RunEvents
from servers.fake_openai import json_reply

ENTRY = "from assay.cli.app import main; main()"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


@pytest.fixture
def silent_server():
    """A TCP server on 127.0.0.1 that accepts every connection and never answers a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", held
    stop.set()
    thread.join(timeout=2)
    for connection in held:
        connection.close()
    listener.close()


def judge_config(base_url: str) -> dict:
    return {"model": "judge-1", "base_url": base_url, "api_key_env": ""}


async def judged(t):
    await t.send("When does my order ship?")
    t.judge("The answer gives a shipping day.")
    t.judge("The answer is polite.").optional()


class Warnings:
    def __init__(self):
        self.seen = []

    def warning(self, event):
        self.seen.append((event.code, event.message, dict(event.fields)))


def run(tests: dict, *, attempts: int = 1, timeout: float = 0.5):
    agent, received = scripted_agent(lambda i, c: Turn([message("It ships Monday.")]))
    warnings = Warnings()
    entry = ExperimentEntry("exp", Experiment(agent=agent, attempts=attempts))
    plan = build_plan([entry], {"exp": [EvalEntry(eval_id, test) for eval_id, test in tests.items()]})
    options = RunOptions(concurrency=4, judge_preflight_timeout=timeout)
    started = time.perf_counter()
    outcome = asyncio.run(AgentRun(plan, options, RunEvents([warnings])).run())
    return outcome, warnings.seen, received, time.perf_counter() - started


def test_a_closed_port_makes_its_judge_assertions_unavailable_with_one_warning():
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    outcome, warnings, received, elapsed = run({"e": define_eval(judged, judge=judge_config(base_url))}, attempts=3)
    assert len(received) == 3  # the agent still runs; only the judge is missing
    for result in outcome.results:
        assert statuses(result) == ["unavailable", "unavailable"]
        assert result.assertions[0]["reason"].startswith(f"judge-precheck-failed: judge endpoint {base_url} failed")
        assert result.verdict == "errored"  # a required assertion without evidence, never a pass
    [(code, text, fields)] = warnings
    assert code == "judge-precheck-failed" and base_url in text
    assert fields == {"endpoint": base_url, "planned": 3, "affected": 3, "assertions": 6, "errored": 3}
    assert "6 judge assertion(s) in 3 of 3 planned attempt(s) are unavailable, not passed (3 errored)" in text
    assert elapsed < 5  # no retries against a dead endpoint, no per-attempt wait


def test_a_judge_that_never_answers_is_given_up_on_after_the_probe_timeout(silent_server):
    base_url, held = silent_server
    outcome, warnings, _, elapsed = run({"e": define_eval(judged, judge=judge_config(base_url))}, attempts=2)
    assert elapsed < 3  # the probe's 0.5 s, not the judge's 180 s per call
    assert [r.verdict for r in outcome.results] == ["errored", "errored"]
    [(code, text, fields)] = warnings
    assert code == "judge-precheck-failed" and "no answer within 0.5s" in text and fields["planned"] == 2
    assert len(held) == 1  # one probe per endpoint, not one per attempt


def test_a_healthy_judge_is_probed_once_and_grades(fake_openai):
    fake_openai.respond_with(lambda request: json_reply({"reasons": "fine", "score": 0.9}))
    outcome, warnings, _, _ = run({"e": define_eval(judged, judge=judge_config(fake_openai.base_url))}, attempts=3)
    assert warnings == [] and [r.verdict for r in outcome.results] == ["passed"] * 3
    probes = [request for request in fake_openai.requests if request.method == "GET"]
    assert [request.path for request in probes] == ["/v1/models"]


def test_only_the_unreachable_endpoint_is_unavailable(fake_openai):
    fake_openai.respond_with(lambda request: json_reply({"reasons": "fine", "score": 0.9}))
    down = f"http://127.0.0.1:{closed_port()}/v1"
    outcome, warnings, _, _ = run({
        "up": define_eval(judged, judge=judge_config(fake_openai.base_url)),
        "down": define_eval(judged, judge=judge_config(down)),
    })
    verdicts = {result.eval_id: result.verdict for result in outcome.results}
    assert verdicts == {"up": "passed", "down": "errored"}
    assert [fields["endpoint"] for _, _, fields in warnings] == [down]


def test_evals_without_a_judge_or_with_an_unresolved_one_are_not_probed(fake_openai, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    async def plain(t):
        await t.send("hi")
        t.succeeded()

    outcome, warnings, _, _ = run({
        "plain": define_eval(plain),
        "keyless": define_eval(judged, judge={"model": "judge-1", "base_url": fake_openai.base_url}),
    })
    assert warnings == [] and fake_openai.requests == []
    keyless = next(result for result in outcome.results if result.eval_id == "keyless")
    assert keyless.assertions[0]["reason"].startswith("judge-key-unresolved")


def test_through_the_cli_the_warning_reaches_ndjson_and_the_run_does_not_hang(tmp_path, silent_server):
    base_url, _ = silent_server
    root = tmp_path / "judged"
    (root / "evals").mkdir(parents=True)
    (root / "experiments").mkdir()
    (root / "pyproject.toml").write_text(
        f'[tool.assay.judge]\nmodel = "judge-1"\nbase_url = "{base_url}"\napi_key_env = ""\n'
    )
    (root / "experiments" / "main.py").write_text(textwrap.dedent("""
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

        async def send(turn_input, ctx):
            return Turn([message("It ships Monday.")])

        main = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage),
                          attempts=2)
    """))
    (root / "evals" / "ship_eval.py").write_text(textwrap.dedent("""
        from assay.agent import define_eval

        @define_eval(judge=True)
        async def test(t):
            await t.send("When does my order ship?")
            t.judge("The answer gives a shipping day.")
    """))
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", ENTRY, "agent", "run", "--project", str(root), "--json"],
                            capture_output=True, text=True, env=os.environ, timeout=60)
    elapsed = time.perf_counter() - started
    assert result.returncode == 1, result.stderr
    assert elapsed < 15  # the default 3 s probe, never the judge's own 180 s timeout
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    [warning] = [line for line in lines if line.get("event") == "warning"]
    assert warning["code"] == "judge-precheck-failed" and warning["endpoint"] == base_url
    assert (warning["planned"], warning["affected"], warning["assertions"], warning["errored"]) == (2, 2, 2, 2)
    attempts = [line["attempt"] for line in lines if line.get("type") == "attempt"]
    assert [attempt["assertions"][0]["status"] for attempt in attempts] == ["unavailable", "unavailable"]
    assert lines[-1]["receipt"]["title"] == "ERRORED"
