"""`assay labels …`: share human labels — export them as JSONL, import them (idempotently) into a store.

Labels are made in the viewer (`assay view --label`); see docs/labels.md.
Exit codes: 0 ok; 2 a usage error, an unreadable label file or a store error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer

from assay.cli import common

__all__ = ["labels_app"]

labels_app = typer.Typer(
    rich_markup_mode=None,
    help="Human labels of units: export them as JSONL (a golden dataset), import them into a store.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fail(error: BaseException) -> NoReturn:
    common.fail("Error", error, stderr=True, internal="")


def _open(*, read_only: bool) -> Any:
    from assay.core.results_store import open_store
    from assay.errors import AssayError

    try:
        return open_store(read_only=read_only)
    except AssayError as error:
        _fail(error)


@labels_app.command("export")
def export_command(
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),  # noqa: B008
    labeller: str | None = typer.Option(None, "--labeller", help="Only this labeller's labels."),
    run: str | None = typer.Option(None, "--run", help="Only labels of units of this run (id, prefix, latest, latest~N)."),
) -> None:
    """Every label in the order it was made, one JSON object per line (the format `import` reads)."""
    from assay.core.labels.store import LabelBook
    from assay.core.record import dumps_storable
    from assay.errors import AssayError

    store = _open(read_only=True)
    try:
        run_id = store.resolve(run) if run else None
        labels = LabelBook(store).labels(labeller=labeller, run_id=run_id)
    except AssayError as error:
        _fail(error)
    finally:
        store.close()
    text = "".join(dumps_storable(label.to_json()) + "\n" for label in labels)
    if output is None:
        sys.stdout.write(text)
        return
    from assay.core.fsutil import write_atomically

    try:
        write_atomically(output, text.encode("utf-8"))
    except OSError as error:
        _fail(OSError(f"could not write {output}: {error.strerror or error}"))
    print(f"Exported {len(labels)} label(s) to {output}", file=sys.stderr)


def _read_labels(source: str) -> list[Any]:
    """Every label of a JSONL file (`-`: stdin); the first bad line is an error naming it."""
    from assay.core.labels.model import LabelError, parse_label
    from assay.errors import UsageError

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"could not read {source}: {error}") from None
    labels = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            labels.append(parse_label(json.loads(line)))
        except ValueError as error:
            raise UsageError(f"{source}:{number}: not JSON: {error}") from None
        except LabelError as error:
            raise UsageError(f"{source}:{number}: {error}") from None
    return labels


@labels_app.command("import")
def import_command(
    source: str = typer.Argument(..., help="A JSONL file of labels (as `assay labels export` writes), or - for stdin."),
) -> None:
    """Add the labels of a file to this store; a label already there is not added again."""
    from assay.core.labels.store import LabelBook
    from assay.errors import AssayError

    try:
        labels = _read_labels(source)
    except AssayError as error:
        _fail(error)
    store = _open(read_only=False)
    try:
        book = LabelBook(store)
        skipped = book.sync()
        added = book.add(labels)
    except AssayError as error:
        _fail(error)
    finally:
        store.close()
    for line in skipped:
        print(f"Skipped an unreadable label line: {line}", file=sys.stderr)
    unique = len({label.label_id for label in labels})
    common.stdout_console().print(
        f"Imported {len(added)} label(s); {unique - len(added)} already present.", markup=False, highlight=False
    )
