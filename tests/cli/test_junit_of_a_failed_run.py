"""`--junit` of a run that failed before it had a result (an eval file that does not import, an eval directory
that is not there) is one errored test case saying why, as pytest reports a collection error: CI's test view
said "no report found" and the reason was in the job's log alone. A file the report may not replace is kept."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from agent_projects import replying_project


def _assay(cwd: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "ASSAY_STORE": str(cwd / "store" / "assay.db")})


def test_an_agent_run_whose_eval_file_does_not_import_reports_that_as_an_errored_case(tmp_path):
    project = replying_project(tmp_path / "p", reply="yes")
    (project / "evals" / "broken_eval.py").write_text("def broken(:\n", encoding="utf-8")
    done = _assay(project, "agent", "run", "--junit", "junit.xml")
    assert done.returncode == 2, done.stdout + done.stderr
    root = ElementTree.parse(project / "junit.xml").getroot()
    assert (root.tag, root.get("tests"), root.get("errors"), root.get("failures")) == ("testsuites", "1", "1", "0")
    [case] = root.iter("testcase")
    assert (case.get("name"), case.get("classname")) == ("assay agent run", "assay.agent")
    message = case.find("error").get("message")
    assert "broken_eval.py" in message and "SyntaxError" in message, message


def test_a_video_run_of_a_missing_eval_directory_says_so_in_the_report(tmp_path):
    done = _assay(tmp_path, "video", "run", "--eval-dir", "evl", "--junit", "junit.xml")
    assert done.returncode == 2, done.stdout + done.stderr
    [case] = ElementTree.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    assert case.find("error").get("message") == f"eval directory does not exist: {tmp_path / 'evl'}"


def test_a_failed_run_never_writes_its_report_over_a_file_the_report_may_not_replace(tmp_path):
    project = replying_project(tmp_path / "p", reply="yes")
    (project / "evals" / "broken_eval.py").write_text("def broken(:\n", encoding="utf-8")
    (project / "pom.xml").write_text("<project><artifactId>shop</artifactId></project>\n", encoding="utf-8")
    done = _assay(project, "agent", "run", "--junit", "pom.xml")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--junit pom.xml is an XML file whose root element is <project>" in done.stderr
    assert (project / "pom.xml").read_text(encoding="utf-8") == "<project><artifactId>shop</artifactId></project>\n"


def test_an_adapter_that_never_starts_gives_its_first_line_as_the_message_and_its_stderr_in_the_body(tmp_path):
    assert _assay(tmp_path, "video", "init", "eval").returncode == 0
    missing = tmp_path / "nope.mjs"
    done = _assay(tmp_path, "video", "run", "--adapter-command", f"node {missing}", "--junit", "junit.xml")
    assert done.returncode == 2, done.stdout + done.stderr
    [case] = ElementTree.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    error = case.find("error")
    assert error.get("message").startswith(f"adapter command 'node {missing}' failed to initialize")
    assert "\n" not in error.get("message") and "Cannot find module" in error.text, error.text
