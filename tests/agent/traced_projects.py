"""Agent projects for the trace tests, written to a folder, and the child web app they drive.

The agents are defined in the experiment file itself (no `agents/` package): projects of several
tests run in one process, and a package of one name would be imported once for all of them.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

WEB_APP = Path(__file__).resolve().parent / "otel_apps" / "web_app.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


@contextlib.contextmanager
def web_app(receiver_port: int, mode: str = "propagate", processor: str = "simple") -> Iterator[str]:
    """The child web app exporting to a receiver on `receiver_port`; yields its base URL."""
    environment = {**os.environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{receiver_port}/v1/traces"}
    process = subprocess.Popen([sys.executable, str(WEB_APP), mode, processor], stdout=subprocess.PIPE, text=True,
                               env=environment)
    try:
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait(10)


def web_project(root: Path, url: str, receiver_port: int, evals: int, concurrency: int) -> Path:
    """`evals` evals, each sending its own message `m<NN>` through http_agent to the web app."""
    return write_project(root, {
        "pyproject.toml": f"""
            [tool.assay]
            concurrency = {concurrency}
            [tool.assay.telemetry]
            port = {receiver_port}
        """,
        "experiments/web.py": f"""
            from assay.agent import Experiment, complete_evidence_coverage
            from assay.agent.adapters import http_agent

            web = Experiment(agent=http_agent({url!r}, evidence_coverage=complete_evidence_coverage, name="web-app"))
        """,
        "evals/many_eval.py": f"""
            from assay.agent import define_eval

            def make(message):
                async def test(t):
                    await t.send(message)
                    t.succeeded()
                return define_eval(test)

            EVALS = {{f"e{{number:02d}}": make(f"m{{number:02d}}") for number in range({evals})}}
        """,
    })


class Collected:
    """A run-event reporter keeping the warnings a run said."""

    def __init__(self) -> None:
        self.warnings: list[Any] = []

    def warning(self, event: Any) -> None:
        self.warnings.append(event)

    def codes(self) -> list[str]:
        return [event.code for event in self.warnings]


def span_messages(result: Any) -> list[str]:
    """`app.message` of every span an attempt's record kept."""
    return [
        span["attributes"].get("app.message")
        for turn in (result.spans or {}).get("turns", []) for span in turn["spans"]
    ]
