"""Span mappers as a stranger writes them, in a real `assay agent run` (a subprocess) whose agents export real OTLP
protobuf to the run's receiver: a mapper that edits the spans it is given in place must not change what the app sent
(the record keeps the app's spans as they came), and each agent whose mapper fails is named in the run (the second
agent's failure was hidden behind the first one's warning)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

COMMON = '''
import os, time, urllib.request
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from assay.agent import Turn, message


def export(endpoint, traceparent):
    _, trace, parent, _ = traceparent.split("-")
    now = time.time_ns()
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.parent_span_id = bytes.fromhex(trace), os.urandom(8), bytes.fromhex(parent)
    span.name, span.start_time_unix_nano, span.end_time_unix_nano = "step", now, now + 1000
    tags = span.attributes.add()
    tags.key = "tags"
    tags.value.array_value.values.add().string_value = "sent"
    event = span.events.add()
    event.name, event.time_unix_nano = "sent-event", now
    urllib.request.urlopen(urllib.request.Request(endpoint, data=request.SerializeToString(),
                                                  headers={"Content-Type": "application/x-protobuf"}), timeout=10).read()


async def send(turn_input, ctx):
    export(ctx.telemetry.endpoint, ctx.telemetry.traceparent)
    return Turn([message(f"You said: {turn_input.text}")])
'''

EXPERIMENT = '''
from app_common import send
from assay.agent import Experiment, complete_evidence_coverage, define_agent

{mapper}

{name} = Experiment(agent=define_agent(name="{name}", send=send, span_mapper=mapper,
                                       evidence_coverage=complete_evidence_coverage))
'''

MAPPERS = {
    "editing": '''
def mapper(spans):
    for span in spans:  # edits what it was given, then returns it: tagging by hand, badly
        span["events"].clear()
        span["attributes"]["tags"].append("edited")
        span["attributes"]["assay.span.kind"] = "tool"
    return spans
''',
    "raising": '''
def mapper(spans):
    raise RuntimeError("boom in the mapper")
''',
    "wrongtype": '''
def mapper(spans):
    return {"not": "a list"}
''',
}


def _run(project: Path, store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_STORE": str(store), "PYTHONPATH": str(project)}
    return subprocess.run([sys.executable, "-m", "assay", "agent", "run"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def _project(folder: Path) -> Path:
    project = folder / "project"
    (project / "experiments").mkdir(parents=True)
    (project / "evals").mkdir()
    (project / "pyproject.toml").write_text('[tool.assay]\nname = "mappers"\n\n[tool.assay.telemetry]\n')
    (project / "app_common.py").write_text(COMMON)
    (project / "evals" / "hello_eval.py").write_text(textwrap.dedent('''
        from assay.agent import define_eval, includes


        @define_eval()
        async def test(t):
            await t.send("hello")
            t.check(t.reply, includes("hello"))
    '''))
    for name, mapper in MAPPERS.items():
        (project / "experiments" / f"{name}.py").write_text(EXPERIMENT.format(mapper=mapper, name=name))
    return project


def _spans_by_unit(store: Path) -> dict[str, dict]:
    (units,) = list((store.parent / "records").glob("*/units.jsonl"))
    found = {}
    for line in units.read_text().splitlines():
        unit = json.loads(line)
        assert unit["verdict"] == "passed", unit
        found[unit["unit_id"]] = unit["detail"]["spans"]
    return found


def test_a_mapper_that_edits_its_spans_in_place_leaves_the_apps_spans_as_they_came(tmp_path: Path) -> None:
    store = tmp_path / "store" / "assay.db"
    done = _run(_project(tmp_path), store)
    assert done.returncode == 0, done.stdout + done.stderr
    documents = _spans_by_unit(store)
    (turn,) = documents["editing/hello#1"]["turns"]
    (span,) = turn["spans"]
    assert span["events"] and span["events"][0]["name"] == "sent-event"  # not cleared
    assert span["attributes"]["tags"] == ["sent"]  # not appended to
    assert span["attributes"]["assay.span.kind"] == "tool"  # what it added is taken
    assert "span_mapper_error" not in documents["editing/hello#1"]


def test_every_agent_whose_mapper_fails_is_named_once(tmp_path: Path) -> None:
    store = tmp_path / "store" / "assay.db"
    done = _run(_project(tmp_path), store)
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout + done.stderr
    lines = [line for line in said.splitlines() if "telemetry-span-mapper-failed" in line]
    assert len(lines) == 2, said
    assert any("'raising'" in line and "boom in the mapper" in line for line in lines), lines
    assert any("'wrongtype'" in line and "returned dict, not a list of spans" in line for line in lines), lines
    documents = _spans_by_unit(store)
    for unit in ("raising/hello#1", "wrongtype/hello#1"):  # the turn is kept, its spans as they came
        (turn,) = documents[unit]["turns"]
        assert [span["name"] for span in turn["spans"]] == ["step"]
        assert documents[unit]["span_mapper_error"]


ROOTED = '''
import os
from app_common import export
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message


async def send(turn_input, ctx):
    export(ctx.telemetry.endpoint, ctx.telemetry.traceparent)  # in the turn's trace
    # and one span the app started as a new root, during the turn: a trace assay never issued
    export(ctx.telemetry.endpoint, f"00-{os.urandom(16).hex()}-{os.urandom(8).hex()}-01")
    return Turn([message(f"You said: {turn_input.text}")])


rooted = Experiment(agent=define_agent(name="rooted", send=send, evidence_coverage=complete_evidence_coverage))
'''


def test_a_span_in_a_new_trace_during_a_turn_is_not_said_to_start_while_no_turn_was_open(tmp_path: Path) -> None:
    project = _project(tmp_path)
    for path in (project / "experiments").iterdir():
        path.unlink()
    (project / "experiments" / "rooted.py").write_text(ROOTED)
    store = tmp_path / "store" / "assay.db"
    done = _run(project, store)
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [line for line in (done.stdout + done.stderr).splitlines() if "telemetry-unattributed" in line]
    assert "1 of 2 spans matched no turn" in line, line
    assert "no turn was open" not in line, line  # it started while the turn was open
    assert "in a trace of their own" in line, line
    (turn,) = _spans_by_unit(store)["rooted/hello#1"]["turns"]
    assert [span["name"] for span in turn["spans"]] == ["step"]  # the turn keeps its own span
