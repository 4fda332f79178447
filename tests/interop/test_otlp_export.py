"""Exporting runs as OpenTelemetry to a receiver on 127.0.0.1 that decodes what arrives with the
official `opentelemetry-proto` messages: one span per run, one gen_ai.evaluation.result event per unit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from servers.otlp_receiver import receiver

from assay.core.run import pipeline
from assay.core.record import RunManifest, UnitResult, store_path, utc_timestamp
from assay.core.results_store import publish_run
from assay.core.run_events import RunFinished

pytest.importorskip("opentelemetry.sdk", reason="the otel extra: pip install 'assay[otel]'")


def _assay(*arguments: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, **(env or {})}, cwd=cwd)


def _agent_like_run(run_id: str) -> None:
    """A run whose first unit holds an agent attempt's spans (the turn's traceparent ids) and whose second has none."""
    manifest = RunManifest(run_id=run_id, kind="agent", created_at=utc_timestamp(), title="checkout", duration_seconds=2.5)
    traced = UnitResult(
        "checkout/refund#1", "failed", group="checkout/refund", reason="the refund was not issued",
        observed={"score": 0.25},
        detail={"spans": {"turns": [{"session": 0, "turn": 1, "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                                     "span_id": "00f067aa0ba902b7", "spans": []}]}},
    )
    plain = UnitResult("checkout/greet#1", "passed", group="checkout/greet")
    # an imported pydantic-evals case keeps its case span as `detail.trace`
    case = UnitResult("refund-case#1", "passed", detail={"evaluation": "EqualsExpected",
                                                        "trace": {"trace_id": "0af7651916cd43dd8448eb211c80319c",
                                                                  "span_id": "b7ad6b7169203331"}})
    publish_run(manifest, [traced, plain, case])


def test_export_sends_one_run_span_and_one_evaluation_event_per_unit(junit_log):
    imported = _assay("runs", "import", str(junit_log.path), "--json")
    assert imported.returncode == 0, imported.stderr
    run_id = __import__("json").loads(imported.stdout)["imported"][0]["run_id"]
    with receiver() as (url, received):
        done = _assay("runs", "export", run_id, "--otlp", url)
    assert done.returncode == 0, done.stderr
    (span,) = received.spans
    assert span["name"] == "assay.run"
    assert span["attributes"]["assay.run.id"] == run_id and span["attributes"]["assay.run.kind"] == "imported"
    assert (span["attributes"]["assay.run.passed"], span["attributes"]["assay.run.failed"]) == (4, 3)
    assert done.stdout.startswith(f"Exported {run_id} to {url}: 1 span (trace {span['trace_id']}) and 11 gen_ai.evaluation.result event(s)")
    assert len(received.events) == 11
    assert {event["name"] for event in received.events} == {"gen_ai.evaluation.result"}
    # no unit of a JUnit file has a trace of its own: every event sits in the run's span
    assert {(event["trace_id"], event["span_id"]) for event in received.events} == {(span["trace_id"], span["span_id"])}
    by_unit = {event["attributes"]["assay.unit.id"]: event["attributes"] for event in received.events}
    assert by_unit["test_capitals::test_fails"] == {
        "gen_ai.evaluation.name": "test_capitals", "gen_ai.evaluation.score.label": "failed",
        "gen_ai.evaluation.score.value": 0.0, "gen_ai.evaluation.explanation": by_unit["test_capitals::test_fails"]["gen_ai.evaluation.explanation"],
        "assay.unit.id": "test_capitals::test_fails", "assay.unit.group": "pytest/test_capitals",
    }
    assert by_unit["test_capitals::test_fails"]["gen_ai.evaluation.explanation"].startswith("AssertionError: wrong capital")
    assert by_unit["test_capitals::test_passes"]["gen_ai.evaluation.score.value"] == 1.0
    assert by_unit["test_capitals::test_errors_in_setup"]["error.type"] == "_OTHER"
    assert "gen_ai.evaluation.score.value" not in by_unit["test_capitals::test_skipped"]
    assert all(resource["service.name"] == "assay" and resource["assay.run.id"] == run_id for resource in received.resources)
    # exported again, the run is the same trace
    with receiver() as (url, again):
        assert _assay("runs", "export", run_id, "--otlp", url).returncode == 0
    assert again.spans[0]["trace_id"] == span["trace_id"]


def test_an_event_sits_in_the_trace_of_the_attempt_it_judges():
    _agent_like_run("agent-20261203T100000-0a1b2c")
    with receiver() as (url, received):
        done = _assay("runs", "export", "agent-20261203T100000-0a1b2c", "--otlp", url, "--json")
    assert done.returncode == 0, done.stderr
    (span,) = received.spans
    events = {event["attributes"]["assay.unit.id"]: event for event in received.events}
    traced = events["checkout/refund#1"]
    assert (traced["trace_id"], traced["span_id"]) == ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
    assert traced["attributes"]["gen_ai.evaluation.score.value"] == 0.25
    assert traced["attributes"]["gen_ai.evaluation.name"] == "checkout/refund"
    assert (events["checkout/greet#1"]["trace_id"], events["checkout/greet#1"]["span_id"]) == (span["trace_id"], span["span_id"])
    case = events["refund-case#1"]
    assert (case["trace_id"], case["span_id"]) == ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
    assert case["attributes"]["gen_ai.evaluation.name"] == "EqualsExpected"
    assert __import__("json").loads(done.stdout)["linked_to_unit_traces"] == 2


def test_export_without_otlp_sends_where_every_run_is_exported_and_else_says_how_to_name_a_collector(tmp_path, monkeypatch):
    _agent_like_run("agent-20261203T100007-0a1b2f")
    monkeypatch.delenv("ASSAY_OTLP_EXPORT", raising=False)
    with receiver() as (url, received):  # the variable that exports every run (it was "Missing option '--otlp'")
        done = _assay("runs", "export", "agent-20261203T100007-0a1b2f", env={"ASSAY_OTLP_EXPORT": url}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"to {url}:" in done.stdout and (len(received.spans), len(received.events)) == (1, 3)

    project = tmp_path / "project"
    project.mkdir()
    with receiver() as (url, received):  # the table of the project in the current folder
        (project / "pyproject.toml").write_text(f'[tool.assay.export]\notlp = "{url}"\n')
        done = _assay("runs", "export", "agent-20261203T100007-0a1b2f", cwd=project)
    assert done.returncode == 0, done.stderr
    assert len(received.spans) == 1

    nowhere = _assay("runs", "export", "agent-20261203T100007-0a1b2f", cwd=tmp_path)
    assert nowhere.returncode == 2 and "Traceback" not in nowhere.stderr
    assert nowhere.stderr.strip() == (
        "Error: --otlp is needed: the collector's OTLP/HTTP base URL, like http://127.0.0.1:4318 (or set ASSAY_OTLP_EXPORT, "
        "or `otlp` in the [tool.assay.export] table of the pyproject.toml here)"
    )


def test_an_endpoint_that_refuses_is_one_error_naming_it():
    _agent_like_run("agent-20261203T100001-0a1b2d")
    with receiver(status=400) as (url, _):
        done = _assay("runs", "export", "agent-20261203T100001-0a1b2d", "--otlp", url)
    assert done.returncode == 2
    assert done.stderr.startswith(f"Error: exporting agent-20261203T100001-0a1b2d to {url} failed:")
    assert len(done.stderr.strip().splitlines()) == 1


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then let go)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_endpoint_nothing_listens_on_fails_at_once_naming_the_address():
    """Not after the SDK's retries (13 s for `runs export`, ~5 s added to a run's exit): the refused connection
    is the answer."""
    _agent_like_run("agent-20261203T100001-0a1b2e")
    port = _closed_port()
    done = _assay("runs", "export", "agent-20261203T100001-0a1b2e", "--otlp", f"http://127.0.0.1:{port}")
    assert done.returncode == 2
    assert done.stderr == (f"Error: exporting agent-20261203T100001-0a1b2e to http://127.0.0.1:{port} failed: cannot "
                           f"connect to 127.0.0.1:{port} (Connection refused); is the collector running?\n")


def test_a_dead_collector_after_a_run_is_one_warning_naming_the_address(tmp_path, monkeypatch, capsys):
    port = _closed_port()
    monkeypatch.setenv("ASSAY_OTLP_EXPORT", f"http://127.0.0.1:{port}")
    result = pipeline.run(_Kind(tmp_path), None, reporters=[])
    assert result.exit_code == 1
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].endswith(f"cannot connect to 127.0.0.1:{port} (Connection refused); "
                                                        "is the collector running?")


@pytest.mark.parametrize("url, reason", [
    ("localhost:4318", "give the OTLP/HTTP endpoint's base URL, like http://127.0.0.1:4318"),
    ("http://:4318", "give the OTLP/HTTP endpoint's base URL, like http://127.0.0.1:4318"),
    # A port out of range, or a signal's own path (posted to as <url>/v1/logs, a 404), said as such.
    ("http://127.0.0.1:99999", "the port must be a number from 1 to 65535"),
    ("http://127.0.0.1:port", "the port must be a number from 1 to 65535"),
    ("http://127.0.0.1:4318/v1/traces", "give the collector's base URL (http://127.0.0.1:4318); assay adds /v1/traces and /v1/logs itself"),
    ("https://otel.example/otlp/v1/logs/", "give the collector's base URL (https://otel.example/otlp); assay adds"),
    # A query or fragment was kept, and the signals posted to `<url>?key=…/v1/logs`.
    ("http://127.0.0.1:4318?api_key=1", "give the collector's base URL without a ?query or #fragment (http://127.0.0.1:4318): "
                                        "assay adds /v1/traces and /v1/logs to it (headers such as an API key go in "
                                        "OTEL_EXPORTER_OTLP_HEADERS)"),
    ("https://otel.example/otlp/#logs", "give the collector's base URL without a ?query or #fragment (https://otel.example/otlp)"),
])
def test_a_bad_url_is_a_usage_error(url, reason):
    done = _assay("runs", "export", "latest", "--otlp", url)
    assert done.returncode == 2
    assert f"Error: --otlp '{url}': {reason}" in done.stderr


def test_an_import_is_exported_when_the_environment_names_an_endpoint(tmp_path, monkeypatch):
    """`ASSAY_OTLP_EXPORT` exports every run as it is recorded; `assay runs import` recorded its runs unexported."""
    log = tmp_path / "junit.xml"
    log.write_text('<testsuites><testsuite name="s" tests="2"><testcase classname="c" name="a"/>'
                   '<testcase classname="c" name="b"><failure message="no"/></testcase></testsuite></testsuites>')
    with receiver() as (url, received):
        done = subprocess.run([sys.executable, "-m", "assay", "runs", "import", str(log)], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "ASSAY_OTLP_EXPORT": url, "ASSAY_STORE": str(tmp_path / "s.db")})
        assert done.returncode == 0, done.stderr
        again = subprocess.run([sys.executable, "-m", "assay", "runs", "import", str(log)], capture_output=True, text=True,
                               timeout=120, env={**os.environ, "ASSAY_OTLP_EXPORT": url, "ASSAY_STORE": str(tmp_path / "s.db")})
        assert again.returncode == 0 and again.stdout.startswith("Already imported")
    assert len(received.spans) == 1 and received.spans[0]["attributes"]["assay.run.kind"] == "imported"  # not again
    assert sorted(event["attributes"]["gen_ai.evaluation.score.label"] for event in received.events) == ["failed", "passed"]


def test_ctrl_c_during_the_export_after_an_import_says_how_to_send_the_recorded_run(tmp_path):
    """The run was recorded before the export began, so the command run again said "Already imported" and sent
    nothing: Ctrl-C during the export lost it, with only "run the same command again" to go by."""
    import signal

    log = tmp_path / "junit.xml"
    log.write_text('<testsuites><testsuite name="s" tests="1"><testcase classname="c" name="a"/></testsuite></testsuites>')
    other = tmp_path / "other.xml"
    other.write_text('<testsuites><testsuite name="t" tests="1"><testcase classname="c" name="b"/></testsuite></testsuites>')
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "s.db")}
    with receiver(delay=30) as (slow, received):
        command = subprocess.Popen([sys.executable, "-m", "assay", "runs", "import", str(log), str(other)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env={**environment, "ASSAY_OTLP_EXPORT": slow})
        deadline = time.monotonic() + 30
        while not received.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert received.requests, "nothing reached the collector"
        command.send_signal(signal.SIGINT)
        _, err = command.communicate(timeout=60)
    assert command.returncode == 130, err
    said = re.search(r"Warning: run not exported to (\S+): interrupted \(Ctrl-C\); send it with: "
                     r"assay runs export (imported-\S+) --otlp (\S+)\n", err)
    assert said is not None and said[1] == said[3] == slow, err
    # the file was imported: not "Interrupted while importing …: run the same command again to finish", which then
    # says "Already imported" and sends nothing
    assert (f"Interrupted after importing {log} (its run is recorded; the warning above says how to export it): run "
            "the same command again to import the other 1 file(s)") in err, err
    assert "Interrupted while importing" not in err, err
    with receiver() as (url, received):
        done = subprocess.run([sys.executable, "-m", "assay", "runs", "export", said[2], "--otlp", url],
                              capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 0 and done.stdout.startswith(f"Exported {said[2]}"), done.stderr
    assert len(received.spans) == 1 and len(received.events) == 1


def test_export_without_the_sdk_says_how_to_install_it():
    script = ("import sys; sys.modules['opentelemetry.sdk'] = None; sys.argv = ['assay', 'runs', 'export', 'latest', "
              "'--otlp', 'http://127.0.0.1:9']; from assay.cli.app import main; main()")
    _agent_like_run("agent-20261203T100002-0a1b2e")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "exporting needs the OpenTelemetry SDK and its OTLP/HTTP exporter" in done.stderr
    assert "pip install 'assay[otel]'" in done.stderr


class _Opened:
    def __init__(self, home: Path) -> None:
        self.run_id = "r"
        self.home = home

    def worker(self) -> None:
        return None

    async def execute(self, events: Any, executor: Any) -> str:
        return "done"

    def conclude(self, outcome: Any) -> RunFinished:
        units = [UnitResult("case-a", "passed", group="suite"), UnitResult("case-b", "failed", group="suite", reason="no")]
        manifest = RunManifest(run_id=f"doc-{utc_timestamp().replace(':', '')}", kind="doc", created_at=utc_timestamp())
        return RunFinished("doc", "r", 1, outcome, build_units=lambda: units, build_manifest=lambda code: manifest,
                           home=self.home)

    def failed(self, error: Any) -> RunFinished:
        return RunFinished("doc", "r", 2, error=error)

    def interrupted(self) -> RunFinished:
        return RunFinished("doc", "r", 130, interrupted=True)

    def seal(self, finished: RunFinished) -> None:
        pass


class _Kind:
    """A kind with two units, run through the real pipeline (its record, the store and the export hook)."""

    name = "doc"

    def __init__(self, home: Path) -> None:
        self.home = home

    def open(self, request: Any, outputs: Any, resume: Any, events: Any) -> _Opened:
        return _Opened(self.home)

    def open_failed(self, request: Any, error: Any) -> RunFinished:
        return RunFinished("doc", "", 2, error=error)


def test_every_run_is_exported_when_the_environment_names_an_endpoint(tmp_path, monkeypatch):
    with receiver() as (url, received):
        monkeypatch.setenv("ASSAY_OTLP_EXPORT", url)
        result = pipeline.run(_Kind(tmp_path), None, reporters=[])
    assert result.exit_code == 1
    assert len(received.spans) == 1 and received.spans[0]["attributes"]["assay.run.kind"] == "doc"
    assert sorted(event["attributes"]["gen_ai.evaluation.score.label"] for event in received.events) == ["failed", "passed"]


def test_a_project_names_its_endpoint_in_pyproject(tmp_path, monkeypatch):
    monkeypatch.delenv("ASSAY_OTLP_EXPORT", raising=False)
    with receiver() as (url, received):
        (tmp_path / "pyproject.toml").write_text(f'[tool.assay.export]\notlp = "{url}"\n')
        pipeline.run(_Kind(tmp_path), None, reporters=[])
    assert len(received.spans) == 1 and len(received.events) == 2


@pytest.mark.parametrize("key, hint", [("otpl", " (did you mean 'otlp'?)"), ("endpoint", "")])
def test_a_misspelt_key_of_the_export_table_is_named(tmp_path, monkeypatch, key, hint):
    """Only "the table holds one key" was said, leaving the reader to find which key was wrong."""
    from assay.core.interop.export_endpoint import configured_endpoint
    from assay.errors import UsageError

    monkeypatch.delenv("ASSAY_OTLP_EXPORT", raising=False)
    (tmp_path / "pyproject.toml").write_text(f'[tool.assay.export]\n{key} = "http://127.0.0.1:4318"\n')
    with pytest.raises(UsageError) as raised:
        configured_endpoint(tmp_path)
    assert str(raised.value) == (f"{tmp_path / 'pyproject.toml'} [tool.assay.export]: unknown key '{key}'{hint}; the table "
                                 'holds one key, otlp = "http://host:4318"')


def test_a_failed_export_after_a_run_is_one_warning_and_keeps_the_exit_code(tmp_path, monkeypatch, capsys):
    with receiver(status=400) as (url, received):
        monkeypatch.setenv("ASSAY_OTLP_EXPORT", url)
        result = pipeline.run(_Kind(tmp_path), None, reporters=[])
    assert result.exit_code == 1
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("Warning: run not exported: exporting doc-")
    assert warnings[0].count(url) == 1  # named once, by what went wrong
    assert received.requests >= 1
    assert store_path().exists()


def _many_units(count: int) -> list[UnitResult]:
    return [UnitResult(f"case-{index}", "failed" if index % 7 == 0 else "passed", group=f"suite/{index % 10}",
                       reason="wrong" if index % 7 == 0 else "") for index in range(count)]


def test_a_large_run_arrives_whole_and_in_order_in_batches_of_2000():
    from assay.core.interop.otlp_export import export_run

    manifest = RunManifest(run_id="imported-20261203T100003-0a1b2f", kind="imported", created_at=utc_timestamp())
    with receiver() as (url, received):
        exported = export_run(manifest, iter(_many_units(4_500)), url)
    assert exported.events == 4_500 and received.requests == 4  # the run's span, then 2,000 + 2,000 + 500 events
    assert [event["attributes"]["assay.unit.id"] for event in received.events] == [f"case-{index}" for index in range(4_500)]
    assert sum(event["attributes"]["gen_ai.evaluation.score.label"] == "failed" for event in received.events) == 643


def test_an_event_costs_no_sdk_attribute_checks_and_no_resource_hash(monkeypatch):
    # The SDK's logger makes and checks each record's attributes (BoundedAttributes), and its exporter's
    # encoder hashed each record's resource (as JSON): the two per-event costs an export no longer pays.
    from opentelemetry.attributes import BoundedAttributes
    from opentelemetry.sdk.resources import Resource

    from assay.core.interop.otlp_export import export_run

    calls = {"attributes": 0, "hash": 0}
    checked, hashed = BoundedAttributes.__init__, Resource.__hash__

    def counting_attributes(self: Any, *arguments: Any, **options: Any) -> None:
        calls["attributes"] += 1
        checked(self, *arguments, **options)

    def counting_hash(self: Any) -> int:
        calls["hash"] += 1
        return hashed(self)

    monkeypatch.setattr(BoundedAttributes, "__init__", counting_attributes)
    monkeypatch.setattr(Resource, "__hash__", counting_hash)
    manifest = RunManifest(run_id="imported-20261203T100004-0a1b30", kind="imported", created_at=utc_timestamp())
    with receiver() as (url, received):
        export_run(manifest, iter(_many_units(3_000)), url)
    assert len(received.events) == 3_000
    assert calls["attributes"] < 50 and calls["hash"] < 10, calls


def test_the_sdks_attribute_limits_still_apply_when_the_environment_sets_them(monkeypatch):
    from assay.core.interop.otlp_export import export_run

    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "4")
    manifest = RunManifest(run_id="imported-20261203T100005-0a1b31", kind="imported", created_at=utc_timestamp())
    with receiver() as (url, received):
        export_run(manifest, iter(_many_units(3)), url)
    assert [event["attributes"]["assay.unit.id"] for event in received.events] == ["case"] * 3
    assert received.events[1]["attributes"]["gen_ai.evaluation.score.label"] == "pass"


def test_a_record_is_exported_from_its_lines_without_making_its_units_and_sends_what_its_units_would(tmp_path, monkeypatch):
    # `assay runs export` hands the record's decoded lines to the export: making each UnitResult cost
    # twice what decoding its line does. The events are the same as from the units themselves.
    from assay.core.interop.otlp_export import export_run
    from assay.core.record import iter_unit_documents, write_record

    units = [*_many_units(20), UnitResult(
        "traced", "errored", "suite/t", details="Traceback …", observed={"score": 0.25},
        detail={"evaluation": "judge", "trace": {"trace_id": "ab" * 16, "span_id": "cd" * 8}},
    )]
    manifest = RunManifest(run_id="imported-20261203T100006-0a1b32", kind="imported", created_at=utc_timestamp())
    record = write_record(tmp_path / "records", manifest, units)
    with receiver() as (url, from_units):
        export_run(manifest, iter(units), url)
    made = []
    monkeypatch.setattr(UnitResult, "from_json", classmethod(lambda cls, document: made.append(document)))
    with receiver() as (url, from_lines):
        exported = export_run(manifest, iter_unit_documents(record), url)
    assert made == [] and exported.events == 21 and exported.linked == 1
    assert from_lines.events == from_units.events and from_lines.spans == from_units.spans
    assert from_lines.events[-1]["trace_id"] == "ab" * 16
    assert from_lines.events[-1]["attributes"]["gen_ai.evaluation.score.value"] == 0.25
    assert from_lines.events[-1]["attributes"]["gen_ai.evaluation.explanation"] == "Traceback …"


def _record_of(tmp_path: Path, count: int) -> tuple[RunManifest, Path]:
    from assay.core.record import write_record

    units = [*_many_units(count), UnitResult("traced", "errored", "suite/t", details="Traceback …", observed={"score": 0.25},
                                             detail={"evaluation": "judge", "trace": {"trace_id": "ab" * 16, "span_id": "cd" * 8}})]
    manifest = RunManifest(run_id="imported-20261203T100007-0a1b33", kind="imported", created_at=utc_timestamp(),
                           success=False, duration_seconds=3.0)
    return manifest, write_record(tmp_path / "records", manifest, units)


def _sorted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(events, key=lambda event: event["attributes"]["assay.unit.id"])


def test_a_big_record_sent_by_worker_processes_arrives_as_one_process_sends_it(tmp_path):
    # Workers read their own part of the record's lines and send its events; the run's span (with every
    # worker's verdicts counted) is sent once, and the events sit in the same traces as before.
    from assay.core.interop.otlp_export import export_record

    manifest, record = _record_of(tmp_path, 4_099)
    with receiver() as (url, alone):
        one = export_record(manifest, record, url, workers=1)
    with receiver() as (url, shared):
        three = export_record(manifest, record, url, workers=3)
    assert (three.events, three.linked, three.trace_id) == (one.events, one.linked, one.trace_id) == (4_100, 1, one.trace_id)
    assert len(shared.events) == 4_100 and _sorted(shared.events) == _sorted(alone.events)
    assert shared.spans == alone.spans and len(shared.spans) == 1
    assert shared.spans[0]["attributes"]["assay.run.failed"] == 586 and shared.spans[0]["status"] == 2  # ERROR: gates failed
    assert all(resource == shared.resources[0] for resource in shared.resources)  # the span's and every worker's events'
    assert shared.resources[0]["assay.run.id"] == manifest.run_id and "service.instance.id" in shared.resources[0]


def test_a_worker_that_cannot_send_is_one_error_naming_the_endpoint(tmp_path):
    from assay.core.interop.otlp_export import ExportError, export_record

    manifest, record = _record_of(tmp_path, 50)
    with receiver(status=400) as (url, _), pytest.raises(ExportError) as raised:
        export_record(manifest, record, url, workers=2)
    assert str(raised.value).startswith(f"exporting {manifest.run_id} to {url} failed: the endpoint did not accept the export")


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_a_record_split_for_workers_holds_every_line_once(tmp_path, count):
    from assay.core.interop.otlp_export import _documents_in, _parts

    lines = tmp_path / "units.jsonl"
    documents = [{"unit_id": f"u{index}", "verdict": "passed", "text": "x" * (index * 37 % 300)} for index in range(40)]
    lines.write_text("".join(__import__("json").dumps(document) + "\n" + ("\n" if index % 9 == 0 else "")
                             for index, document in enumerate(documents)), encoding="utf-8")
    parts = _parts(lines, count)
    assert len(parts) == count and parts[0][0] == 0 and parts[-1][1] == lines.stat().st_size
    assert [document for start, end in parts for document in _documents_in(lines, start, end)] == documents
    tiny = tmp_path / "one.jsonl"
    tiny.write_text('{"unit_id": "only", "verdict": "passed"}\n', encoding="utf-8")
    assert [document for start, end in _parts(tiny, count) for document in _documents_in(tiny, start, end)] == [
        {"unit_id": "only", "verdict": "passed"}]


def test_an_export_whose_reader_leaves_after_its_line_exits_0():
    """`assay runs export RUN --otlp URL | head -1` exited 130 and said it "stopped as on Ctrl-C" after sending
    everything: the reader left once it had the one line, and the pipe's watcher interrupted the exit."""
    from reader_pipes import reader_leaves

    _agent_like_run("agent-20261203T100004-0a1b2e")
    with receiver() as (url, received):
        for _ in range(3):
            [line], code, stderr = reader_leaves([sys.executable, "-m", "assay", "runs", "export", "agent-20261203T100004-0a1b2e",
                                                  "--otlp", url], env=os.environ)
            assert line.startswith(b"Exported agent-20261203T100004-0a1b2e"), (line, stderr)
            assert code == 0 and "stopped as on Ctrl-C" not in stderr, (code, stderr)
    assert len(received.spans) == 3


