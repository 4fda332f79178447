"""The local sandbox's file operations stay in the sandbox: reads, writes, uploads and downloads, with
links an agent planted in the workspace (a real `ln -s` by a sandbox command) and paths that climb out."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from sandbox_helpers import sandbox_dir  # noqa: F401

from assay.agent.sandbox import SandboxError
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox.local import LocalProvider, bubblewrap_problem

# bubblewrap runs wherever it can; elsewhere its cases skip, saying "not installed" or "cannot make a namespace".
ISOLATIONS = ["none", pytest.param("bubblewrap", marks=pytest.mark.skipif(bubblewrap_problem() is not None,
                                                                         reason=str(bubblewrap_problem())))]


def contained(operation, *, isolation: str = "none"):
    """Run `operation(sandbox)` in a fresh local sandbox; returns what it returned, or the SandboxError."""

    async def body():
        backend = await LocalProvider(isolation=isolation).create(CreateRequest(f"t-{os.urandom(4).hex()}"))
        sandbox = Sandbox(SandboxCore(backend))
        try:
            return await operation(sandbox)
        except SandboxError as error:
            return error
        finally:
            await sandbox.stop()

    return asyncio.run(body())


@pytest.fixture
def host(tmp_path) -> Path:
    """A host folder outside every sandbox, with a file the agent must not reach."""
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "secret.txt").write_text("host secret\n")
    return folder


async def plant(sandbox: Sandbox, target: Path, link: str) -> None:
    """What an agent can do: a link in the workspace to anywhere."""
    planted = await sandbox.run_command("ln", "-s", str(target), link)
    assert planted.ok, planted.stderr


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_reading_a_host_path_or_climbing_out_with_dot_dot_is_refused_naming_the_path(isolation):
    async def read_outside(sandbox):
        errors = []
        for path in ("/etc/hostname", os.path.relpath("/etc/hostname", sandbox.workdir)):
            try:
                await sandbox.read_text(path)
            except SandboxError as error:
                errors.append(str(error))
        try:
            await sandbox.path_exists("/etc/hostname")
        except SandboxError as error:
            errors.append(str(error))
        return errors, await sandbox.path_exists("nothing-here")

    errors, missing = contained(read_outside, isolation=isolation)
    outside = "/etc/hostname: it is outside the sandbox (its workdir, home and /tmp)"
    assert errors == [f"refusing to read {outside}"] * 2 + [f"refusing to look for {outside}"]
    assert missing is False


def test_reading_or_downloading_through_a_planted_link_to_a_host_file_is_refused(host, tmp_path):
    secret = host / "secret.txt"

    async def read_through_link(sandbox):
        await plant(sandbox, secret, "leak.txt")
        errors = []
        for attempt in (lambda: sandbox.read_text("leak.txt"),
                        lambda: sandbox.download_file("leak.txt", tmp_path / "downloaded.txt")):
            try:
                await attempt()
            except SandboxError as error:
                errors.append(str(error))
        return errors, await sandbox.path_exists("leak.txt")

    errors, exists = contained(read_through_link)
    assert len(errors) == 2 and all(
        error.endswith(f"leak.txt: a link on the way leads outside the sandbox, to {secret}") for error in errors
    ), errors
    assert errors[0].startswith("refusing to read ") and exists is True  # the link itself is there to see
    assert not (tmp_path / "downloaded.txt").exists()


def test_writing_through_a_planted_link_is_refused_and_the_host_file_is_untouched(host):
    async def write_through_link(sandbox):
        await plant(sandbox, host / "secret.txt", "leak.txt")
        await plant(sandbox, host, "out")
        errors = []
        for path in ("leak.txt", "out/new.txt"):
            try:
                await sandbox.write_text(path, "overwritten")
            except SandboxError as error:
                errors.append(str(error))
        return errors

    errors = contained(write_through_link)
    assert [error.split(": ", 1)[1] for error in errors] == [
        f"a link on the way leads outside the sandbox, to {host / 'secret.txt'}",
        f"a link on the way leads outside the sandbox, to {host / 'new.txt'}",
    ]
    assert (host / "secret.txt").read_text() == "host secret\n" and not (host / "new.txt").exists()


@pytest.mark.parametrize("ignore", [(), ("*.log",)])  # the `cp -a` path and the copytree path
def test_upload_directory_refuses_to_follow_a_planted_file_or_folder_link_out(host, tmp_path, ignore):
    upload = tmp_path / "upload"
    (upload / "out").mkdir(parents=True)
    (upload / "secret.txt").write_text("uploaded\n")
    (upload / "out" / "new.txt").write_text("uploaded\n")

    async def upload_over_links(sandbox, link_name, target):
        await plant(sandbox, target, link_name)
        await sandbox.upload_directory(upload, ".", ignore=list(ignore))

    file_link = contained(lambda sandbox: upload_over_links(sandbox, "secret.txt", host / "secret.txt"))
    folder_link = contained(lambda sandbox: upload_over_links(sandbox, "out", host))
    assert isinstance(file_link, SandboxError) and isinstance(folder_link, SandboxError)
    assert str(file_link).startswith("refusing to upload into ") and str(file_link).endswith(
        f"secret.txt: a link on the way leads outside the sandbox, to {host / 'secret.txt'}")
    assert str(folder_link).endswith(f"/out: a link on the way leads outside the sandbox, to {host}")
    assert (host / "secret.txt").read_text() == "host secret\n" and not (host / "new.txt").exists()


def test_download_directory_refuses_a_folder_link_out_and_a_link_out_inside_it(host, tmp_path):
    async def download_links(sandbox):
        await plant(sandbox, host, "hostdir")
        await sandbox.write_text("results/ok.txt", "fine\n")
        await plant(sandbox, host / "secret.txt", "results/leak.txt")
        errors = []
        for path in ("hostdir", "results"):
            try:
                await sandbox.download_directory(path, tmp_path / f"back-{path}")
            except SandboxError as error:
                errors.append(str(error))
        return errors

    errors = contained(download_links)
    assert len(errors) == 2 and all(error.startswith("refusing to download ") for error in errors), errors
    assert errors[0].endswith(f"hostdir: a link on the way leads outside the sandbox, to {host}")
    assert errors[1].endswith(f"leak.txt: a link on the way leads outside the sandbox, to {host / 'secret.txt'}")
    assert not (tmp_path / "back-hostdir" / "secret.txt").exists() and not any((tmp_path / "back-results").iterdir())


def test_links_that_stay_inside_the_sandbox_are_followed_as_before(tmp_path):
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / "copied.txt").write_text("uploaded\n")

    async def inside(sandbox):
        await sandbox.write_text("real/notes.txt", "notes\n")
        await sandbox.write_text("real/copy-target.txt", "before the upload\n")
        await plant(sandbox, Path(sandbox.workdir) / "real", "docs")
        await plant(sandbox, Path(sandbox.workdir) / "real" / "notes.txt", "alias.txt")
        await plant(sandbox, Path(sandbox.workdir) / "real" / "copy-target.txt", "copied.txt")
        read = await sandbox.read_text("docs/notes.txt")
        await sandbox.write_text("alias.txt", "edited\n")
        await sandbox.upload_directory(upload, ".")  # written through the link, inside
        await sandbox.download_directory("real", tmp_path / "back")
        return read, await sandbox.read_text("real/notes.txt"), await sandbox.read_text("real/copy-target.txt")

    assert contained(inside) == ("notes\n", "edited\n", "uploaded\n")
    assert (tmp_path / "back" / "notes.txt").read_text() == "edited\n"
