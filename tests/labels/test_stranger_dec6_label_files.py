"""`assay labels import` of files a new user has at hand: an export that Windows PowerShell saved as UTF-16 (its `>`
does), given as a file or piped in, and a label line written by hand without its `schema`."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from judged_runs import agent_unit, publish

from assay.core.labels.store import LabelBook, labels_file
from assay.core.labels.units import make_label, read_unit
from assay.core.results_store import SqliteRunStore

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def exported(tmp_path, monkeypatch) -> Path:
    """ann's and bo's labels exported as `assay labels export` writes them (a judge name holds a `·`: not ASCII), and
    ASSAY_STORE set to an empty store to import them into."""
    source = tmp_path / "source" / "assay.db"
    publish(source, "agent", [agent_unit(1, 0.9), agent_unit(2, 0.2)], run_id="agent-run-1", identity={"project": "/p"})
    with SqliteRunStore(source) as store:
        LabelBook(store).add([
            make_label(read_unit(store, "agent-run-1", unit_id), labeller, verdict=verdict, now=T0 + timedelta(seconds=index))
            for index, (labeller, unit_id, verdict) in enumerate([("ann", "main/eval1#1", "pass"),
                                                                   ("bo", "main/eval2#1", "fail")])])
    monkeypatch.setenv("ASSAY_STORE", str(source))
    path = tmp_path / "labels.jsonl"
    assert _assay("labels", "export", "-o", str(path)).returncode == 0
    target = tmp_path / "target" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(target))
    publish(target, "video", [], run_id="video-run-0")
    return path


def _assay(*arguments: str, **settings) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, timeout=60, **settings)


def _nothing_imported() -> None:
    import os

    assert not labels_file(Path(os.environ["ASSAY_STORE"])).exists()


@pytest.mark.parametrize(("encoding", "named"), [
    ("utf-16", "is UTF-16 text (as Windows PowerShell's `>` and Out-File write it)"),
    ("utf-32", "is UTF-32 text (its byte-order mark says so)"),
    ("utf-16-le", "holds NUL bytes, as UTF-16 text without a byte-order mark does (or a binary file)"),
])
def test_a_label_file_in_a_wide_encoding_is_named_so_with_the_way_to_convert_it(exported, tmp_path, encoding, named):
    """It said `is not UTF-8 text (invalid start byte at byte 0)` (or, without a byte-order mark, `invalid start byte at
    byte 628`): neither the encoding nor what to do."""
    wide = tmp_path / "wide.jsonl"
    wide.write_bytes(exported.read_text(encoding="utf-8").encode(encoding))
    result = _assay("labels", "import", str(wide), text=True)
    iconv = "UTF-32" if encoding == "utf-32" else "UTF-16"
    assert (result.returncode, result.stdout, result.stderr) == (2, "", (
        f"Error: the label file {wide} {named}, and labels are read as UTF-8: convert it (iconv -f {iconv} -t UTF-8 "
        f"{wide} > labels-utf8.jsonl, or in PowerShell Get-Content {wide} | Set-Content -Encoding utf8 "
        "labels-utf8.jsonl) and import that\n"))
    _nothing_imported()


def test_utf16_piped_in_is_named_so_not_read_as_a_line_that_is_no_json(exported):
    """Piped in, it said `-:1: not JSON (Expecting value at column 1)`: standard input's text decoding hid the bytes."""
    result = _assay("labels", "import", "-", input=exported.read_text(encoding="utf-8").encode("utf-16"))
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "Error: standard input is UTF-16 text (as Windows PowerShell's `>` and Out-File write it), and labels are read "
        "as UTF-8: convert it (iconv -f UTF-16 -t UTF-8 FILE > labels-utf8.jsonl, or in PowerShell Get-Content FILE | "
        "Set-Content -Encoding utf8 labels-utf8.jsonl) and import that\n")
    _nothing_imported()


def test_utf8_with_or_without_a_byte_order_mark_still_imports_from_a_file_and_from_stdin(exported, tmp_path):
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + exported.read_bytes())
    assert _assay("labels", "import", str(marked), text=True).stdout == "Imported 2 label(s); 0 already present.\n"
    piped = _assay("labels", "import", "-", input=b"\xef\xbb\xbf" + exported.read_bytes().replace(b"\n", b"\r\n"))
    assert piped.stdout.decode() == "Imported 0 label(s); 2 already present.\n", piped.stderr


