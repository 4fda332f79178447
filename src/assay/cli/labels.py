"""`assay labels …`: share human labels — export them as JSONL, import them (idempotently) into a store.

Labels are made in the viewer (`assay view --label`); see docs/labels.md.
Exit codes: 0 ok; 2 a usage error, an unreadable label file or a store error.
"""

from __future__ import annotations

import sys

from assay.cli import common
from assay.cli.options import Given, command, group, params
from assay.core.labels.options import LabelOptions

__all__ = ["labels_app"]

labels_app = group("Human labels of units: export them as JSONL (a golden dataset), import them into a store.")


@command(labels_app, "export", *params(LabelOptions, "output labeller run"), only_reads=True)
def export_command(given: Given) -> None:
    """Every label in the order it was made, one JSON object per line (the format `import` reads)."""
    from assay.core.labels.jsonl import labels_text, write_labels
    from assay.core.labels.store import LabelBook

    with common.store() as store:
        book = LabelBook(store)
        book.check_labeller(given.labeller)
        labels = book.labels(labeller=given.labeller, run_id=store.resolve(given.run) if given.run else None)
    common.skipped_label_lines(book.skipped)
    if given.output is None or str(given.output) == "-":  # `-o -` is stdout, as for every tool that writes a file
        sys.stdout.write(labels_text(labels))
        return
    with common.failing():
        write_labels(given.output, labels)
    print(f"Exported {len(labels)} label(s) to {given.output}", file=sys.stderr)


@command(labels_app, "import", *params(LabelOptions, "source"))
def import_command(given: Given) -> None:
    """Add the labels of a file to this store; a label already there is not added again."""
    from assay.core.labels.jsonl import read_labels
    from assay.core.labels.store import LabelBook

    with common.failing():
        labels = read_labels(given.source)
    with common.store(read_only=False) as store:
        book = LabelBook(store)
        skipped = book.sync()
        added = book.add(labels)
    common.skipped_label_lines(skipped)
    unique = len({label.label_id for label in labels})
    common.say(f"Imported {len(added)} label(s); {unique - len(added)} already present.")
