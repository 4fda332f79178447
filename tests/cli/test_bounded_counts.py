"""Count options past a sane maximum are refused at once, naming the option (exit 2), instead of
allocating until the process dies."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from assay.cli.app import app


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result, re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", result.output))


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["video", "run", "--concurrency", "100000000"], "--concurrency"),
        (["video", "run", "--repeat", "1000000000000000000000000000000"], "--repeat"),
        (["video", "seed", "--concurrency", "10001"], "--concurrency"),
    ],
)
def test_video_counts_past_the_maximum_are_usage_errors(tmp_path, args: list[str], option: str) -> None:
    result, flat = invoke(*args, "--eval-dir", str(tmp_path))
    assert result.exit_code == 2
    assert f"Invalid value for '{option}'" in flat and "less than or equal to 10000" in flat


@pytest.mark.parametrize(("option", "value"), [("--concurrency", "100000000"), ("--attempts", str(10**30))])
def test_agent_counts_past_the_maximum_are_usage_errors(tmp_path, option: str, value: str) -> None:
    result, flat = invoke("agent", "run", "--project", str(tmp_path), option, value)
    assert result.exit_code == 2
    assert f"{option} must be at most 10,000" in flat
