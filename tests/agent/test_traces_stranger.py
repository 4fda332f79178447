"""A misspelt `[tool.assay.telemetry] host`, found by following docs/agent/traces.md as written: the apps are
told a name this machine cannot look up, their exporters retry for tens of seconds, and the run's one
`telemetry-no-spans` warning asked to wire up the export (which was wired) instead of naming the host."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from traced_projects import write_project

SENDER = """
    from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

    async def send(turn_input, ctx):
        return Turn([message(ctx.telemetry.endpoint)])

    quiet = Experiment(agent=define_agent(name="quiet", send=send, evidence_coverage=complete_evidence_coverage))
"""

ONE_SEND = """
    from assay.agent import define_eval

    @define_eval()
    async def test(t):
        await t.send("a")
"""


def _warnings(tmp_path, host):
    project = write_project(tmp_path / "project", {
        "pyproject.toml": f'[tool.assay.telemetry]\nhost = "{host}"\n',
        "experiments/quiet.py": SENDER,
        "evals/one_eval.py": ONE_SEND,
    })
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json", "--quiet"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")})
    assert done.returncode == 0, done.stdout + done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    return [event for event in events if event.get("event") == "warning"]  # (NiceEval's key for warning lines)


def test_no_spans_with_a_host_that_does_not_resolve_names_the_host(tmp_path):
    [warning] = _warnings(tmp_path, "otel-tunnel.invalid")  # .invalid never resolves (RFC 2606)
    assert warning["code"] == "telemetry-no-spans", warning
    assert "[tool.assay.telemetry] host 'otel-tunnel.invalid' does not resolve on this machine" in warning["message"]
    assert "fix the name, or leave host out" in warning["message"]
    assert "export the app's spans to ctx.telemetry.endpoint" not in warning["message"]


def test_no_spans_with_a_host_that_resolves_still_asks_for_the_wiring(tmp_path):
    [warning] = _warnings(tmp_path, "localhost")
    assert warning["code"] == "telemetry-no-spans" and "does not resolve" not in warning["message"], warning
    assert "export the app's spans to ctx.telemetry.endpoint" in warning["message"]
