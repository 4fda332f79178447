"""What a newcomer's slips did with sandboxes, found by following docs/agent/sandboxes.md as written, each
through the real `assay` command line on a real project: an empty sandbox id (`sandbox stop "$ID"` with an
unset variable) removed the only kept sandbox; `shell([...])`, `command([...])` and `upload(None)` were taken
when the file loaded and failed in every attempt (or as a TypeError); a misspelt fixture or Docker image said
nothing of the name meant; a `define_sandbox` whose create() returned no sandbox stopped the whole run with
an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from containers import BASE_IMAGE, docker_image  # noqa: F401  (the fixture)
from sandbox_helpers import sandbox_dir  # noqa: F401

FIXER = """
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_sandbox_agent, message


async def send(input, ctx):
    await ctx.sandbox.write_text("calc.py", "def add(a, b):\\n    return a + b\\n")
    return Turn([message("Fixed add().")])


fixer = Experiment(agent=define_sandbox_agent(name="fixer", send=send, evidence_coverage=complete_evidence_coverage))
"""

EVAL = """
from assay.agent import define_eval, docker_sandbox, local_sandbox
from assay.agent.sandbox import command, define_sandbox, shell, upload

repository = {template}


@define_eval(sandbox=repository)
async def fix(t):
    await t.send("fix it")
    t.sandbox.changed_paths(["calc.py"])
