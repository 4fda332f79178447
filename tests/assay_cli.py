"""`python -m assay …` in a child process, as a user runs it: text captured, never raising on its exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def assay_cli(*arguments: str, env: dict[str, str] | None = None, cwd: Path | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `assay ARGUMENTS` with the test's environment (plus `env`) in `cwd`."""
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=timeout,
                          check=False, cwd=cwd, env={**os.environ, **(env or {})})
