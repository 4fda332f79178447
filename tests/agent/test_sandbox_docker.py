"""The Docker provider against a real daemon and images built on this machine (tests/containers.py: never a
registry). Without the SDK or a daemon it fails at create time with a reason (tested here always). With
one: commands, streaming, files and transfers in a container; a timed-out or cancelled command's whole
tree killed inside it (seen by `ps` in the container); a missing image; a Dockerfile built once; no
network unless asked; CPU, memory and process limits with their effect; the container removed on every
path of an attempt. (Attribution and the sandbox assertions run over Docker in the provider tables of
test_sandbox_attribution.py and test_sandbox_assertions.py; Ctrl-C, kill -9 and the CLI in
test_sandbox_cli.py.)"""

from __future__ import annotations

import asyncio
import runpy
import sys
import time
import uuid

import pytest
from sandbox_helpers import no_sandbox_left, run_linked, run_one_linked, sandbox_agent, sandbox_dir  # noqa: F401

from assay.agent import Turn, command_succeeded, define_eval, docker_sandbox, equals, includes, message
from assay.agent.context import Cancelled, CancelSignal
from assay.agent.sandbox import SandboxCommandError, SandboxError
from assay.agent.sandbox.docker import (
    DockerProvider,
    build_key,
    import_docker,
    memory_bytes,
)
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from assay.errors import ConfigError
from containers import BASE_IMAGE, docker_containers, docker_image  # noqa: F401  (the fixture)


async def container(image: str, **options) -> Sandbox:
    backend = await DockerProvider(image=image, **options).create(CreateRequest(f"docker-{uuid.uuid4().hex[:8]}"))
    return Sandbox(SandboxCore(backend))


def test_a_missing_sdk_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(SandboxError, match=r"needs the docker SDK: pip install docker \(assay's `docker` extra\)"):
        import_docker()


def test_without_a_daemon_the_attempt_errors_at_create_time(monkeypatch, tmp_path):
    pytest.importorskip("docker", reason="without the SDK the attempt fails earlier, for that (tested above)")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")  # whether or not one runs here

    async def test(t):
        await t.send("never sent")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=docker_sandbox(image=BASE_IMAGE)))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-create-failed"
    assert "no Docker daemon answers" in result.error["message"]


def test_sources_and_limits_are_checked_and_the_build_key_follows_the_context(tmp_path):
    with pytest.raises(SandboxError, match="not both"):
        DockerProvider(image="a", dockerfile=tmp_path / "Dockerfile")
    with pytest.raises(SandboxError, match="absolute"):
        DockerProvider(image="a", workdir="relative")
    for bad, message in (({"memory": "lots"}, "size like '256m'"), ({"memory": "1m"}, "at least 6m"),
                         ({"cpus": 0}, "positive number"), ({"pids_limit": 2}, "at least 8")):
        with pytest.raises(SandboxError, match=message):
            DockerProvider(image="a", **bad)
    assert memory_bytes("256m") == memory_bytes("256MiB") == 256 * 1024**2 and memory_bytes(2**30) == 2**30
    described = DockerProvider(image="a", memory="256m", network_mode="bridge").describe()
    assert described["memory"] == 256 * 1024**2 and described["network_mode"] == "bridge"
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    first = build_key(tmp_path, "Dockerfile", {})
    assert build_key(tmp_path, "Dockerfile", {}) == first
    (tmp_path / "extra.txt").write_text("changes the build\n")
    assert build_key(tmp_path, "Dockerfile", {}) != first
    assert build_key(tmp_path, "Dockerfile", {"V": "2"}) != build_key(tmp_path, "Dockerfile", {})