@pytest.mark.parametrize(("change", "said"), [
    (lambda document: document.pop("schema"), "schema is missing"),
    (lambda document: document.update(schema=None), "schema is null"),
])
def test_a_label_without_its_schema_says_what_the_line_needs_not_got_none(exported, tmp_path, change, said):
    """`{}`, or a label written by hand, read `schema must be 'assay.label.v1', got None`: Python's word for nothing."""
    document = json.loads(exported.read_text(encoding="utf-8").splitlines()[0])
    change(document)
    bad = tmp_path / "by-hand.jsonl"
    bad.write_text(json.dumps(document) + "\n", encoding="utf-8")
    result = _assay("labels", "import", str(bad), text=True)
    assert (result.returncode, result.stderr) == (
        2, f'Error: {bad}:1: {said}; a label line holds "schema": "assay.label.v1", as `assay labels export` writes it\n')
    _nothing_imported()


# The real command in a process of its own, which sends itself SIGINT (as Ctrl-C does) once the labels are appended to
# labels.jsonl and before they are indexed: the moment the message is for.
_CTRL_C_AFTER_APPENDING = """
import os, signal, sys
from assay.core.labels.store import LabelBook

append = LabelBook._append

def append_then_ctrl_c(book, lines):
    append(book, lines)
    os.kill(os.getpid(), signal.SIGINT)

LabelBook._append = append_then_ctrl_c
sys.argv = ["assay", *sys.argv[1:]]
from assay.__main__ import main
main()
"""


@pytest.mark.parametrize(("source", "again"), [
    ("my labels.jsonl", "run `assay labels import 'my labels.jsonl'` again"),
    ("-", "give the same labels to `assay labels import -` again"),
])
def test_an_interrupted_import_says_a_command_that_runs_as_printed(exported, tmp_path, source, again):
    """`run `assay labels import my labels.jsonl` again`: pasted, that is two files; and from standard input, running
    `assay labels import -` again waits for labels that were already piped in once."""
    spaced = tmp_path / "my labels.jsonl"
    spaced.write_bytes(exported.read_bytes())
    result = subprocess.run([sys.executable, "-c", _CTRL_C_AFTER_APPENDING, "labels", "import", source],
                            input=exported.read_bytes(), cwd=tmp_path, capture_output=True, timeout=60)
    assert (result.returncode, result.stderr.decode()) == (
        130, f"Interrupted: the labels added so far are kept; {again} to finish (a label already there is not added "
             "again).\n")
    if source == "-":
        return
    printed = result.stderr.decode().split("`")[1]  # run by a shell as printed, it finishes the import
    finished = subprocess.run(printed.replace("assay", f"{shlex.quote(sys.executable)} -m assay", 1), shell=True,
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert finished.stdout == "Imported 0 label(s); 2 already present.\n", finished.stderr


def test_the_note_limit_the_labels_page_gives_is_the_one_a_label_is_refused_at(exported, tmp_path):
    """The page said a note is refused when "longer than a label may be (64 KiB)": the viewer's request may be that
    long, but a note of more than 10,000 characters is refused well before it (`note is longer than 10000 characters`),
    so a person who kept under 64 KiB lost their note with a limit the page never gave."""
    import re

    from assay.core.labels.model import MAX_NOTE_CHARACTERS

    page = (Path(__file__).resolve().parents[2] / "docs" / "labels.md").read_text(encoding="utf-8")
    said = re.search(r"the note is longer than a label may hold \(([\d,]+) characters\)", " ".join(page.split()))
    assert said is not None and int(said.group(1).replace(",", "")) == MAX_NOTE_CHARACTERS
    document = json.loads(exported.read_text(encoding="utf-8").splitlines()[0])
    del document["label_id"]
    for length, refused in ((MAX_NOTE_CHARACTERS, False), (MAX_NOTE_CHARACTERS + 1, True)):
        long = tmp_path / f"note-{length}.jsonl"
        long.write_text(json.dumps({**document, "note": "n" * length}) + "\n", encoding="utf-8")
        result = _assay("labels", "import", str(long), text=True)
        assert (result.returncode, result.stderr) == ((2, f"Error: {long}:1: note is longer than {MAX_NOTE_CHARACTERS} "
                                                          "characters\n") if refused else (0, "")), result.stderr
