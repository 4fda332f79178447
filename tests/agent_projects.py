"""An agent project on disk for a test to run `assay agent …` on: the folders `assay agent init` makes and a
bare `[tool.assay]` table; the test writes its own experiments and evals into it."""

from __future__ import annotations

from pathlib import Path


def agent_project(root: Path) -> Path:
    """`root` made an (empty) agent project."""
    for folder in ("evals", "experiments"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.assay]\n")
    return root


def replying_project(root: Path, reply: str = "no") -> Path:
    """`root` made an agent project with one experiment, `e`, whose agent answers every send with `reply`; the
    test writes its evals into it."""
    agent_project(root)
    (root / "experiments" / "e.py").write_text(
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n"
        f"async def send(turn_input, ctx):\n    return Turn([message({reply!r})])\n\n"
        "e = Experiment(agent=define_agent(name='a', send=send, evidence_coverage=complete_evidence_coverage))\n"
    )
    return root


def attempts_of_bodies(root: Path, agent_source: str, bodies: dict[str, str], *, store: Path) -> dict[str, dict]:
    """Each eval's attempt by eval id, from one `assay agent run --json` of a project at `root` whose experiment
    `e` is `agent_source` and whose evals are `bodies` (each the indented body of `async def test(t)`)."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    project = agent_project(root)
    (project / "experiments" / "e.py").write_text(agent_source)
    for name, body in bodies.items():
        source = "from assay.agent import *\n\n\n@define_eval()\nasync def test(t):\n" + textwrap.indent(
            textwrap.dedent(body).strip() + "\n", "    ")
        (project / "evals" / f"{name}_eval.py").write_text(source)
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json", "--quiet"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "ASSAY_STORE": str(store)})
    assert "Traceback" not in done.stderr and "RuntimeWarning" not in done.stderr, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return {line["attempt"]["eval_id"]: line["attempt"] for line in lines if line.get("type") == "attempt"}
