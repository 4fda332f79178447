"""Judges, experiments and traces as a stranger meets them: what an earlier pass left."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest

from assay.agent.traces.receiver import TraceReceiver


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))


def _post_span(receiver: TraceReceiver, name: str, trace_id: str | None) -> None:
    now = time.time_ns()
    span = {"spanId": "b7ad6b7169203331", "name": name, "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 1)}
    if trace_id is not None:
        span["traceId"] = trace_id
    reply = httpx.post(f"http://127.0.0.1:{receiver.port}/v1/traces",
                       json={"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("trace_id", [None, "", "0" * 32], ids=["missing", "empty", "all-zero"])
def test_spans_without_a_trace_id_are_placed_each_by_its_own_time_not_all_in_the_first_turn(hub_and_receiver, trace_id):
    # The first such span was placed by its time window, and its (empty) trace id then pinned every later one
    # to that turn: attempt 2's spans were drawn in attempt 1's waterfall, and the turn they belong to had none.
    hub, receiver = hub_and_receiver
    first = hub.open_turn("run/exp/eval/1", "agent", 0, 1)
    _post_span(receiver, "first", trace_id)
    hub.close_turn(first)
    second = hub.open_turn("run/exp/eval/2", "agent", 0, 1)
    _post_span(receiver, "second", trace_id)
    hub.close_turn(second)
    _post_span(receiver, "between turns", trace_id)
    assert [span["name"] for span in first.spans] == ["first"]
    assert [span["name"] for span in second.spans] == ["second"]
    assert hub.unattributed == 1


def test_a_reasoning_effort_misspelt_in_another_case_is_refused_when_the_project_is_read(tmp_path):
    # `hihg` was refused, `HIGH` too, but `Hihg` (a typo and a capital) went out with every judge call, which a
    # real server refuses: every judged attempt errored at run time.
    project = tmp_path / "p"
    (project / "evals").mkdir(parents=True)
    (project / "experiments").mkdir()
    (project / "pyproject.toml").write_text('[tool.assay.judge]\nmodel = "judge-1"\nreasoning_effort = "Hihg"\n')
    (project / "experiments" / "main.py").write_text(
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n"
        "async def send(turn_input, ctx):\n    return Turn([message('Paris, 21 C')])\n\n"
        "main = Experiment(agent=define_agent(name='echo', send=send, evidence_coverage=complete_evidence_coverage))\n")
    (project / "evals" / "judged_eval.py").write_text(
        "from assay.agent import define_eval\n\n"
        "@define_eval(judge=True)\nasync def test(t):\n    await t.send('weather?')\n    t.judge('names a city')\n")
    listed = subprocess.run([sys.executable, "-m", "assay", "agent", "list"], cwd=project, capture_output=True,
                            text=True, timeout=60)
    said = " ".join((listed.stdout + listed.stderr).split())
    assert listed.returncode == 2, said
    assert "[tool.assay.judge]: reasoning_effort 'Hihg' looks misspelt (did you mean 'high'?)" in said


POSTER = '''
import urllib.error
import urllib.request

from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message


def post(url, body, media):
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": media})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status
    except urllib.error.HTTPError as error:
        return error.code


async def send(turn_input, ctx):
    endpoint = ctx.telemetry.endpoint
    statuses = [post(endpoint[: -len("/v1/traces")] + "/v1/trace", b"{}", "application/json"),
                post(endpoint, b"{not json", "application/json"), post(endpoint, b"[1]", "application/json"),
                post(endpoint, b"spans", "text/plain")]
    return Turn([message(" ".join(map(str, statuses)))])


main = Experiment(agent=define_agent(name="poster", send=send, evidence_coverage=complete_evidence_coverage))
'''


def test_each_status_a_refused_export_gets_is_said_once_not_only_the_first_refusal(tmp_path):
    # An app whose first export went to the wrong path (404) was told so, and then nothing about its other exports
    # being refused for their bodies (400, 415): the run said telemetry-export-refused once, whatever the refusal.
    project = tmp_path / "p"
    (project / "evals").mkdir(parents=True)
    (project / "experiments").mkdir()
    (project / "pyproject.toml").write_text('[tool.assay]\nname = "traced"\n\n[tool.assay.telemetry]\n')
    (project / "experiments" / "main.py").write_text(POSTER)
    (project / "evals" / "hello_eval.py").write_text(
        "from assay.agent import define_eval, includes\n\n"
        "@define_eval()\nasync def test(t):\n    await t.send('hello')\n    t.check(t.reply, includes('404 400 400 415'))\n")
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--json"], cwd=project, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"event":"warning"')]
    refused = [warning["message"] for warning in warnings if warning["code"] == "telemetry-export-refused"]
    assert [message.split("refused an export ")[1][:5] for message in refused] == ["(404)", "(400)", "(415)"], refused
