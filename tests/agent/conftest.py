"""Helpers for agent tests: scripted agents and running one eval in-process."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from servers.fake_openai import fake_openai  # noqa: E402,F401  (the shared fake OpenAI-compatible server)


EXAMPLE = HERE.parent.parent / "examples" / "agent"


@pytest.fixture
def project(tmp_path):
    """A private copy of the bundled agent example (examples/agent), without its run history."""
    target = tmp_path / "demo"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    return target


@pytest.fixture
def hub_and_receiver():
    """A trace hub and an OTLP receiver feeding it, on a free loopback port (stopped after the test)."""
    from assay.agent.traces.attribution import TraceHub
    from assay.agent.traces.receiver import TraceReceiver

    hub = TraceHub()
    receiver = TraceReceiver(hub.ingest)
    receiver.start()
    yield hub, receiver
    receiver.stop()
