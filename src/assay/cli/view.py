"""`assay view`: the local results viewer on 127.0.0.1, or `--export DIR` for a static site (CI artifacts).

Opens the store read-only (with `--label`, writable: labels are added), prints the URL, opens a
browser unless told not to, serves until Ctrl-C.
"""

from __future__ import annotations

from pathlib import Path

import typer

from assay.cli import common

__all__ = ["view_command"]


def view_command(
    port: int = typer.Option(0, "--port", callback=common.between(0, 65535), help="Port on 127.0.0.1 (0 picks a free one)."),
    no_open: bool = typer.Option(False, "--no-open", help="Do not open a browser."),
    export: Path | None = typer.Option(None, "--export", help="Write a static site of the viewer to this folder and exit."),  # noqa: B008
    label: bool = typer.Option(False, "--label", help="Label mode: record pass/fail or a score for units (writes labels to the store)."),
    labeller: str | None = typer.Option(None, "--as", help="Label as this name (default: git config user.name, else the OS user)."),
) -> None:
    """Browse runs, drill into units and compare two runs in a local web viewer; with --label, label units."""
    from assay.cli.stdout_guard import nothing_to_keep

    nothing_to_keep()  # a closed reader leaves no finished results to speak of
    from assay.core.results_store import open_store
    from assay.errors import AssayError
    from assay.view.data import ViewData

    console = common.stdout_console()

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    if label and export is not None:
        common.bad_parameter("--label", "cannot be combined with --export (labels are recorded in the live viewer)")
    if labeller is not None and not label:
        common.bad_parameter("--as", "needs --label")
    try:
        store = open_store(read_only=not label)
    except AssayError as error:
        common.fail("Could not open the results store", error, console=console)
    data = ViewData(store)
    labelling = None
    if label:
        from assay.view.labelling import LabelSession, default_labeller

        try:
            labelling = LabelSession(data, (labeller or default_labeller()).strip() or default_labeller())
        except AssayError as error:
            store.close()
            common.fail("Could not start label mode", error, console=console)
    if export is not None:
        from assay.view.export import export_site

        try:
            count = export_site(data, export.expanduser())
        except (OSError, AssayError) as error:
            common.fail("Could not export the viewer", error, console=console)
        finally:
            store.close()
        say(f"Exported {count} page(s) of data to {export}; open {export / 'index.html'}")
        raise typer.Exit(0)

    from assay.cli.video_review import _open_browser
    from assay.view.server import create_view_app
    from assay.web.app import Binding, bind_loopback_socket, serve

    try:
        sock = bind_loopback_socket(port)
    except OSError as error:
        common.fail("Could not start the viewer", error, console=console)
    binding = Binding(port=sock.getsockname()[1])
    url = f"http://127.0.0.1:{binding.port}/" + ("#/label" if labelling is not None else "")
    say(f"Results viewer: {url}")
    if labelling is not None:
        say(f"Labelling as {labelling.labeller}; labels are appended to {labelling.book.path}")
    if not no_open:
        _open_browser(url, say)
    try:
        serve(create_view_app(data, binding, labelling=labelling), sock)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        store.close()
    raise typer.Exit(0)
