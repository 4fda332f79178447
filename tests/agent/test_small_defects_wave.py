"""Small user-facing defects of `assay agent`, each pinned where it was found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _project(root: Path) -> Path:
    for folder in ("evals", "experiments"):
        (root / folder).mkdir(parents=True)
    (root / "experiments" / "main.py").write_text(
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n"
        "async def send(turn_input, ctx):\n    return Turn([message('ok')])\n\n"
        "main = Experiment(agent=define_agent(name='echo', send=send, evidence_coverage=complete_evidence_coverage))\n",
        encoding="utf-8",
    )
    (root / "evals" / "hello_eval.py").write_text(
        "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    await t.send('hi')\n"
        "    t.succeeded()\n", encoding="utf-8",
    )
    return root


def _dry_run(project: Path, sandbox: str, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--sandbox", sandbox,
                           "--dry"], env={**os.environ, "ASSAY_STORE": str(store)}, capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_sandbox_option_with_nothing_after_local_colon_is_refused_not_read_as_local(tmp_path):
    """`--sandbox local:` (a value cut short, `local:$ISOLATION` with the variable unset) was run as `local`."""
    project = _project(tmp_path / "p")
    store = tmp_path / "store" / "assay.db"
    cut_short = _dry_run(project, "local:", store)
    assert cut_short.returncode == 2, cut_short.stdout + cut_short.stderr
    assert cut_short.stderr.strip() == (
        "Error: --sandbox takes local, local:bubblewrap, local:none or docker:IMAGE, got 'local:' "
        "(nothing after the colon: give local alone, local:bubblewrap or local:none)")
    for given in ("local", "local:none", "local:bubblewrap"):  # the forms the docs give still run
        assert _dry_run(project, given, store).returncode == 0, given
