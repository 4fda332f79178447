"""The bundled examples in a throwaway git repository, each kind run once, for tests of the real CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_examples import AGENT_RUN, DOC_RUN, EXAMPLES, VIDEO_RUN, assay, environment  # noqa: E402


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled examples in a git repository, each kind run once so the store has runs."""
    root = tmp_path_factory.mktemp("examples")
    shutil.copytree(EXAMPLES, root / "examples", ignore=shutil.ignore_patterns("results", "*.mp4", "__pycache__"))
    (root / "examples" / "doc" / "evals" / "results").mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    sys.path.insert(0, str(root / "examples" / "video"))
    try:
        from make_video import make_demo_video
    finally:
        sys.path.pop(0)
    make_demo_video(root / "examples" / "video" / "cases" / "traffic-light.mp4")
    for arguments in (VIDEO_RUN, AGENT_RUN, DOC_RUN, VIDEO_RUN):
        done = subprocess.run(assay(*arguments), cwd=root, env=environment(root), capture_output=True, timeout=120)
        assert done.returncode in (0, 1), done.stdout + done.stderr
    return root




