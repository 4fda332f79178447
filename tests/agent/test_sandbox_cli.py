"""`assay agent sandbox list | diff | stop | prune` over sandboxes kept by a real run (and an orphan whose
run died with a process still running), local and Docker; a container is removed when `assay agent run`
is interrupted (Ctrl-C), and by `prune` after a kill -9 of it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from sandbox_helpers import no_sandbox_left, processes_carrying, run_linked, sandbox_agent, sandbox_dir  # noqa: F401
from typer.testing import CliRunner

from assay.agent import Turn, define_eval, local_sandbox, message
from assay.agent.sandbox.registry import SandboxEntry, list_entries, write_entry
from assay.cli.agent import sandbox_app
from containers import BASE_IMAGE, docker_containers, docker_image, sandbox_template  # noqa: F401  (fixture)


def invoke(*args: str):
    return CliRunner().invoke(sandbox_app, list(args), catch_exceptions=False)


def _keep_two_sandboxes():
    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("greeting.txt", f"{turn_input.text}\n")
        return Turn([message("ok")])

    async def test(t):
        await t.sandbox.write_text("greeting.txt", "hello\n")
        await t.send("hello world")
        await t.send("goodbye")

    return run_linked(sandbox_agent(send), {"a": define_eval(test, sandbox=local_sandbox()),
                                            "b": define_eval(test, sandbox=local_sandbox())}, keep="all")


def test_list_diff_and_stop_kept_sandboxes(sandbox_dir):
    outcome = _keep_two_sandboxes()
    ids = [result.sandbox["sandbox_id"] for result in outcome.results]
    listing = invoke("list")
    assert listing.exit_code == 0 and all(sandbox_id in listing.output for sandbox_id in ids)
    assert "kept" in listing.output and "exp/a passed" in listing.output
    rows = [json.loads(line) for line in invoke("list", "--json").output.splitlines()]
    assert {row["status"] for row in rows} == {"kept"}

    diff = invoke("diff", ids[0])
    assert diff.exit_code == 0
    assert "== turn1 ==" in diff.output and "-hello\n+hello world" in diff.output
    assert "== turn2 ==" in diff.output and "+goodbye" in diff.output
    one = invoke("diff", ids[0][:6], "--window", "turn2", "--path", "greeting.txt")
    assert "turn1" not in one.output and "+goodbye" in one.output
    misspelt = invoke("diff", ids[0][:6], "--window", "turn2", "--path", "greting.txt")  # said only "(no changes)"
    assert misspelt.output == "== turn2 ==\n(no changes to greting.txt; changed: greeting.txt)\n", misspelt.output
    unknown = invoke("diff", ids[0], "--window", "turn9")
    assert unknown.exit_code == 2 and "windows: turn1, turn2" in unknown.output

    stopped = invoke("stop", ids[0])
    assert stopped.exit_code == 0 and len(list_entries(sandbox_dir)) == 1
    # a kept sandbox's processes ended with its attempt: it said "killed its processes" all the same
    assert "no process of it was left; removed" in stopped.output and "killed" not in stopped.output, stopped.output
    assert invoke("stop", "--all").exit_code == 0
    assert list_entries(sandbox_dir) == [] and list(sandbox_dir.iterdir()) == []
    assert invoke("diff", "nope").exit_code == 2
    # Neither ids nor --all said "(not both)".
    neither = invoke("stop")
    assert neither.exit_code == 2 and "give the ids of the sandboxes to stop" in neither.output, neither.output
    both = invoke("stop", "abc", "--all")
    assert both.exit_code == 2 and "give sandbox ids or --all, not both" in both.output, both.output


def test_a_misspelt_window_path_or_id_prefix_is_one_error_saying_what_was_meant(sandbox_dir):
    """`--window trun1` named the windows but not the one meant; `--path` outside the workdir printed the first
    window's heading and then git's own fatal error; a misspelt prefix ('2c9e' for '2c9d…') was close to no id."""
    outcome = _keep_two_sandboxes()
    first, second = (result.sandbox for result in outcome.results)
    window = invoke("diff", first["sandbox_id"], "--window", "trun2")
    assert window.exit_code == 2 and "no window 'trun2'; did you mean 'turn2'?" in window.output, window.output
    for outside in ("/etc/passwd", "../ledger", f"{first['workdir']}/../home/x"):
        refused = invoke("diff", first["sandbox_id"], "--path", outside)
        assert refused.exit_code == 2 and refused.output.startswith("Error: "), refused.output
        assert f"--path {outside} is outside the workdir of sandbox {first['sandbox_id']}" in refused.output
        assert "git" not in refused.output and "==" not in refused.output
    absolute = invoke("diff", first["sandbox_id"], "--window", "turn2", "--path", f"{first['workdir']}/greeting.txt")
    assert absolute.exit_code == 0 and "+goodbye" in absolute.output, absolute.output
    assert invoke("stop", "--all").exit_code == 0
    for name in ("2c9dc35072e1", "77aa00bb11cc"):
        root = sandbox_dir / name
        (root / "workspace").mkdir(parents=True)
        write_entry(root, SandboxEntry(sandbox_id=name, provider="local", state="kept", workdir=str(root / "workspace"),
                                       root=str(root), owner_pid=0, created=time.time()))
    unknown = invoke("diff", "2c9e")
    assert unknown.exit_code == 2 and "'2c9e'; did you mean '2c9dc35072e1'?" in unknown.output, unknown.output
    assert invoke("stop", "--all").exit_code == 0

def test_list_orphans_with_none_orphaned_does_not_deny_the_kept_ones(sandbox_dir):
    """`sandbox list --orphans` said "No sandboxes under …" while two kept sandboxes were there."""
    assert invoke("list", "--orphans").output == f"No orphaned sandboxes under {sandbox_dir}.\n"
    _keep_two_sandboxes()
    orphans = invoke("list", "--orphans")
    assert orphans.exit_code == 0
    assert orphans.output == (f"No orphaned sandboxes under {sandbox_dir} (2 other: `assay agent sandbox list` "
                              "shows them).\n"), orphans.output
    assert invoke("list", "--orphans", "--json").output == ""
    assert invoke("stop", "--all").exit_code == 0


def test_a_sandbox_named_twice_is_stopped_once(sandbox_dir):
    """`sandbox stop ID ID` (or an id and a prefix of it) said it removed the sandbox twice."""
    first, second = (result.sandbox["sandbox_id"] for result in _keep_two_sandboxes().results)
    stopped = invoke("stop", first, first[:6], second)
    assert stopped.exit_code == 0
    assert [line.split(":")[0] for line in stopped.output.splitlines()] == [first, second], stopped.output
    assert list_entries(sandbox_dir) == []


def test_a_kept_sandbox_whose_workdir_was_removed_is_one_error_saying_how_to_forget_it(sandbox_dir):
    """`sandbox diff` printed a FileNotFoundError traceback (exit 1) when the workdir was removed by hand."""
    import shutil

    first = _keep_two_sandboxes().results[0].sandbox
    shutil.rmtree(first["workdir"])
    said = (f"Error: sandbox {first['sandbox_id']} has no workdir any more ({first['workdir']}); "
            f"`assay agent sandbox stop {first['sandbox_id']}` forgets it\n")
    for args in (("diff", first["sandbox_id"]), ("enter", first["sandbox_id"])):
        refused = invoke(*args)
        assert (refused.exit_code, refused.output) == (2, said), refused.output
    assert invoke("stop", "--all").exit_code == 0 and list_entries(sandbox_dir) == []


def test_a_sandbox_kept_under_a_base_dir_of_its_own_is_listed_diffed_and_stopped(sandbox_dir, tmp_path):
    """`local_sandbox(base_dir=...)` with --keep-sandbox kept the sandbox where `sandbox list` never looked: it
    said "No sandboxes under …", and diff, enter and stop could not find the id."""

    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("notes.txt", "written by the agent\n")
        return Turn([message("ok")])

    async def test(t):
        await t.send("write a note")

    own = tmp_path / "own-base"
    kept = run_linked(sandbox_agent(send), {"a": define_eval(test, sandbox=local_sandbox(base_dir=own))}, keep="all")
    sandbox_id = kept.results[0].sandbox["sandbox_id"]
    assert (own / sandbox_id / "workspace" / "notes.txt").is_file()
    listing = invoke("list")
    assert listing.exit_code == 0 and sandbox_id in listing.output and str(own) in listing.output, listing.output
    diff = invoke("diff", sandbox_id[:6])
    assert diff.exit_code == 0 and "+written by the agent" in diff.output, diff.output
    stopped = invoke("stop", sandbox_id)
    assert stopped.exit_code == 0 and f"removed {own / sandbox_id}" in stopped.output, stopped.output
    assert not (own / sandbox_id).exists() and no_sandbox_left(sandbox_dir)
    assert invoke("list").output.startswith("No sandboxes")
    # One that is not kept leaves neither its folder nor a link behind.
    run_linked(sandbox_agent(send), {"a": define_eval(test, sandbox=local_sandbox(base_dir=own))})
    assert list(own.iterdir()) == [] and no_sandbox_left(sandbox_dir)
    # A link whose sandbox folder was removed outside assay goes with the next prune.
    (sandbox_dir / "gone-1").symlink_to(own / "gone-1", target_is_directory=True)
    assert invoke("prune").exit_code == 0 and no_sandbox_left(sandbox_dir)


def test_prune_removes_what_a_dead_run_left_behind(sandbox_dir):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    root = sandbox_dir / "orphan-1"
    (root / "workspace").mkdir(parents=True)
    write_entry(root, SandboxEntry(
        sandbox_id="orphan-1", provider="local", state="active", workdir=str(root / "workspace"), root=str(root),
        owner_pid=dead.pid, labels={"experiment": "exp", "eval": "lost"},
    ))
    straggler = subprocess.Popen(["sleep", "60"], env={**os.environ, "ASSAY_SANDBOX": "orphan-1"})
    try:
        assert "orphaned" in invoke("list", "--orphans").output
        pruned = invoke("prune")
        assert pruned.exit_code == 0 and "orphan-1 (orphaned)" in pruned.output
        straggler.wait(timeout=5)
        assert processes_carrying("ASSAY_SANDBOX=orphan-1") == [] and not root.exists()
        assert invoke("prune").output.strip() == "Nothing to prune."
    finally:
        straggler.kill()


# -- containers: the same commands see Docker sandboxes; Ctrl-C and kill -9 of `assay agent run` -----------

def test_kept_containers_are_listed_diffed_and_stopped(docker_image, sandbox_dir):
    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("greeting.txt", f"{turn_input.text}\n")
        return Turn([message("ok")])

    async def test(t):
        await t.sandbox.write_text("greeting.txt", "hello\n")
        await t.send("hello world")

    outcome = run_linked(sandbox_agent(send), {"a": define_eval(test, sandbox=sandbox_template("docker"))}, keep="all")
    [result] = outcome.results
    sandbox_id = result.sandbox["sandbox_id"]
    [kept] = docker_containers(sandbox_id)
    assert kept.status == "running" and result.sandbox["kept"] is True
    listing = invoke("list")
    assert f"{sandbox_id}  kept     docker" in listing.output and f"container {kept.id[:12]} /workspace" in listing.output
    diff = invoke("diff", sandbox_id[:6])
    assert diff.exit_code == 0 and "== turn1 ==" in diff.output and "-hello\n+hello world" in diff.output
    kept.remove(force=True)  # outside assay: diff said the daemon's raw "404 Client Error for http+docker://…"
    gone = invoke("diff", sandbox_id[:6])
    assert gone.exit_code == 2 and (f"the container of sandbox {sandbox_id} is gone (NotFound); `assay agent sandbox "
                                    f"stop {sandbox_id}` forgets it") in gone.output, gone.output
    stopped = invoke("stop", sandbox_id)
    assert stopped.exit_code == 0, stopped.output
    assert docker_containers(sandbox_id) == [] and list_entries(sandbox_dir) == []
    # The container went without its workspace volume (`docker rm -f`, no -v): stop removes that too.
    assert "its container left behind" in stopped.output
    from assay.agent.sandbox.docker import docker_client

    client = docker_client()
    try:
        assert client.volumes.list(filters={"label": f"assay.sandbox={sandbox_id}"}) == []
    finally:
        client.close()


PROJECT = {
    "pyproject.toml": "[tool.assay]\nname = 'stalls'\n",
    "experiments/stall.py": (
        "import pathlib, os\n"
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_sandbox_agent, message\n\n"
        "async def send(turn_input, ctx):\n"
        "    pathlib.Path(os.environ['MARKER']).write_text(ctx.sandbox.sandbox_id)\n"
        "    await ctx.sandbox.run_shell('sleep 120')\n"
        "    return Turn([message('done')])\n\n"
        "stall = Experiment(agent=define_sandbox_agent(name='staller', send=send, "
        "evidence_coverage=complete_evidence_coverage))\n"
    ),
    "evals/stall_eval.py": (
        "from assay.agent import define_eval, local_sandbox\n\n"
        "@define_eval(sandbox=local_sandbox())\n"
        "async def stall(t):\n"
        "    await t.send('wait')\n"
    ),
}


def _start_stalling_run(tmp_path, sandbox_dir, name):
    project = tmp_path / name
    for relative, text in PROJECT.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    marker = tmp_path / f"{name}.marker"
    environment = {**os.environ, "MARKER": str(marker), "ASSAY_SANDBOX_DIR": str(sandbox_dir),
                   "ASSAY_STORE": str(tmp_path / "store.db"), "PYTHONUNBUFFERED": "1"}
    # --sandbox swaps the eval's local template for a container of the test image.
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--sandbox", f"docker:{BASE_IMAGE}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), process.communicate(timeout=10)[0]
    time.sleep(0.5)  # the agent's `sleep 120` is running in the container now
    sandbox_id = marker.read_text()
    assert len(docker_containers(sandbox_id)) == 1
    return process, sandbox_id


def test_ctrl_c_of_assay_agent_run_removes_the_container(docker_image, tmp_path, sandbox_dir):
    process, sandbox_id = _start_stalling_run(tmp_path, sandbox_dir, "interrupted")
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    assert docker_containers(sandbox_id) == [] and list_entries(sandbox_dir) == []


def test_a_second_ctrl_c_still_removes_the_container(docker_image, tmp_path, sandbox_dir):
    """A second Ctrl-C cancels every task, the attempts' teardowns too: the container was left running, an orphan
    for `sandbox prune`. What a run's teardown did not finish is destroyed before the run returns."""
    process, sandbox_id = _start_stalling_run(tmp_path, sandbox_dir, "twice")
    process.send_signal(signal.SIGINT)
    time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    assert docker_containers(sandbox_id) == [] and list_entries(sandbox_dir) == [] and no_sandbox_left(sandbox_dir)


