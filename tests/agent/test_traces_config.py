"""`[tool.assay.telemetry]` and `--telemetry-host`: the keys and their errors, a fixed port that is taken,
a receiver exposed beyond loopback (one warning), and a run that sends no turn (no warning)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys

import pytest

from assay.agent.api import run
from assay.agent.project import load_project_config, telemetry_for
from assay.agent.traces.config import TelemetryConfig
from assay.errors import ConfigError
from traced_projects import Collected, write_project


def _config(tmp_path, table, bind=None):
    (tmp_path / "pyproject.toml").write_text(table, encoding="utf-8")
    return telemetry_for(load_project_config(tmp_path), tmp_path, bind)


def test_the_table_turns_the_receiver_on_and_each_key_has_its_default(tmp_path):
    assert _config(tmp_path, "[tool.assay]\n") is None
    assert _config(tmp_path, "[tool.assay.telemetry]\n") == TelemetryConfig("127.0.0.1", 0, None, "run")
    assert _config(tmp_path, "[tool.assay.telemetry]\nenabled = false\n") is None
    assert _config(tmp_path, "[tool.assay.telemetry]\nenabled = false\n", bind="0.0.0.0").bind == "0.0.0.0"
    assert _config(tmp_path, "[tool.assay]\n", bind="0.0.0.0") == TelemetryConfig("0.0.0.0", 0, None, "run")
    fixed = _config(tmp_path, '[tool.assay.telemetry]\nport = 4318\nhost = "otel.tunnel.example"\n')
    assert (fixed.port, fixed.advertised_host) == (4318, "otel.tunnel.example")
    assert TelemetryConfig(bind="0.0.0.0").advertised_host == "127.0.0.1"  # apps are told loopback unless host says
    assert TelemetryConfig(bind="::1").advertised_host == "[::1]"


@pytest.mark.parametrize(("table", "message"), [
    ("colour = 'red'", "unknown key 'colour'; telemetry reads"),
    ("prot = 4318", "unknown key 'prot' (did you mean 'port'?)"),
    ("enabled = 'yes'", "enabled must be true or false, got 'yes'"),
    ("port = 70000", "port must be an integer in 0..65535 (0: a free port per run), got 70000"),
    ("port = true", "port must be an integer"),
    ("host = ''", "host must be a non-empty string"),
    ("scope = 'turn'", "scope must be one of run, attempt"),
    ("port = 4318\nscope = 'attempt'", 'use scope = "run"'),
])
def test_a_bad_key_is_a_config_error_naming_it(tmp_path, table, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        _config(tmp_path, "[tool.assay.telemetry]\n" + table + "\n")


SENDER = """
    from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

    async def send(turn_input, ctx):
        return Turn([message("ok")])

    quiet = Experiment(agent=define_agent(name="quiet", send=send, evidence_coverage=complete_evidence_coverage))
"""

ONE_SEND = """
    from assay.agent import define_eval

    @define_eval()
    async def test(t):
        await t.send("a")
"""


def _assay(tmp_path, *arguments):
    """`assay ARGUMENTS…` in its own process, with a store of the test's own."""
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    return subprocess.run([sys.executable, "-m", "assay", *map(str, arguments)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def test_a_fixed_port_that_is_taken_stops_the_run_before_any_attempt(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        project = write_project(tmp_path / "project", {
            "pyproject.toml": f"[tool.assay.telemetry]\nport = {port}\n",
            "experiments/quiet.py": SENDER,
            "evals/one_eval.py": ONE_SEND,
        })
        results = run(project, record=False)
    finally:
        taken.close()
    assert results.exit_code == 2 and "the port is in use" in results.error and results.attempts == ()
    # Named where it was set: the project's file and table, with the value (the message named the table alone).
    assert f"({project / 'pyproject.toml'} [tool.assay.telemetry] port = {port})" in results.error, results.error


def test_a_run_that_sends_no_turn_expects_no_span_and_says_nothing(tmp_path):
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay.telemetry]\n",
        "experiments/quiet.py": SENDER,
        "evals/none_eval.py": """
            from assay.agent import define_eval

            @define_eval()
            async def test(t):
                t.skip("nothing to ask today")
        """,
    })
    collected = Collected()
    results = run(project, reporters=[collected], record=False)
    assert results.exit_code == 0 and collected.codes() == []


