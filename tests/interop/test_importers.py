"""Logs written by the real tools, imported: each run's totals equal what the tool itself said."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.core.interop.formats import detect_format
from assay.core.interop.importing import import_log, plan_imports
from assay.core.interop.zipstream import iter_members
from assay.core.record import store_path
from assay.core.results_store import SqliteRunStore


def _import(path: Path, format_name: str | None = None):
    ((_, log_format),) = plan_imports([path], format_name)
    return import_log(path, log_format)


def _units(run_id: str) -> dict[str, object]:
    with SqliteRunStore(store_path(), read_only=True) as store:
        page = store.unit_page(run_id, limit=10_000)
        return {unit.unit_id: unit for unit in page.units}


def _assay(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False)


def test_junit_from_pytest_equals_its_testsuite_totals(junit_log):
    suite = ElementTree.parse(junit_log.path).getroot().find("testsuite")
    imported = _import(junit_log.path)
    assert imported.format == "junit"
    counts = imported.counts
    totals = {name: int(suite.get(name)) for name in ("tests", "failures", "errors", "skipped")}
    assert totals == {"tests": 11, "failures": 3, "errors": 2, "skipped": 2}
    assert imported.unit_count == totals["tests"]
    assert (counts["failed"], counts["errored"], counts["skipped"]) == (totals["failures"], totals["errors"], totals["skipped"])
    assert counts["passed"] == totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"]
    units = _units(imported.run_id)
    # pytest writes a failure and its teardown error as two elements of one test: two trials of one unit
    assert units["test_capitals::test_fails_then_errors_in_teardown"].verdict == "failed"
    assert units["test_capitals::test_fails_then_errors_in_teardown#2"].verdict == "errored"
    assert units["test_capitals::test_param[2]"].reason.startswith("assert 2 != 2")
    assert units["test_capitals.TestGroup::test_method"].group == "pytest/test_capitals.TestGroup"
    assert units["test_capitals::test_xfail"].verdict == "skipped"


def test_inspect_eval_and_json_logs_equal_inspects_own_summary(inspect_logs):
    for log_format in ("eval", "json"):
        log = inspect_logs[log_format]
        imported = _import(log.path)
        own = log.summary
        counts = imported.counts
        assert imported.format == "inspect" and imported.tool == "inspect-ai" and imported.tool_version == own["version"]
        assert imported.unit_count == own["total_samples"] == 8  # 4 samples × 2 epochs
        assert imported.unit_count - counts["errored"] == own["completed_samples"]
        assert counts["errored"] == own["errors"] == 2
        assert counts["passed"] / (counts["passed"] + counts["failed"]) == own["accuracy"]
        units = _units(imported.run_id)
        assert sorted(units) == sorted(f"{sample}#{epoch}" for sample in ("france", "peru", "atlantis", "3") for epoch in (1, 2))
        france = units["france#2"]
        assert france.verdict == "passed" and france.group == "capitals" and france.expected == "Paris"
        assert france.observed == {"score": "C", "answer": "paris"}
        assert france.usage == {"input_tokens": 3, "output_tokens": 3, "total_tokens": 6}
        assert france.detail["model"] and france.detail["evaluation"] == own["scorer"]
        assert "no such country" in units["atlantis#1"].reason


def _rewritten(source: Path, target: Path, change: Callable[[str, bytes], bytes | None]) -> Path:
    """A copy of an Inspect .eval log with each member's content changed (None leaves it out), deflated."""
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in iter_members(source, lambda name: True):
            changed = change(name, content)
            if changed is not None:
                archive.writestr(name, changed)
    return target


def _equals_inspects_summary(imported, own) -> None:
    counts = imported.counts
    assert imported.unit_count == own["total_samples"] == 8
    assert imported.unit_count - counts["errored"] == own["completed_samples"]
    assert counts["errored"] == own["errors"] == 2
    assert counts["passed"] / (counts["passed"] + counts["failed"]) == own["accuracy"]


