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