def test_after_kill_9_of_assay_agent_run_prune_removes_the_container(docker_image, tmp_path, sandbox_dir):
    process, sandbox_id = _start_stalling_run(tmp_path, sandbox_dir, "killed")
    process.kill()
    process.communicate(timeout=30)
    assert len(docker_containers(sandbox_id)) == 1  # nothing was left to remove it
    orphans = invoke("list", "--orphans")
    assert f"{sandbox_id}  orphaned docker" in orphans.output, orphans.output
    assert (sandbox_dir / sandbox_id / "workspace").is_dir()  # the container's workdir, a host folder
    pruned = invoke("prune")
    assert pruned.exit_code == 0 and f"{sandbox_id} (orphaned): removed container" in pruned.output
    assert docker_containers(sandbox_id) == [] and list_entries(sandbox_dir) == [] and no_sandbox_left(sandbox_dir)


def test_prune_removes_a_container_whose_run_died_before_recording_it(docker_image, sandbox_dir):
    from assay.agent.sandbox.docker import OWNER_LABEL, ROOT_LABEL, docker_client, owner_label

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = owner_label().rpartition(":")[0]
    client = docker_client()
    try:
        client.containers.run(BASE_IMAGE, ["tail", "-f", "/dev/null"], detach=True, network_mode="none", labels={
            "assay.sandbox": "unrecorded-1", OWNER_LABEL: f"{host}:{dead.pid}",
            ROOT_LABEL: str(sandbox_dir / "unrecorded-1"),
        })
    finally:
        client.close()
    pruned = invoke("prune")
    assert "unrecorded-1 (orphaned): removed unrecorded container" in pruned.output, pruned.output
    assert docker_containers("unrecorded-1") == []
