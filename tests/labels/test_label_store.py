"""Labels are data: appended to labels.jsonl beside the store and indexed in its `labels` table,
surviving `assay runs reindex` (even of a damaged store), exported and imported idempotently."""

from __future__ import annotations

import io
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from judged_runs import agent_unit, publish
from typer.testing import CliRunner

from assay.cli.app import app
from assay.core.labels.model import Label, LabelError, parse_label
from assay.core.labels.store import LabelBook, labels_file
from assay.core.labels.units import make_label, read_unit
from assay.core.results_store import SqliteRunStore, reindex

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def database(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(path))
    publish(path, "agent", [agent_unit(1, 0.9), agent_unit(2, 0.2)], run_id="agent-run-1",
            identity={"project": "/p"})
    return path


def _label(store, unit_id: str, labeller: str = "ann", minutes: int = 0, **answer) -> Label:
    return make_label(read_unit(store, "agent-run-1", unit_id), labeller, now=T0 + timedelta(minutes=minutes), **answer)


def test_a_label_records_the_unit_identity_and_what_the_judge_said_then(database):
    with SqliteRunStore(database) as store:
        label = _label(store, "main/eval1#1", verdict="fail", score=2, note="wrong city")
        assert LabelBook(store).add([label]) == [label]
    assert (label.run_id, label.unit_id, label.kind, label.subject) == ("agent-run-1", "main/eval1#1", "agent", "main/eval1")
    judgement = label.judgements[0]
    assert (judgement.model, judgement.verdict, judgement.score) == ("judge-1", "pass", 0.9)
    assert judgement.rubric == "judge('names a city', threshold=0.5)" and label.checks == "pass"
    line = json.loads(labels_file(database).read_text().splitlines()[0])
    assert line["labeller"] == "ann" and line["created_at"] == "2026-12-01T09:00:00.000Z" and line["note"] == "wrong city"
    assert parse_label(line) == label


def test_labels_are_appended_never_rewritten_and_the_latest_of_a_labeller_counts(database):
    with SqliteRunStore(database) as store:
        book = LabelBook(store)
        book.add([_label(store, "main/eval1#1", verdict="pass")])
        book.add([_label(store, "main/eval1#1", verdict="fail", minutes=1)])
        assert [label.verdict for label in book.labels()] == ["pass", "fail"]
    assert len(labels_file(database).read_text().splitlines()) == 2


def test_labels_survive_reindex_of_a_damaged_store(database):
    with SqliteRunStore(database) as store:
        LabelBook(store).add([_label(store, "main/eval1#1", verdict="fail"), _label(store, "main/eval2#1", score=4)])
    database.write_bytes(b"this is not a database" * 100)
    outcome = reindex(database)
    assert outcome.set_aside is not None and outcome.runs == 1 and outcome.labels == 2
    with SqliteRunStore(database, read_only=True) as store:
        assert sorted(label.unit_id for label in LabelBook(store).labels()) == ["main/eval1#1", "main/eval2#1"]


def test_reindex_indexes_a_label_appended_before_a_crash_and_names_a_torn_line(database):
    with SqliteRunStore(database) as store:
        label = _label(store, "main/eval1#1", verdict="pass")
    # The label reached labels.jsonl, the process died before indexing it, and a second append was torn.
    labels_file(database).write_text(json.dumps(label.to_json()) + "\n" + '{"label_id": "abc', encoding="utf-8")
    outcome = reindex(database)
    assert outcome.labels == 1 and len(outcome.skipped_labels) == 1 and ":2: JSONDecodeError" in outcome.skipped_labels[0]
    with SqliteRunStore(database) as store:
        LabelBook(store).add([_label(store, "main/eval2#1", verdict="fail")])  # appends after the torn line
    lines = labels_file(database).read_text().splitlines()
    assert lines[1] == '{"label_id": "abc' and json.loads(lines[2])["unit_id"] == "main/eval2#1"


def test_runs_reindex_says_how_many_labels_it_restored_and_names_a_torn_line(database, monkeypatch):
    """docs/labels.md: a torn line "is skipped and named"; `runs reindex` skipped it without a word."""
    monkeypatch.setenv("ASSAY_STORE", str(database))
    with SqliteRunStore(database) as store:
        label = _label(store, "main/eval1#1", verdict="pass")
    labels_file(database).write_text(json.dumps(label.to_json()) + "\n" + '{"torn": ', encoding="utf-8")
    result = CliRunner().invoke(app, ["runs", "reindex"])
    assert result.exit_code == 0, result.output
    assert f"and 1 label(s) into {database}" in result.output
    assert f"Skipped an unreadable label line: {labels_file(database)}:2: JSONDecodeError" in result.output


