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
    from assay.cli.video import video_app

    from assay.cli.doc import doc_app

    app.add_typer(video_app, name="video", help="Video evals: GlassKit Eval-compatible eval directories.")
    app.add_typer(doc_app, name="doc", help="Document evals: eval-kit-compatible suites.")
    for name, what in (("agent", "Agent evals (NiceEval's model): not built yet."),):
        group = typer.Typer(help=what, invoke_without_command=True, add_completion=False)

        def not_built(ctx: typer.Context, _name: str = name) -> None:
            print(f"assay {_name} is not built yet; `assay video` is available now.")
            raise typer.Exit(2)

        group.callback(invoke_without_command=True)(not_built)
        app.add_typer(group, name=name)


_register_groups()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - commands handle their own interrupts
        sys.exit(130)
