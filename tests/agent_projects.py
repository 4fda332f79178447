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
