"""Spans from inside a sandbox reach the attempt's waterfall: from a local sandbox (its commands reach the
run's receiver on 127.0.0.1 directly) and from a container with no network (a receiver inside the
container spools each export, and assay collects the spool after every send window).

The app is `otel_apps/turn_spans.py`: the real OpenTelemetry SDK with its OTLP/HTTP exporter (protobuf,
gzip, a batching processor), configured only by `ctx.telemetry.env`, joining each turn by TRACEPARENT.
The test image has python3 but not the SDK, and no registry is reachable to install it: the SDK modules
this environment imports are copied into an image built `FROM` the test image (a Dockerfile source,
built once per content), so nothing is installed and the exporter is the SDK's own."""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")

from sandbox_helpers import sandbox_agent, sandbox_dir  # noqa: E402,F401

from assay.agent import Experiment, Turn, define_eval, docker_sandbox, local_sandbox, message  # noqa: E402
from assay.agent.discovery import EvalEntry, ExperimentEntry  # noqa: E402
from assay.agent.plan import build_plan, link_plan  # noqa: E402
from assay.agent.run_options import RunOptions  # noqa: E402
from assay.agent.runner import AgentRun  # noqa: E402
from assay.agent.traces.config import TelemetryConfig  # noqa: E402
from assay.agent.traces.tracing import ACTIVE, RunTracing  # noqa: E402
from containers import docker_image  # noqa: E402,F401  (the fixture)
from traced_projects import TURN_SPANS  # noqa: E402

_LOADED = """
import sys
import opentelemetry.sdk.trace, opentelemetry.sdk.resources, opentelemetry.sdk.trace.export
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
import opentelemetry.trace.propagation.tracecontext
import opentelemetry.exporter.otlp.proto.common.trace_encoder
OTLPSpanExporter()
for module in list(sys.modules.values()):
    if getattr(module, "__file__", None):
        print(module.__name__, module.__file__)
"""


def _sdk_folder(target: Path) -> Path:
    """The SDK's packages as this environment has them (what `turn_spans.py` imports, whole), with their
    distributions' metadata (the SDK finds its context and resource detectors by entry points)."""
    site = Path(next(path for path in sys.path if path.endswith("site-packages")))
    listed = subprocess.run([sys.executable, "-c", _LOADED], capture_output=True, text=True, check=True).stdout
    tops: set[str] = set()
    for line in listed.splitlines():
        name, _, file = line.partition(" ")
        if Path(file).is_relative_to(site):
            parts = Path(file).relative_to(site).parts
            tops.add("/".join(parts[:2]) if parts[0] == "google" else parts[0])  # google/: only what is used
    for top in sorted(tops):
        source = site / top
        (target / top).parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target / top, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / top)
    owners = importlib.metadata.packages_distributions()
    wanted = {distribution for top in tops for distribution in owners.get(top.split("/")[0].removesuffix(".py"), [])}
    for distribution in importlib.metadata.distributions():
        folder = Path(distribution._path)  # noqa: SLF001 - the dist-info folder itself
        # A distribution found on two sys.path entries is listed twice: the first one found is the one imported.
        if distribution.metadata["Name"] in wanted and not (target / folder.name).exists():
            shutil.copytree(folder, target / folder.name, ignore=shutil.ignore_patterns("RECORD"))
    return target