def test_an_edited_label_is_refused_on_import(database):
    with SqliteRunStore(database) as store:
        document = _label(store, "main/eval1#1", verdict="pass").to_json()
    document["verdict"] = "fail"
    with pytest.raises(LabelError, match="is not the hash of the label's content"):
        parse_label(document)
    with pytest.raises(LabelError, match="score must be an integer from 1 to 5"):
        parse_label({**document, "label_id": None, "score": 6})


def test_export_then_import_into_another_store_is_idempotent(database, tmp_path, monkeypatch):
    with SqliteRunStore(database) as store:
        LabelBook(store).add([_label(store, "main/eval1#1", verdict="fail", note="x"), _label(store, "main/eval2#1", "bo", score=3)])
    runner = CliRunner()
    exported = runner.invoke(app, ["labels", "export"])
    assert exported.exit_code == 0, exported.output
    lines = exported.stdout.splitlines()
    assert [json.loads(line)["labeller"] for line in lines] == ["ann", "bo"]
    monkeypatch.chdir(tmp_path)
    dashed = runner.invoke(app, ["labels", "export", "-o", "-"])  # wrote a file named `-`
    assert dashed.exit_code == 0 and dashed.stdout == exported.stdout and not (tmp_path / "-").exists()
    shared = tmp_path / "shared.jsonl"
    shared.write_text(exported.stdout, encoding="utf-8")

    other = tmp_path / "other" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(other))
    publish(other, "video", [], run_id="video-run-0")
    first = runner.invoke(app, ["labels", "import", str(shared)])
    assert first.exit_code == 0, first.output
    assert "Imported 2 label(s); 0 already present." in first.output
    again = runner.invoke(app, ["labels", "import", str(shared)])
    assert "Imported 0 label(s); 2 already present." in again.output
    with SqliteRunStore(other, read_only=True) as store:
        assert len(LabelBook(store).labels()) == 2
    assert len(labels_file(other).read_text().splitlines()) == 2


def test_export_into_a_folder_that_is_not_there_is_one_error_naming_the_option_and_the_fix(database, tmp_path):
    """It said `could not write …: No such file or directory`: neither the option nor what to do."""
    target = tmp_path / "missing" / "golden.jsonl"
    result = CliRunner().invoke(app, ["labels", "export", "-o", str(target)])
    assert (result.exit_code, result.stderr) == (2, f"Error: --output {target} cannot be written: the folder {target.parent} "
                                                    "does not exist; make it first, or give a file in a folder that exists\n")
    assert not target.parent.exists()


def test_export_to_a_folder_or_under_a_file_is_one_error_naming_the_option_and_the_fix(database, tmp_path):
    """They said `could not write …: Is a directory` and `…: Not a directory`."""
    folder = CliRunner().invoke(app, ["labels", "export", "-o", str(tmp_path)])
    assert (folder.exit_code, folder.stderr) == (2, f"Error: --output {tmp_path} is a folder; give a file to write the labels "
                                                    f"to (e.g. {tmp_path / 'labels.jsonl'})\n")
    plain = tmp_path / "notes.txt"
    plain.write_text("")
    under = CliRunner().invoke(app, ["labels", "export", "-o", str(plain / "golden.jsonl")])
    assert (under.exit_code, under.stderr) == (2, f"Error: --output {plain / 'golden.jsonl'} cannot be written: {plain} is a "
                                                  "file, not a folder; give a file in a folder\n")


