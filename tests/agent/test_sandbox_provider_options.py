"""`local_sandbox(...)` / `docker_sandbox(...)` options with a wrong
type are refused where they are written, naming the option (not a TypeError from the first command, which
errored every attempt), and a relative `base_dir` makes sandboxes that work."""

from __future__ import annotations

import asyncio

import pytest

from assay.agent import docker_sandbox, local_sandbox
from assay.agent.sandbox.commands import SandboxError
from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox.local import LocalProvider
from assay.errors import ConfigError


@pytest.mark.parametrize("make", [local_sandbox, lambda **options: docker_sandbox(image="python:3.12", **options)])
@pytest.mark.parametrize(("env", "said"), [
    ({"RETRIES": 3}, "env maps variable names to strings (write numbers as \"1\"); got 'RETRIES': 3"),
    ({1: "a"}, "env maps variable names to strings (write numbers as \"1\"); got 1: 'a'"),
    ("A=1", "env maps variable names to strings, like env={\"LANG\": \"C.UTF-8\"}; got 'A=1'"),
    (["A=1"], "env maps variable names to strings, like env={\"LANG\": \"C.UTF-8\"}; got ['A=1']"),
])
def test_an_env_that_is_not_names_to_strings_is_refused_naming_env(make, env, said):
    with pytest.raises(SandboxError) as refused:
        make(env=env)
    assert str(refused.value).endswith(said)
    assert str(refused.value).split(" ")[0] in ("local_sandbox", "docker_sandbox")


def test_env_still_takes_strings_and_still_refuses_path():
    assert LocalProvider(env={"LANG": "C.UTF-8"}).env == {"LANG": "C.UTF-8"}
    with pytest.raises(SandboxError, match="PATH is managed by the sandbox; use path_prepend"):
        local_sandbox(env={"PATH": "/x"})


@pytest.mark.parametrize("base_dir", ["", "  ", 5])
def test_a_base_dir_that_names_no_folder_is_refused(base_dir):
    with pytest.raises(SandboxError, match="local_sandbox base_dir is the folder sandboxes are made in"):
        local_sandbox(base_dir=base_dir)


@pytest.mark.parametrize(("isolation", "said"), [
    ("bubblewrapp", "got 'bubblewrapp'; did you mean 'bubblewrap'?"),
    ("None", "got 'None'; did you mean 'none'?"),
    (True, "got True"),
])
def test_a_misspelt_isolation_says_which_was_meant(isolation, said):
    with pytest.raises(SandboxError) as refused:
        local_sandbox(isolation=isolation)
    assert str(refused.value) == f"local_sandbox isolation must be one of auto, bubblewrap, none, {said}"


@pytest.mark.parametrize(("options", "said"), [
    # bool("no") is True: a quoted value put the workspace on a memory file system without a word.
    ({"tmpfs_workdir": "no"}, "docker_sandbox tmpfs_workdir must be True or False, got 'no'"),
    # a number reached the daemon at the first attempt's build, erroring every attempt of the run
    ({"build_args": {"PYTHON": 3.12}}, "docker_sandbox build_args maps build argument names to strings"),
    ({"build_args": ["PYTHON=3.12"]}, "got ['PYTHON=3.12']"),
])
def test_docker_options_of_the_wrong_type_are_refused_where_they_are_written(options, said):
    with pytest.raises(SandboxError) as refused:
        docker_sandbox(image="python:3.12", **options)
    assert said in str(refused.value)
    assert docker_sandbox(image="python:3.12", tmpfs_workdir=True) is not None


def test_build_args_that_would_change_nothing_are_refused_naming_the_one_meant(tmp_path):
    """A misspelt build argument (or one given with `image=`, where nothing is built) built and cached the image
    with the Dockerfile's defaults, without a word: the eval then ran against an image nobody asked for."""
    (tmp_path / "Dockerfile").write_text("FROM scratch\nARG PYTHON=3.11 \\\n    EXTRAS\narg debian_release\n")
    with pytest.raises(SandboxError, match=r"build_args are for a Dockerfile build .* with image='python:3.12'"):
        docker_sandbox(image="python:3.12", build_args={"PYTHON": "3.12"})
    with pytest.raises(ConfigError) as refused:
        docker_sandbox(context=tmp_path, build_args={"PYTHN": "3.12"})
    assert f"build_args names 'PYTHN', which {tmp_path / 'Dockerfile'} does not declare with ARG; did you mean " \
           "'PYTHON'? (it declares EXTRAS, PYTHON, debian_release)" in str(refused.value)
    declared = {"PYTHON": "3.12", "EXTRAS": "x", "debian_release": "bookworm", "HTTPS_PROXY": "http://proxy:3128"}
    assert docker_sandbox(context=tmp_path, build_args=declared) is not None  # continuation lines, predefined args


