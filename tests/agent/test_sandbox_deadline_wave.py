"""A newcomer's pass over sandboxes: a command still running when the attempt's deadline came (a prepare step that
hangs, an agent's test run that never ends) was killed and left out of the command log, and the attempt's error said
only "attempt timed out after 2s", so nothing on record named what had hung. A probe of `install_tool` that still
failed printing nothing ended its error with "after installing it: ". A second Ctrl-C while a shared sandbox's
container was being removed left its record and ledger behind: the run's last sweep found the daemon already
removing the container ("removal … is already in progress"), took that for a container it could not remove, and
kept the record for `sandbox prune`. And `sandbox prune` with no Docker daemon answering said a container was not
removed, kept its record, and exited 0 (`sandbox stop` exits 2 there)."""

from __future__ import annotations

import threading
import time

import pytest
from sandbox_helpers import run_one_linked, sandbox_agent, sandbox_dir  # noqa: F401  (the fixture)

from assay.agent import Turn, define_eval, message
from assay.agent.sandbox import shell
from assay.agent.sandbox.registry import ENTRY_FILE, SandboxEntry, list_entries, write_entry
from assay.agent.sandbox.retention import destroy
from assay.cli.agent import sandbox_app
from containers import docker_containers, docker_image, provider, sandbox_template  # noqa: F401  (fixtures)


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))


def test_a_command_the_deadline_killed_is_logged_and_named_by_the_timeout(provider, sandbox_dir):
    async def send(turn_input, ctx):
        await ctx.sandbox.run_command("sh", "-c", "echo first")
        await ctx.sandbox.run_shell("echo waiting for input; echo stuck >&2; sleep 60")
        return Turn([message("never")])

    async def test(t):
        await t.send("run the tests")

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=sandbox_template(provider), timeout=2))

    assert result.error["code"] == "timeout"
    assert "`echo waiting for input; echo stuck >&2; sleep 60` was running in agent.run" in result.error["message"]
    first, hung = result.sandbox["commands"]
    assert first["command"] == "echo first" and first["exit_code"] == 0
    assert hung["command"] == "echo waiting for input; echo stuck >&2; sleep 60"
    assert hung["exit_code"] is None and hung["timed_out"] is True and hung["window"] == "turn1"
    assert hung["stdout_tail"] == "waiting for input" and hung["stderr_tail"] == "stuck"


def test_a_prepare_step_that_hangs_is_named_by_the_timeout(sandbox_dir):
    async def test(t):
        await t.send("never sent")

    template = sandbox_template("local").prepare(shell("echo one"), shell("sleep 60"))
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=template, timeout=1))

    assert result.error["code"] == "timeout"
    assert result.error["message"].endswith("(last progress: `sleep 60` was running in sandbox.prepare)")
    assert [(entry["command"], entry["phase"], entry.get("timed_out")) for entry in result.sandbox["commands"]] == [
        ("echo one", "sandbox.prepare", None), ("sleep 60", "sandbox.prepare", True)]


def test_a_probe_that_still_fails_in_silence_says_how_it_failed(sandbox_dir):
    from assay.agent.sandbox import command, install_tool

    async def test(t):
        await t.send("never sent")

    template = sandbox_template("local").prepare(
        install_tool("mytool", probe=command("test", "-x", "mytool"), install=[shell("true")]))
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=template))

    assert result.error["code"] == "sandbox-prepare-failed"
    # It ended in "installing it: " with nothing after the colon.
    assert result.error["message"].endswith("mytool is still missing after installing it: `test -x mytool` exited with 1")


def test_a_container_already_being_removed_is_waited_for_and_its_record_goes(docker_image, sandbox_dir, monkeypatch):
    # The daemon's removal of 20,000 files took over the sweep's 30 s on a loaded CI machine once: what is pinned here
    # is that the sweep waits for a removal in progress, not how long it is willing to.
    from assay.agent.sandbox import retention

    monkeypatch.setattr(retention, "REMOVAL_WAIT_SECONDS", 240.0)

    async def send(turn_input, ctx):  # files in the container's own layer: its removal takes a moment
        await ctx.sandbox.run_shell("mkdir -p /var/tmp/many && cd /var/tmp/many && seq 1 20000 | xargs touch")
        return Turn([message("done")])

    async def test(t):
        await t.send("fill the container")

    run_one_linked(sandbox_agent(send), define_eval(test, sandbox=sandbox_template("docker")), keep="all")
    (entry,) = list_entries(sandbox_dir)
    (container,) = docker_containers(entry.sandbox_id)
    # As the attempt's own stop does when a second Ctrl-C cancels it: the daemon goes on removing the container.
    remover = threading.Thread(target=container.remove, kwargs={"force": True, "v": True})
    remover.start()
    statuses = []
    while not statuses or statuses[-1] not in ("removing", "gone"):
        try:
            container.reload()
            statuses.append(container.status)
        except Exception:  # noqa: BLE001 - docker.errors.NotFound
            statuses.append("gone")
    said = destroy(entry)  # the run's last sweep (destroy_left_active), as the removal goes on
    remover.join()

    assert statuses[-1] == "removing", statuses  # else this test did not race the removal
    # (its volume may be said removed too: the other removal takes it just after the container)
    assert said.startswith(f"removed container {container.id[:12]}; ") and said.endswith(f"; removed {entry.root}"), said
    assert not (sandbox_dir / entry.sandbox_id).exists() and list_entries(sandbox_dir) == []
    assert docker_containers(entry.sandbox_id) == []


async def _start_server(sandbox, hook_ctx):  # a setup that never returns
    import asyncio

    await asyncio.sleep(60)


def test_a_setup_hook_that_hangs_is_named_by_the_timeout(sandbox_dir):
    async def test(t):
        await t.send("never sent")

    template = sandbox_template("local").setup(_start_server)
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=template, timeout=0.5))

    assert result.error["code"] == "timeout"
    assert result.error["message"].endswith(
        f"(last progress: sandbox setup _start_server ({__file__}:{_start_server.__code__.co_firstlineno}) was running)")


@pytest.mark.parametrize("force", [False, True])
def test_prune_with_no_daemon_answering_keeps_the_record_and_fails(sandbox_dir, tmp_path, monkeypatch, force):
    from typer.testing import CliRunner

    root = sandbox_dir / "9e1d5c0a7b22"
    dead = 2**22 + 7  # above any pid this machine hands out (pid_max is at most 2**22)
    write_entry(root, SandboxEntry(sandbox_id="9e1d5c0a7b22", provider="docker", state="kept" if force else "active",
                                   workdir="/workspace", root=str(root), created=time.time(), owner_pid=dead,
                                   container="5a1b2c3d4e5f" + "0" * 52, image="python:3.12"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-daemon.sock'}")

    pruned = CliRunner().invoke(sandbox_app, ["prune", *(["--force"] if force else [])], catch_exceptions=False)

    assert pruned.exit_code == 2, pruned.output  # it was 0, as if all were removed
    assert "container 5a1b2c3d4e5f not removed" in pruned.output and "no Docker daemon answers" in pruned.output
    assert f"9e1d5c0a7b22 not removed (see above); `assay agent sandbox prune{' --force' if force else ''}` tries again" \
        in pruned.output
    assert (root / ENTRY_FILE).exists()  # how the next prune finds the container