def test_an_eval_log_is_read_from_inspects_sample_summaries_not_its_samples(inspect_logs, tmp_path):
    # Every unit comes from summaries.json (~0.5 KB a sample); the sample members (~7 KB: messages,
    # events) are never decoded, so here they are made unreadable.
    log = inspect_logs["eval"]
    probe = _rewritten(log.path, tmp_path / "summaries.eval",
                       lambda name, content: b"{not json" if name.startswith("samples/") else content)
    imported = _import(probe)
    _equals_inspects_summary(imported, log.summary)
    units = _units(imported.run_id)
    france = units["france#2"]
    assert france.verdict == "passed" and france.expected == "Paris" and france.observed == {"score": "C", "answer": "paris"}
    assert france.usage == {"input_tokens": 3, "output_tokens": 3, "total_tokens": 6}
    assert france.detail["model"] == log.summary["model"] and france.detail["evaluation"] == log.summary["scorer"]
    assert "output" not in france.detail  # the model's text is in the sample only
    assert units["atlantis#1"].verdict == "errored" and "no such country" in units["atlantis#1"].reason
    # an input of chat messages holds `},{"id":` inside its summary, as between two summaries
    assert [message["role"] for message in units["peru#1"].detail["input"]] == ["system", "user"]


def test_an_eval_log_without_summaries_is_read_from_its_samples(inspect_logs, tmp_path):
    log = inspect_logs["eval"]
    samples_only = _rewritten(log.path, tmp_path / "samples.eval", lambda name, content: None if "summaries" in name else content)
    imported = _import(samples_only)
    _equals_inspects_summary(imported, log.summary)
    units = _units(imported.run_id)
    # from the sample itself, a unit also keeps the model's output and an error's traceback
    assert units["france#1"].detail["output"] == "Paris"
    assert units["atlantis#1"].detail["traceback"].lstrip(" +").startswith("Exception Group Traceback")


def test_pydantic_evals_report_equals_its_own_averages(pydantic_evals_report):
    own = pydantic_evals_report.summary
    imported = _import(pydantic_evals_report.path)
    counts = imported.counts
    assert imported.format == "pydantic-evals"
    assert imported.unit_count == own["cases"] + own["failures"]
    assert counts["passed"] == own["all_assertions_pass"]
    assert counts["errored"] == own["failures"] + own["evaluator_failures"]
    units = _units(imported.run_id)
    # the share of assertions that held, as pydantic-evals averages a repeated run: per case, then over cases
    per_case: dict[str, list[bool]] = {}
    for unit_id, unit in units.items():
        if isinstance(unit.observed, dict):
            per_case.setdefault(unit_id.split("#")[0], []).extend(unit.observed.get("assertions", {}).values())
    shares = [sum(values) / len(values) for values in per_case.values()]
    assert sum(shares) / len(shares) == own["assertions"]
    assert sorted(units) == ["atlantis#1", "atlantis#2", "france#1", "france#2", "peru#1", "peru#2", "spain#1", "spain#2"]
    assert units["spain#1"].verdict == "failed" and units["spain#1"].reason == "failed: EqualsExpected"
    lengths = [unit.observed["score"] for unit in units.values() if isinstance(unit.observed, dict) and "score" in unit.observed]
    assert sum(lengths) / len(lengths) == pytest.approx(own["scores"]["Length"])


def test_deepeval_test_run_equals_its_pass_and_fail_counts(deepeval_run):
    saved = json.loads(deepeval_run.path.read_text())
    imported = _import(deepeval_run.path)
    counts = imported.counts
    assert imported.format == "deepeval"
    assert counts["passed"] == saved["testPassed"] == deepeval_run.summary["passed"]
    # DeepEval counts a test case whose metric raised as failed; assay calls it errored
    assert counts["failed"] + counts["errored"] == saved["testFailed"] == deepeval_run.summary["failed"]
    assert counts["errored"] == deepeval_run.summary["errored"] == 1
    units = _units(imported.run_id)
    assert units["spain"].observed["scores"] == {"Exact answer": 0.0, "Brevity": pytest.approx(10 / 23)}
    assert "grader down" in units["atlantis"].reason
    assert "score" not in units["atlantis"].observed  # its other metric's score is not the case's


def test_promptfoo_results_equal_its_stats(promptfoo_results):
    stats = promptfoo_results.summary
    imported = _import(promptfoo_results.path)
    counts = imported.counts
    assert imported.format == "promptfoo" and imported.tool_version
    assert (counts["passed"], counts["failed"], counts["errored"]) == (stats["successes"], stats["failures"], stats["errors"])
    units = _units(imported.run_id)
    group = "echo/Capital of {{country}}: {{answer}}"
    assert set(units) == {f"{group}/france", f"{group}/peru", f"{group}/country=Spain, answer=Madrid"}
    assert units[f"{group}/peru"].reason == 'Expected output to contain "Lima"'


