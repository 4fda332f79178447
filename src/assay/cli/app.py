"""The `assay` command: the root Typer app and its groups (video, agent, doc).

Groups import their machinery lazily so `assay --version` and `assay video list-samples` start fast.
"""

from __future__ import annotations

import sys

import typer

from assay import __version__

app = typer.Typer(
    name="assay",
    help="Evaluate AI-powered applications against recorded cases, locally and in CI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"assay {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors (for bug reports)."),
) -> None:
    from assay.cli import common

    common.DEBUG = debug


def _register_groups() -> None:
    from assay.cli.agent import agent_app
    from assay.cli.doc import doc_app
    from assay.cli.runs import runs_app
    from assay.cli.video import video_app
    from assay.cli.view import view_command

    app.add_typer(video_app, name="video", help="Video evals: GlassKit Eval-compatible eval directories.")
    app.add_typer(agent_app, name="agent", help="Agent evals: drive conversations, assert on what the agent did.")
    app.add_typer(doc_app, name="doc", help="Document evals: eval-kit-compatible suites.")
    app.add_typer(runs_app, name="runs", help="Run history: list, show, compare, reindex.")
    app.command("view", help="Open the local results viewer (or export it as a static site).")(view_command)


_register_groups()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - commands handle their own interrupts
        sys.exit(130)