def test_telemetry_host_binds_there_warns_once_and_still_tells_apps_loopback(tmp_path):
    # The agent posts an OTLP JSON export itself, to whatever endpoint it is told.
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/poster.py": """
            import httpx

            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            async def send(turn_input, ctx):
                _, trace_id, parent, _ = ctx.telemetry.traceparent.split("-")
                span = {"traceId": trace_id, "spanId": "00f067aa0ba902b7", "parentSpanId": parent, "name": "chat",
                        "startTimeUnixNano": "1", "endTimeUnixNano": "2",
                        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}
                async with httpx.AsyncClient() as client:
                    reply = await client.post(ctx.telemetry.endpoint,
                                              json={"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
                assert reply.status_code == 200 and reply.json() == {}
                return Turn([message(ctx.telemetry.endpoint)])

            poster = Experiment(agent=define_agent(name="poster", send=send, evidence_coverage=complete_evidence_coverage))
        """,
        "evals/one_eval.py": ONE_SEND,
    })
    done = _assay(tmp_path, "agent", "run", "--project", project, "--telemetry-host", "0.0.0.0")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    warnings = [line for line in output.splitlines() if line.startswith("warning")]
    assert len(warnings) == 1 and warnings[0].startswith("warning [telemetry-exposed]: the OTLP trace receiver listens on 0.0.0.0:")
    assert "without authentication" in warnings[0]
    shown = _assay(tmp_path, "agent", "show", "--json", "--project", project)
    [attempt] = json.loads(shown.stdout)["attempts"]
    told = attempt["turns"][0]["events"][0]["text"]
    assert told.startswith("http://127.0.0.1:") and told.endswith("/v1/traces")
    [turn] = attempt["spans"]["turns"]
    assert [span["name"] for span in turn["spans"]] == ["chat"]


@pytest.mark.parametrize(("host", "message"), [
    ("http://127.0.0.1", "host 'http://127.0.0.1' is a URL, not a host; give the host name alone, like host = \"127.0.0.1\""),
    ("127.0.0.1:4318", "host '127.0.0.1:4318' holds a port; the receiver's port is `port`"),
    ("my host", "host 'my host' is not a host name or an IP address"),
    ("otel.example/v1", "host 'otel.example/v1' is not a host name or an IP address"),
])
def test_a_host_that_would_break_the_endpoint_apps_are_told_is_a_config_error(tmp_path, host, message):
    # Apps are told http://HOST:PORT/v1/traces: with a URL there, the SDK kept retrying a host named "http".
    with pytest.raises(ConfigError, match=re.escape(message)):
        _config(tmp_path, f'[tool.assay.telemetry]\nhost = "{host}"\n')


def test_an_ipv6_host_is_put_in_brackets_in_the_endpoint(tmp_path):
    assert _config(tmp_path, '[tool.assay.telemetry]\nhost = "::1"\n').advertised_host == "[::1]"
    assert _config(tmp_path, '[tool.assay.telemetry]\nhost = "[::1]"\n').advertised_host == "[::1]"
    assert _config(tmp_path, "[tool.assay]\n", bind="[::1]").bind == "::1"


def test_a_misspelt_scope_is_named_with_the_one_meant(tmp_path):
    with pytest.raises(ConfigError, match=re.escape("scope must be one of run, attempt, got 'attmpt' (did you mean 'attempt'?)")):
        _config(tmp_path, '[tool.assay.telemetry]\nscope = "attmpt"\n')


@pytest.mark.parametrize(("bind", "message"), [
    ("http://0.0.0.0", "--telemetry-host http://0.0.0.0 is a URL, not a host; give the address alone, like 127.0.0.1"),
    ("0.0.0.0:4318", "--telemetry-host 0.0.0.0:4318 holds a port; the port is [tool.assay.telemetry] port"),
])
def test_a_telemetry_host_that_is_no_address_is_a_usage_error_naming_the_option(tmp_path, bind, message):
    from assay.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        _config(tmp_path, "[tool.assay]\n", bind=bind)
    assert caught.value.option == "--telemetry-host"


@pytest.mark.parametrize("bind", ["nosuchhost.invalid", "192.0.2.1"])  # a name that does not resolve; not our address
def test_a_telemetry_host_that_cannot_be_bound_says_so_without_a_made_up_port(tmp_path, bind):
    # Nothing is set up: the run stops before its first attempt, exit 2, naming the option (the message named the
    # address alone, and neither where it came from nor what to give instead).
    project = write_project(tmp_path / "project", {"pyproject.toml": "[tool.assay]\n", "experiments/quiet.py": SENDER,
                                                   "evals/one_eval.py": ONE_SEND})
    done = _assay(tmp_path, "agent", "run", "--project", project, "--telemetry-host", bind)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot listen on {bind} (--telemetry-host): " in done.stderr and f"{bind}:0" not in done.stderr
    assert done.stderr.rstrip().endswith("give an address of this machine, like 127.0.0.1 (the default) or 0.0.0.0 "
                                         "(every interface)"), done.stderr
    assert "Traceback" not in done.stderr
