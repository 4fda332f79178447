"""A `tool` key in pyproject.toml that is not a table (`tool = 5`) is one config error naming the file
and the key, in every command that reads `[tool.assay]`, never an internal error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("tool = 5", "`tool` must be a table (it holds [tool.assay]), got the number 5"),
        ('tool = "x"', "`tool` must be a table (it holds [tool.assay]), got the text 'x'"),
        ("tool = [1]", "`tool` must be a table (it holds [tool.assay]), got a list"),
        ("tool = true", "`tool` must be a table (it holds [tool.assay]), got the boolean true"),
        ("tool = { assay = 3 }", "[tool.assay] must be a table, got the number 3"),
    ],
)
def test_a_tool_key_that_is_not_a_table_is_one_config_error(tmp_path: Path, line: str, message: str) -> None:
    project = tmp_path / "shop"
    shutil.copytree(EXAMPLES / "agent", project, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    pyproject = project / "pyproject.toml"
    pyproject.write_text(line + "\n")
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}
    commands = [["agent", "run", "--project", project]] + ([["agent", "list", "--project", project]] if "5" in line else [])
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-m", "assay", *map(str, command)], cwd=tmp_path, env=environment, capture_output=True,
            text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        output = (done.stdout + done.stderr).strip().splitlines()
        assert output == [f"Error: {pyproject}: {message}"], output
