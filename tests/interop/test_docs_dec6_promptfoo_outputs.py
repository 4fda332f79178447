"""promptfoo's other `--output` forms as a stranger meets them: `results.xml` and `results.html` (which promptfoo
writes as readily as `results.json`) asked for a `--format` that could not read them, and with `--format promptfoo`
said only "not valid JSON"; its JUnit output (`results.junit.xml`) imports as JUnit XML."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "own-store" / "assay.db"))


def _assay(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False, env=dict(os.environ))


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
