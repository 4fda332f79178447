"""A stranger's Ctrl-C at the end of a run that holds a shared-state lease and a reused sandbox: real
`assay agent run` processes, real local sandboxes.

Once every attempt had finished, the run removed its Ctrl-C handler and only then retired its shared sandboxes
and ran its experiments' teardowns. A first Ctrl-C there was Python's KeyboardInterrupt: the shared sandbox's
teardown and the experiment's teardown (the one that drops the shared state's fixtures) were cut off with no
word, the lease was let go over half-cleaned shared state, and a run whose attempts had all passed said only
"Interrupted." (exit 130). Now the handler stays until the teardowns are done: a first press there lets them
finish (and says so), a second cuts them short, the sandboxes still destroyed and the lease still let go.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_projects import agent_project

EXPERIMENT = '''
import os, time
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_sandbox_agent, local_sandbox, message


def log(what):
    with open(os.environ["HOOK_LOG"], "a") as f:
        f.write(what + "\\n")


async def send(turn_input, ctx):
    result = await ctx.sandbox.run_command("sh", "-c", "echo note >> $HOME/notes; wc -l < $HOME/notes")
    return Turn([message("notes " + result.stdout.strip())])


def sandbox_teardown(sandbox, hook_ctx):
    log("sandbox-teardown-started")
    time.sleep(float(os.environ.get("TEARDOWN_SLEEP", "0")))
    log("sandbox-teardown-finished")


def drop_fixtures(ctx):
    log("experiment-teardown-started")
    time.sleep(float(os.environ.get("TEARDOWN_SLEEP", "0")))
    log("experiment-teardown-finished")


nightly = Experiment(
    agent=define_sandbox_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage),
    sandbox=local_sandbox(isolation="none").teardown(sandbox_teardown),
    sandbox_reuse=True, lifetime=600, concurrency=1, shared_state="staging-db", teardown=drop_fixtures,
)
'''

EVALS = '''
from assay.agent import define_eval, includes


def note():
    @define_eval
    async def test(t):
        turn = await t.send("take a note")
        t.check(turn.message, includes("notes"))

    return test


evals = {"one": note(), "two": note()}
'''


@pytest.fixture
def project(tmp_path):
    root = agent_project(tmp_path / "project")
    (root / "experiments" / "nightly.py").write_text(EXPERIMENT)
    (root / "evals" / "notes_eval.py").write_text(EVALS)
    return root


def environment(root: Path, **variables: str) -> dict[str, str]:
    return {**os.environ, "ASSAY_STORE": str(root.parent / "store.db"), "HOOK_LOG": str(root.parent / "hooks.log"),
            "ASSAY_SANDBOX_DIR": str(root.parent / "sandboxes"), "COLUMNS": "200", "PYTHONUNBUFFERED": "1",
            **variables}


def hooks(root: Path) -> list[str]:
    path = root.parent / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


def sandboxes_left(root: Path) -> list[str]:
    folder = root.parent / "sandboxes"
    return sorted(path.name for path in folder.iterdir() if not path.name.startswith(".")) if folder.is_dir() else []


def leases(root: Path) -> str:
    listed = subprocess.run([sys.executable, "-m", "assay", "agent", "shared-state", "list", "--json", "--project",
                             str(root)], env=environment(root), capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    return listed.stdout.strip()


def run_pressing_ctrl_c(root: Path, when: str, presses: int) -> tuple[int, str, str]:
    """`assay agent run`, with Ctrl-C pressed `presses` times (0.3 s apart) once the hook log says `when`."""
    run = subprocess.Popen(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(root)],
        env=environment(root, TEARDOWN_SLEEP="2"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 40
        while when not in hooks(root):
            assert run.poll() is None and time.monotonic() < deadline, f"{when} never came: {run.communicate()}"
            time.sleep(0.02)
        for press in range(presses):
            if press:
                time.sleep(0.3)
            run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=40)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    return run.returncode, out, err


@pytest.mark.parametrize("when", ["sandbox-teardown-started", "experiment-teardown-started"])
def test_one_ctrl_c_during_the_run_s_teardowns_lets_them_finish(project, when):
    code, out, err = run_pressing_ctrl_c(project, when, presses=1)
    # Both attempts passed and shared one sandbox; the teardowns it was cleaning up with ran to their end.
    assert hooks(project) == ["sandbox-teardown-started", "sandbox-teardown-finished",
                              "experiment-teardown-started", "experiment-teardown-finished"], out + err
    assert code == 0, out + err
    assert "PASSED" in out and "Traceback" not in out + err
    assert ("Ctrl-C: every attempt has finished; the run ends once its teardowns (shared sandboxes, experiment "
            "teardowns) are done. Ctrl-C again cuts them short") in err
    assert leases(project) == ""
    assert sandboxes_left(project) == []


def test_a_second_ctrl_c_cuts_the_teardowns_short_and_still_cleans_up(project):
    code, out, err = run_pressing_ctrl_c(project, "sandbox-teardown-started", presses=2)
    assert code == 130, out + err
    # (a synchronous hook's thread cannot be stopped, so the sandbox teardown that was running may end; the
    # experiment teardown after it is not started)
    assert "experiment-teardown-started" not in hooks(project), hooks(project)
    assert "Traceback" not in out + err
    # Nothing is left running or held: the shared sandbox is destroyed and the lease let go.
    assert sandboxes_left(project) == []
    assert leases(project) == ""
    # And the run resumes (every attempt had finished: nothing runs again).
    resume = next(line for line in out.splitlines() if line.startswith("Checkpoint: ")).split(": ", 1)[1]
    resumed = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--resume", resume, "--project",
                              str(project)], env=environment(project), capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr


HOLDER = '''
import os, time
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message


def load_fixtures(ctx):
    with open(os.environ["HOOK_LOG"], "a") as f:
        f.write("setup-started\\n")
    time.sleep(float(os.environ.get("SETUP_SLEEP", "0")))


async def send(turn_input, ctx):
    return Turn([message("Order 1042 ships Monday.")])


nightly = Experiment(
    agent=define_agent(name="shop", send=send, evidence_coverage=complete_evidence_coverage),
    shared_state="staging-db", setup=load_fixtures,
)
'''


def test_ctrl_c_while_waiting_for_a_lease_says_the_run_stopped_waiting(tmp_path):
    """The second of two runs on one key waits, saying so; Ctrl-C there ended it with exit 130 and not a word
    more, so a CI log ended on "waiting for ...". Now it says it stopped waiting, ran nothing and holds nothing."""
    root = agent_project(tmp_path / "project")
    (root / "experiments" / "nightly.py").write_text(HOLDER)
    (root / "evals" / "orders_eval.py").write_text(
        "from assay.agent import define_eval, includes\n\n\n@define_eval\nasync def test(t):\n"
        "    await t.send('When does order 1042 ship?')\n    t.check(t.reply, includes('Monday'))\n"
    )
    command = [sys.executable, "-m", "assay", "agent", "run", "--json", "--project", str(root)]
    first = subprocess.Popen(command, env=environment(root, SETUP_SLEEP="4"), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    second_err = tmp_path / "second.err"
    second = None
    try:
        deadline = time.monotonic() + 30
        while "setup-started" not in hooks(root):
            assert first.poll() is None and time.monotonic() < deadline, "the first run never started its setup"
            time.sleep(0.02)
        with second_err.open("w") as err_file:
            second = subprocess.Popen(command, env=environment(root), stdout=subprocess.PIPE, stderr=err_file, text=True)
            while "waiting for shared state" not in second_err.read_text():
                assert second.poll() is None and time.monotonic() < deadline, second_err.read_text()
                time.sleep(0.02)
            second.send_signal(signal.SIGINT)
            out, _ = second.communicate(timeout=30)
        err = second_err.read_text()
        assert second.returncode == 130, out + err
        assert out == ""  # nothing ran: no attempt line in --json
        assert ('stopped waiting for shared state "staging-db" (interrupted): this run ran nothing and holds no lease'
                in err), err
        assert "Traceback" not in err
        # The first run still holds the key, and ends as usual.
        assert '"owner_alive": true' in leases(root)
        assert first.wait(timeout=40) == 0
        assert leases(root) == ""
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


SERVING = '''
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_sandbox_agent, local_sandbox, message

LOOK = """
server=$(kill -0 "$(cat "$HOME/server.pid")" 2>/dev/null && echo up || echo down)
previous=$(kill -0 "$(cat "$HOME/agent.pid" 2>/dev/null)" 2>/dev/null && echo running || echo gone)
sleep 300 >/dev/null 2>&1 &
echo $! > "$HOME/agent.pid"
echo "server $server (pid $(cat "$HOME/server.pid")); the last task's process $previous; left pid $!"
"""


async def send(turn_input, ctx):
    result = await ctx.sandbox.run_shell(LOOK)
    return Turn([message(result.stdout.strip())])


async def start_server(sandbox, hook_ctx):
    await sandbox.run_shell('sleep 300 >/dev/null 2>&1 & echo $! > "$HOME/server.pid"')


served = Experiment(
    agent=define_sandbox_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage),
    sandbox=local_sandbox(isolation="none").setup(start_server),
    sandbox_reuse=True, lifetime=600, concurrency=1,
)
'''

SERVED_EVALS = '''
from assay.agent import define_eval, includes


def task():
    @define_eval
    async def test(t):
        await t.send("is the server up?")
        t.check(t.reply, includes("server up"))
        t.check(t.reply, includes("the last task's process gone"))

    return test


evals = {"one": task(), "two": task(), "three": task()}
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_reused_sandbox_keeps_what_its_setup_started_and_stops_what_a_task_left(tmp_path):
    """Layer setups run once per reused sandbox, so a server one starts must serve every task. Giving the
    sandbox back stopped every process left in it (isolation none): the setup's server was gone from the second
    task on, and nothing started it again. Now only what the task left is stopped; the server stays until the
    sandbox is retired."""
    import json
    import re

    root = agent_project(tmp_path / "project")
    (root / "experiments" / "served.py").write_text(SERVING)
    (root / "evals" / "tasks_eval.py").write_text(SERVED_EVALS)
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--json", "--project", str(root)],
                          env=environment(root), capture_output=True, text=True, timeout=120)
    attempts = [line["attempt"] for line in map(json.loads, done.stdout.splitlines()) if line["type"] == "attempt"]
    replies = {}
    for attempt in attempts:
        listed = subprocess.run([sys.executable, "-m", "assay", "agent", "show", f"served/{attempt['eval_id']}",
                                 "--project", str(root)], env=environment(root), capture_output=True, text=True,
                                timeout=60)
        replies[attempt["eval_id"]] = next(line.strip() for line in listed.stdout.splitlines() if "assistant:" in line)
    assert [attempt["verdict"] for attempt in attempts] == ["passed"] * 3, (done.stdout[-3000:], done.stderr, replies)
    assert done.returncode == 0, done.stderr
    # All three shared one sandbox, and once it was retired nothing of it runs: neither the server nor the
    # process the last task left.
    pids = {int(pid) for reply in replies.values() for pid in re.findall(r"pid (\d+)", reply)}
    assert len(pids) == 4, replies  # one server, one process left by each task
    assert not [pid for pid in pids if _alive(pid)], replies
    assert sandboxes_left(root) == []


def test_a_killed_run_s_lease_whose_pid_now_names_another_process_is_recoverable(tmp_path):
    """A run killed with SIGKILL leaves its lease; pids are reused (a run in a fresh CI container is often the
    same pid as the killed one). The owner was judged by its pid alone once the lease file's lock was free, so
    a lease naming a pid some other process now has looked alive for ever: the next run waited without end,
    `list` said "owner running" and `recover` refused. The lock decides now: its owner took it before writing
    the record and held it while it ran."""
    import json

    root = agent_project(tmp_path / "project")
    (root / "experiments" / "nightly.py").write_text(HOLDER)
    (root / "evals" / "orders_eval.py").write_text(
        "from assay.agent import define_eval, includes\n\n\n@define_eval\nasync def test(t):\n"
        "    await t.send('When does order 1042 ship?')\n    t.check(t.reply, includes('Monday'))\n"
    )
    # A real run, killed while it holds the lease (in its setup).
    killed = subprocess.Popen([sys.executable, "-m", "assay", "agent", "run", "--project", str(root)],
                              env=environment(root, SETUP_SLEEP="30"), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 30
        while "setup-started" not in hooks(root):
            assert killed.poll() is None and time.monotonic() < deadline, "the run never started its setup"
            time.sleep(0.02)
        killed.kill()
        killed.wait()
        # Its pid is given to another process: the lease file now names a pid that runs.
        lease = next((root / ".assay" / "shared-state").glob("*.lease"))
        record = json.loads(lease.read_text())
        lease.write_text(json.dumps({**record, "pid": other.pid}) + "\n")

        listed = json.loads(leases(root))
        assert listed["owner_alive"] is False, listed
        started = time.monotonic()
        blocked = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--shared-state-wait", "20",
                                  "--project", str(root)], env=environment(root), capture_output=True, text=True,
                                 timeout=60)
        assert time.monotonic() - started < 15  # it did not wait out --shared-state-wait
        assert blocked.returncode == 2, blocked.stdout + blocked.stderr
        assert "which is no longer running" in blocked.stderr, blocked.stderr
        assert f"(pid {other.pid} is another process now" in blocked.stderr, blocked.stderr
        recovered = subprocess.run(
            [sys.executable, "-m", "assay", "agent", "shared-state", "recover", "staging-db", "--owner-token",
             record["token"], "--confirm-owner-terminated", "--confirm-remote-quiesced", "--project", str(root)],
            env=environment(root), capture_output=True, text=True, timeout=60,
        )
        assert recovered.returncode == 0, recovered.stdout + recovered.stderr
        assert leases(root) == ""
    finally:
        for process in (killed, other):
            if process.poll() is None:
                process.kill()
                process.wait()
