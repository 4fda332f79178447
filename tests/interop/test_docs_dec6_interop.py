"""The interop pages (docs/interop/*.md) followed as written, with the other tools' real outputs where they are
installed: files a stranger hands `assay runs import` that no format reads are named with the file to give instead,
and a JUnit failure without a message keeps a reason. Each section says what a user met before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from assay_cli import assay_cli


pytestmark = pytest.mark.usefixtures("own_store")


_assay = assay_cli




# ---------------------------------------------------------------------------------------------
# DeepEval keeps three JSON files in `.deepeval/` beside a run, DEEPEVAL_RESULTS_FOLDER or not: the latest run
# whole (`.latest_run_full.json`, what the page's test_run_*.json holds), its working copy (`.latest_test_run.json`,
# the run wrapped in `testRunData`) and a metric cache. A user without DEEPEVAL_RESULTS_FOLDER who imported the
# working copy, the file whose name says "test run", read "cannot tell which tool wrote this file; give --format …",
# and with `--format deepeval` "a DeepEval test run needs a `testCases` list": neither named the file to give. The
# run here is a real one, by DeepEval's `evaluate` (tools/deepeval_run.py).


def test_deepevals_working_files_name_the_run_to_import(deepeval_run):
    kept = deepeval_run.path.parent.parent / ".deepeval"  # the folder DeepEval ran in
    full = kept / ".latest_run_full.json"
    assert full.read_bytes() == deepeval_run.path.read_bytes()  # the same run as the page's test_run_*.json
    give = (f"which assay does not read; import {full} beside it (the latest test run, saved whole), or the "
            f"test_run_*.json DeepEval saves when DEEPEVAL_RESULTS_FOLDER is set\n")
    for name, what in ((".latest_test_run.json", "its working copy of the test run in progress"),
                       (".deepeval-cache.json", "its cache of metric results, not a test run")):
        path = kept / name
        assert path.is_file(), sorted(kept.iterdir())
        for given in ([], ["--format", "deepeval"]):
            done = _assay("runs", "import", str(path), *given)
            assert done.returncode == 2, done.stdout
            assert done.stderr == f"Error: {path}: this is DeepEval's {name}, {what}, {give}", done.stderr
    # the file it names imports the run, as the page says
    imported = _assay("runs", "import", str(full), "--json")
    assert imported.returncode == 0, imported.stderr
    (entry,) = json.loads(imported.stdout)["imported"]
    assert entry["format"] == "deepeval" and entry["unit_count"] == len(json.loads(full.read_text())["testCases"])


# ---------------------------------------------------------------------------------------------
# `inspect eval-set` writes `logs.json` and `eval-set.json` beside its logs, so `assay runs import logs/*.json` of a
# set logged as JSON (the page's `logs/*.eval` pattern, for the other format) names them too. Each was refused with
# "cannot tell which tool wrote this file; give --format, one of …", and with `--format inspect` with "not an Inspect
# eval log (its header needs …)": neither said what the file is or which files to give. The set here is a real one,
# written by Inspect with its mock model.


EVAL_SET = """
import sys
from inspect_ai import Task, eval_set
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


def answer(messages, tools, tool_choice, config):
    output = ModelOutput.from_content(model="mockllm", content="Paris")
    # usage given here: the mock model's own count would download a tokenizer
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


task = Task(name="capitals", dataset=[Sample(input="France?", target="Paris", id="fr"),
                                      Sample(input="Spain?", target="Madrid", id="es")],
            solver=generate(), scorer=includes())
done, _ = eval_set([task], log_dir=sys.argv[1], log_format="json", model=get_model("mockllm/model", custom_outputs=answer),
                   display="none")
