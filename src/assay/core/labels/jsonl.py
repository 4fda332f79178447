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


def write_labels(path: Path, labels: Sequence[Label], *, store_file: Path | None = None) -> None:
    """`labels export --output`: the file written whole or not at all; an error naming the option and what to
    give when it cannot be. `store_file` is the store's own `labels.jsonl`, which the export must not replace."""
    from assay.core.fsutil import begins_otherwise, names_a_stream, write_atomically, write_into_stream

    if path.is_dir():
        raise UsageError(f"--output {path} is a folder; give a file to write the labels to (e.g. {path / 'labels.jsonl'})")
    if store_file is not None and _same_file(path, store_file):
        # `--labeller ann -o .assay/labels.jsonl` replaced the source of truth with one person's labels: everyone
        # else's were gone from the file `assay runs reindex` rebuilds the labels from.
        raise UsageError(f"--output {path} is the store's own label file, which keeps every label; give the export a "
                         "file of its own (e.g. --output labels-export.jsonl)")
    data = labels_text(labels).encode("utf-8")
    if names_a_stream(path):  # `-o /dev/null`, `-o /dev/fd/1 >> notes.txt`, a pipe: written into, never replaced
        try:
            write_into_stream(path, data)
        except OSError as error:
            raise AssayError(f"--output {path} cannot be written: {error.strerror or error}") from None
        return
    if begins_otherwise(path, (b"{",)):  # anything but an earlier export (or an empty file)
        # `-o pyproject.toml` (a slip of the shell's completion) replaced the user's file without a word.
        raise UsageError(f"--output {path} is a file that holds no labels, which the export would replace; give the "
                         "export a file of its own (e.g. --output labels.jsonl)")
    folder = next((parent for parent in path.parents if parent.exists()), None)
    if folder is not None and not folder.is_dir():
        raise UsageError(f"--output {path} cannot be written: {folder} is a file, not a folder; give a file in a folder")
    if folder is not None and folder != path.parent:
        raise UsageError(f"--output {path} cannot be written: the folder {path.parent} does not exist; make it first, or "
                         "give a file in a folder that exists")
    try:
        # A link to the labels (a golden set kept elsewhere) stays a link: the file it names is replaced.
        write_atomically(path.resolve() if path.is_symlink() else path, data)
    except OSError as error:
        raise AssayError(f"--output {path} cannot be written: {error.strerror or error}; give a file this user may "
                         "write") from None


def _same_file(path: Path, other: Path) -> bool:
    try:
        return path.exists() and other.exists() and path.samefile(other)
    except OSError:
        return False


def read_labels(source: str) -> list[Label]:
    """Every label of a JSONL file (`-`: stdin); the first bad line is a UsageError naming it."""
    if not source.strip():  # Path("") is the current folder: a script's unset variable would read "Is a directory"
        raise UsageError("the label file needs a path (or - for stdin), and the value given is empty (an unset variable in a script?)")
    wanted = "give a JSONL file of labels (as `assay labels export` writes them), or - for stdin"
    if source == "-" and _is_terminal(sys.stdin):
        # `assay labels import -` typed at a prompt waited for input without a word, as if it had hung.
        print("Reading labels from standard input, which is this terminal: paste label lines and end with Ctrl-D, "
              "or stop with Ctrl-C and give a file (assay labels import FILE, or ... | assay labels import -).",
              file=sys.stderr, flush=True)
    try:
        data = _read_bytes(source)
    except FileNotFoundError:
        raise UsageError(f"the label file {source} does not exist; {wanted}") from None
    except IsADirectoryError:
        raise UsageError(f"the label file {source} is a folder; {wanted}") from None
    except OSError as error:
        raise UsageError(f"could not read the label file {source}: {error.strerror or error}") from None
    wide = _wide_text(source, data)
    if wide is not None:
        raise UsageError(wide)
    try:
        # utf-8-sig: an editor on Windows starts the file with a byte-order mark, which is no part of the first label
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UsageError(f"the label file {source} is not UTF-8 text ({error.reason} at byte {error.start}); {wanted}") from None
    labels = []
    for number, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except ValueError as error:
            raise UsageError(f"{source}:{number}: {_not_a_label_line(text, number, error)}") from None
        if isinstance(document, list) and document and all(isinstance(item, dict) for item in document):
            raise UsageError(f"{source}:{number}: a JSON array of {len(document)} object(s), not one label; {ONE_PER_LINE} "
                             f"(jq -c '.[]' {source} writes an array's items so)")
        try:
            labels.append(parse_label(document, strict=True))
        except LabelError as error:
            raise UsageError(f"{source}:{number}: {error}") from None
    return labels


