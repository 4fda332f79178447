"""A misspelt option is offered the options of the command whose names are close to it, compared without the dashes
every option shares: click compared them with the dashes, so `agent show --eval` was offered `--help` and `--sourc`
`--json`, and `agent run --atempts` the hidden `--agent`. Real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("arguments, offered", [
    (["agent", "show", "--eval", "drive/x"], None),
    (["agent", "show", "--sourc"], None),
    (["agent", "show", "--jsn"], "--json"),
    (["agent", "run", "--atempts", "3"], "--attempts"),
    (["runs", "list", "--kidn", "agent"], "--kind"),
    (["video", "run", "--eval-dri", "x"], "--eval-dir"),
])
def test_an_unknown_option_is_offered_only_the_options_near_its_name(tmp_path: Path, arguments, offered) -> None:
    done = subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={**os.environ, "ASSAY_STORE": str(tmp_path / "assay.db")})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    unknown = arguments[2]
    assert last == (f"Error: No such option: {unknown}" if offered is None else
                    f"Error: No such option: {unknown} (Possible options: {offered})"), last


def test_a_word_left_after_an_options_value_says_to_quote_the_value(tmp_path: Path) -> None:
    """`--adapter-command node eval/adapter.mjs` said only "Got unexpected extra argument(s) (eval/adapter.mjs)"."""
    done = subprocess.run([sys.executable, "-m", "assay", "video", "run", "--eval-dir", "eval", "--adapter-command", "node",
                           "eval/adapter.mjs"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "ASSAY_STORE": str(tmp_path / "assay.db")})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: Got unexpected extra argument(s) (eval/adapter.mjs) (quote an option's value that has spaces: "
        "--adapter-command 'node eval/adapter.mjs')")
    plain = subprocess.run([sys.executable, "-m", "assay", "runs", "show", "a", "b"], capture_output=True, text=True,
                           timeout=60, cwd=tmp_path, env={**os.environ, "ASSAY_STORE": str(tmp_path / "assay.db")})
    assert plain.stderr.strip().splitlines()[-1] == "Error: Got unexpected extra argument(s) (b)"  # no option before it