@pytest.mark.parametrize("units", [3, 5_000])
def test_ctrl_c_during_an_export_to_a_slow_collector_stops_at_once(tmp_path, units):
    """The events' batch in flight was waited for on Ctrl-C: the command exited 130 only once the collector had
    answered or `--timeout` had passed (up to 600 s)."""
    import signal

    run_id = f"agent-20261203T100005-{units:06d}"
    publish_run(RunManifest(run_id=run_id, kind="agent", created_at=utc_timestamp(), title="slow"), _many_units(units))
    with receiver(delay=30) as (url, received):
        command = subprocess.Popen([sys.executable, "-m", "assay", "runs", "export", run_id, "--otlp", url, "--timeout", "60"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not received.requests and time.monotonic() < deadline:  # a batch of events is in flight
            time.sleep(0.05)
        assert received.requests, "nothing reached the collector"
        command.send_signal(signal.SIGINT)
        start = time.monotonic()
        out, err = command.communicate(timeout=60)
        took = time.monotonic() - start
    assert command.returncode == 130 and out == "" and err == "Interrupted.\n", (command.returncode, out, err)
    assert took < 5, took


def test_a_header_variable_the_sdk_cannot_read_is_refused_naming_it(tmp_path):
    """The SDK's exporters drop an `OTEL_EXPORTER_OTLP_HEADERS` entry that is not name=value, log it (key and all) on
    a line of their own, and send without it: `runs export` exited 0 having sent the run without its API key."""
    _agent_like_run("agent-20261203T100006-0a1b2e")
    with receiver() as (url, received):
        done = _assay("runs", "export", "agent-20261203T100006-0a1b2e", "--otlp", url,
                      env={"OTEL_EXPORTER_OTLP_HEADERS": "x-team=evals,api-key: s3cret"})
        assert done.returncode == 2, done.stderr
        assert done.stderr == ("Error: OTEL_EXPORTER_OTLP_HEADERS: entry 2 of 2 ('api-key') is not name=value, so it would not "
                               "be sent; give the headers as name=value pairs separated by commas, e.g. "
                               "OTEL_EXPORTER_OTLP_HEADERS='api-key=KEY,x-team=evals' (percent-encode a comma, semicolon or "
                               "quote in a value)\n")
        assert received.requests == 0
        # A signal's own variable is read as well; written right, the headers arrive with every request.
        signal = _assay("runs", "export", "agent-20261203T100006-0a1b2e", "--otlp", url,
                        env={"OTEL_EXPORTER_OTLP_LOGS_HEADERS": "s3cret"})
        assert signal.returncode == 2 and signal.stderr.startswith("Error: OTEL_EXPORTER_OTLP_LOGS_HEADERS: entry 1 of 1 is")
        assert "s3cret" not in done.stderr + signal.stderr
        good = _assay("runs", "export", "agent-20261203T100006-0a1b2e", "--otlp", url,
                      env={"OTEL_EXPORTER_OTLP_HEADERS": "x-team=evals,api-key=s3cret"})
        assert good.returncode == 0 and good.stderr == "", good.stderr
    assert received.requests == 2 and all(headers["api-key"] == "s3cret" for headers in received.headers)
    # After a run (here an import) it is the one warning, the run recorded and its exit code unchanged.
    log = tmp_path / "junit.xml"
    log.write_text('<testsuites><testsuite name="s" tests="1"><testcase classname="c" name="a"/></testsuite></testsuites>')
    with receiver() as (url, received):
        imported = _assay("runs", "import", str(log), env={"ASSAY_STORE": str(tmp_path / "s.db"), "ASSAY_OTLP_EXPORT": url,
                                                           "OTEL_EXPORTER_OTLP_HEADERS": "api-key s3cret"})
    assert imported.returncode == 0 and imported.stdout.startswith("Imported imported-"), imported.stderr
    assert imported.stderr == (f"Warning: run not exported to {url}: OTEL_EXPORTER_OTLP_HEADERS: entry 1 of 1 is not "
                               "name=value, so it would not be sent; give the headers as name=value pairs separated by "
                               "commas, e.g. OTEL_EXPORTER_OTLP_HEADERS='api-key=KEY,x-team=evals' (percent-encode a "
                               "comma, semicolon or quote in a value)\n")
    assert received.requests == 0


def test_a_url_that_does_not_parse_is_a_usage_error_not_a_traceback(tmp_path):
    """`http://[::1:4318` (a bracket left open) made urlsplit raise: `runs export --otlp` printed a traceback, and an
    import with it in ASSAY_OTLP_EXPORT recorded the run, then failed with `Error: <file>: ValueError: Invalid IPv6 URL`,
    blaming the log."""
    done = _assay("runs", "export", "latest", "--otlp", "http://[::1:4318")
    assert done.returncode == 2
    assert done.stderr == ("Error: --otlp 'http://[::1:4318' is not a URL (Invalid IPv6 URL); give the OTLP/HTTP endpoint's "
                           "base URL, like http://127.0.0.1:4318 (an IPv6 address in brackets: http://[::1]:4318)\n")
    log = tmp_path / "junit.xml"
    log.write_text('<testsuites><testsuite name="s" tests="1"><testcase classname="c" name="a"/></testsuite></testsuites>')
    imported = _assay("runs", "import", str(log), env={"ASSAY_STORE": str(tmp_path / "s.db"), "ASSAY_OTLP_EXPORT": "http://[::1:4318"})
    assert imported.returncode == 0 and imported.stdout.startswith("Imported imported-"), imported.stderr
    assert imported.stderr == ("Warning: run not exported: ASSAY_OTLP_EXPORT 'http://[::1:4318' is not a URL (Invalid IPv6 "
                               "URL); give the OTLP/HTTP endpoint's base URL, like http://127.0.0.1:4318 (an IPv6 address in "
                               "brackets: http://[::1]:4318)\n")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_damaged_line_of_a_record_stops_the_export_naming_the_file_and_the_line(tmp_path, workers):
    """A line of a run's `units.jsonl` that does not decode (a record cut short, or edited: `runs show` reads the
    index and does not tell) was a JSONDecodeError traceback from `runs export`, or "an export worker failed" with
    the exception's last line."""
    from assay.core.interop.otlp_export import ExportError, export_record
    from assay.core.record import UNITS_FILE

    manifest, record = _record_of(tmp_path, 99)
    lines = record / UNITS_FILE
    text = lines.read_bytes().splitlines(keepends=True)
    at = sum(len(line) for line in text[:80])
    lines.write_bytes(b"".join([*text[:80], b'{"unit_id": "torn", "verd\n', *text[81:]]))
    with receiver() as (url, received), pytest.raises(ExportError) as refused:
        export_record(manifest, record, url, workers=workers)
    said = str(refused.value)
    assert said.startswith(f"{lines}: the line at byte {at} is not a unit's (") and "\n" not in said, said
    assert said.endswith("line 1 column 26 (char 25)): the run's record is damaged (cut short, or edited), and the export "
                         "stopped there without the run's span. Mend or remove that line to export the run"), said
    assert received.spans == []
    lines.write_bytes(b"".join([*text[:80], b'{"unit_id": "no verdict"}\n', *text[81:]]))
    with receiver() as (url, received), pytest.raises(ExportError, match="is not a unit's \\(not a unit: no verdict\\)"):
        export_record(manifest, record, url, workers=workers)


@pytest.mark.parametrize("status, fix", [
    (401, "; the collector wants credentials: give them in OTEL_EXPORTER_OTLP_HEADERS, e.g. "
          "OTEL_EXPORTER_OTLP_HEADERS='authorization=Bearer TOKEN'\n"),
    (403, "; the collector wants credentials: give them in OTEL_EXPORTER_OTLP_HEADERS"),
    (404, " does not take OTLP/HTTP at /v1/traces and /v1/logs: give the collector's OTLP/HTTP base URL (its port is 4318 "
          "by default; 4317 is OTLP/gRPC)\n"),
    (500, "reason: Internal Server Error)\n"),  # no fix to offer: the collector's own trouble
])
def test_a_collectors_refusal_that_has_a_fix_says_it(status, fix):
    """A 401 from a collector that wants a key, or a 404 from a URL that is not its OTLP/HTTP one, said only "the endpoint
    did not accept the export (… code: 401, reason: Unauthorized …)", without what to do about it."""
    run_id = f"agent-20261203T100007-{status:06d}"
    _agent_like_run(run_id)
    with receiver(status=status) as (url, _):
        done = _assay("runs", "export", run_id, "--otlp", url)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"Error: exporting {run_id} to {url} failed: the endpoint did not "
                                  f"accept the export (Failed to export") and fix in done.stderr, done.stderr
    assert done.stderr.count("OTEL_EXPORTER_OTLP_HEADERS") == (2 if status in (401, 403) else 0)


def test_a_record_without_its_units_file_is_one_error_naming_it(tmp_path):
    """A record whose `units.jsonl` is gone (its manifest kept) was a FileNotFoundError traceback from `runs export`."""
    log = tmp_path / "junit.xml"
    log.write_text('<testsuites><testsuite name="s" tests="1"><testcase classname="c" name="a"/></testsuite></testsuites>')
    environment = {"ASSAY_STORE": str(tmp_path / "store" / "assay.db")}
    imported = _assay("runs", "import", str(log), env=environment)
    assert imported.returncode == 0, imported.stderr
    run_id = imported.stdout.split()[1].rstrip(":")
    lines = tmp_path / "store" / "records" / run_id / "units.jsonl"
    lines.unlink()
    with receiver() as (url, received):
        done = _assay("runs", "export", run_id, "--otlp", url, env=environment)
    assert done.returncode == 2
    assert done.stderr == (f"Error: {lines} cannot be read (No such file or directory): the run's record is damaged; "
                           "nothing was sent\n")
    assert received.requests == 0
