"""Every Sandbox operation on the local provider, with real processes: commands, files, transfers, stop,
timeouts and cancellation (the whole process tree gone, checked by process group and by marker)."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest
from sandbox_helpers import group_alive, processes_carrying, sandbox_dir  # noqa: F401

from assay.agent.context import Cancelled, CancelSignal
from assay.agent.sandbox import SandboxCommandError, SandboxError
from assay.agent.sandbox.commands import REDACTED
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox import local
from assay.agent.sandbox.local import (
    BUBBLEWRAP,
    PROCESS_GROUP,
    LocalProvider,
    bubblewrap_problem,
)

# bubblewrap runs wherever it can; elsewhere its cases skip, saying "not installed" or "cannot make a namespace".
ISOLATIONS = ["none", pytest.param("bubblewrap", marks=pytest.mark.skipif(bubblewrap_problem() is not None,
                                                                         reason=str(bubblewrap_problem())))]


async def make(isolation: str = "none", **core) -> Sandbox:
    backend = await LocalProvider(isolation=isolation).create(CreateRequest(f"t-{os.urandom(4).hex()}"))
    return Sandbox(SandboxCore(backend, **core))


def run(coroutine):
    return asyncio.run(coroutine)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_commands_run_argv_without_a_shell_and_scripts_through_bash(isolation):
    async def body():
        sandbox = await make(isolation)
        literal = await sandbox.run_command("echo", "$HOME", "a;b")
        scripted = await sandbox.run_shell("echo $((6 * 7)); echo oops >&2; exit 3")
        await sandbox.stop()
        return sandbox, literal, scripted

    sandbox, literal, scripted = run(body())
    assert literal.stdout == "$HOME a;b\n" and literal.ok
    assert (scripted.exit_code, scripted.stdout, scripted.stderr) == (3, "42\n", "oops\n")
    assert sandbox.isolation == (BUBBLEWRAP if isolation == "bubblewrap" else PROCESS_GROUP)


def test_env_and_cwd_layer_on_the_sandbox_and_path_is_managed():
    async def body():
        sandbox = await make()
        await sandbox.write_text("sub/dir/keep.txt", "x")
        where = await sandbox.run_shell("pwd; echo $GREETING; echo $HOME", cwd="sub/dir", env={"GREETING": "hi"})
        with pytest.raises(SandboxError, match="PATH is managed"):
            await sandbox.run_command("true", env={"PATH": "/nowhere"})
        missing = await sandbox.run_command("no-such-program-here")
        await sandbox.stop()
        return sandbox, where, missing

    sandbox, where, missing = run(body())
    cwd, greeting, home = where.stdout.splitlines()
    assert cwd == f"{sandbox.workdir}/sub/dir" and greeting == "hi" and home.endswith("/home")
    assert missing.exit_code == 127


def test_raising_variants_carry_a_bounded_redacted_stderr_tail():
    async def body():
        sandbox = await make()
        with pytest.raises(SandboxCommandError) as raised:
            await sandbox.run_shell_or_raise(
                "for i in $(seq 1 3000); do echo line-$i >&2; done; echo token=hunter2-secret >&2; exit 4",
                sensitive_values=["hunter2-secret"],
            )
        with pytest.raises(SandboxCommandError, match="only stdout"):
            await sandbox.run_command_or_raise("sh", "-c", "echo only stdout; exit 1")
        ok = await sandbox.run_command_or_raise("true")
        log = sandbox._core.log
        await sandbox.stop()
        return raised.value, ok, log

    error, ok, log = run(body())
    message = str(error)
    assert "exited with 4" in message and f"token={REDACTED}" in message and "hunter2" not in message
    assert len(message) < 2300 and "line-1\n" not in message  # a tail, not the whole stream
    assert error.result.exit_code == 4 and "hunter2" not in error.result.stderr
    assert ok.ok
    assert all("hunter2" not in str(entry) for entry in log)


def test_sensitive_values_are_redacted_from_results_and_the_log_but_reach_the_command():
    async def body():
        sandbox = await make()
        result = await sandbox.run_shell('echo "key=$API_KEY"; test "$API_KEY" = sk-live-1234',
                                         env={"API_KEY": "sk-live-1234"}, sensitive_values=["sk-live-1234"])
        later = await sandbox.run_command("echo", "sk-live-1234")  # remembered for the sandbox's life
        log = list(sandbox._core.log)
        await sandbox.stop()
        return result, later, log

    result, later, log = run(body())
    assert result.ok and result.stdout == f"key={REDACTED}\n"
    assert later.stdout == f"{REDACTED}\n" and later.command == ("echo", REDACTED)
    assert "sk-live" not in repr(log)


def test_streaming_callbacks_see_output_as_it_is_written():
    seen: list[tuple[str, float]] = []
    errors: list[str] = []

    async def body():
        sandbox = await make()
        started = time.perf_counter()
        await sandbox.run_shell("echo first; sleep 0.4; echo second; echo problem >&2",
                                on_stdout=lambda text: seen.append((text, time.perf_counter() - started)),
                                on_stderr=errors.append)
        await sandbox.stop()

    run(body())
    text = "".join(chunk for chunk, _ in seen)
    assert text == "first\nsecond\n" and "".join(errors) == "problem\n"
    assert seen[0][0].startswith("first") and seen[0][1] < 0.35  # delivered before the command ended


def test_stream_true_tees_lines_to_the_attempts_progress():
    lines: list[str] = []

    async def body():
        sandbox = await make(progress=lines.append)
        await sandbox.run_shell("echo building; echo done", stream=True)
        await sandbox.stop()

    run(body())
    assert [line.split(": ", 1)[1] for line in lines] == ["building", "done"]


def test_text_and_bytes_read_and_write_create_parent_folders():
    async def body():
        sandbox = await make()
        await sandbox.write_text("a/b/c.txt", "héllo\n")
        await sandbox.write_bytes("bin/blob", b"\x00\x01\xff")
        absolute = await sandbox.read_text(f"{sandbox.workdir}/a/b/c.txt")
        data = await sandbox.read_bytes("bin/blob")
        exists = (await sandbox.path_exists("a/b"), await sandbox.path_exists("nope"))
        with pytest.raises(SandboxError, match="could not read"):
            await sandbox.read_text("nope")
        with pytest.raises(SandboxError, match="outside the sandbox"):
            await sandbox.write_text("/etc/assay-should-not-exist", "x")
        await sandbox.stop()
        return absolute, data, exists

    assert run(body()) == ("héllo\n", b"\x00\x01\xff", (True, False))


def test_an_edit_that_keeps_the_size_within_a_second_of_an_import_is_not_shadowed_by_the_bytecode_cache():
    # `a - b` -> `a + b` in the second the file was imported: Python's cache keys on size and whole seconds.
    show = (sys.executable, "-c", "import sys; sys.dont_write_bytecode = False; import mod; print(mod.x)")

    async def body():
        sandbox = await make()
        try:
            for _ in range(5):
                second = int(time.time())
                await sandbox.write_text("mod.py", "x = 1 - 1\n")
                first = (await sandbox.run_command(*show)).stdout.strip()
                await sandbox.write_text("mod.py", "x = 1 + 1\n")
                then = (await sandbox.run_command(*show)).stdout.strip()
                if int(time.time()) == second:  # all of it within one second, as the case needs
                    return first, then
            pytest.skip("every try crossed a second boundary")
        finally:
            await sandbox.stop()

    assert run(body()) == ("0", "2")


def test_upload_and_download_files_and_folders(tmp_path):
    source = tmp_path / "source"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("x = 1\n")
    (source / "README").write_text("read me\n")
    (source / "pkg" / "skip.log").write_text("noise\n")
    single = tmp_path / "single.txt"
    single.write_text("one file\n")

    async def body():
        sandbox = await make()
        await sandbox.upload_directory(source, "project", ignore=["*.log"])
        await sandbox.upload_file(single)
        await sandbox.upload_file(single, "deep/renamed.txt")
        listing = await sandbox.run_shell("find . -type f | sort")
        await sandbox.download_directory("project", tmp_path / "back")
        await sandbox.download_file("deep/renamed.txt", tmp_path / "back-one.txt")
        await sandbox.stop()
        return listing.stdout.split()

    assert run(body()) == ["./deep/renamed.txt", "./project/README", "./project/pkg/mod.py", "./single.txt"]
    assert (tmp_path / "back" / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert not (tmp_path / "back" / "pkg" / "skip.log").exists()
    assert (tmp_path / "back-one.txt").read_text() == "one file\n"


def test_stop_removes_the_folder_and_every_process(sandbox_dir):
    async def body():
        sandbox = await make()
        # A background server left running by a command (as a setup hook would start one).
        await sandbox.run_shell("sleep 60 >/dev/null 2>&1 & echo $! > server.pid")
        pid = int((await sandbox.read_text("server.pid")).strip())
        alive_before = os.path.exists(f"/proc/{pid}")
        gone = await sandbox.stop()
        return sandbox, pid, alive_before, gone

    sandbox, pid, alive_before, gone = run(body())
    assert alive_before and gone
    assert processes_carrying(f"ASSAY_SANDBOX={sandbox.sandbox_id}") == []
    assert list(sandbox_dir.iterdir()) == []
    with pytest.raises(SandboxError, match="stopped"):
        run(sandbox.run_command("true"))


def test_a_timed_out_command_is_killed_with_its_whole_process_group():
    async def body():
        sandbox = await make("none")
        started = time.perf_counter()
        result = await sandbox.run_shell(
            "echo $$ > group; sleep 60 & sleep 60 & setsid sleep 60 & echo started; wait", timeout=0.5,
        )
        elapsed = time.perf_counter() - started
        group = int((await sandbox.read_text("group")).strip())
        left = processes_carrying(f"ASSAY_SANDBOX={sandbox.sandbox_id}")
        await sandbox.stop()
        return result, elapsed, group, left

    result, elapsed, group, left = run(body())
    assert result.timed_out and result.exit_code is None and result.stdout == "started\n"
    assert elapsed < 5
    assert not group_alive(group)
    assert left == []  # the setsid one left the group, and went too


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_cancelling_a_command_raises_only_once_its_tree_is_gone(isolation):
    async def body():
        sandbox = await make(isolation)
        signal = CancelSignal()
        asyncio.get_running_loop().call_later(0.3, signal.cancel, "interrupted")
        with pytest.raises(Cancelled, match="interrupted"):
            await sandbox.run_shell("sleep 60 & sleep 60; wait", signal=signal)
        left = processes_carrying(f"ASSAY_SANDBOX={sandbox.sandbox_id}")
        after = await sandbox.run_command("true")  # the sandbox itself is still usable
        await sandbox.stop()
        return left, after

    left, after = run(body())
    assert left == [] and after.ok


def test_a_cancelled_task_takes_its_command_tree_with_it():
    async def body():
        sandbox = await make("none")
        task = asyncio.ensure_future(sandbox.run_shell("echo $$ > group; sleep 60"))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        group = int((await sandbox.read_text("group")).strip())
        await sandbox.stop()
        return group

    assert not group_alive(run(body()))


def test_the_timeout_defaults_to_what_is_left_of_the_attempts_deadline():
    async def body():
        sandbox = await make()
        sandbox._core.deadline = asyncio.get_running_loop().time() + 0.4
        started = time.perf_counter()
        result = await sandbox.run_command("sleep", "30")
        elapsed = time.perf_counter() - started
        passed = await sandbox.run_command("true")  # the deadline has gone: not even started
        await sandbox.stop()
        return result, elapsed, passed

    result, elapsed, passed = run(body())
    assert result.timed_out and elapsed < 3
    assert passed.timed_out and "deadline" in passed.stderr


def test_a_timeout_that_is_not_seconds_is_refused_naming_it():
    """`timeout="5"` failed with "TypeError: '<=' not supported between instances of 'str' and 'int'"."""
    async def body():
        sandbox = await make()
        try:
            for value in ("5", True, 0):
                with pytest.raises(SandboxError, match=f"timeout must be a positive number of seconds, like timeout=30; "
                                                       f"got {value!r}"):
                    await sandbox.run_command("true", timeout=value)
            return await sandbox.run_command("true", timeout=5)
        finally:
            await sandbox.stop()

    assert run(body()).ok


@pytest.mark.skipif(bubblewrap_problem() is not None, reason=str(bubblewrap_problem()))
def test_bubblewrap_leaves_only_the_sandbox_writable_and_hides_the_ledger():
    async def body():
        sandbox = await make("bubblewrap")
        outside = await sandbox.run_shell("touch /usr/assay-probe 2>&1; echo $?")
        tmp = await sandbox.run_shell("echo scratch > /tmp/note && cat /tmp/note")
        note = await sandbox.read_text("/tmp/note")  # the same /tmp, seen from the host
        ledger = await sandbox.run_shell(f"ls {sandbox._core.backend.ledger_dir} 2>&1; echo $?")
        await sandbox.stop()
        return outside, tmp, note, ledger

    outside, tmp, note, ledger = run(body())
    assert outside.stdout.strip().endswith("1") and not os.path.exists("/usr/assay-probe")
    assert tmp.stdout == "scratch\n" and note == "scratch\n"
    assert ledger.stdout.strip().endswith("2")  # not there inside


def test_python_runs_in_the_sandbox():
    async def body():
        sandbox = await make()
        result = await sandbox.run_command(sys.executable, "-c", "import os; print(os.getcwd())")
        await sandbox.stop()
        return sandbox, result

    sandbox, result = run(body())
    assert result.stdout.strip() == sandbox.workdir


@pytest.mark.skipif(bubblewrap_problem() is not None, reason=str(bubblewrap_problem()))
def test_a_run_in_bubblewrap_records_it_and_a_write_outside_the_workspace_is_refused(sandbox_dir):
    from sandbox_helpers import run_one_linked, sandbox_agent

    from assay.agent import Turn, define_eval, equals, includes, local_sandbox, message

    # Outside /tmp: under bubblewrap the sandbox's /tmp is its own, so a write there lands inside it.
    escape = f"/var/tmp/assay-escaped-{os.urandom(4).hex()}.txt"

    async def send(turn_input, ctx):
        await ctx.sandbox.run_shell_or_raise("echo mine > answer.txt")
        outside = await ctx.sandbox.run_shell(f"echo escaped > {escape}")
        return Turn([message(f"{outside.exit_code} {outside.stderr.strip()}")])

    async def test(t):
        await t.send("write inside and outside")
        t.check(t.reply, includes("Read-only file system"))
        t.sandbox.changed_paths(["answer.txt"])
        t.check((await t.sandbox.run_command("cat", "answer.txt")).stdout, equals("mine\n"))

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=local_sandbox(isolation="bubblewrap")))
    assert result.verdict == "passed", (result.error, result.assertions)
    assert result.sandbox["isolation"] == "bubblewrap"
    assert not os.path.exists(escape)


def test_the_bubblewrap_probe_tells_not_installed_from_no_namespace(monkeypatch, tmp_path):
    monkeypatch.setattr(local, "_bubblewrap_state", None)
    monkeypatch.setattr(local.shutil, "which", lambda name: None)
    assert bubblewrap_problem() == "bubblewrap is not installed (apt-get install bubblewrap)"
    refusing = tmp_path / "bwrap"
    refusing.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    refusing.chmod(0o755)
    monkeypatch.setattr(local, "_bubblewrap_state", None)
    monkeypatch.setattr(local.shutil, "which", lambda name: str(refusing))
    assert bubblewrap_problem() == ("bubblewrap cannot make a namespace here (bwrap: No permissions to create new "
                                    "namespace; check `bwrap --ro-bind / / true`)")
    with pytest.raises(SandboxError, match="isolation='bubblewrap'.*cannot make a namespace"):
        LocalProvider(isolation="bubblewrap")._isolation()
    assert LocalProvider()._isolation() == PROCESS_GROUP  # auto falls back


def test_path_prepend_is_a_list_of_folders_not_one_string():
    """`path_prepend="bin"` put PATH=b:i:n:… in every command."""
    from assay.agent import docker_sandbox, local_sandbox

    for make_layer, name in ((local_sandbox, "local_sandbox"), (lambda **o: docker_sandbox(image="x", **o), "docker_sandbox")):
        with pytest.raises(SandboxError, match=rf"{name} path_prepend is a list of folders, like path_prepend=\["):
            make_layer(path_prepend="bin")
        assert make_layer(path_prepend=["bin", "tools"]).provider.path_prepend == ("bin", "tools")


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_program_that_is_not_there_is_127_naming_it_on_every_isolation(isolation):
    """Under bubblewrap it was exit 1, `bwrap: execvp …` (127 without isolation, as a shell says it)."""
    async def body():
        sandbox = await make(isolation)
        missing = await sandbox.run_command("no-such-program-here")
        await sandbox.write_text("script.sh", "echo hi\n")  # there, but not executable
        unrunnable = await sandbox.run_command("./script.sh")
        await sandbox.stop()
        return missing, unrunnable

    missing, unrunnable = run(body())
    assert missing.exit_code == 127 and missing.stderr.startswith("no-such-program-here: "), missing.stderr
    assert "bwrap" not in missing.stderr
    assert unrunnable.exit_code == 126 and "bwrap" not in unrunnable.stderr, unrunnable.stderr


def _zombie_children() -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            count += fields[0] == b"Z" and int(fields[1]) == os.getpid()
    return count


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_many_commands_leave_no_pile_of_zombies_and_a_background_server_still_runs(isolation):
    """Under bubblewrap about every other command's leader exited a moment before bwrap's inner process: the
    tree was kept as if it had left something running, with two zombies, until the sandbox stopped."""

    before = _zombie_children()  # what earlier tests in this process left is not this test's

    async def body():
        sandbox = await make(isolation)
        try:
            # A server a setup started stays until the sandbox stops (under bubblewrap it ends with its command).
            await sandbox.run_shell("sleep 300 &")
            for _ in range(40):
                await sandbox.run_command("true")
            await asyncio.sleep(0.2)
            await sandbox.run_command("true")
            server = processes_carrying(f"ASSAY_SANDBOX={sandbox.sandbox_id}")
            return _zombie_children() - before, len(sandbox._core.backend._lingering), server
        finally:
            await sandbox.stop()

    zombies, lingering, server = run(body())
    assert zombies <= 2 and lingering <= 2, (zombies, lingering)
    assert bool(server) == (isolation == "none"), server


def test_sensitive_values_given_as_one_string_is_refused_rather_than_storing_the_secret():
    """`sensitive_values="sk-live-1234"` was split into characters, each shorter than 4, so nothing was redacted:
    the secret was stored in the result and the command log, with no word said."""
    async def body():
        sandbox = await make()
        try:
            with pytest.raises(SandboxError) as refused:
                await sandbox.run_command("echo", "sk-live-1234", sensitive_values="sk-live-1234")
            listed = await sandbox.run_command("echo", "sk-live-1234", sensitive_values=["sk-live-1234"])
            return str(refused.value), list(sandbox._core.log), listed
        finally:
            await sandbox.stop()

    message, log, listed = run(body())
    assert message == ("sensitive_values is a list of exact strings, like sensitive_values=[token]; got one str, "
                       "which would be split into its characters and redact nothing")
    assert "sk-live" not in repr(log) and listed.stdout == f"{REDACTED}\n"


def test_run_shell_with_an_argv_list_is_refused_naming_run_command():
    """`run_shell(["echo", "x"])` ran the list's repr through bash (`bash: [echo,: command not found`, exit 127)."""
    async def body():
        sandbox = await make()
        try:
            with pytest.raises(SandboxError) as refused:
                await sandbox.run_shell(["echo", "x"])
            return str(refused.value), await sandbox.run_shell("echo x")
        finally:
            await sandbox.stop()

    message, fine = run(body())
    assert message == ("run_shell takes a script, one string like run_shell(\"make test\"), got list; for an argv, "
                       "run_command('echo', 'x')")
    assert fine.stdout == "x\n"
