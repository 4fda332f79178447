"""The Docker provider. Without the SDK or a daemon it fails at create time with a reason (tested here
always); against a real daemon and images built on this machine (tests/containers.py: never a registry)
it runs commands, moves files, kills timed-out trees, builds a Dockerfile once and attributes changes."""

from __future__ import annotations

import asyncio
import sys
import uuid

import pytest
from sandbox_helpers import run_one_linked, sandbox_agent, sandbox_dir  # noqa: F401

from assay.agent import define_eval, docker_sandbox
from assay.agent.sandbox import SandboxError
from assay.agent.sandbox.docker import (
    DockerProvider,
    build_key,
    import_docker,
)
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest

from containers import BASE_IMAGE, daemon_problem, docker_image  # noqa: F401  (the session fixture)

PROBLEM = daemon_problem()


def test_a_missing_sdk_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(SandboxError, match=r"needs the docker SDK: pip install docker \(assay's `docker` extra\)"):
        import_docker()


@pytest.mark.skipif(PROBLEM is None, reason="a Docker daemon answers here")
def test_without_a_daemon_the_attempt_errors_at_create_time():
    async def test(t):
        await t.send("never sent")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=docker_sandbox(image=BASE_IMAGE)))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-create-failed"
    assert "no Docker daemon answers" in result.error["message"]


def test_sources_are_checked_and_the_build_key_follows_the_context(tmp_path):
    with pytest.raises(SandboxError, match="not both"):
        DockerProvider(image="a", dockerfile=tmp_path / "Dockerfile")
    with pytest.raises(SandboxError, match="absolute"):
        DockerProvider(image="a", workdir="relative")
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    first = build_key(tmp_path, "Dockerfile", {})
    assert build_key(tmp_path, "Dockerfile", {}) == first
    (tmp_path / "extra.txt").write_text("changes the build\n")
    assert build_key(tmp_path, "Dockerfile", {}) != first
    assert build_key(tmp_path, "Dockerfile", {"V": "2"}) != build_key(tmp_path, "Dockerfile", {})


def test_commands_files_and_timeouts_in_a_container(docker_image):
    async def body():
        backend = await DockerProvider(image=docker_image).create(CreateRequest(f"docker-{uuid.uuid4().hex[:8]}"))
        sandbox = Sandbox(SandboxCore(backend))
        try:
            echoed = await sandbox.run_command("sh", "-c", "echo $GREETING; pwd", env={"GREETING": "hi"})
            await sandbox.write_text("dir/note.txt", "hello\n")
            note = await sandbox.read_text("dir/note.txt")
            # A background child, and a grandchild that leaves the session and loses its parent.
            late = await sandbox.run_shell("sleep 60 & setsid sh -c 'sleep 61 & sleep 62' & sleep 60", timeout=1)
            left = await sandbox.run_shell("ps -eo args")
            return echoed, note, late, left
        finally:
            await sandbox.stop()

    echoed, note, late, left = asyncio.run(body())
    assert echoed.stdout == "hi\n/workspace\n" and note == "hello\n"
    assert late.timed_out
    assert [line for line in left.stdout.splitlines() if "sleep" in line] == [], left.stdout


def test_a_dockerfile_is_built_once(tmp_path, docker_image):
    (tmp_path / "Dockerfile").write_text(f"FROM {docker_image}\nRUN echo built > /built.txt\n")
    layer = docker_sandbox(context=tmp_path)

    async def test(t):
        t.check((await t.sandbox.read_text("/built.txt")), __import__("assay.agent", fromlist=["equals"]).equals("built\n"))

    assert run_one_linked(sandbox_agent(), define_eval(test, sandbox=layer)).verdict == "passed"
    assert run_one_linked(sandbox_agent(), define_eval(test, sandbox=layer)).verdict == "passed"