def _read_bytes(source: str) -> bytes:
    """The file's bytes, or standard input's (`-`): read as bytes, so that a UTF-16 stream is seen for what it is
    rather than decoded into text that no JSON parser reads."""
    if source != "-":
        return Path(source).read_bytes()
    stream = getattr(sys.stdin, "buffer", None)
    return stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "surrogateescape")


def _wide_text(source: str, data: bytes) -> str | None:
    """Why a label file written as UTF-16 cannot be read, and how to convert it; None for any other file. Windows
    PowerShell's `assay labels export > labels.jsonl` writes UTF-16, which read as "not UTF-8 text (invalid start byte
    at byte 0)", or as "not JSON" from standard input: neither named the encoding nor the fix."""
    encoding = "UTF-16"
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):  # (UTF-32's mark begins as UTF-16's does)
        encoding, what = "UTF-32", "is UTF-32 text (its byte-order mark says so)"
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        what = "is UTF-16 text (as Windows PowerShell's `>` and Out-File write it)"
    elif b"\x00" in data[:4096]:  # UTF-8 JSON never holds a NUL byte: UTF-16 without a byte-order mark, or no text
        what = "holds NUL bytes, as UTF-16 text without a byte-order mark does (or a binary file)"
    else:
        return None
    name = "standard input" if source == "-" else f"the label file {source}"
    given = "FILE" if source == "-" else source
    return (f"{name} {what}, and labels are read as UTF-8: convert it (iconv -f {encoding} -t UTF-8 {given} > "
            f"labels-utf8.jsonl, or in PowerShell Get-Content {given} | Set-Content -Encoding utf8 labels-utf8.jsonl) "
            "and import that")


ONE_PER_LINE = "a label file holds one label per line, each a JSON object, as `assay labels export` writes them"


def _not_a_label_line(text: str, number: int, error: ValueError) -> str:
    """Why line `number` is no label, and what to give: a label spread over several lines (pretty-printed, as
    `jq .` or an editor writes it, or copied from the docs) read as "Expecting property name enclosed in double
    quotes: line 1 column 96", which names neither the cause nor the fix."""
    lines = _lines(text)
    rest = "\n".join(lines[number - 1:]).lstrip()
    try:
        document, end = json.JSONDecoder().raw_decode(rest)
    except ValueError:
        document, end = None, 0
    spread = rest[:end].count("\n")
    if spread and isinstance(document, (dict, list)):
        what, fix = ("a JSON array", "jq -c '.[]' writes its items so") if isinstance(document, list) else \
            ("a JSON object", "jq -c . joins each onto one line")
        return f"{what} spread over lines {number}–{number + spread}; {ONE_PER_LINE} ({fix})"
    # "Unterminated string starting at" read "… starting at at column 312"
    reason = error.msg.removesuffix(" at") if isinstance(error, json.JSONDecodeError) else str(error)
    column = f" at column {error.colno}" if isinstance(error, json.JSONDecodeError) else ""
    return f"not JSON ({reason}{column}); {ONE_PER_LINE}"


def _lines(text: str) -> list[str]:
    """The file's lines, split at line ends only: `str.splitlines` also splits at U+2028, U+0085 and the like, which
    JSON leaves unescaped in a string, so a note pasted from a web page broke the line `labels export` wrote."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False