def test_commands_streaming_and_files_in_a_container(docker_image, tmp_path):
    source = tmp_path / "source"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("x = 1\n")
    (source / "pkg" / "skip.log").write_text("noise\n")
    (source / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (source / "run.sh").chmod(0o755)
    seen: list[tuple[str, float]] = []

    async def body():
        sandbox = await container(docker_image)
        try:
            echoed = await sandbox.run_command("sh", "-c", "echo $GREETING; pwd", env={"GREETING": "hi"})
            literal = await sandbox.run_command("echo", "$HOME", "a;b")
            nowhere = await sandbox.run_command("no-such-program-here")
            with pytest.raises(SandboxError, match="cwd /workspace/nope is not a folder"):
                await sandbox.run_command("true", cwd="nope")
            started = time.perf_counter()
            await sandbox.run_shell("echo first; sleep 0.6; echo second",
                                    on_stdout=lambda text: seen.append((text, time.perf_counter() - started)))
            fed = await sandbox.run_command("cat", stdin="from stdin\n")
            await sandbox.write_text("dir/note.txt", "héllo\n")
            await sandbox.write_bytes("/tmp/blob", b"\x00\x01\xff")
            await sandbox.upload_directory(source, "project", ignore=["*.log"])
            listing = await sandbox.run_shell("find project -type f | sort; ./project/run.sh")
            with pytest.raises(SandboxError, match="could not read /workspace/missing.txt in the sandbox: No such file"):
                await sandbox.read_text("missing.txt")
            await sandbox.download_directory("project", tmp_path / "back")
            return (sandbox.isolation, echoed, literal, nowhere, fed, await sandbox.read_text("dir/note.txt"),
                    await sandbox.read_bytes("/tmp/blob"), listing, await sandbox.path_exists("dir"),
                    await sandbox.path_exists("nothing"))
        finally:
            await sandbox.stop()

    isolation, echoed, literal, nowhere, fed, note, blob, listing, exists, missing = asyncio.run(body())
    assert isolation == "docker"
    assert echoed.stdout == "hi\n/workspace\n" and literal.stdout == "$HOME a;b\n"
    assert nowhere.exit_code == 127 and fed.stdout == "from stdin\n"
    assert "".join(text for text, _ in seen) == "first\nsecond\n"
    assert seen[0][0].startswith("first") and seen[0][1] < 0.5  # delivered before the command ended
    assert (note, blob, exists, missing) == ("héllo\n", b"\x00\x01\xff", True, False)
    assert listing.stdout.split() == ["project/pkg/mod.py", "project/run.sh", "ran"]
    assert (tmp_path / "back" / "pkg" / "mod.py").read_text() == "x = 1\n" and not (tmp_path / "back" / "pkg" / "skip.log").exists()


def _sleepers(ps_output: str) -> list[str]:
    return [line for line in ps_output.splitlines() if "sleep 6" in line]


def test_a_timed_out_or_cancelled_command_is_killed_with_its_whole_tree_in_the_container(docker_image):
    async def body():
        sandbox = await container(docker_image)
        try:
            # A background child, and a grandchild that leaves the session and loses its parent.
            late = await sandbox.run_shell("sleep 60 & setsid sh -c 'sleep 61 & sleep 62' & sleep 63", timeout=1)
            after_timeout = await sandbox.run_command("ps", "-eo", "pid,args")
            signal = CancelSignal()
            asyncio.get_running_loop().call_later(0.5, signal.cancel, "interrupted")
            with pytest.raises(Cancelled, match="interrupted"):
                await sandbox.run_shell("sleep 64 & setsid sleep 65 & wait", signal=signal)
            after_cancel = await sandbox.run_command("ps", "-eo", "pid,args")
            return late, after_timeout, after_cancel, sandbox._core.backend.retired
        finally:
            await sandbox.stop()

    late, after_timeout, after_cancel, retired = asyncio.run(body())
    assert late.timed_out and late.exit_code is None
    assert _sleepers(after_timeout.stdout) == [] and _sleepers(after_cancel.stdout) == [], after_cancel.stdout
    assert retired is None  # confirmed gone: the container stays usable


def test_a_missing_image_that_cannot_be_pulled_is_a_clear_error(docker_image):
    async def test(t):
        await t.send("never sent")

    missing = f"assay-test/not-built-here:{uuid.uuid4().hex[:8]}"
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=docker_sandbox(image=missing)))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-create-failed"
    assert f"image '{missing}' is not on this machine and could not be pulled" in result.error["message"]
    assert "docker_sandbox(context=…)" in result.error["message"]


def test_a_dockerfile_is_built_once_and_a_failing_build_says_why(tmp_path, docker_image):
    (tmp_path / "Dockerfile").write_text(f"FROM {docker_image}\nRUN echo built > /built.txt\n")
    layer = docker_sandbox(context=tmp_path)

    async def test(t):
        t.check(await t.sandbox.read_text("/built.txt"), equals("built\n"))

    assert run_one_linked(sandbox_agent(), define_eval(test, sandbox=layer)).verdict == "passed"
    started = time.perf_counter()
    assert run_one_linked(sandbox_agent(), define_eval(test, sandbox=layer)).verdict == "passed"
    assert time.perf_counter() - started < 10  # the cache, not a second build
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "Dockerfile").write_text(f"FROM {docker_image}\nRUN echo about to fail && exit 3\n")
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=docker_sandbox(context=broken)))
    assert result.error["code"] == "sandbox-create-failed"
    assert f"building {broken / 'Dockerfile'} failed" in result.error["message"]
    assert "about to fail" in result.error["message"]