def _traced_run(template, call_prefix: str, command: tuple[str, ...], extra_env: dict[str, str] | None = None):
    """One attempt of two sends, each running the SDK app in the sandbox with `ctx.telemetry.env`, in a run
    whose receiver is started as `assay agent run` starts it; returns the attempt, the receiver's port
    and the endpoints the agent was told."""
    told: list[str] = []

    async def send(turn_input, ctx):
        told.append(ctx.telemetry.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
        ran = await ctx.sandbox.run_command(*command, f"{call_prefix}-{turn_input.text}", "2",
                                            env={**ctx.telemetry.env, **(extra_env or {})})
        if not ran.ok:
            raise RuntimeError(f"the app failed: {ran.stderr}")
        return Turn([message("done")])

    async def test(t):
        await t.send("one")
        await t.send("two")

    async def body():
        warnings: list[tuple[str, str]] = []
        tracing = RunTracing(TelemetryConfig(), lambda code, text: warnings.append((code, text)))
        tracing.start()
        ACTIVE.set(tracing)
        try:
            experiment = ExperimentEntry("exp", Experiment(agent=sandbox_agent(send)))
            plan = link_plan(build_plan([experiment], {"exp": [EvalEntry("traced", define_eval(test, sandbox=template))]}))
            outcome = await AgentRun(plan, RunOptions()).run()
            await tracing.settle()
            tracing.finish(outcome.results)
            return outcome.results[0], tracing.receiver.port, warnings
        finally:
            tracing.stop()
            ACTIVE.set(None)

    attempt, port, warnings = asyncio.run(body())
    return attempt, port, told, warnings


def _assert_each_turn_has_its_spans(attempt, call_prefix):
    assert attempt.verdict == "passed", (attempt.error, attempt.diagnostics)
    turns = attempt.spans["turns"]
    assert [turn["turn"] for turn in turns] == [1, 2]
    for turn, label in zip(turns, ("one", "two")):
        names = sorted(span["name"] for span in turn["spans"])
        assert names == sorted(["invoke_agent shop", "chat small-model", "chat small-model", "execute_tool lookup_order",
                                "execute_tool refund_order", "cache.get 0", "cache.get 1"]), names
        assert {span["trace_id"] for span in turn["spans"]} == {turn["trace_id"]}  # joined by TRACEPARENT
        assert "attributed_by_window" not in turn
        tool = next(span for span in turn["spans"] if span["name"] == "execute_tool lookup_order")
        assert tool["attributes"]["gen_ai.tool.call.id"] == f"{call_prefix}-{label}"


def test_spans_from_a_local_sandbox_reach_the_waterfall(sandbox_dir):
    attempt, port, told, warnings = _traced_run(local_sandbox(), "local", (sys.executable, str(TURN_SPANS)))
    _assert_each_turn_has_its_spans(attempt, "local")
    assert told == [f"http://127.0.0.1:{port}/v1/traces"] * 2  # the run's own receiver
    assert warnings == []


def test_spans_from_a_container_without_network_reach_the_waterfall(docker_image, sandbox_dir, tmp_path):
    context = tmp_path / "otel-image"
    _sdk_folder(context / "site")
    shutil.copy2(TURN_SPANS, context / "turn_spans.py")
    (context / "Dockerfile").write_text(
        f"FROM {docker_image}\nCOPY site /opt/otel/site\nCOPY turn_spans.py /opt/otel/turn_spans.py\n"
        "ENV PYTHONPATH=/opt/otel/site\n"
    )
    attempt, port, told, warnings = _traced_run(docker_sandbox(context=context), "docker",
                                                ("python3", "/opt/otel/turn_spans.py"))
    _assert_each_turn_has_its_spans(attempt, "docker")
    assert attempt.sandbox["provider"] == "docker" and attempt.sandbox["isolation"] == "docker"
    # ctx.telemetry.env points inside the container (its own loopback), not at the run's receiver.
    assert len(set(told)) == 1 and told[0].startswith("http://127.0.0.1:") and told[0].endswith("/v1/traces")
    assert told[0] != f"http://127.0.0.1:{port}/v1/traces"
    assert warnings == [] and not [d for d in attempt.diagnostics if d["code"].startswith("telemetry")]
    assert os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") is None


def test_a_container_without_python3_is_named_as_why_no_span_arrived(docker_image, sandbox_dir, tmp_path):
    """The run's `telemetry-no-spans` warning told the user to export to ctx.telemetry.endpoint, when the reason
    was the receiver inside the sandbox, which could not start (its image has no python3)."""
    context = tmp_path / "no-python"
    context.mkdir()
    (context / "Dockerfile").write_text(f"FROM {docker_image}\nRUN rm -f /usr/bin/python3*\n")
    attempt, _, _, warnings = _traced_run(docker_sandbox(context=context), "docker", ("true",))
    assert attempt.verdict == "passed", (attempt.error, attempt.diagnostics)
    assert [d["code"] for d in attempt.diagnostics if d["code"].startswith("telemetry")] == ["telemetry-sandbox-unavailable"]
    [(code, text)] = warnings
    assert code == "telemetry-no-spans"
    assert text.startswith("no span reached this run: the OTLP receiver inside the sandbox did not start (1 time; "
                           "the OTLP receiver inside the sandbox did not start: the image has no python3 to run it)"), text
    assert "ctx.telemetry.endpoint" not in text
