"""`assay labels …` used as a new user would: files given to `--output` that are not a place for labels, notes
with line separators, a reader that leaves, and messages for labels that are not labels."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from judged_runs import agent_unit, publish
from typer.testing import CliRunner

from assay.cli.app import app
from assay.core.labels.store import LabelBook, labels_file
from assay.core.labels.units import make_label, read_unit
from assay.core.results_store import SqliteRunStore

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
CLOSED_MESSAGE = "assay: standard output was closed, so the command stopped as on Ctrl-C"


@pytest.fixture
def database(tmp_path, monkeypatch) -> Path:
    """A store with an agent run, and ann's and bo's labels of its two units."""
    path = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(path))
    publish(path, "agent", [agent_unit(1, 0.9), agent_unit(2, 0.2)], run_id="agent-run-1", identity={"project": "/p"})
    _add_labels(path, [("ann", "main/eval1#1", "pass", ""), ("bo", "main/eval2#1", "fail", "")])
    return path


def _add_labels(database: Path, answers: list[tuple[str, str, str, str]]) -> None:
    with SqliteRunStore(database) as store:
        LabelBook(store).add([
            make_label(read_unit(store, "agent-run-1", unit_id), labeller, verdict=verdict, note=note,
                       now=T0 + timedelta(seconds=index))
            for index, (labeller, unit_id, verdict, note) in enumerate(answers)])


def _assay(*arguments: str, **settings) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=60,
                          **settings)


def test_export_refuses_to_replace_a_file_that_holds_no_labels(database, tmp_path):
    """`labels export -o pyproject.toml` (the shell completed the wrong name) replaced the project's file."""
    mine = tmp_path / "pyproject.toml"
    mine.write_text("[tool.assay]\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["labels", "export", "-o", str(mine)])
    assert (result.exit_code, result.stderr) == (2, f"Error: --output {mine} is a file that holds no labels, which the "
                                                    "export would replace; give the export a file of its own (e.g. "
                                                    "--output labels.jsonl)\n")
    assert mine.read_text(encoding="utf-8") == "[tool.assay]\n"
    earlier = tmp_path / "golden.jsonl"  # an earlier export, or an empty file, is replaced as asked
    for text in ('{"an": "earlier export"}\n', ""):
        earlier.write_text(text, encoding="utf-8")
        assert CliRunner().invoke(app, ["labels", "export", "-o", str(earlier)]).exit_code == 0
        assert [json.loads(line)["labeller"] for line in earlier.read_text().splitlines()] == ["ann", "bo"]


def test_export_refuses_to_replace_the_stores_own_label_file(database, tmp_path):
    """`labels export --labeller ann -o .assay/labels.jsonl` left only ann's labels in the file the store's labels
    are rebuilt from."""
    own = labels_file(database)
    before = own.read_bytes()
    roundabout = database.parent / ".." / database.parent.name / own.name
    for target in (own, roundabout):
        result = CliRunner().invoke(app, ["labels", "export", "--labeller", "ann", "-o", str(target)])
        assert result.exit_code == 2, result.output
        assert result.stderr == (f"Error: --output {target} is the store's own label file, which keeps every label; give "
                                 "the export a file of its own (e.g. --output labels-export.jsonl)\n")
    assert own.read_bytes() == before


def test_export_into_a_pipe_writes_into_it_and_leaves_it_a_pipe(database, tmp_path):
    """`-o /dev/null`, `-o /dev/fd/3` or a named pipe was replaced by a plain file (as root, /dev/null itself)."""
    pipe = tmp_path / "labels.fifo"
    os.mkfifo(pipe)
    reader = subprocess.Popen(["cat", str(pipe)], stdout=subprocess.PIPE)
    try:
        result = _assay("labels", "export", "-o", str(pipe))
        assert result.returncode == 0, result.stderr
        received, _ = reader.communicate(timeout=10)  # it waited for a writer that never came
    finally:
        reader.kill()
        reader.wait()
    assert [json.loads(line)["labeller"] for line in received.decode().splitlines()] == ["ann", "bo"]
    assert pipe.is_fifo()


def test_export_to_a_descriptor_appends_as_the_shell_opened_it(database, tmp_path):
    """`labels export -o /dev/fd/1 >> notes.txt` failed: /dev/fd is no folder to write a temporary file in."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf-8")
    with notes.open("a", encoding="utf-8") as stdout:
        result = subprocess.run([sys.executable, "-m", "assay", "labels", "export", "-o", "/dev/fd/1"], stdout=stdout,
                                stderr=subprocess.PIPE, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = notes.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "my notes" and [json.loads(line)["labeller"] for line in lines[1:]] == ["ann", "bo"]


def test_a_plain_file_under_dev_is_replaced_as_any_file_not_appended_to(database):
    """Only a device, a pipe or a name of a descriptor is written into: a file that merely lives under /dev (a tmpfs
    such as /dev/shm) is replaced, so a second export does not double the labels."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("this machine has no /dev/shm")
    folder = Path(tempfile.mkdtemp(dir=shm))
    try:
        target = folder / "labels.jsonl"
        for _ in range(2):
            result = CliRunner().invoke(app, ["labels", "export", "-o", str(target)])
            assert result.exit_code == 0, result.output
        assert [json.loads(line)["labeller"] for line in target.read_text(encoding="utf-8").splitlines()] == ["ann", "bo"]
    finally:
        shutil.rmtree(folder)


def test_export_through_a_link_keeps_the_link(database, tmp_path):
    """A golden set linked from elsewhere: the export replaced the link with a file of its own."""
    kept = tmp_path / "datasets" / "golden.jsonl"
    kept.parent.mkdir()
    kept.write_text("", encoding="utf-8")
    link = tmp_path / "golden.jsonl"
    link.symlink_to(kept)
    result = CliRunner().invoke(app, ["labels", "export", "-o", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and len(kept.read_text(encoding="utf-8").splitlines()) == 2


def _many_labels(database: Path, count: int) -> None:
    with SqliteRunStore(database) as store:
        unit = read_unit(store, "agent-run-1", "main/eval1#1")
        LabelBook(store).add([make_label(unit, f"labeller-{index}", verdict="pass", note="x" * 200,
                                         now=T0 + timedelta(seconds=index)) for index in range(count)])


@pytest.mark.parametrize("output", [[], ["-o", "/dev/stdout"]])
def test_an_export_whose_reader_leaves_stops_as_on_ctrl_c(database, output):
    """`assay labels export | head -1` of a large export exited 0 without a word, its output cut short; with
    `-o /dev/stdout` it said `cannot be written: Broken pipe` (exit 2)."""
    _many_labels(database, 3000)  # about 2 MB: more than a pipe holds
    process = subprocess.Popen([sys.executable, "-m", "assay", "labels", "export", *output], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().startswith("{")
        process.stdout.close()
        code = process.wait(timeout=60)
        stderr = process.stderr.read()
    finally:
        process.kill()
        process.wait()
    assert code == 130, stderr
    assert stderr.strip().splitlines()[-1].startswith(CLOSED_MESSAGE), stderr
    assert "Traceback" not in stderr


def test_a_note_with_a_line_separator_exports_and_imports(database, tmp_path, monkeypatch):
    """A note pasted from a web page holds U+2028 (or U+0085), which JSON leaves as it is: importing the file
    `labels export` wrote said `not JSON (Unterminated string starting at at column …)`."""
    _add_labels(database, [("cy", "main/eval1#1", "fail", "copied\u2028from a page\x85and more")])
    exported = tmp_path / "shared.jsonl"
    assert CliRunner().invoke(app, ["labels", "export", "-o", str(exported)]).exit_code == 0
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "other" / "assay.db"))
    publish(tmp_path / "other" / "assay.db", "video", [], run_id="video-run-0")
    result = CliRunner().invoke(app, ["labels", "import", str(exported)])
    assert (result.exit_code, result.stdout) == (0, "Imported 3 label(s); 0 already present.\n"), result.output
    exported_again = CliRunner().invoke(app, ["labels", "export", "--labeller", "cy"])
    assert json.loads(exported_again.stdout)["note"] == "copied\u2028from a page\x85and more"


def test_a_torn_line_and_a_line_that_is_no_object_say_so_in_plain_words(database, tmp_path):
    """`…: not JSON (Unterminated string starting at at column 20)`; `label must be a JSON object, got NoneType`."""
    cases = {
        '{"schema": "assay.label.v1", "note": "cut off\n': "not JSON (Unterminated string starting at column 38); ",
        "null\n": "label must be a JSON object, got null\n",
        '"ann,pass"\n': "label must be a JSON object, got a string\n",
        "[]\n": "label must be a JSON object, got an array\n",
        "3\n": "label must be a JSON object, got a number\n",
    }
    for number, (text, message) in enumerate(cases.items()):
        source = tmp_path / f"bad-{number}.jsonl"
        source.write_text(text, encoding="utf-8")
        result = CliRunner().invoke(app, ["labels", "import", str(source)])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"Error: {source}:1: {message}"), result.stderr


def test_an_import_stopped_between_appending_and_indexing_says_what_is_kept_and_how_to_finish(database, tmp_path,
                                                                                               monkeypatch):
    """Ctrl-C during a long import said only `Interrupted.`: whether any label was added, and what to do, was left
    open."""
    exported = tmp_path / "shared.jsonl"
    assert CliRunner().invoke(app, ["labels", "export", "-o", str(exported)]).exit_code == 0
    other = tmp_path / "other" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(other))
    publish(other, "video", [], run_id="video-run-0")
    append = LabelBook._append

    def append_then_ctrl_c(book, lines):
        append(book, lines)
        raise KeyboardInterrupt

    monkeypatch.setattr(LabelBook, "_append", append_then_ctrl_c)
    stopped = CliRunner().invoke(app, ["labels", "import", str(exported)])
    assert (stopped.exit_code, stopped.stderr) == (
        130, f"Interrupted: the labels added so far are kept; run `assay labels import {exported}` again to finish (a label "
             "already there is not added again).\n")
    monkeypatch.undo()
    monkeypatch.setenv("ASSAY_STORE", str(other))
    again = CliRunner().invoke(app, ["labels", "import", str(exported)])
    assert again.stdout == "Imported 0 label(s); 2 already present.\n", again.output
    assert len(labels_file(other).read_text(encoding="utf-8").splitlines()) == 2