def test_a_dockerfile_inside_the_context_and_relative_paths_are_the_eval_files(tmp_path, docker_image, monkeypatch):
    """`dockerfile="sub/Dockerfile"` built the context's own Dockerfile (the folder was dropped), and a relative
    `context=` was the shell's folder's, so a run from elsewhere (`--project`) built something else or failed."""
    project = tmp_path / "project"
    (project / "img" / "sub").mkdir(parents=True)
    (project / "img" / "Dockerfile").write_text(f"FROM {docker_image}\nRUN echo top > /which.txt\n")
    (project / "img" / "sub" / "Dockerfile").write_text(f"FROM {docker_image}\nRUN echo sub > /which.txt\n")
    eval_file = project / "evals" / "which_eval.py"
    eval_file.parent.mkdir()
    eval_file.write_text("from assay.agent.sandbox.docker import docker_sandbox\n"
                         "LAYER = docker_sandbox(context='../img', dockerfile='sub/Dockerfile')\n")
    monkeypatch.chdir(tmp_path)  # not the eval file's folder
    namespace = runpy.run_path(str(eval_file))

    async def test(t):
        t.check(await t.sandbox.read_text("/which.txt"), equals("sub\n"))

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=namespace["LAYER"]))
    assert result.verdict == "passed", result.error


@pytest.mark.parametrize("options", [{"network_mode": "no-such-network"}, {"user": "no-such-user"}])
def test_a_container_that_cannot_start_is_sandbox_create_failed(docker_image, options):
    """The container starts in the background; its start failing surfaced where it was first used (the ledger's
    baseline) as the eval's own exception, pointing at the eval's line."""
    async def test(t):
        await t.send("echo hi")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=docker_sandbox(image=docker_image, **options)))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-create-failed", result.error
    assert result.error["message"].startswith("docker sandbox could not be created: the container could not be started")


def test_a_misspelt_network_mode_says_what_it_takes_and_which_was_meant(docker_image):
    """`network_mode="nnone"` said only the daemon's "network nnone not found"."""
    async def test(t):
        await t.send("echo hi")

    layer = docker_sandbox(image=docker_image, network_mode="nnone")
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=layer))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-create-failed", result.error
    assert result.error["message"].endswith(
        "network nnone not found; network_mode takes none, bridge, host or the name of a network `docker network ls` "
        "shows; did you mean 'none'?"), result.error["message"]


def test_a_build_source_that_is_not_there_is_said_when_the_eval_is_defined(tmp_path):
    with pytest.raises(ConfigError, match=f"docker_sandbox: the build context {tmp_path / 'nope'} does not exist"):
        docker_sandbox(context=tmp_path / "nope")
    with pytest.raises(ConfigError, match=f"docker_sandbox: no Dockerfile at {tmp_path / 'Dockerfile.dev'}"):
        docker_sandbox(context=tmp_path, dockerfile="Dockerfile.dev")
    with pytest.raises(SandboxError, match=r"needs image=… or a Dockerfile \(context=…, dockerfile=…\)$"):
        docker_sandbox()


def test_no_network_unless_asked(docker_image):
    script = "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"

    async def body():
        interfaces = []
        for options in ({}, {"network_mode": "host"}):
            sandbox = await container(docker_image, **options)
            try:
                interfaces.append((await sandbox.run_shell(script)).stdout.split())
            finally:
                await sandbox.stop()
        return interfaces

    isolated, host = asyncio.run(body())
    assert isolated == ["lo"]
    assert set(host) > {"lo"}