"""


def _project(root: Path, template: str = 'local_sandbox().prepare(upload("../fixtures/calculator"))') -> Path:
    for name, text in {
        "pyproject.toml": "[tool.assay]\nname = 'stranger'\ntimeout = 60\n",
        "experiments/fixer.py": FIXER,
        "evals/fix_eval.py": EVAL.format(template=template),
        "fixtures/calculator/calc.py": "def add(a, b):\n    return a - b\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _assay(tmp_path: Path, *arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, env=env,
                          timeout=120, check=False, cwd=cwd)


def _attempts(done: subprocess.CompletedProcess[str]) -> list[dict]:
    return [json.loads(line)["attempt"] for line in done.stdout.splitlines() if json.loads(line)["type"] == "attempt"]


def test_an_empty_sandbox_id_is_refused_rather_than_taken_as_the_prefix_of_every_id(tmp_path, sandbox_dir):
    """`assay agent sandbox stop ""` removed the only kept sandbox (an empty prefix starts every id)."""
    project = _project(tmp_path / "project")
    kept = _assay(tmp_path, "agent", "run", "--project", str(project), "--keep-sandbox=all", "--json", "--quiet")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    [sandbox_id] = [entry.name for entry in sandbox_dir.iterdir() if not entry.name.startswith(".")]
    for command in (["stop", ""], ["diff", ""], ["enter", " "], ["stop", sandbox_id, ""]):
        refused = _assay(tmp_path, "agent", "sandbox", *command)
        assert refused.returncode == 2, (command, refused.stdout, refused.stderr)
        assert refused.stderr.startswith("Error: the sandbox id is empty"), refused.stderr
        assert "`assay agent sandbox list` shows them" in refused.stderr and "Traceback" not in refused.stderr
        assert (sandbox_dir / sandbox_id).is_dir(), command  # still there
    path = _assay(tmp_path, "agent", "sandbox", "diff", sandbox_id[:4], "--path", "")
    assert path.returncode == 2 and path.stdout == "", path.stdout
    assert path.stderr.startswith("Error: --path is empty;"), path.stderr
    assert _assay(tmp_path, "agent", "sandbox", "stop", sandbox_id[:4]).returncode == 0
    assert not (sandbox_dir / sandbox_id).exists()


@pytest.mark.parametrize(("template", "said"), [
    ('local_sandbox().prepare(upload("../fixtures/calculator"), shell(["git", "init"]))',
     "shell takes a script, one string like shell(\"make test\"); for an argv, command('git', 'init'); got ['git', 'init']"),
    ('local_sandbox().prepare(upload("../fixtures/calculator"), command(["git", "init"]))',
     "command takes the program and its arguments one by one, like command('git', 'init'); got a list ['git', 'init']"),
    ('local_sandbox().prepare(upload("../fixtures/calculator"), ["git", "init"])',
     "like command('git', 'init') for that argv, got list ['git', 'init']"),
    ('local_sandbox().prepare(upload(None))', "upload takes a host file or folder, like upload(\"../fixtures/repo\"); got None"),
    ('local_sandbox().prepare(upload("../fixtures/calculater"))',
     "upload: ../fixtures/calculater does not exist (looked for {project}/fixtures/calculater; did you mean "
     "'{project}/fixtures/calculator'?); a relative path is taken from the folder of the file that calls upload(...)"),
    ('local_sandbox().prepare(upload("../fixture/calculator"))',
     "(looked for {project}/fixture/calculator; did you mean '{project}/fixtures/calculator'?)"),
    ('docker_sandbox(image=3)', "docker_sandbox image must be an image's name, like image=\"python:3.12\"; got 3"),
    ('docker_sandbox(context="../fixtures/calculatr")',
     "the build context {project}/fixtures/calculatr does not exist; did you mean '{project}/fixtures/calculator'?"),
])
def test_a_misspelt_prepare_step_upload_or_image_is_one_error_when_the_file_loads(tmp_path, sandbox_dir, template, said):
    """Each was taken when the eval file loaded: the run then errored every attempt in the sandbox
    (`run_shell takes a script`, a program named "['git', 'init']"), or stopped with a bare TypeError; a
    misspelt folder named only the path that was not there."""
    project = _project(tmp_path / "project", template).resolve()
    done = _assay(tmp_path, "agent", "run", "--project", str(project))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "fix_eval.py" in lines[0], done.stderr
    assert said.format(project=project) in lines[0], lines[0]
    assert "Traceback" not in done.stderr and not sandbox_dir.exists()


def test_a_custom_provider_whose_create_returns_no_sandbox_errors_its_attempt_not_the_run(tmp_path, sandbox_dir):
    """`define_sandbox(create=...)` returning something else (a number, a backend with no workdir) ended the
    whole run with `Error: internal error: AttributeError: 'int' object has no attribute 'workdir'`."""
    project = _project(tmp_path / "project", 'define_sandbox(name="vm", create=lambda request: 3)')
    done = _assay(tmp_path, "agent", "run", "--project", str(project), "--json", "--quiet")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    [attempt] = _attempts(done)
    assert attempt["verdict"] == "errored" and attempt["error"]["code"] == "sandbox-create-failed", attempt["error"]
    assert attempt["error"]["message"] == (
        "vm sandbox lacks workdir, exec, read_bytes, write_bytes, stop: its create() must return an object with workdir, "
        "exec, read_bytes, write_bytes and stop; it returned a value of type int (see define_sandbox)")


def test_a_misspelt_image_names_the_one_this_machine_has(docker_image, tmp_path, sandbox_dir):
    """An image that is not here said only that it could not be pulled (and how to build it), not that the
    machine has the image meant; a name Docker refuses was told to be built with `docker build -t` that name."""
    misspelt = BASE_IMAGE[:-2] + BASE_IMAGE[-1] + BASE_IMAGE[-2]  # bookworm -> bookwomr
    project = _project(tmp_path / "project")
    done = _assay(tmp_path, "agent", "run", "--project", str(project), "--json", "--quiet", "--sandbox", f"docker:{misspelt}")
    [attempt] = _attempts(done)
    assert attempt["error"]["code"] == "sandbox-create-failed"
    assert f"image '{misspelt}' is not on this machine" in attempt["error"]["message"]
    assert f"(did you mean '{BASE_IMAGE}'? this machine has it)" in attempt["error"]["message"], attempt["error"]
    upper = _assay(tmp_path, "agent", "run", "--project", str(project), "--json", "--quiet", "--sandbox", "docker:NoSuch/Image")
    [attempt] = _attempts(upper)
    assert "image 'NoSuch/Image' is not a name Docker accepts (invalid reference format" in attempt["error"]["message"]
    assert "docker build -t NoSuch/Image" not in attempt["error"]["message"]


def test_changed_paths_given_one_string_says_how_to_write_the_list(tmp_path, sandbox_dir):
    """`changed_paths("calc.py")` said only "changed_paths takes a list of paths"."""
    project = _project(tmp_path / "project")
    eval_file = project / "evals" / "fix_eval.py"
    eval_file.write_text(eval_file.read_text().replace('changed_paths(["calc.py"])', 'changed_paths("calc.py")'))
    done = _assay(tmp_path, "agent", "run", "--project", str(project), "--json", "--quiet")
    [attempt] = _attempts(done)
    assert attempt["error"]["code"] == "authoring-error", attempt["error"]
    assert attempt["error"]["message"].startswith(
        "changed_paths takes a list of paths, like changed_paths(['calc.py']); got the string 'calc.py'"), attempt["error"]


def test_an_unusable_sandbox_folder_is_one_error_before_the_run_not_one_per_attempt(tmp_path):
    """ASSAY_SANDBOX_DIR naming a file errored every sandboxed attempt (exit 1 after a whole run, a checkpoint to
    resume); now the run is refused first (exit 2, no checkpoint), and a run whose sandboxed attempts are all
    carried needs no folder."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[2] / "docs" / "examples" / "sandbox", project)
    blocker = tmp_path / "afile"
    blocker.write_text("")
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}

    def run(sandboxes: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--quiet"],
                              capture_output=True, text=True, timeout=120,
                              env={**environment, "ASSAY_SANDBOX_DIR": str(sandboxes)})

    refused = run(blocker)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr == (f"Error: sandboxes are made and recorded in {blocker}, but it is a file, not a folder "
                              f"(ASSAY_SANDBOX_DIR is {blocker}: point it at a folder you can write, or unset it)\n")
    assert refused.stdout == "" and not (project / ".assay" / "runs" / "checkpoints").exists()
    assert run(tmp_path / "sandboxes").returncode == 0
    carried = run(blocker)  # every sandboxed attempt carried: no sandbox is made
    assert carried.returncode == 0 and "carried" in carried.stdout, carried.stdout + carried.stderr