def test_each_format_is_told_from_its_content(junit_log, inspect_logs, pydantic_evals_report):
    assert detect_format(junit_log.path).name == "junit"
    assert detect_format(inspect_logs["eval"].path).name == "inspect"
    assert detect_format(inspect_logs["json"].path).name == "inspect"
    assert detect_format(pydantic_evals_report.path).name == "pydantic-evals"


def test_a_file_no_format_claims_is_a_usage_error_naming_it(tmp_path):
    stray = tmp_path / "notes.json"
    stray.write_text('{"hello": "world"}')
    done = _assay("runs", "import", str(stray))
    assert done.returncode == 2
    assert done.stderr.startswith(f"Error: {stray}: cannot tell which tool wrote this file; give --format, one of inspect")
    assert "promptfoo" in done.stderr and "Traceback" not in done.stderr


def test_an_eval_log_cut_short_is_inspects_and_a_wrong_format_names_the_right_one(inspect_logs, junit_log, tmp_path):
    """A `.eval` archive cut short has no member list to detect it by: it read as "cannot tell which tool wrote
    this file" instead of saying what is wrong with it. A --format the file is not said only where parsing failed."""
    cut = tmp_path / "cut.eval"
    cut.write_bytes(inspect_logs["eval"].path.read_bytes()[:3000])
    done = _assay("runs", "import", str(cut))
    assert done.returncode == 2 and done.stderr == f"Error: {cut}: not a complete zip archive (no end of central directory; " \
        "a log still being written?)\n"
    forced = _assay("runs", "import", "--format", "inspect", str(junit_log.path))
    assert forced.returncode == 2, forced.stderr
    assert forced.stderr.rstrip().endswith("(the file looks like junit output, not inspect: leave out --format, or give "
                                           "--format junit)")


def test_a_malformed_log_names_file_and_place_and_records_nothing(tmp_path):
    broken = tmp_path / "junit.xml"
    broken.write_text('<testsuites><testsuite name="s"><testcase name="a"></testsuite>')
    done = _assay("runs", "import", str(broken), "--json")
    assert done.returncode == 2
    assert f"Error: {broken}:1:" in done.stderr and "not well-formed XML" in done.stderr
    error = done.stderr.removeprefix("Error: ").rstrip()
    assert json.loads(done.stdout) == {"imported": [], "failed": [{"file": str(broken), "error": error}]}
    records = store_path().parent / "records"
    assert not any(path.name.startswith("imported-") and not (path / "manifest.json").exists()
                   for path in (records.iterdir() if records.is_dir() else ()))