def test_limits_contain_a_fork_bomb_and_a_memory_hog_is_killed_and_reported(docker_image):
    """A fork bomb stops at 64 processes and its tree is killed on time; a command that allocates 2 GiB is
    killed at the 256 MiB limit and the check on it says so: a failed attempt, not an error."""
    async def test(t):
        cgroup = "/sys/fs/cgroup" if await t.sandbox.path_exists("/sys/fs/cgroup/pids.max") else "/sys/fs/cgroup/pids"
        # The classic bomb, under a leader that waits: the timeout must kill every copy, with no pid to spare.
        bomb = asyncio.ensure_future(t.sandbox.run_shell("bomb() { bomb | bomb & }; bomb; sleep 30", timeout=3))
        await asyncio.sleep(1.5)
        # Read with no shell in between: while the bomb holds every pid, a shell could not fork `cat`.
        counted = await t.sandbox.run_command("cat", f"{cgroup}/pids.max", f"{cgroup}/pids.current")
        limit, current = counted.stdout.split()
        t.check(limit, equals("64")).label("the pids limit")
        # At most one over: `cat` itself, which `docker exec` moves into the full cgroup (a move is not a fork).
        t.check(int(current) <= 65, equals(True)).label("the bomb stopped at it")
        t.check((await bomb).timed_out, equals(True)).label("the bomb timed out")
        left = await t.sandbox.run_command("ps", "-eo", "args", "--no-headers")
        t.check(left.stdout.splitlines(), equals(["/sbin/docker-init -- tail -f /dev/null", "tail -f /dev/null",
                                                  "ps -eo args --no-headers"])).label("its tree is gone")
        hog = await t.sandbox.run_command("python3", "-c", "block = bytearray(2 << 30); print('survived')")
        t.check(hog.exit_code, equals(137))
        t.check(hog.killed, includes("out of memory")).label("killed for memory")
        t.check(hog, command_succeeded()).label("the hog")
        with pytest.raises(SandboxCommandError, match=r"was killed \(out of memory: .*256 MiB\), exit code 137\)"):
            await t.sandbox.run_command_or_raise("python3", "-c", "bytearray(2 << 30)")
        t.check((await t.sandbox.run_command("echo", "still here")).stdout, equals("still here\n"))

    layer = docker_sandbox(image=docker_image, memory="256m", pids_limit=64, cpus=1)
    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=layer))
    statuses = {a.get("label") or str(index): (a["status"], a.get("reason")) for index, a in enumerate(result.assertions)}
    assert result.error is None and result.verdict == "failed" and result.failing == ["the hog"], (result.error, statuses)
    assert [status for status, _ in statuses.values()] == ["matched"] * 6 + ["mismatched", "matched"], statuses
    assert "exited with 137: [assay] killed: out of memory: the kernel killed it at the container's memory limit " \
           "(256 MiB)" in statuses["the hog"][1]
    logged = [entry for entry in result.sandbox["commands"] if entry.get("killed")]
    assert logged and logged[0]["killed"] == "out of memory: the kernel killed it at the container's memory limit (256 MiB)"


def test_the_container_is_removed_after_a_pass_a_failure_and_a_timeout(docker_image, sandbox_dir):
    async def send(turn_input, ctx):
        if turn_input.text == "stall":
            await ctx.sandbox.run_shell("sleep 60")
        return Turn([message("done")])

    async def passes(t):
        await t.send("hello")

    async def fails(t):
        await t.send("hello")
        t.check(1, equals(2))

    async def stalls(t):
        await t.send("stall")

    template = docker_sandbox(image=docker_image)
    outcome = run_linked(sandbox_agent(send), {
        "passes": define_eval(passes, sandbox=template), "fails": define_eval(fails, sandbox=template),
        "stalls": define_eval(stalls, sandbox=template, timeout=3),
    })
    verdicts = {result.eval_id: (result.verdict, (result.error or {}).get("code")) for result in outcome.results}
    assert verdicts == {"passes": ("passed", None), "fails": ("failed", None), "stalls": ("errored", "timeout")}
    ids = {result.sandbox["sandbox_id"] for result in outcome.results}
    assert ids and not [c for c in docker_containers() if c.labels["assay.sandbox"] in ids]
    assert no_sandbox_left(sandbox_dir)


def test_a_tmpfs_workdir_holds_uploads_writes_and_the_ledger(docker_image, tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "calc.py").write_text("def add(a, b):\n    return a - b\n")

    async def send(turn_input, ctx):
        await ctx.sandbox.run_shell_or_raise("sed -i 's/a - b/a + b/' calc.py && echo new > added.txt")
        return Turn([message("fixed")])

    async def test(t):
        mounted = await t.sandbox.run_shell("grep ' /workspace ' /proc/mounts")
        t.check(mounted.stdout, includes("tmpfs"))
        await t.send("fix it")
        t.sandbox.changed_paths(["calc.py", "added.txt"])
        t.sandbox.file_changed("calc.py", before=includes("a - b"), after=includes("a + b"))
        t.check(await t.sandbox.read_text("added.txt"), equals("new\n"))

    from assay.agent.sandbox import upload

    layer = docker_sandbox(image=docker_image, tmpfs_workdir=True).prepare(upload(tmp_path / "repo"))
    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=layer))
    assert result.verdict == "passed", (result.error, result.assertions)