assert done
"""


def test_an_eval_sets_listing_files_are_named_with_the_logs_to_give(tmp_path):
    pytest.importorskip("inspect_ai", reason="Inspect AI: pip install inspect-ai")
    logs = tmp_path / "logs"
    script = tmp_path / "capitals_set.py"
    script.write_text(EVAL_SET, encoding="utf-8")
    subprocess.run([sys.executable, str(script), str(logs)], check=True, capture_output=True, timeout=240,
                   env={**os.environ, "INSPECT_LOG_LEVEL": "error"})
    (log,) = sorted(logs.glob("*_*.json"))
    assert (logs / "logs.json").is_file() and (logs / "eval-set.json").is_file()
    tail = f"not an eval log; import the set's logs themselves, such as {log} ({logs}/*_*.json names them, and not this file)"
    said = {"eval-set.json": f"this is Inspect's eval-set.json, the record of an eval set's tasks, {tail}",
            "logs.json": f"this is Inspect's logs.json, the index of an eval set's logs, {tail}"}
    # logs/*.json as the shell expands it: every file checked first, so nothing is imported
    named = [str(path) for path in sorted(logs.glob("*.json"))]
    done = _assay("runs", "import", *named, "--json")
    assert done.returncode == 2
    failed = {Path(entry["file"]).name: entry["error"] for entry in json.loads(done.stdout)["failed"]}
    for name, why in said.items():
        assert failed[name] == f"{logs / name}: {why}", failed[name]
        told = _assay("runs", "import", str(logs / name), "--format", "inspect")
        assert told.returncode == 2 and told.stderr == f"Error: {logs / name}: {why}\n", told.stderr
    assert json.loads(done.stdout)["imported"] == []
    # the pattern it names imports the set
    given = _assay("runs", "import", *(str(path) for path in sorted(logs.glob("*_*.json"))))
    assert given.returncode == 0 and "(inspect, inspect-ai" in given.stdout and "2 units: passed 1 failed 1" in given.stdout


# ---------------------------------------------------------------------------------------------
# A JUnit `<failure>` with no `message` attribute, only its text, as Jest's `jest-junit` writes every failure (and
# Maven Surefire one whose exception had no message): the unit was imported with no reason at all, so `assay runs
# show` listed `FAILED cart removes::cart removes expected=null observed=null` and nothing of why, and the exported
# event had no explanation. The reason is now the text's first line. (Jest is not installed here: the file is
# jest-junit's documented shape; a failure that has a `message`, as pytest's do, keeps it.)


JEST_JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="jest tests" tests="3" failures="1" errors="0" time="1.2">
  <testsuite name="cart" errors="0" failures="1" skipped="0" timestamp="2026-12-03T08:32:11" time="1.1" tests="3">
    <testcase classname="cart adds" name="cart adds" time="0.01">
    </testcase>
    <testcase classname="cart removes" name="cart removes" time="0.02">
      <failure>Error: expect(received).toBe(expected) // Object.is equality

Expected: 2
Received: 3
    at Object.&lt;anonymous&gt; (cart.test.js:9:20)</failure>
    </testcase>
    <testcase classname="cart totals" name="cart totals" time="0.02">
      <failure message="totals differ" type="AssertionError">AssertionError: totals differ
    at cart.test.js:14:5</failure>
    </testcase>
  </testsuite>
</testsuites>
"""


def test_a_failure_without_a_message_gives_its_first_line_as_the_reason(tmp_path):
    log = tmp_path / "junit.xml"
    log.write_text(JEST_JUNIT, encoding="utf-8")
    imported = _assay("runs", "import", str(log), "--json")
    assert imported.returncode == 0, imported.stderr
    (entry,) = json.loads(imported.stdout)["imported"]
    assert entry["counts"]["failed"] == 2
    shown = _assay("runs", "show", entry["run_id"], "--json")
    failing = {unit["unit_id"]: unit for unit in json.loads(shown.stdout)["failing_units"]}
    removes = failing["cart removes::cart removes"]
    assert removes["reason"] == "Error: expect(received).toBe(expected) // Object.is equality"
    assert removes["details"].endswith("at Object.<anonymous> (cart.test.js:9:20)")  # the whole text, as before
    assert failing["cart totals::cart totals"]["reason"] == "totals differ"  # a message is still the reason
    text = _assay("runs", "show", entry["run_id"])
    assert ("FAILED cart removes::cart removes expected=null observed=null Error: expect(received).toBe(expected) "
            "// Object.is equality") in text.stdout


# ---------------------------------------------------------------------------------------------
# promptfoo's other `--output` forms as a stranger meets them: `results.xml` and `results.html` (which promptfoo
# writes as readily as `results.json`) asked for a `--format` that could not read them, and with `--format promptfoo`
# said only "not valid JSON"; its JUnit output (`results.junit.xml`) imports as JUnit XML.


GIVE = "assay reads a tool's JSON report (promptfoo's is `promptfoo eval --output results.json`)"


def test_promptfoos_xml_and_html_outputs_are_named_with_the_one_to_give(tmp_path, promptfoo_eval):
    promptfoo_eval(tmp_path, ["results.xml", "results.html", "results.junit.xml", "results.csv"])
    why = {
        "results.xml": f"this is promptfoo's XML output, which assay does not read; {GIVE}, or its JUnit XML "
                       "(`--output results.junit.xml`)\n",
        "results.html": "this is an HTML page (a report to read, such as promptfoo's `--output results.html`), which "
                        f"assay does not read; {GIVE}\n",
        "results.csv": f"this is promptfoo's YAML or CSV output, which assay does not read; {GIVE}\n",
    }
    for name, expected in why.items():
        path = str(tmp_path / name)
        for given in ([], ["--format", "promptfoo"], ["--format", "junit"])[:1 if name.endswith(".html") else 3]:
            done = _assay("runs", "import", path, *given)
            assert done.returncode == 2, (name, given, done.stdout)
            assert done.stderr == f"Error: {path}: {expected}", (name, given, done.stderr)
            assert "Traceback" not in done.stderr
        listed = _assay("runs", "import", path, "--json")
        assert listed.returncode == 2
        assert json.loads(listed.stdout)["failed"] == [{"file": path, "error": f"{path}: {expected.strip()}"}]
    # the form promptfoo's JUnit output takes is read as JUnit XML: its tests and failures as promptfoo counted them
    done = _assay("runs", "import", str(tmp_path / "results.junit.xml"))
    assert done.returncode == 0, done.stderr
    assert "(junit), 3 units: passed 2 failed 1" in done.stdout, done.stdout