def test_a_misspelt_run_is_an_error_naming_the_option(database):
    result = CliRunner().invoke(app, ["labels", "export", "--run", "agent-run-X"])
    assert (result.exit_code, result.stderr) == (2, f"Error: --run: no run 'agent-run-X' in the store {database}; "
                                                    "`assay runs list` shows the run ids\n")


def test_an_edited_label_is_refused_with_the_way_to_add_it(database, tmp_path):
    """It said `…: it was edited`, and no more: a person who corrected a note by hand had no way on."""
    exported = CliRunner().invoke(app, ["labels", "export", "--labeller", "ann"]).stdout
    document = json.loads(exported)
    document["note"] = "corrected by hand"
    edited = tmp_path / "edited.jsonl"
    edited.write_text(json.dumps(document) + "\n", encoding="utf-8")
    refused = CliRunner().invoke(app, ["labels", "import", str(edited)])
    assert refused.exit_code == 2
    assert refused.stderr.startswith(f"Error: {edited}:1: label_id '{document['label_id']}' is not the hash of the label's "
                                     "content (")
    assert refused.stderr.endswith("): it was edited; put the line back as it was exported, or remove its label_id to add "
                                   "the edited label as a new one\n")
    del document["label_id"]  # as the message says
    edited.write_text(json.dumps(document) + "\n", encoding="utf-8")
    added = CliRunner().invoke(app, ["labels", "import", str(edited)])
    assert added.stdout == "Imported 1 label(s); 0 already present.\n", added.output
