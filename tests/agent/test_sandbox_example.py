"""The bundled sandbox example (examples/agent/sandbox): a repository with a failing test, a deterministic
coding agent that fixes it in a sandbox, graded on the diff and on the tests passing afterwards; the same
project, unchanged, in a container with `assay agent run --sandbox docker:IMAGE`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.agent.sandbox.registry import list_entries
from containers import BASE_IMAGE, docker_containers, docker_image  # noqa: F401  (the fixture)
from sandbox_helpers import sandbox_dir  # noqa: F401

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent" / "sandbox"


def test_the_example_agent_fixes_the_failing_test_and_every_assertion_holds(tmp_path, sandbox_dir):
    project = tmp_path / "coding"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json", "--quiet"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    attempts = [json.loads(line)["attempt"] for line in done.stdout.splitlines() if json.loads(line)["type"] == "attempt"]
    assert len(attempts) == 1
    attempt = attempts[0]
    assert attempt["verdict"] == "passed"
    assert [(a["kind"], a["status"]) for a in attempt["assertions"]] == [
        ("check", "matched"), ("called_tool", "matched"), ("changed_paths", "matched"), ("file_changed", "matched"),
        ("not_in_diff", "matched"), ("check", "matched"),
    ]
    window = attempt["sandbox"]["file_changes"]["windows"][0]
    assert [change["path"] for change in window["changes"]] == ["calc.py"]
    assert "-    return a - b\n+    return a + b" in window["changes"][0]["diff"]
    assert list(sandbox_dir.iterdir()) == []  # nothing kept, nothing left behind (the pack cache went at exit)
    assert (EXAMPLE / "fixtures" / "calculator" / "calc.py").read_text().count("a - b") == 1  # the fixture is untouched


def test_a_remote_worker_links_the_sandbox_of_the_attempts_it_is_sent(tmp_path, sandbox_dir):
    """What a Ray worker does with an attempt (the worker side, in process): without linking, a
    sandbox eval errors there with "not linked" while the same eval passes locally."""
    import asyncio

    from assay.agent.discovery import discover_evals, discover_experiments
    from assay.agent.plan import AttemptRequest
    from assay.agent.remote_worker import AgentWorker
    from assay.agent.run_options import RunOptions

    project = tmp_path / "coding"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    [experiment] = discover_experiments(project)
    [entry] = discover_evals(project)

    async def two_attempts():
        worker = AgentWorker(str(project), RunOptions(handle_sigint=False), keep_sandbox="all")
        try:
            return [(await worker.call(AttemptRequest(experiment.id, entry.id, ordinal))).result for ordinal in (0, 1)]
        finally:
            await worker.close()

    results = asyncio.run(two_attempts())
    assert [(result.ordinal, result.verdict, result.error) for result in results] == [(0, "passed", None), (1, "passed", None)]
    assert all(result.sandbox["file_changes"]["windows"][0]["changes"][0]["path"] == "calc.py" for result in results)
    assert len(list_entries(sandbox_dir)) == 2  # --keep-sandbox reached the worker: both were kept


# -- the same example in a container: `--sandbox docker:IMAGE` swaps the eval's template ------------------

def _example_plan(project, sandbox=None):
    from assay.agent.discovery import discover_evals, discover_experiments
    from assay.agent.plan import build_plan, link_plan

    [experiment] = discover_experiments(project)
    return link_plan(build_plan([experiment], {experiment.id: discover_evals(project)}), sandbox=sandbox)


def test_the_sandbox_option_swaps_the_template_and_is_part_of_the_identity(tmp_path):
    from assay.agent.identity import IdentityBuilder, identity_changes
    from assay.agent.sandbox.docker import DockerProvider
    from assay.agent.sandbox.linking import sandbox_override
    from assay.errors import UsageError

    project = tmp_path / "coding"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    [local_slot] = _example_plan(project)
    [docker_slot] = _example_plan(project, f"docker:{BASE_IMAGE}")
    local_binding = local_slot.sandbox
    docker_binding = docker_slot.sandbox
    assert isinstance(docker_binding.provider, DockerProvider) and docker_binding.provider.image == BASE_IMAGE
    assert docker_binding.layers[0].prepares == local_binding.layers[0].prepares  # its upload and git init stay
    assert docker_binding.template_owner == "eval"
    before, after = IdentityBuilder(project).of(local_slot), IdentityBuilder(project).of(docker_slot)
    assert before.components["sandbox"] != after.components["sandbox"]
    assert [reason.code for reason in identity_changes(before, after)] == ["sandbox-changed"]
    assert sandbox_override("local:none").isolation == "none"
    for bad in ("docker", "docker:", "podman:x", "local:chroot"):
        with pytest.raises(UsageError, match="--sandbox takes local, local:bubblewrap, local:none or docker:IMAGE"):
            sandbox_override(bad)


def test_a_remote_worker_runs_the_example_in_the_container_the_sandbox_option_names(docker_image, tmp_path, sandbox_dir):
    import asyncio

    from assay.agent.discovery import discover_evals, discover_experiments
    from assay.agent.plan import AttemptRequest
    from assay.agent.remote_worker import AgentWorker
    from assay.agent.run_options import RunOptions

    project = tmp_path / "coding"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    [experiment] = discover_experiments(project)
    [entry] = discover_evals(project)

    async def one_attempt():
        worker = AgentWorker(str(project), RunOptions(handle_sigint=False), sandbox=f"docker:{docker_image}")
        try:
            return (await worker.call(AttemptRequest(experiment.id, entry.id, 0))).result
        finally:
            await worker.close()

    result = asyncio.run(one_attempt())
    assert (result.verdict, result.error) == ("passed", None)
    assert (result.sandbox["provider"], result.sandbox["isolation"], result.sandbox["workdir"]) == \
        ("docker", "docker", "/workspace")
    assert [change["path"] for change in result.sandbox["file_changes"]["windows"][0]["changes"]] == ["calc.py"]


def test_the_example_runs_unchanged_in_a_container_and_carry_knows_the_provider_changed(docker_image, tmp_path,
                                                                                          sandbox_dir):
    project = tmp_path / "coding"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}

    def run(*options):
        done = subprocess.run(
            [sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json", "--quiet", *options],
            capture_output=True, text=True, timeout=180, env=environment,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        return [line["attempt"] for line in lines if line["type"] == "attempt"]

    [local] = run()
    [docker] = run("--sandbox", f"docker:{docker_image}")
    assert (local["verdict"], local["sandbox"]["provider"]) == ("passed", "local")
    assert (docker["verdict"], docker["sandbox"]["provider"], docker["sandbox"]["isolation"]) == \
        ("passed", "docker", "docker")
    assert docker["decision"]["code"] == "sandbox-changed"  # not carried from the local run
    assert [(a["kind"], a["status"]) for a in docker["assertions"]] == [(a["kind"], a["status"]) for a in local["assertions"]]
    assert list(sandbox_dir.iterdir()) == [] and docker_containers(root=sandbox_dir) == []


@pytest.mark.parametrize("given,meant", [("local:bubblwrap", "local:bubblewrap"), ("locl", "local"), ("local:nne", "local:none"),
                                         ("dokcer:python:3.12", "docker:python:3.12"), ("dockr", "docker:IMAGE")])
def test_a_misspelt_sandbox_is_named_back_with_the_form_meant(given, meant):
    from assay.agent.sandbox.linking import sandbox_override
    from assay.errors import UsageError

    with pytest.raises(UsageError) as raised:
        sandbox_override(given)
    assert str(raised.value).endswith(f"got {given!r}; did you mean {meant!r}?")
