"""An interrupted Dockerfile build is cancelled in the daemon. The build ran in a thread the interrupt did not
reach: Ctrl-C cancelled the attempt, but the daemon went on building (a `RUN` step's processes still ran on
this machine), and the run's exit waited for it. Closing the build's response stream cancels it in the
daemon; these tests watch the build step's own process (found by a mark in its environment) go."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from sandbox_helpers import processes_carrying, sandbox_dir  # noqa: F401  (the fixture)

from assay.agent.sandbox.docker import DockerProvider, build_key
from assay.agent.sandbox.interface import CreateRequest
from containers import docker_image  # noqa: F401  (the fixture)

_GONE_WITHIN_SECONDS = 5.0


def _slow_dockerfile(folder, base: str) -> str:
    """A build context whose one RUN step sleeps 30 s, carrying a mark of its own; the mark."""
    folder.mkdir(parents=True, exist_ok=True)
    marker = f"ASSAY_BUILD_MARK={uuid.uuid4().hex}"  # unique: never a cache hit, and the step's process is found by it
    (folder / "Dockerfile").write_text(f"FROM {base}\nRUN {marker} sleep 30\n")
    return marker


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _tag_exists(tag: str) -> bool:
    from assay.agent.sandbox.docker import docker_client

    client = docker_client()
    try:
        client.images.get(tag)
    except Exception:  # noqa: BLE001 - ImageNotFound
        return False
    finally:
        client.close()
    return True


def test_a_cancelled_create_cancels_its_build_in_the_daemon(docker_image, tmp_path, sandbox_dir):
    context = tmp_path / "image"
    marker = _slow_dockerfile(context, docker_image)
    provider = DockerProvider(context=context)
    tag = f"assay-sandbox:{build_key(context, 'Dockerfile', {})}"

    async def body() -> float:
        creating = asyncio.ensure_future(provider.create(CreateRequest(f"docker-{uuid.uuid4().hex[:8]}")))
        deadline = time.monotonic() + 60
        while not processes_carrying(marker):
            assert not creating.done(), creating.exception()
            assert time.monotonic() < deadline, "the build's RUN step never started"
            await asyncio.sleep(0.1)
        creating.cancel()
        with pytest.raises(asyncio.CancelledError):
            await creating
        return time.monotonic()

    asyncio.run(body())
    assert _wait_for(lambda: not processes_carrying(marker), _GONE_WITHIN_SECONDS), (
        f"the build's `sleep 30` still runs {_GONE_WITHIN_SECONDS:g} s after the interrupt: {processes_carrying(marker)}")
    assert not _tag_exists(tag)


def test_ctrl_c_of_assay_agent_run_during_a_build_cancels_it(docker_image, tmp_path, sandbox_dir):
    project = tmp_path / "building"
    marker = _slow_dockerfile(project / "image", docker_image)
    files = {
        "pyproject.toml": "[tool.assay]\nname = 'building'\n",
        "experiments/builder.py": (
            "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_sandbox_agent, message\n\n"
            "async def send(turn_input, ctx):\n"
            "    return Turn([message('done')])\n\n"
            "builder = Experiment(agent=define_sandbox_agent(name='builder', send=send, "
            "evidence_coverage=complete_evidence_coverage))\n"
        ),
        "evals/build_eval.py": (
            "from assay.agent import define_eval, docker_sandbox\n\n"
            "@define_eval(sandbox=docker_sandbox(context='../image'))\n"
            "async def build(t):\n"
            "    await t.send('hi')\n"
        ),
    }
    for relative, text in files.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    environment = {**os.environ, "ASSAY_SANDBOX_DIR": str(sandbox_dir), "ASSAY_STORE": str(tmp_path / "store.db"),
                   "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment)
    try:
        started = _wait_for(lambda: bool(processes_carrying(marker)) or process.poll() is not None, 60)
        assert started and process.poll() is None, process.communicate(timeout=10)[0]
        process.send_signal(signal.SIGINT)
        assert _wait_for(lambda: not processes_carrying(marker), _GONE_WITHIN_SECONDS), (
            f"the build's `sleep 30` still runs {_GONE_WITHIN_SECONDS:g} s after Ctrl-C")
        output, _ = process.communicate(timeout=_GONE_WITHIN_SECONDS)
        assert process.returncode == 130, output
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
