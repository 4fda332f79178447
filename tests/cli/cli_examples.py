"""The commands and environment the CLI tests share (the workspace fixture is in conftest.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

VIDEO_RUN = ("video", "run", "--eval-dir", "examples/video")
AGENT_RUN = ("agent", "run", "--project", "examples/agent")
DOC_CONFIG = ("--config", "examples/doc/evals/eval-kit.config.json")
DOC_RUN = ("doc", "run-case", *DOC_CONFIG, "--case", "release-notes-v1", "--candidate", "examples/doc/candidates/good.md")


def assay(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "assay", *arguments]


def environment(root: Path) -> dict[str, str]:
    return {**os.environ, "ASSAY_STORE": str(root / "store" / "assay.db"), "COLUMNS": "100"}


