"""`assay labels …`: share human labels — export them as JSONL, import them (idempotently) into a store.

Labels are made in the viewer (`assay view --label`); see docs/labels.md.
Exit codes: 0 ok; 2 a usage error, an unreadable label file or a store error.
"""

from __future__ import annotations

import contextlib
import shlex
import sys

import typer

from assay.cli import common
from assay.cli.options import Given, command, group, params
from assay.core.labels.options import LabelOptions, labeller_given

__all__ = ["labels_app"]

labels_app = group("Human labels of units: export them as JSONL (a golden dataset), import them into a store.")


@command(labels_app, "export", *params(LabelOptions, "output labeller run"), only_reads=True)
def export_command(given: Given) -> None:
    """Every label in the order it was made, one JSON object per line (the format `import` reads)."""
    from assay.core.labels.jsonl import labels_text, write_labels
    from assay.core.labels.store import LabelBook

    with common.store() as store:
        book = LabelBook(store)
        labeller = labeller_given(given.labeller)
        book.check_labeller(labeller)
        labels = book.labels(labeller=labeller, run_id=_run_id(store, given.run) if given.run else None)
    common.skipped_label_lines(book.skipped)
    if given.output is None or str(given.output) == "-":  # `-o -` is stdout, as for every tool that writes a file
        sys.stdout.write(labels_text(labels))  # (in pieces, by the stdout guard: a reader that leaves stops it)
        return
    with common.failing():
        write_labels(given.output, labels, store_file=book.path)
    print(f"Exported {len(labels)} label(s) to {given.output}", file=sys.stderr)


def _run_id(store, run: str) -> str:
    """`--run`'s run id; a reference that names no run is an error naming the option (it said "no run 'x' in the
    store …", which left the user to find which of their arguments that was)."""
    from assay.errors import UsageError

    try:
        return store.resolve(run)
    except UsageError as error:
        raise UsageError(f"--run: {error}", "--run") from None


@command(labels_app, "import", *params(LabelOptions, "source"))
def import_command(given: Given) -> None:
    """Add the labels of a file to this store; a label already there is not added again."""
    from assay.core.labels.jsonl import read_labels
    from assay.core.labels.store import LabelBook

    with common.failing():
        labels = read_labels(given.source)
    try:
        with common.store(read_only=False) as store:
            book = LabelBook(store)
            skipped = book.sync()
            added = book.add(labels)
    except KeyboardInterrupt:
        # "Interrupted." left it open whether any label was added, and what to do (as `runs import`, say how to finish):
        # the command quoted for a shell (`my labels.jsonl` pasted was two files), and for stdin, which is spent, a
        # word that the same labels are to be piped in again
        again = ("give the same labels to `assay labels import -` again" if given.source == "-" else
                 f"run `assay labels import {shlex.quote(given.source)}` again")
        with contextlib.suppress(OSError):  # stderr may be a closed pipe
            print(f"Interrupted: the labels added so far are kept; {again} to finish (a label already there is not "
                  "added again).", file=sys.stderr, flush=True)
        raise typer.Exit(130) from None
    common.skipped_label_lines(skipped)
    unique = len({label.label_id for label in labels})
    common.say(f"Imported {len(added)} label(s); {unique - len(added)} already present.")