def test_a_window_opening_with_nothing_done_since_the_last_snapshot_costs_no_round_trip():
    """In a container only the sandbox's own commands and writes reach the workdir: a window that opens
    with none since the last snapshot starts from it (each snapshot is an exec, tens of milliseconds)."""
    from assay.agent.sandbox.ledger import ChangeLedger

    snapshots: list[str | None] = []

    class CountingGit:
        async def prepare(self, run):
            return False

        async def snapshot(self, add, since, limit):
            snapshots.append(since)
            return 0, f"0 tree{len(snapshots)}\n".encode(), b""

    touches = [0]

    async def attempt():
        ledger = ChangeLedger(CountingGit(), touches=lambda: touches[0])
        await ledger.start()  # the baseline
        await ledger.open_window("turn1", 0, 1)  # nothing since: the baseline's tree
        touches[0] += 1  # the agent runs a command
        await ledger.close_window()
        await ledger.open_window("turn2", 0, 2)  # the eval did nothing between the sends
        await ledger.close_window()
        touches[0] += 1  # the eval writes a file before the third send
        await ledger.open_window("turn3", 0, 3)
        return ledger.windows

    windows = asyncio.run(attempt())
    assert snapshots == [None, "tree1", "tree2", None]  # baseline, close 1, close 2, open 3 (not opens 1 and 2)
    assert [(window.start, window.end) for window in windows] == [("tree1", "tree2"), ("tree2", "tree3")]


def test_a_snapshot_whose_output_the_daemon_lost_is_taken_again(tmp_path):
    """Docker's exec can lose a short command's output (moby#27289; seen in the 50-attempt burst): the ledger
    takes that snapshot again, and output lost twice is a ledger failure (file assertions unavailable), never
    an exception in the eval. Real git, in a local sandbox whose exec drops the first outputs."""
    from assay.agent.sandbox.interface import RawOutput
    from assay.agent.sandbox.ledger import ChangeLedger, ExecGit
    from assay.agent.sandbox.local import LocalProvider

    class LosingOutput:
        def __init__(self, backend, losses):
            self.backend, self.losses, self.workdir = backend, losses, backend.workdir

        async def exec(self, argv, **options):
            raw = await self.backend.exec(argv, **options)
            if "ledger-snapshot" in argv and self.losses > 0:
                self.losses -= 1
                return RawOutput(0, b"", raw.stderr, raw.duration_seconds)
            return raw

    async def baseline(losses):
        backend = await LocalProvider(isolation="none").create(CreateRequest(f"lost-{losses}", base_dir=tmp_path))
        try:
            await backend.write_bytes(f"{backend.workdir}/a.txt", b"a\n")
            ledger = ChangeLedger(ExecGit(LosingOutput(backend, losses), f"{backend.root}/ledger"))
            return await ledger.start(), ledger.failure
        finally:
            await backend.stop()

    tree, failure = asyncio.run(baseline(1))
    assert failure is None and tree and len(tree) == 40
    tree, failure = asyncio.run(baseline(2))
    assert tree is None and failure == "git snapshot: its output was lost or cut (0 bytes)"


def test_a_program_that_is_not_there_is_127_and_names_no_wrapper(docker_image):
    """It said `/tmp/.assay-exec-<token>: 1: exec: NAME: not found`: the pidfile the wrapper shell was given as $0."""
    async def body():
        sandbox = await container(docker_image)
        try:
            return await sandbox.run_command("no-such-program-here")
        finally:
            await sandbox.stop()

    missing = asyncio.run(body())
    assert missing.exit_code == 127 and "no-such-program-here: not found" in missing.stderr, missing.stderr
    assert ".assay-exec" not in missing.stderr


def test_a_command_that_prints_a_lot_keeps_only_the_output_limit_as_locally(docker_image):
    """A container's command kept every byte it printed (a 2 GB log held in assay's memory), where a local
    one keeps the first OUTPUT_LIMIT_BYTES of each stream; the callbacks still see all of it."""
    from assay.agent.sandbox.interface import OUTPUT_LIMIT_BYTES

    seen = [0]

    async def body():
        sandbox = await container(docker_image)
        try:
            return await sandbox.run_shell(f"head -c {OUTPUT_LIMIT_BYTES + 5_000_000} /dev/zero | tr '\\0' x; "
                                           "head -c 100 /dev/zero >&2; echo done",
                                           on_stdout=lambda text: seen.__setitem__(0, seen[0] + len(text)))
        finally:
            await sandbox.stop()

    printed = asyncio.run(body())
    assert printed.exit_code == 0 and len(printed.stdout) == OUTPUT_LIMIT_BYTES and set(printed.stdout) == {"x"}
    assert len(printed.stderr) == 100 and seen[0] == OUTPUT_LIMIT_BYTES + 5_000_000 + len("done\n")
