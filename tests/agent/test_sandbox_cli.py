"""`assay agent sandbox list | diff | stop | prune` over sandboxes kept by a real run (and an orphan whose
run died with a process still running)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from sandbox_helpers import processes_carrying, run_linked, sandbox_agent, sandbox_dir  # noqa: F401
from typer.testing import CliRunner

from assay.agent import Turn, define_eval, local_sandbox, message
from assay.agent.sandbox.registry import SandboxEntry, list_entries, write_entry
from assay.cli.agent_sandbox import sandbox_app


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
    unknown = invoke("diff", ids[0], "--window", "turn9")
    assert unknown.exit_code == 2 and "windows: turn1, turn2" in unknown.output

    stopped = invoke("stop", ids[0])
    assert stopped.exit_code == 0 and len(list_entries(sandbox_dir)) == 1
    assert invoke("stop", "--all").exit_code == 0
    assert list_entries(sandbox_dir) == [] and list(sandbox_dir.iterdir()) == []
    assert invoke("diff", "nope").exit_code == 2


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
