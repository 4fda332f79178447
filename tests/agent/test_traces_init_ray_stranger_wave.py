"""A stranger's pass over traces, `assay agent init` and Ray: what a newcomer following the docs ran into."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import UsageError

TRACES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "agent" / "traces.md"
TITLED_BLOCK = re.compile(r'^```\w+ title="([^"]+)"\n(.*?)^```$', re.MULTILINE | re.DOTALL)


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store"))


@pytest.mark.parametrize("pyproject", [
    '[project]\nname = "shop"\n\n[ tool.assay ]\nname = "shop"\n',
    '[tool]\nassay = { name = "shop" }\n',
    '[project]\nname = "shop"\n\n[tool.assay.telemetry]\nport = 0\n',
])
def test_init_leaves_alone_a_pyproject_whose_tool_assay_table_is_spelt_another_way(tmp_path, pyproject):
    from assay.agent.project import load_project_config
    from assay.agent.starter import init_project

    (tmp_path / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    said = init_project(tmp_path)
    # A second [tool.assay] appended would make the file unreadable to every later command.
    assert (tmp_path / "pyproject.toml").read_text(encoding="utf-8") == pyproject
    assert "pyproject.toml" not in said[0]
    load_project_config(tmp_path)



def test_init_with_a_folder_named_pyproject_toml_writes_nothing(tmp_path):
    """It wrote the starter's folders and files, then failed `[Errno 21] Is a directory`."""
    from assay.agent.starter import init_project
    from assay.errors import ConfigError

    (tmp_path / "pyproject.toml").mkdir()
    with pytest.raises(ConfigError, match=r"pyproject.toml is a folder, not a file: move it away"):
        init_project(tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == ["pyproject.toml"]

def test_the_traces_pages_examples_pass_when_ctx_telemetry_is_none(tmp_path):
    """As on a Ray worker, or with the table switched off: the examples must not dereference a None telemetry."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the page's examples use the otel extra")
    project = tmp_path / "project"
    for name, text in TITLED_BLOCK.findall(TRACES_PAGE.read_text(encoding="utf-8")):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    with (project / "pyproject.toml").open("a", encoding="utf-8") as pyproject:
        pyproject.write("enabled = false\n")
    ran = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)], cwd=project,
                         capture_output=True, text=True, timeout=120, env={**os.environ}, check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "PASSED" in ran.stdout and "AttributeError" not in ran.stdout + ran.stderr
    assert "warning" not in ran.stdout + ran.stderr


class _RayRefusingHttp:
    """What Ray does with an http:// address: refuse it in words about RAY_ADDRESS, whoever gave it."""

    @staticmethod
    def is_initialized() -> bool:
        return False

    @staticmethod
    def init(**options):
        raise ValueError(f"Invalid Ray address: {options.get('address')!r}. It looks like you set RAY_ADDRESS to an "
                         "HTTP address (e.g. the API server address). To fix this, either: 1. Unset RAY_ADDRESS")


def test_an_http_ray_address_is_named_as_the_dashboards_not_blamed_on_ray_address(monkeypatch):
    from assay.core import ray_executor

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray_executor, "_ray", lambda: _RayRefusingHttp)
    with pytest.raises(UsageError) as refused:
        ray_executor.ensure_ray("http://127.0.0.1:8265")
    said = str(refused.value)
    assert said.startswith("--ray-address 'http://127.0.0.1:8265': ")
    assert "HTTP address" in said and "not the cluster's" in said
    assert "RAY_ADDRESS" not in said  # the person typed --ray-address


def test_a_trace_export_to_a_path_without_v1_traces_is_said_once_and_metrics_are_not(tmp_path):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the real OTLP/HTTP exporter")
    import httpx
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from assay.agent.traces.attribution import TraceHub
    from assay.agent.traces.receiver import TraceReceiver

    warnings: list[tuple[str, str]] = []
    hub = TraceHub()
    receiver = TraceReceiver(hub.ingest, warn=lambda code, message: warnings.append((code, message)))
    receiver.start()
    try:
        base = f"http://127.0.0.1:{receiver.port}"
        # An SDK that also exports metrics to the base URL it was told: not the app's tracing going astray.
        httpx.post(f"{base}/v1/metrics", content=b"", headers={"Content-Type": "application/x-protobuf"})
        assert warnings == []
        # OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as written: the base URL alone sends every export to `/`.
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=base, timeout=5)))
        provider.get_tracer("stranger").start_span("chat").end()
        provider.shutdown()
    finally:
        receiver.stop()
    assert hub.received == 0
    [(code, message)] = warnings
    assert code == "telemetry-export-refused"
    assert "(404)" in message and "POST /:" in message and "/v1/traces" in message