def test_json_lists_a_file_that_failed_beside_those_imported(junit_log, tmp_path):
    """With one cut file among good ones, `--json` listed only the imported files: the failure went to stderr
    alone, and a script reading the JSON could not tell that a file had failed."""
    cut = tmp_path / "cut.xml"
    text = junit_log.path.read_text()
    cut.write_text(text[:len(text) // 2])
    done = _assay("runs", "import", str(junit_log.path), str(cut), "--json")
    assert done.returncode == 2  # as before: a file failed
    document = json.loads(done.stdout)
    assert list(document) == ["imported", "failed"]
    assert [entry["file"] for entry in document["imported"]] == [str(junit_log.path.resolve())]
    assert document["imported"][0]["unit_count"] == 11
    (failed,) = document["failed"]
    assert failed["file"] == str(cut.resolve())
    place = rf"{re.escape(str(cut.resolve()))}:\d+:\d+"
    assert re.fullmatch(rf"{place}: not well-formed XML: no element found: .*", failed["error"]), failed
    assert done.stderr == f"Error: {failed['error']}\n"  # the same words on stderr, as a person reads them


def test_importing_a_file_again_finds_its_run_instead_of_adding_a_twin(junit_log):
    first = _assay("runs", "import", str(junit_log.path), "--json")
    again = _assay("runs", "import", str(junit_log.path))
    assert first.returncode == again.returncode == 0
    (imported,) = json.loads(first.stdout)["imported"]
    assert again.stdout.startswith(f"Already imported as {imported['run_id']}: junit.xml (junit), 11 units:")


def test_a_junit_file_of_no_tests_is_a_run_of_no_units_and_other_xml_is_refused(tmp_path):
    empty = tmp_path / "empty.xml"
    empty.write_text('<?xml version="1.0"?><testsuites name="nothing collected"/>')
    assert _import(empty).unit_count == 0
    page = tmp_path / "page.xml"
    page.write_text("<html><body>testsuite</body></html>")
    done = _assay("runs", "import", str(page), "--format", "junit")
    assert done.returncode == 2
    assert done.stderr.strip() == f"Error: {page}: the root element is <html>, not <testsuites> or <testsuite>: not a JUnit XML file"



def test_an_inspect_log_whose_eval_has_not_ended_is_refused_saying_so(inspect_logs, tmp_path):
    """While an eval runs, its `.eval` log has only `_journal/start.json` and the samples done so far (and a
    killed eval's log stays so). It was imported as a finished run of part of the samples, exit 0."""
    finished = inspect_logs["eval"].path
    running = _rewritten(finished, tmp_path / "running.eval",
                         lambda name, content: None if name in ("header.json", "summaries.json") else content)
    done = _assay("runs", "import", str(running))
    assert done.returncode == 2, done.stdout
    assert done.stderr == (f"Error: {running}: the Inspect log is not finished (it has no header.json yet): Inspect "
                           "completes it when its eval ends; import it then\n")
    [header] = [json.loads(content) for _, content in iter_members(finished, lambda name: name == "header.json")]
    started_header = json.dumps({**header, "status": "started"}).encode()
    started = _rewritten(finished, tmp_path / "started.eval",
                         lambda name, content: started_header if name == "header.json" else content)
    done = _assay("runs", "import", str(started))
    assert done.returncode == 2 and "is not finished (its status is started)" in done.stderr, done.stderr


def test_an_inspect_log_written_without_its_samples_is_refused_not_imported_as_an_empty_run(inspect_logs, tmp_path):
    """`log_samples=False` keeps only the totals (an empty summaries.json, no samples key in .json): such a
    log was imported as a run of 0 units, exit 0, and importing a log of the same eval with samples still
    found nothing wrong."""
    without = _rewritten(inspect_logs["eval"].path, tmp_path / "no-samples.eval",
                         lambda name, content: b"[]" if name == "summaries.json" else
                         None if name.startswith(("samples/", "_journal/summaries")) else content)
    document = json.loads(inspect_logs["json"].path.read_text())
    del document["samples"]
    totals_only = tmp_path / "no-samples.json"
    totals_only.write_text(json.dumps(document, indent=2))
    store = tmp_path / "store.db"
    done = subprocess.run([sys.executable, "-m", "assay", "runs", "import", str(without), str(totals_only)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "ASSAY_STORE": str(store)})
    assert done.returncode == 2 and done.stdout == "", done.stdout
    for path in (without, totals_only):
        assert (f"Error: {path}: the log holds none of the 8 samples its results count (Inspect wrote it with "
                "log_samples=False") in done.stderr, done.stderr
    if store.exists():  # nothing recorded
        with SqliteRunStore(store, read_only=True) as runs:
            assert runs.list_runs() == []


def test_a_format_the_file_is_not_is_refused_not_imported_as_an_empty_run(pydantic_evals_report, tmp_path):
    """`--format inspect` (or deepeval) took any JSON object as an empty run, exit 0, and the right import then
    said "Already imported" for good."""
    database = tmp_path / "store.db"
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    for path, format_name, message in (
        (pydantic_evals_report.path, "inspect", "not an Inspect eval log (its header needs version, status and eval) (the "
                                                "file looks like pydantic-evals output, not inspect"),
        (empty, "inspect", "not an Inspect eval log"),
        (empty, "deepeval", "a DeepEval test run needs a `testCases` list"),
    ):
        ((_, chosen),) = plan_imports([path], format_name)
        with pytest.raises(Exception, match=re.escape(message)):
            import_log(path, chosen, database=database)
    ((_, detected),) = plan_imports([pydantic_evals_report.path], None)
    imported = import_log(pydantic_evals_report.path, detected, database=database)
    assert not imported.already and imported.unit_count > 0


def test_the_same_content_imported_again_is_found_whatever_the_files_time(pydantic_evals_report, tmp_path):
    """A pydantic-evals report records no time, so its run id takes the file's: a copy with another time (a CI
    artifact downloaded again) was imported as a twin run."""
    database = tmp_path / "store.db"
    copy = tmp_path / "again" / "report.json"
    copy.parent.mkdir()
    copy.write_bytes(pydantic_evals_report.path.read_bytes())
    os.utime(copy, (1_800_000_000, 1_800_000_000))
    ((_, detected),) = plan_imports([pydantic_evals_report.path], None)
    first = import_log(pydantic_evals_report.path, detected, database=database)
    again = import_log(copy, detected, database=database)
    assert again.already and again.run_id == first.run_id and again.format == "pydantic-evals"
    with SqliteRunStore(database, read_only=True) as store:
        assert store.count_runs() == 1


def test_a_cut_or_empty_json_file_says_so_instead_of_no_tool(pydantic_evals_report, tmp_path):
    """A pydantic-evals report cut short read as "cannot tell which tool wrote this file" (and so did an empty
    file), though what is wrong with it is known."""
    cut = tmp_path / "cut.json"
    cut.write_bytes(pydantic_evals_report.path.read_bytes()[:1500])
    done = _assay("runs", "import", str(cut))
    assert done.returncode == 2
    assert re.match(re.escape(f"Error: {cut}: not valid JSON (unexpected end of data: ") + r"line \d+ column \d+ \(char 1500\)\): "
                    r"a file cut short\? Which tool wrote it cannot be told; give --format, one of inspect", done.stderr), done.stderr
    empty = tmp_path / "empty.json"
    empty.write_text("\n")
    done = _assay("runs", "import", str(empty))
    assert done.returncode == 2 and done.stderr == f"Error: {empty}: the file is empty; there is nothing to import\n"


def test_debug_shows_the_traceback_of_a_file_that_cannot_be_imported_and_nothing_else_does(tmp_path):
    """`assay --debug` promises a traceback for any error; `runs import` printed its one line only."""
    bad = tmp_path / "bad.xml"
    bad.write_text("garbage")
    plain = _assay("runs", "import", str(bad), "--format", "junit")
    debug = subprocess.run([sys.executable, "-m", "assay", "--debug", "runs", "import", str(bad), "--format", "junit"],
                           capture_output=True, text=True, timeout=120, check=False)
    for done in (plain, debug):
        assert done.returncode == 2 and f"Error: {bad}:1:0: not well-formed XML" in done.stderr, done.stderr
    assert "Traceback" not in plain.stderr and debug.stderr.startswith("Traceback (most recent call last):")


def test_a_store_folder_this_user_may_not_write_says_so_and_what_to_do(tmp_path, monkeypatch):
    """It said `Error: j.xml: PermissionError: [Errno 13] Permission denied: '…/records'`: the path, not the fix."""
    from assay.core.history.shown import imported
    from assay.core.interop.formats import format_named

    log = tmp_path / "j.xml"
    log.write_text('<testsuite name="s" tests="1"><testcase classname="c" name="t"/></testsuite>')
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    import assay.core.interop.importing as importing

    def refused(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "store" / "records"))

    monkeypatch.setattr(importing, "_import", refused)
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        _, failures, _ = imported([(log, format_named("junit"))])
    assert failures == 1
    assert err.getvalue() == (f"Error: {log}: no permission to write {tmp_path / 'store' / 'records'}: give this user write "
                              "access to it, or set ASSAY_STORE to a store this user may write\n")


def test_an_inspect_samples_usage_and_cost_are_summed_over_its_models(tmp_path):
    from assay.core.interop.inspect_log import _Samples

    samples = _Samples(tmp_path / "log.eval", {"eval": {"task": "capitals", "model": "mockllm/model"}})

    def unit(model_usage):
        return json.loads(samples.unit({"id": "s1", "scores": {"match": {"value": "C"}}, "model_usage": model_usage}).text)

    one = unit({"m": {"input_tokens": 3, "output_tokens": True, "reasoning_tokens": 2, "total_cost": 0.25}})
    assert one["usage"] == {"input_tokens": 3, "reasoning_tokens": 2} and one["cost_usd"] == 0.25  # a bool is no count
    two = unit({"a": {"input_tokens": 1, "total_cost": 0.5}, "b": {"input_tokens": 2, "output_tokens": 4}, "c": "junk"})
    assert two["usage"] == {"input_tokens": 3, "output_tokens": 4} and two["cost_usd"] == 0.5
    assert "usage" not in unit({"m": {}}) and "cost_usd" not in unit({"m": {"total_cost": float("nan")}})
    assert "usage" not in unit(["not", "a", "mapping"]) and unit({"m": {"total_cost": -0.0}})["cost_usd"] == 0.0


def test_an_inspect_sample_id_or_epoch_of_the_wrong_type_is_refused_not_made_a_unit_id(tmp_path):
    """A hand-edited `"id": null` became the unit `None#1`, and `"epoch": "one"` the unit `3#one`."""
    from assay.core.interop.inspect_log import _Samples
    from assay.core.interop.log import ImportFormatError

    samples = _Samples(tmp_path / "log.eval", {"eval": {"task": "capitals", "model": "mockllm/model"}})
    assert json.loads(samples.unit({"id": 3, "epoch": 2, "scores": {}}).text)["unit_id"] == "3#2"
    assert json.loads(samples.unit({"id": "q", "scores": {}}).text)["unit_id"] == "q#1"
    for sample, message in (({"id": None}, "a sample's id must be a text or an integer, got None"),
                            ({"id": ""}, "a sample's id must be a text or an integer, got ''"),
                            ({"id": 3, "epoch": "one"}, "a sample's epoch must be an integer from 1, got 'one' (sample id 3)"),
                            ({"id": 3, "epoch": True}, "a sample's epoch must be an integer from 1, got True")):
        with pytest.raises(ImportFormatError, match=re.escape(message)):
            samples.unit(sample)


def test_an_empty_file_name_is_refused_not_read_as_the_current_folder(junit_log):
    """`assay runs import "$LOG"` with LOG unset said ". is a folder", naming no file the user wrote."""
    done = _assay("runs", "import", str(junit_log.path), "")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "Error: a file name given is empty (an unset variable in a script?); name the log files to import\n"


def test_an_inspect_json_log_cut_between_two_samples_is_refused_not_imported_in_part(inspect_logs, tmp_path):
    """A `.json` log cut just after a sample (a partial copy) was imported as a finished run of its first samples,
    exit 0; cut in the reductions after its samples, as a whole one."""
    whole = inspect_logs["json"].path.read_bytes()
    samples = whole.index(b'\n  "samples": [')
    third = whole.index(b"\n    }", whole.index(b"\n    }", whole.index(b"\n    }", samples) + 1) + 1) + len(b"\n    }")
    cuts = {"after-a-sample.json": whole[:third], "after-its-comma.json": whole[:third + 1],
            "in-the-reductions.json": whole[:-20], "after-the-samples.json": whole[:whole.index(b"\n  ]", third) + 4]}
    for name, content in cuts.items():
        cut = tmp_path / name
        cut.write_bytes(content)
        done = _assay("runs", "import", str(cut))
        assert done.returncode == 2, (name, done.stdout)
        assert done.stderr == (f"Error: {cut}: the log is cut short after its last whole sample (a log still being written, "
                               "or a partial copy?)\n"), done.stderr
    assert _import(inspect_logs["json"].path).unit_count == inspect_logs["json"].summary["total_samples"]


def test_a_pipe_or_a_device_is_refused_instead_of_waited_on(tmp_path):
    """`assay runs import <(curl …)` or a FIFO read the pipe for the format, then waited for ever to read it again;
    `/dev/zero --format junit` hashed it for ever."""
    fifo = tmp_path / "log.xml"
    os.mkfifo(fifo)
    for path, format_options in ((fifo, ()), (Path("/dev/zero"), ("--format", "junit"))):
        done = _assay("runs", "import", str(path), *format_options)
        assert done.returncode == 2
        assert done.stderr == (f"Error: {path} is not a regular file (a pipe or a device); save the log to a file and "
                               "import that\n")


def test_a_value_of_a_type_its_tool_never_writes_is_one_error_naming_the_file(pydantic_evals_report, tmp_path):
    """A report whose `failures` was a number (a log edited by hand) ended the import in a TypeError's traceback, exit 1."""
    document = json.loads(pydantic_evals_report.path.read_text())
    document["failures"] = 5
    edited = tmp_path / "report.json"
    edited.write_text(json.dumps(document))
    records = store_path().parent / "records"
    before = set(records.iterdir()) if records.is_dir() else set()
    done = _assay("runs", "import", str(edited))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == (f"Error: {edited}: cannot be read as pydantic-evals: a value in it is not of the type pydantic-evals "
                           "writes there (TypeError: 'int' object is not iterable); `assay --debug runs import …` shows where\n")
    assert (set(records.iterdir()) if records.is_dir() else set()) == before  # nothing half-written left


def test_a_junit_total_that_is_no_number_is_unknown_not_zero(tmp_path):
    # A hand-edited `tests="four"` was read as 0: the run's summary said "tests: 0" beside its four units.
    log = tmp_path / "report.xml"
    log.write_text('<testsuites><testsuite name="s" tests="four" failures="1" errors="0" skipped="0">'
                   '<testcase classname="a" name="t1"/><testcase classname="a" name="t2"><failure message="x"/></testcase>'
                   '<testcase classname="a" name="t3"/><testcase classname="a" name="t4"/></testsuite></testsuites>')
    imported = _import(log)
    assert imported.unit_count == 4 and imported.counts["failed"] == 1
    with SqliteRunStore(store_path(), read_only=True) as store:
        summary = store.get_run(imported.run_id).manifest.summary
    assert summary["tests"] is None and summary["failures"] == 1 and summary["suites"] == 1


def test_a_junit_testcase_without_a_name_is_named_by_its_place_not_the_empty_id(tmp_path):
    # `<testcase/>` (a hand-made or broken file) was the unit "", which no unit page, `compare` or `--map` can name.
    log = tmp_path / "report.xml"
    log.write_text('<testsuite name="s" tests="4"><testcase name="a"/><testcase/><testcase classname="c"/>'
                   '<testcase name=""><failure message="x"/></testcase></testsuite>')
    imported = _import(log)
    units = _units(imported.run_id)
    assert sorted(units) == ["a", "c::testcase-3", "testcase-2", "testcase-4"]
    assert units["testcase-4"].verdict == "failed" and imported.counts["passed"] == 3


def test_a_format_name_in_other_letter_case_is_that_format_and_a_negative_time_is_no_duration(tmp_path):
    """`--format JUnit` was refused ("did you mean 'junit'?"), and `time="-1"` (a runner's "unknown") was stored as a
    duration of -1 seconds."""
    log = tmp_path / "report.xml"
    log.write_text('<testsuite name="s" tests="2"><testcase name="a" time="-1"/><testcase name="b" time="0.5"/></testsuite>')
    imported = _import(log, "JUnit")
    units = _units(imported.run_id)
    assert imported.format == "junit"
    assert (units["a"].duration_seconds, units["b"].duration_seconds) == (None, 0.5)


@pytest.mark.parametrize("format_name, document", [
    # promptfoo's keys come first: a results.json cut after them is still told as promptfoo's
    ("promptfoo", {"evalId": "eval-1", "results": {"version": 3, "results": [{"success": True, "testIdx": 0}] * 40}}),
    ("deepeval", {"testFile": "test_chatbot.py", "testCases": [{"name": "france", "success": True}] * 40}),
    ("pydantic-evals", {"name": "capital", "cases": [{"name": "france", "scores": {}}] * 40, "failures": []}),
])
def test_a_report_cut_short_says_so_and_what_to_do_also_given_its_format(tmp_path, format_name, document):
    """Told by its head, or given --format, a JSON report cut short said only "not valid JSON (unexpected end of data:
    …)"; a file that no format claimed said it was cut short. Now both say it, and to import the whole file."""
    cut = tmp_path / "cut.json"
    whole = json.dumps(document, indent=2).encode()
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    done = _assay("runs", "import", "--format", format_name, str(cut))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert re.fullmatch(re.escape(f"Error: {cut}: not valid JSON (unexpected end of data: ") + r"line \d+ column \d+ \(char \d+\)\): "
                        + re.escape("the file is cut short (a copy or download that did not finish?); import the whole file\n"),
                        done.stderr), done.stderr
    broken = tmp_path / "broken.json"
    broken.write_bytes(whole.replace(b'"name"', b'name', 1) if b'"name"' in whole else whole.replace(b'"evalId"', b'evalId', 1))
    # (broken, not cut: no such advice)
    done = _assay("runs", "import", "--format", format_name, str(broken))
    assert done.returncode == 2 and done.stderr.startswith(f"Error: {broken}: not valid JSON (") and "cut short" not in done.stderr