def test_a_relative_base_dir_is_taken_from_the_current_folder_and_its_sandboxes_work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    provider = LocalProvider(base_dir="sandboxes", isolation="none")
    assert provider.base_dir == tmp_path / "sandboxes"

    async def write_and_read() -> bytes:
        sandbox = await provider.create(CreateRequest("a1b2c3d4e5f6"))
        try:
            await sandbox.write_bytes(f"{sandbox.workdir}/notes.txt", b"kept")  # refused as "outside" before
            return await sandbox.read_bytes(f"{sandbox.workdir}/notes.txt")
        finally:
            await sandbox.stop()

    assert asyncio.run(write_and_read()) == b"kept"


def test_an_upload_cut_short_by_a_cancellation_leaves_nothing_once_the_sandbox_is_stopped(tmp_path):
    """The copy runs in a thread (`cp -a`); a cancelled attempt (Ctrl-C, `| head -1`) went on to remove the sandbox
    while the copy still wrote into it, and part of the workspace was left behind, known to no registry."""
    import asyncio

    from assay.agent.sandbox.interface import CreateRequest
    from assay.agent.sandbox.local import LocalProvider

    source = tmp_path / "fixture"
    for folder in range(40):
        (source / f"d{folder}").mkdir(parents=True)
        for number in range(100):
            (source / f"d{folder}" / f"f{number}.txt").write_text("x" * 200)

    async def body():
        sandbox = await LocalProvider(isolation="none").create(CreateRequest("cut", base_dir=tmp_path / "base"))
        upload = asyncio.ensure_future(sandbox.upload_directory(source, sandbox.workdir, ()))
        await asyncio.sleep(0.03)
        assert not upload.done(), "the copy should still be running: make the fixture bigger"
        upload.cancel()
        with pytest.raises(asyncio.CancelledError):
            await upload
        assert await sandbox.stop()
        await asyncio.sleep(0.5)  # anything a copy still running would write
        return sandbox.root

    root = asyncio.run(body())
    assert not root.exists(), sorted(str(path) for path in root.rglob("*"))[:5]


def test_a_sandbox_factory_passed_uncalled_says_to_call_it():
    from assay.agent import Experiment, complete_evidence_coverage, define_agent
    from assay.errors import ConfigError

    async def send(turn_input, ctx):  # pragma: no cover - never sent
        raise AssertionError

    agent = define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage)
    with pytest.raises(ConfigError, match=r"got the function local_sandbox: call it, sandbox=local_sandbox\(\.\.\.\)"):
        Experiment(agent=agent, sandbox=local_sandbox)
    with pytest.raises(ConfigError, match=r"\), got int$"):
        Experiment(agent=agent, sandbox=3)


def test_a_sandbox_folder_that_cannot_be_made_names_the_setting_to_fix(tmp_path, monkeypatch):
    """ASSAY_SANDBOX_DIR naming a file errored every attempt with "…: File exists" (a Docker sandbox with
    "FileExistsError: [Errno 17]"), naming neither the variable nor what to do about it."""
    from sandbox_helpers import run_one_linked, sandbox_agent

    from assay.agent import define_eval

    taken = tmp_path / "a-file"
    taken.write_text("not a folder\n")
    monkeypatch.setenv("ASSAY_SANDBOX_DIR", str(taken))

    async def test(t):
        await t.send("never sent")

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=local_sandbox(isolation="none")))
    assert result.error["code"] == "sandbox-create-failed"
    message = result.error["message"]
    assert message.startswith("local sandbox could not be created: could not make the sandbox folder "), message
    assert message.endswith(f"{taken} is not a folder (ASSAY_SANDBOX_DIR is {taken}: point it at a folder you can "
                            "write, or unset it)"), message
    with pytest.raises(SandboxError, match=r"is not a folder \(local_sandbox\(base_dir='.*a-file'\): give it a folder"):
        asyncio.run(LocalProvider(base_dir=taken, isolation="none").create(CreateRequest("a1b2c3d4e5f6")))
