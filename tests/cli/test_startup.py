"""`assay --version` starts without importing any kind, and a mistyped group is still suggested."""

from __future__ import annotations

import subprocess
import sys


def test_version_imports_no_kind_and_no_command_group():
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "assay", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("assay "), done
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    heavy = sorted(name for name in imported if name.split(".")[:2] in (
        ["assay", "agent"], ["assay", "video"], ["assay", "doc"]) or name in ("aiohttp", "rich", "yaml", "numpy", "av"))
    assert heavy == []
    groups = {f"assay.cli.{name}" for name in ("video", "agent", "agent_sandbox", "doc", "runs", "labels", "judge")}
    assert sorted(groups & imported) == []


def test_a_mistyped_group_is_suggested():
    done = subprocess.run([sys.executable, "-m", "assay", "vido"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "No such command 'vido'. Did you mean 'video'?" in done.stderr, done
