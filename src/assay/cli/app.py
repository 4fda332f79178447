"""The `assay` command: the root Typer app and its groups (video, agent, doc).

Groups import their machinery lazily so `assay --version` and `assay video list-samples` start fast.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer

from assay import __version__
from assay.cli.view import view_command
from assay.command_examples import epilog

try:  # recent typer ships its own copy of click
    from typer.core import TyperGroup
except ImportError:  # pragma: no cover
    from typer.main import TyperGroup

try:  # pydantic is imported only for a value that needs it
    from assay.cli.plain_params import coerce_plain_values_without_pydantic
except ImportError:  # pragma: no cover - a typer before its pydantic adapters coerces with click's own types
    pass
else:
    coerce_plain_values_without_pydantic()

# The command groups, imported only when named (`assay --version` imports none of them): name ->
# (module, attribute, the help shown in `assay --help` and atop the group's own help).
GROUPS: dict[str, tuple[str, str, str]] = {
    "video": ("assay.cli.video", "video_app", "Video evals: GlassKit Eval-compatible eval directories."),
    "agent": ("assay.cli.agent", "agent_app", "Agent evals: drive conversations, assert on what the agent did."),
    "doc": ("assay.cli.doc", "doc_app", "Document evals: eval-kit-compatible suites."),
    "runs": ("assay.cli.runs", "runs_app", "Run history: list, show, compare, trend, flaky, import, export, merge, reindex."),
    "labels": ("assay.cli.labels", "labels_app", "Human labels of units: export and import them as JSONL."),
    "judge": ("assay.cli.judge", "judge_app", "Model judges: agreement with human labels, the judge cache."),
}


def add_examples(app: Any, prefix: str = "") -> None:
    """Every registered command of `app` (and of its groups) ends its help with its examples."""
    for info in app.registered_commands:
        info.epilog = info.epilog or epilog(f"{prefix}{info.name or info.callback.__name__}".strip())
    for group in app.registered_groups:
        add_examples(group.typer_instance, f"{prefix}{group.name} ")


class _LazyGroups(TyperGroup):
    """The root group: its command groups are built from their module on first use."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*GROUPS, *super().list_commands(ctx)]

    def get_command(self, ctx: Any, name: str) -> Any:
        if name not in GROUPS:
            return super().get_command(ctx, name)
        module, attribute, help_text = GROUPS[name]
        group = getattr(importlib.import_module(module), attribute)
        add_examples(group, f"{name} ")
        command = typer.main.get_command(group)
        command.name, command.help = name, help_text
        return command

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """`--debug` anywhere before a `--` is the root's option: `assay agent run --debug` was "No such option"."""
        end = args.index("--") if "--" in args else len(args)
        if "--debug" in args[1:end]:
            args = ["--debug", *(arg for arg in args[:end] if arg != "--debug"), *args[end:]]
        return super().parse_args(ctx, args)  # type: ignore[no-any-return]

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """A mistyped group is suggested too (typer suggests only the commands it has built)."""
        built = self.commands
        self.commands = {**dict.fromkeys(GROUPS), **built}  # names only, for the suggestion
        try:
            return super().resolve_command(ctx, args)
        finally:
            self.commands = built


app = typer.Typer(
    rich_markup_mode=None,  # plain help: flags shown as flags, options as `--name <type>`
    name="assay", help="Evaluate AI-powered applications against recorded cases, locally and in CI.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, cls=_LazyGroups,
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
)


def _version(value: bool) -> None:
    if value:
        print(f"assay {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors (for bug reports)."),
) -> None:
    from assay.cli import common
    from assay.errors import show_tracebacks

    common.DEBUG = debug
    show_tracebacks(debug)


app.command("view", help="Open the local results viewer (or export it as a static site).")(view_command)
add_examples(app)


def main() -> None:
    """The console script (and `python -m assay`). Tests drive `app` in-process instead."""
    from assay.core.process import run_as_process

    run_as_process(app)
