"""A folder uploaded into many sandboxes is packed once: each ledger links the pack, so its baseline
writes no object, and the snapshots stay exactly what a ledger without the pack would take."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

from sandbox_helpers import sandbox_dir  # noqa: F401

from assay.agent.sandbox import template_packs
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox.ledger import ChangeLedger, HostGit
from assay.agent.sandbox.local import LocalProvider


def _template(folder: Path) -> Path:
    for index in range(40):
        path = folder / f"pkg{index % 4}" / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"value = {index}\n")
    (folder / "data.bin").write_bytes(bytes(range(256)) * 8)
    (folder / "node_modules").mkdir()
    (folder / "node_modules" / "dependency.js").write_text("not the agent's\n")
    return folder


async def _attempt(base: Path, template: Path, *, packs: bool = True):
    backend = await LocalProvider(base_dir=base, isolation="none").create(CreateRequest(f"t-{os.urandom(4).hex()}"))
    sandbox = Sandbox(SandboxCore(backend))
    await sandbox.upload_directory(template)
    git = backend.ledger_git() if packs else HostGit(backend.ledger_dir, backend.workdir)
    ledger = ChangeLedger(git)
    await ledger.start()
    return backend, sandbox, ledger


def _loose_objects(git_dir: str) -> list[str]:
    objects = Path(git_dir) / "objects"
    return [str(path) for path in objects.glob("??/*")]


def _pack_cache(base: Path) -> Path:
    return base / f".ledger-packs-{os.getpid()}"


def test_attempts_uploading_one_folder_link_its_pack_and_take_the_baseline_a_plain_ledger_takes(tmp_path):
    template = _template(tmp_path / "template")
    base = tmp_path / "base"

    async def body():
        first, _, first_ledger = await _attempt(base, template)
        second, _, second_ledger = await _attempt(base, template)
        plain, _, plain_ledger = await _attempt(base, template, packs=False)
        return first, first_ledger, second, second_ledger, plain, plain_ledger

    first, first_ledger, second, second_ledger, plain, plain_ledger = asyncio.run(body())
    assert first_ledger.baseline == second_ledger.baseline == plain_ledger.baseline
    cached = sorted(_pack_cache(base).glob("*/objects/pack/*.pack"))
    assert len(cached) == 1
    for backend in (first, second):
        linked = list((Path(backend.ledger_dir) / "objects" / "pack").glob("*.pack"))
        assert [path.stat().st_ino for path in linked] == [cached[0].stat().st_ino]
        # Blobs and trees were all in the pack: the baseline wrote no object of its own.
        assert _loose_objects(backend.ledger_dir) == []
    assert _loose_objects(plain.ledger_dir) != []  # the trees a ledger without the pack writes


def test_a_folder_changed_after_it_was_packed_is_snapshotted_as_it_now_is(tmp_path):
    template = _template(tmp_path / "template")
    base = tmp_path / "base"

    async def body():
        await _attempt(base, template)  # packs the folder as it was
        (template / "pkg1" / "module_1.py").write_text("value = 'changed'\n")
        (template / "new.txt").write_text("added since\n")
        (template / "pkg2" / "module_2.py").unlink()
        _, sandbox, ledger = await _attempt(base, template)
        _, _, plain = await _attempt(base, template, packs=False)
        await ledger.open_window("turn1", 0, 1)
        await sandbox.write_text("pkg1/module_1.py", "value = 'the agent'\n")
        window = await ledger.close_window()
        return ledger, plain, window

    ledger, plain, window = asyncio.run(body())
    assert ledger.baseline == plain.baseline
    [change] = window.changes
    assert (change.path, change.before.text, change.after.text) == (
        "pkg1/module_1.py", "value = 'changed'\n", "value = 'the agent'\n")


def test_a_ledger_reads_its_objects_after_the_pack_cache_is_gone(tmp_path):
    template = _template(tmp_path / "template")
    base = tmp_path / "base"

    async def body():
        await _attempt(base, template)
        return await _attempt(base, template)

    backend, _, ledger = asyncio.run(body())
    shutil.rmtree(_pack_cache(base))  # what the process's exit does, as a kept sandbox outlives it
    environment = {"GIT_DIR": backend.ledger_dir, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                   "PATH": os.environ["PATH"]}
    shown = subprocess.run(["git", "show", f"{ledger.baseline}:pkg3/module_7.py"], env=environment,
                           capture_output=True, text=True)
    assert (shown.returncode, shown.stdout) == (0, "value = 7\n"), shown.stderr
    checked = subprocess.run(["git", "fsck", "--connectivity-only", "--no-dangling", ledger.baseline],
                             env=environment, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_where_links_fail_the_ledger_stores_its_own_objects(tmp_path, monkeypatch):
    template = _template(tmp_path / "template")
    base = tmp_path / "base"

    def cross_device(source, target):
        raise OSError(18, "Invalid cross-device link")

    link = os.link

    async def body():
        await _attempt(base, template)
        monkeypatch.setattr(os, "link", cross_device)
        attempt = await _attempt(base, template)
        monkeypatch.setattr(os, "link", link)  # (not undo(): that would also unset the fixture's ASSAY_SANDBOX_DIR)
        _, _, plain = await _attempt(base, template, packs=False)
        return attempt, plain

    (backend, _, ledger), plain = asyncio.run(body())
    assert ledger.failure is None and ledger.baseline == plain.baseline
    assert not any(path.stat().st_nlink > 1 for path in (Path(backend.ledger_dir) / "objects" / "pack").iterdir())


def test_a_pack_cache_left_by_a_process_that_is_gone_is_removed(tmp_path):
    template = _template(tmp_path / "template")
    base = tmp_path / "base"
    abandoned = base / f".ledger-packs-{_exited_pid()}"
    alive = base / f".ledger-packs-{os.getppid()}"
    for folder in (abandoned, alive):
        (folder / "0123456789abcdef").mkdir(parents=True)
    asyncio.run(_attempt(base, template))
    assert not abandoned.exists()
    assert alive.exists()  # another live process's cache is its own


def _exited_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_folder_holding_an_embedded_repository_is_still_packed(tmp_path):
    template = _template(tmp_path / "template")
    inner = template / "vendor" / "lib"
    inner.mkdir(parents=True)
    (inner / "lib.py").write_text("x = 1\n")
    environment = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i"]):
        subprocess.run(["git", *command], cwd=inner, env=environment, check=True)
    base = tmp_path / "base"

    async def body():
        await _attempt(base, template)
        backend, _, ledger = await _attempt(base, template)
        _, _, plain = await _attempt(base, template, packs=False)
        return backend, ledger, plain

    backend, ledger, plain = asyncio.run(body())
    assert ledger.baseline == plain.baseline
    [cached] = _pack_cache(base).glob("*/objects/pack/*.pack")  # made, the embedded commit left out
    linked = list((Path(backend.ledger_dir) / "objects" / "pack").glob("*.pack"))
    assert [path.stat().st_ino for path in linked] == [cached.stat().st_ino]
