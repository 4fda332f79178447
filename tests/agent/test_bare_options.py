"""`assay agent run --resume` with no checkpoint named says which run it could continue, as the command that
continues it (click said only "Option '--resume' requires an argument."); a word after a bare `--keep-sandbox` or
`--rerun` that selects no experiment names the option it followed. Real processes."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from agent_projects import replying_project

ERRORS = "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    raise RuntimeError('the agent is down')\n"


def _assay(*arguments: str, cwd: Path, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, "ASSAY_STORE": str(store)})


def test_a_bare_resume_names_the_latest_unfinished_run_as_the_command_that_continues_it(tmp_path: Path) -> None:
    project, store, elsewhere = replying_project(tmp_path / "project"), tmp_path / "assay.db", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / "evals" / "down_eval.py").write_text(ERRORS)

    dry = _assay("agent", "run", "--project", str(project), "--dry", "--resume", cwd=elsewhere, store=store)
    assert dry.returncode == 2 and dry.stderr.strip() == (  # as `--dry --resume ID` says, not "no unfinished run"
        "Error: --dry plans a new invocation; a --resume continues its checkpoint's plan"), dry.stderr
    nothing = _assay("agent", "run", "--project", str(project), "--resume", cwd=elsewhere, store=store)
    assert nothing.returncode == 2, nothing.stderr
    assert nothing.stderr.strip() == ("Error: --resume needs the checkpoint to continue, its folder or id; this project "
                                      "has no unfinished run to continue")

    errored = _assay("agent", "run", "--project", str(project), cwd=elsewhere, store=store)
    assert errored.returncode == 1, errored.stdout + errored.stderr  # an errored attempt keeps the checkpoint open
    [checkpoint] = (project / ".assay" / "runs" / "checkpoints").iterdir()

    bare = _assay("agent", "run", "--project", str(project), "--resume", cwd=elsewhere, store=store)
    assert bare.returncode == 2 and "Traceback" not in bare.stderr, bare.stderr
    line = bare.stderr.strip()
    assert line.startswith(f"Error: --resume needs the checkpoint to continue, its folder or id: the latest unfinished "
                           f"run's is {checkpoint.name}; Resume with `"), line
    command = shlex.split(line.split("Resume with `", 1)[1].removesuffix("`."))
    assert command[:3] == ["assay", "agent", "run"] and "--resume" in command
    again = _assay(*command[1:], cwd=elsewhere, store=store)  # as printed, from another folder
    assert again.returncode == 1 and "the agent is down" in again.stdout + again.stderr, again.stdout + again.stderr


def test_a_word_after_a_bare_option_that_selects_no_experiment_names_the_option(tmp_path: Path) -> None:
    project, store = replying_project(tmp_path / "project"), tmp_path / "assay.db"
    (project / "evals" / "down_eval.py").write_text(ERRORS)
    for option in ("--keep-sandbox", "--rerun"):  # it said "no experiment matches 'sometimes'" and no more
        done = _assay("agent", "run", option, "sometimes", cwd=project, store=store)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.strip() == (f"Error: no experiment matches 'sometimes': the word after {option} is read as "
                                       f"the experiment, as {option} takes only failed or all ({option}=all); "
                                       "experiments: e")
    # a word that is an experiment's prefix still runs it (a bare option, then the experiment)
    chosen = _assay("agent", "run", "--rerun", "e", cwd=project, store=store)
    assert chosen.returncode == 1 and "the agent is down" in chosen.stdout + chosen.stderr, chosen.stdout + chosen.stderr
