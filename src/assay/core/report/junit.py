"""JUnit XML for CI: suites of test cases with a time and a failure, error or skipped message.

Kind-independent: a kind maps its results to `JUnitCase`s; the file is written atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from assay.core.fsutil import write_atomically


@dataclass(frozen=True, slots=True)
class JUnitCase:
    name: str
    classname: str
    time_seconds: float = 0.0
    failure: str | None = None  # message of a failed case
    error: str | None = None  # message of a case that could not be judged
    skipped: str | None = None
    details: str | None = None  # body text of the failure/error element
    system_out: str | None = None


@dataclass(frozen=True, slots=True)
class JUnitSuite:
    name: str
    cases: Sequence[JUnitCase] = field(default_factory=tuple)
    time_seconds: float = 0.0


def _clean(text: str) -> str:
    # XML 1.0 cannot carry most control characters, even escaped.
    return "".join(c for c in text if c in "\t\n\r" or ord(c) >= 32)


def _attribute(text: str) -> str:
    return quoteattr(_clean(text))


def _case_xml(case: JUnitCase) -> str:
    head = (
        f"    <testcase name={_attribute(case.name)} classname={_attribute(case.classname)} "
        f'time="{case.time_seconds:.3f}"'
    )
    body = []
    details = escape(_clean(case.details)) if case.details else ""
    if case.failure is not None:
        body.append(f"      <failure message={_attribute(case.failure)}>{details}</failure>")
    elif case.error is not None:
        body.append(f"      <error message={_attribute(case.error)}>{details}</error>")
    elif case.skipped is not None:
        body.append(f"      <skipped message={_attribute(case.skipped)}/>")
    if case.system_out:
        body.append(f"      <system-out>{escape(_clean(case.system_out))}</system-out>")
    if not body:
        return head + "/>"
    return head + ">\n" + "\n".join(body) + "\n    </testcase>"


def render_junit(suites: Sequence[JUnitSuite]) -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    suite_lines = []
    for suite in suites:
        counts = {
            "tests": len(suite.cases),
            "failures": sum(1 for case in suite.cases if case.failure is not None),
            "errors": sum(1 for case in suite.cases if case.failure is None and case.error is not None),
            "skipped": sum(
                1 for case in suite.cases if case.failure is None and case.error is None and case.skipped is not None
            ),
        }
        for key in totals:
            totals[key] += counts[key]
        suite_lines.append(
            f"  <testsuite name={_attribute(suite.name)} tests=\"{counts['tests']}\" failures=\"{counts['failures']}\" "
            f"errors=\"{counts['errors']}\" skipped=\"{counts['skipped']}\" time=\"{suite.time_seconds:.3f}\">"
        )
        suite_lines.extend(_case_xml(case) for case in suite.cases)
        suite_lines.append("  </testsuite>")
    time_total = sum(suite.time_seconds for suite in suites)
    lines.append(
        f"<testsuites tests=\"{totals['tests']}\" failures=\"{totals['failures']}\" errors=\"{totals['errors']}\" "
        f"skipped=\"{totals['skipped']}\" time=\"{time_total:.3f}\">"
    )
    lines.extend(suite_lines)
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def write_junit(path: Path, suites: Sequence[JUnitSuite]) -> None:
    """Atomic: a reader never sees half a report."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, render_junit(suites))


__all__ = ["JUnitCase", "JUnitSuite", "render_junit", "write_junit"]
