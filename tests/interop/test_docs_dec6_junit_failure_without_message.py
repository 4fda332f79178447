"""A JUnit `<failure>` with no `message` attribute, only its text, as Jest's `jest-junit` writes every failure (and
Maven Surefire one whose exception had no message): the unit was imported with no reason at all, so `assay runs
show` listed `FAILED cart removes::cart removes expected=null observed=null` and nothing of why, and the exported
event had no explanation. The reason is now the text's first line. (Jest is not installed here: the file is
jest-junit's documented shape; a failure that has a `message`, as pytest's do, keeps it.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

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


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "own-store" / "assay.db"))


def _assay(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False, env=dict(os.environ))


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
