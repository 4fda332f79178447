"""`assay view`: the local results viewer on 127.0.0.1, or `--export DIR` for a static site (CI artifacts).

Opens the store read-only (with `--label`, writable: labels are added), prints the URL, opens a
browser unless told not to, serves until Ctrl-C.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from assay.cli import common
from assay.cli.options import NO_OPEN, PORT, Given, command, option
from assay.errors import AssayError

__all__ = ["view_command"]


@command(None, "view", PORT, NO_OPEN,
         option("export", Path | None, None, "--export", help="Write a static site of the viewer to this folder and exit."),
         option("label", bool, False, "--label", help="Label mode: record pass/fail or a score for units (writes labels to the store)."),
         option("labeller", str | None, None, "--as", help="Label as this name (default: git config user.name, else the OS user)."),
         only_reads=True)
def view_command(given: Given) -> None:
    """Browse runs, drill into units and compare two runs in a local web viewer; with --label, label units."""
    from assay.core.results_store import open_store
    from assay.view.data import ViewData

    if given.label and given.export is not None:
        common.refuse("--label", "cannot be combined with --export (labels are recorded in the live viewer)")
    if given.labeller is not None and not given.label:
        common.refuse("--as", "needs --label")
    if given.labeller is not None and not given.labeller.strip():
        common.refuse("--as", "needs a name (leave it out to label as the git user)")
    with common.failing("Could not open the results store", on_stdout=True):
        if given.label:
            open_store(read_only=True).close()  # as without --label: no store yet is said, not made empty
        store = open_store(read_only=not given.label)
    try:
        data, labelling, lines = ViewData(store), None, []
        if given.label:
            from assay.view.labelling import LabelSession, default_labeller

            with common.failing("Could not start label mode", on_stdout=True):
                labelling = LabelSession(data, given.labeller.strip() if given.labeller else default_labeller())
            lines = [f"Labelling as {labelling.labeller}; labels are appended to {labelling.book.path}"]
        if given.export is not None:
            from assay.view.export import export_site

            with common.failing("Could not export the viewer", catch=(OSError, AssayError), on_stdout=True):
                count = export_site(data, given.export)
            from assay.core.stdout_guard import results_made

            results_made()  # the site is in place: a reader leaving now only loses this line, it stops nothing
            common.say(f"Exported {count:,} page(s) of data to {given.export}; open {given.export / 'index.html'}")
            raise typer.Exit(0)

        def make_app(binding: Any) -> Any:
            from assay.view.server import create_view_app

            return create_view_app(data, binding, labelling=labelling)

        common.serve_locally(given.port, make_app, lambda port: f"http://127.0.0.1:{port}/" + ("#/label" if labelling is not None else ""),
                             title="Results viewer", failure="Could not start the viewer", no_open=given.no_open, lines=lines)
    finally:
        store.close()