def test_import_names_the_line_and_field_that_is_wrong_and_exits_2(database, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema": "assay.label.v1", "labeller": "ann"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["labels", "import", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:1: label.created_at must be a non-empty string" in result.output
    with SqliteRunStore(database, read_only=True) as store:
        assert LabelBook(store).labels() == []


def test_a_store_an_earlier_assay_left_unmarked_is_still_ours_with_its_labels_table(database):
    """A store without the "asay" mark is checked by its tables: `labels` must count as assay's own."""
    with sqlite3.connect(database) as connection:
        connection.execute("PRAGMA application_id = 0")
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "labels" in tables
    with SqliteRunStore(database, read_only=True) as store:
        assert store.resolve("latest") == "agent-run-1"


def test_a_labels_file_that_is_a_folder_is_one_error_naming_it(database, monkeypatch, tmp_path):
    """It was a traceback (IsADirectoryError) from `labels import`, and `Error: IsADirectoryError: …` elsewhere."""
    monkeypatch.setenv("ASSAY_STORE", str(database))
    labels_file(database).unlink(missing_ok=True)
    labels_file(database).mkdir()
    source = tmp_path / "in.jsonl"
    source.write_text("")
    for arguments in (["labels", "import", str(source)], ["runs", "reindex"], ["judge", "agreement"], ["labels", "export"]):
        result = CliRunner().invoke(app, arguments)
        assert result.exit_code == 2, (arguments, result.output)
        assert result.output.strip() == (f"Error: {labels_file(database)} is a folder; the store keeps its labels in a file "
                                         "of that name: move the folder away"), (arguments, result.output)


def test_assay_store_naming_a_folder_is_one_error_with_the_file_meant(tmp_path, monkeypatch):
    """`ASSAY_STORE=.assay` (the folder, not the database in it) read as "disk I/O error" from SQLite."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path))
    result = CliRunner().invoke(app, ["runs", "list"])
    assert result.exit_code == 2
    assert result.output.strip() == (f"Error: ASSAY_STORE={tmp_path} is a folder; it names the store's database file "
                                     f"(e.g. ASSAY_STORE={tmp_path / 'assay.db'})")


def test_import_of_an_empty_path_or_a_missing_file_is_one_error_naming_it(database, tmp_path):
    """`assay labels import "$GOLDEN"` with the variable unset read the current folder: `could not read : [Errno 21]
    Is a directory: '.'`; a missing file said its errno and path twice."""
    empty = CliRunner().invoke(app, ["labels", "import", ""])
    assert (empty.exit_code, empty.stderr) == (2, "Error: the label file needs a path (or - for stdin), and the value "
                                                  "given is empty (an unset variable in a script?)\n")
    missing = tmp_path / "golden.jsonl"
    result = CliRunner().invoke(app, ["labels", "import", str(missing)])
    assert (result.exit_code, result.stderr) == (2, f"Error: the label file {missing} does not exist; give a JSONL file of "
                                                    "labels (as `assay labels export` writes them), or - for stdin\n")


def test_import_of_a_folder_or_a_binary_file_is_one_error_saying_what_to_give(database, tmp_path):
    """They said `could not read …: Is a directory` and `…: 'utf-8' codec can't decode byte 0xf8 in position 102: …`."""
    folder = CliRunner().invoke(app, ["labels", "import", str(tmp_path)])
    assert (folder.exit_code, folder.stderr) == (2, f"Error: the label file {tmp_path} is a folder; give a JSONL file of labels "
                                                    "(as `assay labels export` writes them), or - for stdin\n")
    picture = tmp_path / "labels.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")
    binary = CliRunner().invoke(app, ["labels", "import", str(picture)])
    assert (binary.exit_code, binary.stderr) == (2, f"Error: the label file {picture} is not UTF-8 text (invalid start byte at "
                                                    "byte 0); give a JSONL file of labels (as `assay labels export` writes "
                                                    "them), or - for stdin\n")


def test_labels_appended_but_not_yet_indexed_are_exported_and_counted_from_a_read_only_store(database):
    """An import stopped by Ctrl-C (or killed) after appending to labels.jsonl but before indexing left labels that
    `labels export` and `judge agreement` did not show ("No labels yet") until some write command synced them."""
    with SqliteRunStore(database) as store:
        indexed = _label(store, "main/eval1#1", verdict="pass")
        LabelBook(store).add([indexed])
        pending = _label(store, "main/eval2#1", "bo", verdict="fail")
    with labels_file(database).open("a", encoding="utf-8") as stream:
        stream.write(json.dumps(pending.to_json()) + "\n")
    exported = CliRunner().invoke(app, ["labels", "export"])
    assert exported.exit_code == 0, exported.output
    assert [json.loads(line)["label_id"] for line in exported.stdout.splitlines()] == [indexed.label_id, pending.label_id]
    by_bo = CliRunner().invoke(app, ["labels", "export", "--labeller", "bo"])
    assert by_bo.exit_code == 0 and [json.loads(line)["unit_id"] for line in by_bo.stdout.splitlines()] == ["main/eval2#1"]
    agreement = CliRunner().invoke(app, ["judge", "agreement"])
    assert agreement.exit_code == 0 and "Agreement with 2 human label(s) of 2 unit(s) (labellers: ann, bo)" in agreement.output
    with SqliteRunStore(database, read_only=True) as store:
        assert LabelBook(store).labels_of_unit("agent-run-1", "main/eval2#1") == [pending]


def test_an_unreadable_line_a_read_only_command_passes_over_is_named(database):
    """docs/labels.md: a line that cannot be read "is skipped and named". `judge agreement` and `labels export`
    read the lines the index lacks themselves (their store is read-only), and skipped a torn one without a word."""
    with SqliteRunStore(database) as store:
        indexed = _label(store, "main/eval1#1", verdict="pass")
        LabelBook(store).add([indexed])
    with labels_file(database).open("a", encoding="utf-8") as stream:
        stream.write('{"torn": \n')
    named = f"Skipped an unreadable label line: {labels_file(database)}:2: JSONDecodeError"
    for arguments in (["judge", "agreement"], ["labels", "export"]):
        result = CliRunner().invoke(app, arguments)
        assert result.exit_code == 0, result.output
        assert named in result.stderr, (arguments, result.stderr)
        assert "(mend or delete that line of the file; it holds no label assay can read)" in result.stderr
    exported = CliRunner().invoke(app, ["labels", "export"])
    assert [json.loads(line)["label_id"] for line in exported.stdout.splitlines()] == [indexed.label_id]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda label: label.update(created_at="yesterday"),
     "label.created_at must be an ISO 8601 UTC time such as 2026-12-01T09:00:00.000Z, got 'yesterday'"),
    (lambda label: label.update(created_at="2026-02-30T09:00:00.000Z"),
     "label.created_at '2026-02-30T09:00:00.000Z' is no date and time of the calendar"),
    (lambda label: label["judgements"][0].update(score_range=[1.0, 0.0]),
     "judgements[0].score_range must be [low, high] with low < high, or null; got [1.0, 0.0]"),
    (lambda label: label["judgements"][0].update(score=9),
     "judgements[0].score 9 is outside its score_range [0.0, 1.0]"),
], ids=["not-a-time", "no-such-date", "range-upside-down", "score-outside-its-range"])
def test_import_refuses_a_time_or_a_judge_scale_the_agreement_would_read_wrongly(database, tmp_path, edit, message):
    """They were imported: "yesterday" sorts after every real time, so that label outranked each later one of its
    labeller, and an upside-down range (or a score outside it) mapped the judge's score off the 1–5 scale."""
    with SqliteRunStore(database) as store:
        document = _label(store, "main/eval1#1", verdict="pass").to_json()
    del document["label_id"]
    edit(document)
    source = tmp_path / "golden.jsonl"
    source.write_text(json.dumps(document) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["labels", "import", str(source)])
    assert result.exit_code == 2 and result.stderr.startswith(f"Error: {source}:1: {message}"), result.output
    assert not labels_file(database).exists()


def test_import_refuses_a_misspelt_judgement_field_that_would_be_dropped_unnoticed(database, tmp_path):
    """The label's id hashes the judgement's known fields only, so `"modle"` kept the id valid and vanished."""
    with SqliteRunStore(database) as store:
        document = _label(store, "main/eval1#1", verdict="pass").to_json()
    document["judgements"][0]["modle"] = "judge-2"
    source = tmp_path / "golden.jsonl"
    source.write_text(json.dumps(document) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["labels", "import", str(source)])
    assert result.exit_code == 2
    assert result.stderr == (f"Error: {source}:1: judgements[0]: unknown field(s) modle (did you mean 'model'?); a "
                             "judgement has judge, model, "
                             "prompt, reason, rubric, score, score_range, verdict\n")


def test_a_misspelt_label_field_is_named_with_the_field_meant(database, tmp_path):
    """`"verdic"` was named among fourteen field names, left for the person to spot which was meant."""
    with SqliteRunStore(database) as store:
        document = _label(store, "main/eval1#1", verdict="pass", note="ok").to_json()
    document["verdic"] = document.pop("verdict")
    document["labeler"] = document.pop("labeller")
    source = tmp_path / "golden.jsonl"
    source.write_text(json.dumps(document) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["labels", "import", str(source)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {source}:1: unknown field(s) labeler (did you mean 'labeller'?), verdic (did "
                                    "you mean 'verdict'?); a label has checks, content, "), result.stderr
    assert not labels_file(database).exists()


ONE_PER_LINE = "a label file holds one label per line, each a JSON object, as `assay labels export` writes them"


def _docs_label_example() -> str:
    """The label of docs/labels.md's "Labels are data", as written there: spread over several lines."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "labels.md").read_text(encoding="utf-8")
    return text.split("```json\n", 1)[1].split("```", 1)[0]


def test_a_label_spread_over_lines_an_array_or_another_format_is_one_error_saying_one_label_a_line(database, tmp_path):
    """The docs' own label example, saved as a file, said `not JSON: Expecting property name enclosed in double quotes:
    line 1 column 96 (char 95)`; `jq .` output and a JSON array said as little of the cause and the fix."""
    example = _docs_label_example()
    assert example.count("\n") == 8 and json.loads(example)["labeller"] == "ann"
    with SqliteRunStore(database) as store:
        label = _label(store, "main/eval1#1", verdict="pass").to_json()
    cases = {
        "docs.jsonl": (example, f"1: a JSON object spread over lines 1–8; {ONE_PER_LINE} (jq -c . joins each onto one line)"),
        "jq.jsonl": (json.dumps(label) + "\n" + json.dumps(label, indent=2) + "\n",
                     f"2: a JSON object spread over lines 2–{2 + json.dumps(label, indent=2).count(chr(10))}; {ONE_PER_LINE}"),
        "array.json": (json.dumps([label, label]) + "\n",
                       f"1: a JSON array of 2 object(s), not one label; {ONE_PER_LINE} (jq -c '.[]' "),
        "pretty-array.json": (json.dumps([label], indent=2), "1: a JSON array spread over lines 1–"),
        "labels.csv": ("labeller,unit_id,verdict\nann,main/eval1#1,pass\n",
                       f"1: not JSON (Expecting value at column 1); {ONE_PER_LINE}\n"),
    }
    for name, (text, message) in cases.items():
        source = tmp_path / name
        source.write_text(text, encoding="utf-8")
        result = CliRunner().invoke(app, ["labels", "import", str(source)])
        assert result.exit_code == 2, (name, result.output)
        assert result.stderr.startswith(f"Error: {source}:{message}"), (name, result.stderr)
        assert "Traceback" not in result.output
    assert not labels_file(database).exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_import_from_stdin_at_a_terminal_says_it_is_reading_the_terminal(monkeypatch, capsys):
    """`assay labels import -` typed at a prompt waited for input without a word, as if it had hung."""
    from assay.core.labels.jsonl import read_labels

    monkeypatch.setattr("sys.stdin", _Terminal(""))
    assert read_labels("-") == []
    assert capsys.readouterr().err == (
        "Reading labels from standard input, which is this terminal: paste label lines and end with Ctrl-D, or stop "
        "with Ctrl-C and give a file (assay labels import FILE, or ... | assay labels import -).\n")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # piped in: nothing to say
    assert read_labels("-") == []
    assert capsys.readouterr().err == ""


def test_a_label_file_saved_with_a_byte_order_mark_imports(database, tmp_path):
    """A file saved by a Windows editor was `not JSON: Unexpected UTF-8 BOM (decode using utf-8-sig)`."""
    with SqliteRunStore(database) as store:
        label = _label(store, "main/eval1#1", verdict="pass")
    source = tmp_path / "golden.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + json.dumps(label.to_json()).encode("utf-8") + b"\n")
    result = CliRunner().invoke(app, ["labels", "import", str(source)])
    assert result.exit_code == 0, result.output
    assert "Imported 1 label(s); 0 already present." in result.output


def test_a_label_stored_before_times_were_checked_is_still_read(database):
    """The stricter checks are for files being imported: a store holding an older label stays readable."""
    with SqliteRunStore(database) as store:
        document = _label(store, "main/eval1#1", verdict="pass").to_json()
    del document["label_id"]
    document["created_at"] = "yesterday"
    label = parse_label(document)
    with SqliteRunStore(database) as store:
        LabelBook(store).add([label])
    result = CliRunner().invoke(app, ["labels", "export"])
    assert result.exit_code == 0 and json.loads(result.stdout)["created_at"] == "yesterday"
