"""A run stopped with Ctrl-C before its app could export a span ended with `telemetry-no-spans`, telling the user
to wire up an export that was wired: a stopped run says nothing about spans it never waited for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from traced_projects import write_project

WAITER = """
    import asyncio
    from pathlib import Path

    from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

    async def send(turn_input, ctx):
        Path("sending").write_text("yes")
        await asyncio.sleep(60)
        return Turn([message("late")])

    slow = Experiment(agent=define_agent(name="slow", send=send, evidence_coverage=complete_evidence_coverage))
"""

ONE_SEND = """
    from assay.agent import define_eval

    @define_eval()
    async def test(t):
        await t.send("a")
"""


def test_a_run_stopped_before_any_span_does_not_ask_to_wire_up_the_export(tmp_path):
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay.telemetry]\n",
        "experiments/slow.py": WAITER,
        "evals/one_eval.py": ONE_SEND,
    })
    process = subprocess.Popen([sys.executable, "-m", "assay", "agent", "run"], cwd=project, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")})
    deadline = time.monotonic() + 60
    while not (project / "sending").exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert (project / "sending").exists(), process.communicate()
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout + stderr
    assert "telemetry-no-spans" not in stdout + stderr, stdout + stderr
