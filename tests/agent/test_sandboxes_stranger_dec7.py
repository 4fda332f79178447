"""What a stranger running coding agents in sandboxes for the first time ran into (Dec 7)."""

from __future__ import annotations

import asyncio

import pytest
from containers import BASE_IMAGE, docker_containers, docker_image  # noqa: F401  (the fixture)
from sandbox_helpers import no_sandbox_left, run_one_linked, sandbox_agent, sandbox_dir  # noqa: F401

from typer.testing import CliRunner

from assay.agent import Turn, define_eval, docker_sandbox, local_sandbox, message
from assay.agent.sandbox import SandboxError, lifecycle
from assay.cli.agent import sandbox_app


def test_a_teardown_that_hangs_is_named_with_its_time_limit_not_an_empty_timeout(sandbox_dir, monkeypatch):
    # It was `sandbox teardown failed: TimeoutError: ` — no hook, no reason: the author could not tell which
    # of their teardowns hung, nor that assay had stopped waiting for it.
    monkeypatch.setattr(lifecycle, "TEARDOWN_SECONDS", 0.5)

    async def release_the_port(sandbox, hook_ctx):
        await asyncio.sleep(30)

    async def test(t):
        await t.send("hi")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=local_sandbox().teardown(release_the_port)))
    assert result.verdict == "passed"
    [note] = result.diagnostics
    assert note["code"] == "sandbox-teardown-failed" and note["phase"] == "sandbox.teardown"
    message = note["message"]
    assert "release_the_port" in message and "test_sandboxes_stranger_dec7.py:" in message, message
    assert "did not finish within 0.5s" in message, message
    assert no_sandbox_left(sandbox_dir)


def test_a_failing_teardown_names_the_hook_that_failed(sandbox_dir):
    def drop_the_table(sandbox, hook_ctx):
        raise OSError("the table is locked")

    async def test(t):
        await t.send("hi")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=local_sandbox().teardown(drop_the_table)))
    [note] = result.diagnostics
    assert "drop_the_table (" in note["message"] and "OSError: the table is locked" in note["message"], note


def test_a_teardown_raising_its_own_timeout_is_not_taken_for_the_time_limit(sandbox_dir):
    async def wait_for_the_queue(sandbox, hook_ctx):
        await asyncio.wait_for(asyncio.sleep(30), 0.05)  # its own short wait, long before the teardown's limit

    async def test(t):
        await t.send("hi")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=local_sandbox().teardown(wait_for_the_queue)))
    [note] = result.diagnostics
    assert "wait_for_the_queue (" in note["message"] and "failed: TimeoutError" in note["message"], note
    assert "did not finish within" not in note["message"], note


def test_a_user_that_is_neither_a_name_nor_a_uid_is_refused_when_the_file_is_loaded():
    for wrong in (["app"], True, -1, "", " app"):
        with pytest.raises(SandboxError, match=r"docker_sandbox user is a user name the image has or a numeric uid"):
            docker_sandbox(image=BASE_IMAGE, user=wrong)


def test_a_numeric_uid_given_as_a_number_runs_as_that_uid_in_a_container(docker_image, sandbox_dir):
    # The docs say "a numeric uid"; `user=1000` failed every attempt at create time with "'int' object has no
    # attribute 'split'", and `run_command(..., user=1000)` with the daemon's "cannot unmarshal number".
    seen: dict[str, object] = {}

    async def test(t):
        seen["template"] = (await t.sandbox.run_command("id", "-u")).stdout.strip()
        seen["command"] = (await t.sandbox.run_command("id", "-u", user=1001)).stdout.strip()
        try:
            await t.sandbox.run_command("id", user=["root"])
        except SandboxError as error:
            seen["refused"] = str(error)
        await t.send("hi")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=docker_sandbox(image=docker_image, user=1000)))
    assert result.verdict == "passed", result.error
    assert seen["template"] == "1000" and seen["command"] == "1001", seen
    assert "run_command user is a user name the image has or a numeric uid" in str(seen["refused"]), seen
    assert not docker_containers(root=sandbox_dir) and no_sandbox_left(sandbox_dir)


def test_a_workdir_at_the_containers_root_is_refused_when_the_file_is_loaded():
    # Docker cannot mount the workspace over `/`: every attempt failed at create time in the daemon's words.
    for root in ("/", "/workspace/..", "//"):
        with pytest.raises(SandboxError, match=r"docker_sandbox workdir cannot be the container's root /"):
            docker_sandbox(image=BASE_IMAGE, workdir=root)


def test_a_workdir_with_dots_is_the_folder_it_names(docker_image, sandbox_dir):
    # `workdir="/workspace/../srv"` was kept as written: the container's folder was /srv, but every command's
    # cwd was the unnormalised path, and the eval's first command failed with "is not a folder in the sandbox".
    seen: dict[str, str] = {}

    async def test(t):
        seen["pwd"] = (await t.sandbox.run_command("pwd")).stdout.strip()
        await t.sandbox.write_text("note.txt", "here")
        seen["read"] = (await t.sandbox.run_command("cat", "/srv/note.txt")).stdout
        seen["workdir"] = t.sandbox.workdir
        await t.send("hi")

    layer = docker_sandbox(image=docker_image, workdir="/workspace/../srv/")
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=layer))
    assert result.verdict == "passed", result.error
    assert seen == {"pwd": "/srv", "read": "here", "workdir": "/srv"}, seen
    assert not docker_containers(root=sandbox_dir) and no_sandbox_left(sandbox_dir)


def test_diff_of_the_after_window_with_nothing_changed_is_headed_like_every_window(sandbox_dir):
    # `--window after` on a sandbox nobody touched since its run said a bare "(no changes)", unheaded, while
    # `--window turn1` says "== turn1 ==" first; with --path it did not say which path had no changes either.
    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("calc.py", "fixed\n")
        return Turn([message("ok")])

    async def test(t):
        await t.send("fix it")

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=local_sandbox()), keep="all")
    sandbox_id = result.sandbox["sandbox_id"]

    def diff(*args: str) -> str:
        done = CliRunner().invoke(sandbox_app, ["diff", sandbox_id, *args], catch_exceptions=False)
        assert done.exit_code == 0, done.output
        return done.output

    assert diff("--window", "after") == "== after ==\n(no changes)\n"
    assert diff("--window", "after", "--path", "calc.py") == "== after ==\n(no changes to calc.py)\n"
    assert diff("--window", "turn1").startswith("== turn1 ==\ndiff --git a/calc.py b/calc.py")
    CliRunner().invoke(sandbox_app, ["stop", sandbox_id], catch_exceptions=False)
    assert no_sandbox_left(sandbox_dir)
