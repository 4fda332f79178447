"""Help a person can trust: every option explained, flags shown as flags, `-h`, examples everywhere."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from assay.cli.app import app


def commands(command, path=()):
    if hasattr(command, "list_commands"):  # a group: the root builds its groups only when asked for them
        for name in command.list_commands(None):
            sub = command.get_command(None, name)
            if not getattr(sub, "hidden", False) and name != "video-store":  # an alias of `store`
                yield from commands(sub, (*path, name))
    else:
        yield path, command


ALL = list(commands(typer.main.get_command(app)))


def test_every_group_is_walked():
    assert {path[0] for path, _ in ALL} >= {"video", "agent", "doc", "runs", "labels", "judge", "view"}
    assert len(ALL) > 40


@pytest.mark.parametrize("path,command", ALL, ids=[" ".join(path) for path, _ in ALL])
def test_every_option_is_explained_and_every_command_shows_examples(path, command):
    unexplained = [
        param.opts[0] for param in command.params
        if getattr(param, "opts", None) and not getattr(param, "hidden", False) and not getattr(param, "help", None)
    ]
    assert unexplained == [], f"assay {' '.join(path)}: options without help"
    shown = CliRunner().invoke(app, [*path, "-h"])
    assert shown.exit_code == 0, shown.output
    assert "Examples:\n" in shown.output
    assert "<bool>" not in shown.output  # a flag takes no value
    for example in re.findall(r"^    (assay .+)$", shown.output, flags=re.M):
        assert example.startswith("assay " + " ".join(path)), example  # examples of this very command


def test_the_root_help_lists_the_groups_and_takes_minus_h():
    shown = CliRunner().invoke(app, ["-h"])
    assert shown.exit_code == 0
    assert all(group in shown.output for group in ("video", "agent", "doc", "runs", "view"))
