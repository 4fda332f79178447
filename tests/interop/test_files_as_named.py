"""`runs import` of files named as a new user names them: a folder of JUnit reports, a pattern the shell did not expand
(quoted, or Windows' cmd and PowerShell, which expand none)."""

from __future__ import annotations

import subprocess

import pytest
from assay_cli import assay_cli

JUNIT = '<testsuite name="shop" tests="1"><testcase classname="cart" name="adds"/></testsuite>\n'


pytestmark = pytest.mark.usefixtures("own_store")


def _assay(*arguments: str, cwd) -> subprocess.CompletedProcess[str]:
    return assay_cli(*arguments, cwd=cwd)


def test_a_folder_of_junit_reports_is_answered_with_their_pattern(tmp_path):
    """The example was always `reports/*.eval`, which matches nothing in a folder of JUnit reports."""
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "junit.xml").write_text(JUNIT)
    done = _assay("runs", "import", "reports", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, "Error: reports is a folder; give the log files themselves (e.g. "
                                                 "reports/*.xml)\n")
    (tmp_path / "logs").mkdir()
    done = _assay("runs", "import", "logs", cwd=tmp_path)  # (nothing in it: Inspect's)
    assert done.stderr == "Error: logs is a folder; give the log files themselves (e.g. logs/*.eval)\n"


def test_a_pattern_the_shell_did_not_expand_says_so_with_what_it_matches(tmp_path):
    """`assay runs import 'reports/*.xml'` (or reports\\*.xml in cmd) said only `reports/*.xml: no such file`, with
    the reports right there."""
    (tmp_path / "reports").mkdir()
    for name in ("a.xml", "b.xml"):
        (tmp_path / "reports" / name).write_text(JUNIT)
    done = _assay("runs", "import", "reports/*.xml", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("Error: reports/*.xml: no such file: assay does not expand a pattern, the shell does (it "
                           "matches reports/a.xml, reports/b.xml); leave it unquoted, or name the files\n")
    nothing = _assay("runs", "import", "reports/*.eval", cwd=tmp_path)  # a pattern that matches nothing is no file
    assert nothing.stderr == "Error: reports/*.eval: no such file\n"
    assert _assay("runs", "import", "reports/a.xml", "reports/b.xml", cwd=tmp_path).returncode == 0
