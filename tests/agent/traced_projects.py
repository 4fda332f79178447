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
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

WEB_APP = Path(__file__).resolve().parent / "otel_apps" / "web_app.py"
TURN_SPANS = Path(__file__).resolve().parent / "otel_apps" / "turn_spans.py"


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
    # Its stderr is kept aside: once the run's receiver has stopped, the SDK logs retries until it is killed.
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen([sys.executable, str(WEB_APP), mode, processor], stdout=subprocess.PIPE, text=True,
                                   env=environment, stderr=errors)
        try:
            line = process.stdout.readline()
            if not line.strip().isdigit():
                errors.seek(0)
                raise RuntimeError(f"the web app did not start: {errors.read()}")
            yield f"http://127.0.0.1:{int(line)}"
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


def child_span_project(root: Path, *, telemetry: bool = True, judge_url: str | None = None) -> Path:
    """A shop whose every turn starts `otel_apps/turn_spans.py` with `ctx.telemetry.env`: a real SDK exporter
    in a child process, joined to the turn by TRACEPARENT. `orders/noisy` sends one turn of 175 spans (past
    the fold); `orders/two_turns` two small turns, and with `judge_url` a judge assertion graded there."""
    judge = f"judge={{'model': 'judge-1', 'base_url': {judge_url!r}}}" if judge_url else ""
    return write_project(root, {
        "pyproject.toml": "[tool.assay]\nconcurrency = 2\n" + ("[tool.assay.telemetry]\n" if telemetry else ""),
        "experiments/shop.py": f"""
            import asyncio
            import os
            import sys

            from assay.agent import (
                Experiment, Turn, complete_evidence_coverage, define_agent, message, tool_call, tool_result,
            )

            async def send(turn_input, ctx):
                _, order, _, noise = turn_input.text.split()
                lookup, refund = f"lookup-{{order}}", f"refund-{{order}}"
                if ctx.telemetry is not None:
                    child = await asyncio.create_subprocess_exec(
                        sys.executable, {str(TURN_SPANS)!r}, lookup, noise, env={{**os.environ, **ctx.telemetry.env}})
                    if await child.wait() != 0:
                        raise RuntimeError("turn_spans.py failed")
                return Turn([
                    tool_call(lookup, "lookup_order", {{"order_id": order}}),
                    tool_result(lookup, {{"order_id": order, "status": "shipped"}}),
                    tool_call(refund, "refund_order", {{"order_id": order}}),
                    tool_result(refund, {{"error": "refused"}}, status="failed"),
                    message(f"Order {{order}} is shipped; the refund was refused."),
                ])

            shop = Experiment(agent=define_agent(name="child-shop", send=send, evidence_coverage=complete_evidence_coverage))
        """,
        "evals/orders/noisy_eval.py": """
            from assay.agent import define_eval, includes

            @define_eval()
            async def test(t):
                await t.send("order 1001 noise 170")
                t.succeeded()
                t.called_tool("lookup_order")
                t.check(t.reply, includes("shipped"))
        """,
        "evals/orders/two_turns_eval.py": f"""
            from assay.agent import define_eval

            @define_eval({judge})
            async def test(t):
                await t.send("order 2001 noise 2")
                await t.send("order 2002 noise 2")
                t.called_tool("lookup_order")
                t.no_failed_actions()  # the refund failed: this eval fails, whatever the spans say
                {"t.judge('The reply names the order.')" if judge_url else ""}
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
