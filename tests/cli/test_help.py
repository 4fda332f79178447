"""Help a person can trust: every option explained, flags shown as flags, `-h`, examples everywhere."""

from __future__ import annotations

import re
import shlex

import pytest
import typer
from typer.testing import CliRunner

from assay.cli.app import app
from assay.command_examples import EXAMPLES

try:  # recent typer ships its own copy of click
    from typer import _click as click
except ImportError:  # pragma: no cover
    import click


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
    # a repeatable option takes one value per use: `--tag <str>`, not typer's `--tag <list[str]>`
    assert re.findall(r"^\s+(?:-\w, )?--\S+ <list\[", shown.output, flags=re.M) == []
    for example in re.findall(r"^    (assay .+)$", shown.output, flags=re.M):
        assert example.startswith("assay " + " ".join(path)), example  # examples of this very command


def test_the_root_help_lists_the_groups_and_takes_minus_h():
    shown = CliRunner().invoke(app, ["-h"])
    assert shown.exit_code == 0
    assert all(group in shown.output for group in ("video", "agent", "doc", "runs", "view"))


def _example_commands(example: str) -> list[list[str]]:
    """The `assay …` command lines of one example, split as a shell would (pipes, `&&`, a redirect)."""
    lines = []
    for part in re.split(r"\s*(?:\|\||&&|\|)\s*", example):
        words = shlex.split(part.split(" > ")[0])
        if words and words[0] == "assay":
            lines.append(words[1:])
    return lines


EXAMPLE_LINES = [(command, line) for command, examples in EXAMPLES.items() for example in examples
                 for line in _example_commands(example)]


def test_every_command_has_examples_in_the_table_and_every_entry_names_a_command():
    assert {" ".join(path) for path, _ in ALL} == set(EXAMPLES)


@pytest.mark.parametrize("command,words", EXAMPLE_LINES, ids=[" ".join(words) for _, words in EXAMPLE_LINES])
def test_every_example_parses_with_the_options_of_the_command_it_shows(command, words):
    """Options and values as the command takes them (each option's own check included); nothing runs."""
    group = typer.main.get_command(app)
    context = click.Context(group, info_name="assay")
    rest = list(words)
    while hasattr(group, "get_command") and rest and group.get_command(context, rest[0]) is not None:
        name = rest.pop(0)
        group = group.get_command(context, name)
        context = click.Context(group, info_name=name, parent=context)
    path = context.command_path.split()[1:]
    assert " ".join(path) == command, f"an example of `assay {command}` runs `assay {' '.join(path)}`"
    try:
        group.make_context(path[-1], rest, parent=context.parent)
    except (click.exceptions.UsageError, click.exceptions.Exit) as error:
        pytest.fail(f"`assay {' '.join(words)}` does not parse: {error}")


def _examples_of(command: str) -> list[list[str]]:
    return [line for example in EXAMPLES[command] for line in _example_commands(example)]


def test_the_video_examples_run_as_copied_in_the_eval_that_init_writes(tmp_path):
    """The examples named `--case task-01 --at 7.5`: a case no starter has, past the end of its 4 s clip, so
    every one copied after `assay video init eval` ended in "no case files found … matching case 'task-01'"."""
    import os
    import subprocess
    import sys

    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}

    def run(words: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "assay", *words], cwd=tmp_path, env=environment, capture_output=True,
                              text=True, timeout=120)

    assert run(["video", "init", "eval"]).returncode == 0
    for command in ("video run", "video list-samples", "video export-frames", "video seed"):
        for words in _examples_of(command):
            if "--adapter-command" in words or "--resume" in words:  # a node adapter / a checkpoint of the reader's own
                continue
            done = run(words)
            assert done.returncode == 0, f"assay {' '.join(words)}: {done.stdout}{done.stderr}"


def test_the_trend_example_names_a_group_of_the_bundled_agent_example(workspace):
    """`assay runs trend orders --kind agent` said "no unit of the group 'orders' was judged": agent groups start
    with the experiment (`baseline/orders`)."""
    import subprocess

    from cli_examples import assay, environment

    for words in _examples_of("runs trend"):
        done = subprocess.run(assay(*words), cwd=workspace, env=environment(workspace), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"assay {' '.join(words)}: {done.stdout}{done.stderr}"
