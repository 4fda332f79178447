"""A second newcomer's pass over sandboxes, following docs/agent/sandboxes.md as written: `sandbox stop` with no
Docker daemon answering said "not removed" yet exited 0 and deleted the record, leaving a container no command
listed; `sandbox enter` of a kept container whose workspace folder was removed by hand was a traceback (and
`diff` a daemon's mount error); a folder missing in a container was said to be missing as "exiting now" (tar's
summary line); `docker_sandbox(workdir=None)` was a bare TypeError; `sandbox prune` after a `kill -9` left the
run's cache of packed uploads behind; a teardown written `def teardown(sandbox)` never ran, in any attempt, with
only a warning in `assay agent show` to say so."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from sandbox_helpers import run_linked, run_one_linked, sandbox_agent, sandbox_dir  # noqa: F401  (the fixture)
from typer.testing import CliRunner

from assay.agent import Turn, define_eval, docker_sandbox, local_sandbox, message
from assay.agent.sandbox import SandboxError
from assay.agent.sandbox.registry import ENTRY_FILE, SandboxEntry, list_entries, write_entry
from assay.cli.agent import sandbox_app
from assay.errors import ConfigError
from containers import docker_containers, docker_image, provider, sandbox_template  # noqa: F401  (fixtures)


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))


def invoke(*args: str):
    return CliRunner().invoke(sandbox_app, list(args), catch_exceptions=False)


def test_stop_with_no_daemon_answering_keeps_the_record_and_fails(sandbox_dir, tmp_path, monkeypatch):
    root = sandbox_dir / "d0c4e7a1b2c3"
    write_entry(root, SandboxEntry(sandbox_id="d0c4e7a1b2c3", provider="docker", state="kept", workdir="/workspace",
                                   root=str(root), created=time.time(), container="0966731665b9" + "0" * 52,
                                   image="python:3.12"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-daemon.sock'}")

    stopped = invoke("stop", "d0c4")

    assert stopped.exit_code == 2, stopped.output
    assert "container 0966731665b9 not removed" in stopped.output and "no Docker daemon answers" in stopped.output
    assert "d0c4e7a1b2c3 not stopped" in stopped.output
    # The record is how `stop` finds the container once the daemon answers: it stays.
    assert (root / ENTRY_FILE).exists() and [entry.sandbox_id for entry in list_entries(sandbox_dir)] == ["d0c4e7a1b2c3"]


def test_a_kept_container_whose_workspace_folder_was_removed_is_one_error_saying_how_to_forget_it(docker_image,
                                                                                                  sandbox_dir):
    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("note.txt", "written\n")
        return Turn([message("done")])

    async def test(t):
        await t.send("write a note")

    outcome = run_linked(sandbox_agent(send), {"e": define_eval(test, sandbox=sandbox_template("docker"))}, keep="all")
    sandbox_id = outcome.results[0].sandbox["sandbox_id"]
    (entry,) = list_entries(sandbox_dir)
    assert entry.workspace, "the workdir is a host folder when the daemon is on this machine"
    docker_containers(sandbox_id)[0].stop(timeout=1)  # as a first `sandbox enter` leaves it: enter starts it again
    os.rename(entry.workspace, f"{entry.workspace}.moved")  # as `rm -rf` by hand; a rename needs no root
    try:
        said = f"sandbox {sandbox_id} has no workdir any more ({entry.workspace}); `assay agent sandbox stop {sandbox_id}`"
        for command in (["enter", sandbox_id], ["diff", sandbox_id]):
            refused = CliRunner().invoke(sandbox_app, command, input="ls\n", catch_exceptions=False)
            assert refused.exit_code == 2 and said in refused.output, refused.output  # enter: docker's APIError
    finally:
        assert invoke("stop", sandbox_id).exit_code == 0
    assert docker_containers(sandbox_id) == []


def test_a_folder_missing_in_the_sandbox_is_said_to_be_missing_by_both_providers(provider, sandbox_dir, tmp_path):
    said: list[str] = []

    async def send(turn_input, ctx):
        try:
            await ctx.sandbox.download_directory("no-such-folder", tmp_path / "back")
        except SandboxError as error:
            said.append(str(error))
        return Turn([message("done")])

    async def test(t):
        await t.send("download it")

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=sandbox_template(provider)))

    assert result.verdict == "passed", result
    assert len(said) == 1 and said[0].endswith("No such file or directory"), said  # was "…: exiting now" in Docker


@pytest.mark.parametrize("workdir", [None, "workspace"])
def test_a_docker_workdir_that_is_no_absolute_path_names_the_value_and_the_form(workdir):
    with pytest.raises(SandboxError) as refused:
        docker_sandbox(image="python:3.12", workdir=workdir)

    assert str(refused.value) == ('docker_sandbox workdir must be an absolute path in the container, like '
                                  f'workdir="/workspace"; got {workdir!r}')


def test_prune_removes_the_upload_cache_a_killed_run_left(sandbox_dir):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    cache = sandbox_dir / f".ledger-packs-{gone.stdout.strip()}"
    (cache / "0123456789abcdef" / "objects" / "pack").mkdir(parents=True)
    (cache / "0123456789abcdef" / "objects" / "pack" / "pack-1.pack").write_bytes(b"PACK")
    alive = sandbox_dir / f".ledger-packs-{os.getpid()}"  # this process's own: still in use
    alive.mkdir()

    pruned = invoke("prune")

    assert pruned.exit_code == 0, pruned.output
    assert pruned.output == f"removed {cache}, the upload cache of a run that is gone\n"
    assert not cache.exists() and alive.is_dir()


def test_a_hook_that_cannot_take_the_sandbox_and_its_context_is_refused_when_the_file_loads():
    async def teardown(sandbox):  # the hook_ctx left out: called (sandbox, hook_ctx), it failed in every attempt
        await sandbox.run_command("rm", "-rf", "/tmp/cache")

    with pytest.raises(ConfigError) as refused:
        local_sandbox().teardown(teardown)
    assert str(refused.value) == ("teardown takes a function (sandbox, hook_ctx), but teardown(sandbox) cannot be called "
                                  "with both; write it as def teardown(sandbox, hook_ctx)")
    with pytest.raises(ConfigError, match=r"setup takes a function \(sandbox, hook_ctx\), but <lambda>\(\)"):
        local_sandbox().setup(lambda: None)
    local_sandbox().setup(lambda sandbox, hook_ctx: None).teardown(lambda *arguments: None)  # these can


def test_list_with_the_sandbox_folder_setting_naming_a_file_says_so(tmp_path):
    """`ASSAY_SANDBOX_DIR=<a file> assay agent sandbox list` said "No sandboxes under <file>." (a run refuses it)."""
    import os
    import subprocess
    import sys

    blocker = tmp_path / "notes"
    blocker.write_text("mine\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "sandbox", "list"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env={**os.environ, "ASSAY_SANDBOX_DIR": str(blocker),
                                                         "ASSAY_STORE": str(tmp_path / "store" / "assay.db")})
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{blocker} is a file, not the folder sandboxes are recorded in (ASSAY_SANDBOX_DIR is {blocker}" in done.stderr
    assert blocker.read_text(encoding="utf-8") == "mine\n"
