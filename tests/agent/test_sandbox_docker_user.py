"""A `user` the image does not have (a typo: `user="nobdy"`) is one error naming the option, the value, the image
and the fix, wherever it is asked for: `docker_sandbox(user=…)` (the container's start refuses it) or a
command's `run_command(user=…)` (`docker exec -u` came back as a bare exit code 126, the daemon's words in the
command's stdout, and the eval went on as if the command had failed)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sandbox_helpers import run_one_linked, sandbox_agent, sandbox_dir  # noqa: F401  (the fixture)

from assay.agent import define_eval, docker_sandbox
from assay.agent.sandbox import SandboxError
from assay.agent.sandbox.docker import DockerProvider, build_key
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from containers import docker_image  # noqa: F401  (the fixture)


def test_a_sandbox_user_the_image_lacks_names_the_option_the_image_and_the_fix(docker_image):
    async def test(t):
        await t.send("echo hi")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=docker_sandbox(image=docker_image, user="nobdy")))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-create-failed", result.error
    assert result.error["message"] == (
        "docker sandbox could not be created: the container could not be started: "
        f"docker_sandbox(user='nobdy'): no such user in image {docker_image} "
        "(docker: unable to find user nobdy: no matching entries in passwd file); "
        "use a user the image has, or a numeric uid"), result.error["message"]


def test_a_sandbox_group_the_image_lacks_is_said_as_a_group(docker_image):
    async def test(t):
        await t.send("echo hi")

    layer = docker_sandbox(image=docker_image, user="nobody:nogrp")
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=layer))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-create-failed", result.error
    assert result.error["message"].endswith(
        f"docker_sandbox(user='nobody:nogrp'): no such group in image {docker_image} "
        "(docker: unable to find group nogrp: no matching entries in group file); "
        "use a group the image has, or a numeric gid"), result.error["message"]


def test_a_commands_user_the_image_lacks_is_an_error_not_exit_126(docker_image):
    async def body():
        backend = await DockerProvider(image=docker_image).create(CreateRequest(f"docker-{uuid.uuid4().hex[:8]}"))
        sandbox = Sandbox(SandboxCore(backend))
        try:
            with pytest.raises(SandboxError) as raised:
                await sandbox.run_command("id", "-un", user="nobdy")
            # A user the image has, and a uid it has no entry for, still run.
            named = await sandbox.run_command("id", "-un", user="nobody")
            numeric = await sandbox.run_command("id", "-u", user="4321")
            failing = await sandbox.run_shell("exit 126")  # a command's own 126 is its result, not a missing user
        finally:
            await sandbox.stop()
        return str(raised.value), named, numeric, failing

    message, named, numeric, failing = asyncio.run(body())
    assert message == (
        f"run_command(user='nobdy'): no such user in image {docker_image} "
        "(docker: unable to find user nobdy: no matching entries in passwd file); "
        "use a user the image has, or a numeric uid")
    assert (named.exit_code, named.stdout.strip()) == (0, "nobody")
    assert (numeric.exit_code, numeric.stdout.strip()) == (0, "4321")
    assert failing.exit_code == 126


def test_an_eval_whose_command_names_a_missing_user_errors_with_that_reason(docker_image):
    async def test(t):
        await t.sandbox.run_command("true", user="nobdy")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=docker_sandbox(image=docker_image)))
    assert result.verdict == "errored", result.error
    assert "run_command(user='nobdy'): no such user in image" in result.error["message"], result.error
    assert "use a user the image has, or a numeric uid" in result.error["message"]


def test_a_built_images_user_error_names_the_dockerfile(docker_image, tmp_path):
    (tmp_path / "image").mkdir()
    (tmp_path / "image" / "Dockerfile").write_text(f"FROM {docker_image}\n")

    async def test(t):
        await t.send("echo hi")

    layer = docker_sandbox(context=tmp_path / "image", user="nobdy")
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=layer))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-create-failed", result.error
    built = f"assay-sandbox:{build_key(tmp_path / 'image', 'Dockerfile', {})} built from {tmp_path / 'image' / 'Dockerfile'}"
    assert f"in image {built} (docker: unable to find user nobdy" in result.error["message"], result.error
