"""Labels as JSONL, the file `assay labels export` writes and `assay labels import` reads: one label per line."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from assay.core.labels.model import Label, LabelError, parse_label
from assay.errors import AssayError, UsageError

__all__ = ["labels_text", "read_labels", "write_labels"]


def labels_text(labels: Sequence[Label]) -> str:
    from assay.core.record import dumps_storable

    return "".join(dumps_storable(label.to_json()) + "\n" for label in labels)


def write_labels(path: Path, labels: Sequence[Label]) -> None:
    """`labels export --output`: the file written whole or not at all; an error naming the option and what to
    give when it cannot be."""
    from assay.core.fsutil import write_atomically

    if path.is_dir():
        raise UsageError(f"--output {path} is a folder; give a file to write the labels to (e.g. {path / 'labels.jsonl'})")
    folder = next((parent for parent in path.parents if parent.exists()), None)
    if folder is not None and not folder.is_dir():
        raise UsageError(f"--output {path} cannot be written: {folder} is a file, not a folder; give a file in a folder")
    if folder is not None and folder != path.parent:
        raise UsageError(f"--output {path} cannot be written: the folder {path.parent} does not exist; make it first, or "
                         "give a file in a folder that exists")
    try:
        write_atomically(path, labels_text(labels).encode("utf-8"))
    except OSError as error:
        raise AssayError(f"--output {path} cannot be written: {error.strerror or error}; give a file this user may "
                         "write") from None


def read_labels(source: str) -> list[Label]:
    """Every label of a JSONL file (`-`: stdin); the first bad line is a UsageError naming it."""
    if not source.strip():  # Path("") is the current folder: a script's unset variable would read "Is a directory"
        raise UsageError("the label file needs a path (or - for stdin), and the value given is empty (an unset variable in a script?)")
    wanted = "give a JSONL file of labels (as `assay labels export` writes them), or - for stdin"
    try:
        # utf-8-sig: an editor on Windows starts the file with a byte-order mark, which is no part of the first label
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"the label file {source} does not exist; {wanted}") from None
    except IsADirectoryError:
        raise UsageError(f"the label file {source} is a folder; {wanted}") from None
    except OSError as error:
        raise UsageError(f"could not read the label file {source}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"the label file {source} is not UTF-8 text ({error.reason} at byte {error.start}); {wanted}") from None
    labels = []
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            labels.append(parse_label(json.loads(line), strict=True))
        except ValueError as error:
            raise UsageError(f"{source}:{number}: not JSON: {error}") from None
        except LabelError as error:
            raise UsageError(f"{source}:{number}: {error}") from None
    return labels
