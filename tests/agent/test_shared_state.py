"""Experiment `shared_state=`: real `assay agent run` processes on one project. Runs naming one key never
overlap (the second's setup starts after the first's teardown), other keys run side by side, a killed
owner's lease stays held until `assay agent shared-state recover` (with every confirmation) releases it,
and Ctrl-C or SIGTERM of an owner releases it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXPERIMENT = '''
import asyncio, os, time
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent
from assay.agent.model import message


async def send(turn_input, ctx):
    await asyncio.sleep(float(os.environ.get("SEND_SLEEP", "0")))
    return Turn([message("done")])


def log(what):
    with open(os.environ["HOOK_LOG"], "a") as f:
        f.write(f"{what} {os.environ.get('RUN_NAME', '?')} {time.time():.6f}\\n")


def setup(ctx):
    log("setup")


def teardown(ctx):
    time.sleep(float(os.environ.get("TEARDOWN_SLEEP", "0")))
    log("teardown")


nightly = Experiment(
    agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage),
    shared_state=os.environ.get("KEY", "staging-db"), setup=setup, teardown=teardown,
)
'''


@pytest.fixture
def staging(tmp_path):
    project = tmp_path / "staging"
    (project / "experiments").mkdir(parents=True)
    (project / "evals").mkdir()
    (project / "pyproject.toml").write_text('[tool.assay]\nname = "staging"\n')
    (project / "experiments" / "nightly.py").write_text(EXPERIMENT)
    (project / "evals" / "hello_eval.py").write_text(
        "from assay.agent import define_eval\n\nhello = define_eval(lambda t: t.send('hi'))\n"
    )
    return project


def _environment(project: Path, **variables: str) -> dict[str, str]:
    return {**os.environ, "ASSAY_STORE": str(project.parent / "store.db"), "HOOK_LOG": str(project.parent / "hooks.log"),
            "COLUMNS": "200", **variables}


def _start(project: Path, *options: str, **variables: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "assay", "agent", "run", "--rerun", "all", "--project", str(project), *options],
        env=_environment(project, **variables), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _assay(project: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=project, env=_environment(project, **variables),
                          capture_output=True, text=True, timeout=60)


def _hooks(project: Path) -> dict[tuple[str, str], float]:
    path = project.parent / "hooks.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return {(what, name): float(at) for what, name, at in (line.split() for line in lines)}


def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _leases(project: Path) -> list[dict]:
    listed = _assay(project, "agent", "shared-state", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def _killed_owner(project: Path) -> dict:
    """A run holding the lease, killed with SIGKILL during its teardown: its lease as `list` shows it."""
    owner = _start(project, TEARDOWN_SLEEP="60", RUN_NAME="first")
    _wait_for(lambda: ("setup", "first") in _hooks(project) and _leases(project))
    time.sleep(0.5)  # into its teardown
    owner.send_signal(signal.SIGKILL)
    owner.communicate(timeout=30)
    [lease] = _leases(project)
    return lease


def test_two_runs_on_one_key_never_overlap_the_second_waits_and_says_so(staging):
    first = _start(staging, TEARDOWN_SLEEP="2", RUN_NAME="first")
    _wait_for(lambda: ("setup", "first") in _hooks(staging))
    second = _start(staging, RUN_NAME="second")
    _, second_err = second.communicate(timeout=60)
    first.communicate(timeout=60)
    assert (first.returncode, second.returncode) == (0, 0), second_err
    hooks = _hooks(staging)
    assert hooks[("setup", "second")] > hooks[("teardown", "first")]
    assert second_err.count('waiting for shared state "staging-db"') == 1, second_err
    assert f"pid {first.pid} on host" in second_err and "(experiment nightly)" in second_err
    assert _leases(staging) == []


def test_runs_on_different_keys_run_side_by_side(staging):
    first = _start(staging, TEARDOWN_SLEEP="3", RUN_NAME="first", KEY="db-a")
    _wait_for(lambda: ("setup", "first") in _hooks(staging))
    second = _start(staging, RUN_NAME="second", KEY="db-b")
    _, second_err = second.communicate(timeout=60)
    first.communicate(timeout=60)
    assert (first.returncode, second.returncode) == (0, 0), second_err
    hooks = _hooks(staging)
    assert hooks[("teardown", "second")] < hooks[("teardown", "first")]
    assert "waiting" not in second_err


def test_a_limited_wait_gives_up_naming_the_owner(staging):
    first = _start(staging, TEARDOWN_SLEEP="3", RUN_NAME="first")
    _wait_for(lambda: ("setup", "first") in _hooks(staging))
    second = _assay(staging, "agent", "run", "--rerun", "all", "--shared-state-wait", "0.5", RUN_NAME="second")
    first.communicate(timeout=60)
    assert second.returncode == 2
    assert f'Error: shared state "staging-db" is held by pid {first.pid}' in second.stderr
    assert "gave up after --shared-state-wait 0.5 s" in second.stderr
    assert ("setup", "second") not in _hooks(staging)
    assert not (staging / ".assay" / "runs" / "checkpoints").exists() or len(
        list((staging / ".assay" / "runs" / "checkpoints").iterdir())) == 1  # the second made none


def test_a_killed_owner_keeps_the_lease_and_the_next_run_fails_with_the_recovery_command(staging):
    lease = _killed_owner(staging)
    assert lease["key"] == "staging-db" and lease["owner_alive"] is False and lease["experiments"] == ["nightly"]
    started = time.monotonic()
    second = _assay(staging, "agent", "run", "--rerun", "all", RUN_NAME="second")
    assert time.monotonic() - started < 20  # no wait for an owner that is gone
    assert second.returncode == 2
    assert "which is no longer running; a lease is never taken over automatically" in second.stderr
    assert (f"assay agent shared-state recover staging-db --owner-token {lease['token']} "
            "--confirm-owner-terminated --confirm-remote-quiesced") in second.stderr
    assert ("setup", "second") not in _hooks(staging)
    assert [entry["token"] for entry in _leases(staging)] == [lease["token"]]  # still held: never taken over


def test_recover_refuses_without_each_confirmation_or_with_a_wrong_token_then_releases(staging):
    lease = _killed_owner(staging)
    every = ["--owner-token", lease["token"], "--confirm-owner-terminated", "--confirm-remote-quiesced"]
    without = {
        "--owner-token": every[2:],
        "--confirm-owner-terminated": [*every[:2], "--confirm-remote-quiesced"],
        "--confirm-remote-quiesced": every[:3],
    }
    for flag, given in without.items():
        refused = _assay(staging, "agent", "shared-state", "recover", "staging-db", *given)
        assert refused.returncode == 2, flag
        assert f"it needs {flag} (" in refused.stderr, refused.stderr
    misspelt = _assay(staging, "agent", "shared-state", "recover", "stagingdb", *every)
    assert misspelt.returncode == 2 and 'no lease is held for shared state "stagingdb"' in misspelt.stderr
    assert 'did you mean "staging-db"?' in misspelt.stderr, misspelt.stderr
    wrong = _assay(staging, "agent", "shared-state", "recover", "staging-db", "--owner-token", "0" * 16, *every[2:])
    assert wrong.returncode == 2 and "--owner-token does not match" in wrong.stderr
    assert len(_leases(staging)) == 1
    released = _assay(staging, "agent", "shared-state", "recover", "staging-db", *every)
    assert released.returncode == 0, released.stderr
    assert f'released shared state "staging-db" (owner token {lease["token"]})' in released.stdout
    assert _leases(staging) == []
    again = _assay(staging, "agent", "run", "--rerun", "all", RUN_NAME="second")
    assert again.returncode == 0, again.stderr


def test_recover_with_teardown_runs_the_experiments_teardown_first(staging):
    lease = _killed_owner(staging)
    released = _assay(staging, "agent", "shared-state", "recover", "staging-db", "--owner-token", lease["token"],
                      "--confirm-owner-terminated", "--confirm-remote-quiesced", "--teardown", RUN_NAME="recovery")
    assert released.returncode == 0, released.stderr
    assert released.stdout.splitlines() == [
        "ran the teardown of experiment nightly", f'released shared state "staging-db" (owner token {lease["token"]})',
    ]
    assert ("teardown", "recovery") in _hooks(staging)


def test_recover_with_teardown_that_cannot_run_it_says_how_to_release_the_lease_anyway(staging):
    """shared-state.md: with `--teardown`, a teardown that raises keeps the lease (exit 2). The message stopped at
    "the lease is kept", with no way out for a teardown that cannot succeed, nor for an experiment renamed since."""
    lease = _killed_owner(staging)
    recover = ("agent", "shared-state", "recover", "staging-db", "--owner-token", lease["token"],
               "--confirm-owner-terminated", "--confirm-remote-quiesced", "--teardown")
    failed = _assay(staging, *recover, TEARDOWN_SLEEP="not a number")
    assert failed.returncode == 2, failed.stderr
    assert failed.stderr.strip() == (
        "Error: --teardown: experiment nightly teardown failed: ValueError: could not convert string to float: "
        "'not a number'; the lease is kept. Fix the teardown and recover again, or clean up by hand and recover "
        "without --teardown")
    (staging / "experiments" / "nightly.py").rename(staging / "experiments" / "renamed.py")
    gone = _assay(staging, *recover)
    assert gone.returncode == 2, gone.stderr
    assert gone.stderr.strip() == (
        f"Error: --teardown: experiment nightly is no longer in {staging}, so its teardown cannot run; the lease is "
        "kept. Clean up what that run made by hand, then recover without --teardown")
    assert [held["token"] for held in _leases(staging)] == [lease["token"]]
    released = _assay(staging, *recover[:-1])
    assert released.returncode == 0, released.stderr


def test_recover_refuses_while_the_owner_runs(staging):
    owner = _start(staging, TEARDOWN_SLEEP="3", RUN_NAME="first")
    _wait_for(lambda: ("setup", "first") in _hooks(staging) and _leases(staging))
    [lease] = _leases(staging)
    refused = _assay(staging, "agent", "shared-state", "recover", "staging-db", "--owner-token", lease["token"],
                     "--confirm-owner-terminated", "--confirm-remote-quiesced")
    owner.communicate(timeout=60)
    assert refused.returncode == 2 and "is still running" in refused.stderr
    assert owner.returncode == 0


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_owner_releases_the_lease_after_its_teardown(staging, stop):
    owner = _start(staging, SEND_SLEEP="60", RUN_NAME="first")
    _wait_for(lambda: ("setup", "first") in _hooks(staging))
    time.sleep(0.5)  # in its attempt
    owner.send_signal(stop)
    _, err = owner.communicate(timeout=60)
    assert owner.returncode == 130, err
    assert ("teardown", "first") in _hooks(staging)
    assert _leases(staging) == []
    after = _assay(staging, "agent", "run", "--rerun", "all", "--shared-state-wait", "0", RUN_NAME="second")
    assert after.returncode == 0, after.stderr


def test_a_fully_carried_run_touches_nothing_and_takes_no_lease(staging):
    assert _assay(staging, "agent", "run").returncode == 0
    owner = _start(staging, TEARDOWN_SLEEP="3", RUN_NAME="first")
    _wait_for(lambda: ("setup", "first") in _hooks(staging))
    carried = _assay(staging, "agent", "run", "--shared-state-wait", "0", RUN_NAME="second")
    owner.communicate(timeout=60)
    assert carried.returncode == 0, carried.stderr
    assert "waiting" not in carried.stderr and ("setup", "second") not in _hooks(staging)


def test_the_key_is_part_of_the_execution_identity(staging):
    assert _assay(staging, "agent", "run").returncode == 0
    same = _assay(staging, "agent", "run", "--dry", "--json")
    assert [slot["action"] for slot in json.loads(same.stdout)["slots"]] == ["carry"]
    other = _assay(staging, "agent", "run", "--dry", "--json", KEY="prod-db")
    [slot] = json.loads(other.stdout)["slots"]
    assert (slot["action"], slot["code"], slot["reason"]) == ("execute", "shared-state-changed", "shared state key changed")


def test_a_shared_state_that_is_not_a_key_is_a_config_error(staging):
    path = staging / "experiments" / "nightly.py"
    path.write_text(path.read_text().replace('shared_state=os.environ.get("KEY", "staging-db")',
                                             'shared_state={"key": "staging-db"}'))
    refused = _assay(staging, "agent", "run")
    assert refused.returncode == 2
    assert 'shared_state takes the key itself: write shared_state="staging-db"' in refused.stderr
    assert "Traceback" not in refused.stderr


def test_list_and_recover_outside_the_project_say_so_rather_than_that_nothing_is_held(staging):
    """`shared-state list` in a subfolder of the project (or another folder) said "no shared-state lease is held
    in this project" (exit 0) while a run held one: a person would take the shared state to be free."""
    owner = _start(staging, TEARDOWN_SLEEP="60", RUN_NAME="first")
    try:
        _wait_for(lambda: ("setup", "first") in _hooks(staging) and _leases(staging))
        listed = _assay(staging / "evals", "agent", "shared-state", "list")
        assert listed.returncode == 2 and listed.stdout == "", listed.stdout
        assert (f"Error: {staging / 'evals'} is not an assay project (it has no evals/ or experiments/ folder), so "
                f"its leases cannot be looked up there; run it in {staging} or give --project {staging}") in listed.stderr
        assert "Traceback" not in listed.stderr
        recover = _assay(staging, "agent", "shared-state", "recover", "staging-db", "--owner-token", "x",
                         "--confirm-owner-terminated", "--confirm-remote-quiesced", "--project", str(staging.parent))
        assert recover.returncode == 2 and f"Error: {staging.parent} is not an assay project" in recover.stderr
        assert "give --project DIR" in recover.stderr, recover.stderr
        assert [lease["key"] for lease in _leases(staging)] == ["staging-db"]
    finally:
        owner.kill()
        owner.communicate(timeout=30)


def test_a_lease_its_owner_was_killed_while_writing_is_named_so_and_recovered_with_the_command_given(staging):
    """The lease file is made first and its owner written into it after: a run killed in between leaves it empty. The
    next run names it as such and gives a recover command that works (`--owner-token unknown`)."""
    from assay.agent.shared_state import _lease_path

    path = _lease_path(staging, "staging-db")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    old = time.time() - 60  # past the time an unreadable lease is taken to be still being written
    os.utime(path, (old, old))
    second = _assay(staging, "agent", "run", "--rerun", "all", RUN_NAME="second")
    assert second.returncode == 2, second.stdout + second.stderr
    assert 'shared state "staging-db" is held by a run that was killed while taking it' in second.stderr
    command = ("assay agent shared-state recover staging-db --owner-token unknown --confirm-owner-terminated "
               "--confirm-remote-quiesced")
    assert command in second.stderr, second.stderr
    released = _assay(staging, *command.split()[1:])
    assert released.returncode == 0, released.stderr
    assert _leases(staging) == []
    assert _assay(staging, "agent", "run", "--rerun", "all", RUN_NAME="third").returncode == 0
