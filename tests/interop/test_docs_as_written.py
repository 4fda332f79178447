"""What docs/interop says, held against what `runs import` and `compare --map` do, for cases the
tool-written logs do not reach: the order of --map options, an empty file given --format, a DeepEval case
whose other metric raised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.core.interop.deepeval_run import read as read_deepeval
from assay.core.interop.unit_map import UnitIdMap
from assay.errors import UsageError

JUNIT = ('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="1" failures="0" errors="0" skipped="0">'
         '<testcase classname="t" name="a" time="0.1"/></testsuite></testsuites>')


def _assay(store: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, "ASSAY_STORE": str(store)})


def test_map_rules_and_files_apply_in_the_order_given(tmp_path):
    """docs/interop/index.md: "rules and files apply in the order given". Every file's pairs were looked up on
    the original id before any rule ran, whatever the order, so a file naming the rule's output matched nothing."""
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps({"capitals/3#1": "capitals/spain#1", "france#1": "from-the-file#1"}))
    rule = r"^(.+)#(\d+)$=>capitals/\1#\2"
    rule_then_file = UnitIdMap.parse([rule, f"@{pairs}"])
    assert rule_then_file.apply("3#1") == "capitals/spain#1"
    assert rule_then_file.apply("france#1") == "capitals/france#1"
    file_then_rule = UnitIdMap.parse([f"@{pairs}", rule])
    assert file_then_rule.apply("france#1") == "capitals/from-the-file#1"
    assert file_then_rule.apply("3#1") == "capitals/3#1"
    later = tmp_path / "later.csv"
    later.write_text("from-the-file#1,renamed-again#1\n")
    assert UnitIdMap.parse([f"@{pairs}", f"@{later}"]).apply("france#1") == "renamed-again#1"


def test_map_of_an_at_sign_alone_asks_for_the_file():
    with pytest.raises(UsageError, match=r"--map '@': name the file of id pairs after the @"):
        UnitIdMap.parse(["@"])


def test_an_empty_file_given_format_is_refused_before_anything_is_imported(tmp_path):
    """Without --format an empty file is refused before any file is imported ("the file is empty"); with
    --format it was read as the format (`not well-formed XML: no element found`) after the files before it were
    imported."""
    good, empty = tmp_path / "good.xml", tmp_path / "empty.xml"
    good.write_text(JUNIT)
    empty.write_text("")
    store = tmp_path / "store" / "assay.db"
    done = _assay(store, "runs", "import", "--format", "junit", str(good), str(empty))
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"Error: {empty}: the file is empty; there is nothing to import\n"
    assert done.stdout == "" and not store.exists()


def test_a_deepeval_case_whose_other_metric_raised_has_no_single_score(tmp_path):
    """One metric alone is `observed.score` (docs/interop/deepeval.md). A case of two metrics, one of which raised,
    took the other's score as its own, and the export sent an errored unit with a score of 1.0."""
    saved = tmp_path / "test_run_20261204_221008.json"
    saved.write_text(json.dumps({"testFile": "test_chatbot.py", "testPassed": 1, "testFailed": 1, "testCases": [
        {"name": "atlantis", "actualOutput": "?", "success": False, "metricsData": [
            {"name": "Exact answer", "threshold": 0.5, "success": False, "error": "RuntimeError: grader down"},
            {"name": "Brevity", "threshold": 0.7, "success": True, "score": 1.0}]},
        {"name": "france", "actualOutput": "Paris", "success": True, "metricsData": [
            {"name": "Exact answer", "threshold": 0.5, "success": True, "score": 1.0}]},
    ]}))
    units = {line.unit_id: json.loads(line.text) for line in read_deepeval(saved).units}
    assert units["atlantis"]["verdict"] == "errored"
    assert units["atlantis"]["observed"] == {"output": "?", "scores": {"Brevity": 1.0}}
    assert units["france"]["observed"]["score"] == 1.0
