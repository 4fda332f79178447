"""`assay agent show --run latest` said "no run 'latest'", though every `assay runs` command takes `latest` and
`latest~N` for a run: `--run` takes them too, counted over the project's agent runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent_projects import replying_project


def _assay(project: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", "agent", *arguments], cwd=project, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "ASSAY_STORE": str(project / "store" / "assay.db")})


def test_show_takes_latest_and_latest_n_for_its_run(tmp_path):
    project = replying_project(tmp_path / "p", reply="yes")
    (project / "evals" / "ask_eval.py").write_text(
        "from assay.agent import define_eval\n\nasync def test(t):\n    await t.send('ok?')\n\nask = define_eval(test)\n")
    first = _assay(project, "run", "--json")
    assert first.returncode == 0, first.stdout + first.stderr
    assert _assay(project, "run", "--rerun", "all").returncode == 0
    runs = {path.name for path in (project / ".assay" / "runs" / "checkpoints").iterdir()}
    newer = _assay(project, "show").stdout.split()[1]  # `Run <id>`: with no --run, show takes the newest
    [older] = runs - {newer}
    assert older in _assay(project, "show", "--run", "latest~1").stdout
    assert newer in _assay(project, "show", "--run", "latest").stdout
    past = _assay(project, "show", "--run", "latest~2")
    assert past.returncode == 2 and "it holds 2 agent run(s), and latest~1 is the oldest" in past.stderr, past.stderr
    typo = _assay(project, "show", "--run", "latest~x")
    assert typo.returncode == 2 and "--run 'latest~x': write latest or latest~N" in typo.stderr, typo.stderr
