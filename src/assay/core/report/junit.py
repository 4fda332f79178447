"""JUnit XML for CI: suites of test cases with a time and a failure, error or skipped message.

One writer for every kind, knowing nothing of any: it reads the shared unit results (a suite per
outermost group, a test case per unit, named by its title) and is a reporter on the run events,
like pytest's junitxml. The file is written atomically; one that cannot be written fails the run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from assay.core.fsutil import write_atomically
from assay.core.record import UnitResult
from assay.errors import EXIT_ERROR


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


def junit_case(unit: UnitResult) -> JUnitCase:
    message = unit.reason or unit.verdict
    return JUnitCase(
        name=unit.title or unit.unit_id,
        classname=unit.group.replace("/", ".") or unit.unit_id,
        time_seconds=unit.duration_seconds or 0.0,
        failure=message if unit.verdict == "failed" else None,
        error=message if unit.verdict == "errored" else None,
        skipped=message if unit.verdict in ("skipped", "ignored") else None,
        details=(unit.details or None) if unit.verdict in ("failed", "errored") else None,
    )


def junit_suites(units: Iterable[UnitResult]) -> list[JUnitSuite]:
    """A suite per outermost group (a video case, an agent experiment, a doc case), in first-seen order."""
    suites: dict[str, list[JUnitCase]] = {}
    times: dict[str, float] = {}
    for unit in units:
        suite = unit.group.split("/", 1)[0] or unit.unit_id
        suites.setdefault(suite, []).append(junit_case(unit))
        times[suite] = times.get(suite, 0.0) + (unit.duration_seconds or 0.0)
    return [JUnitSuite(name, cases, times[name]) for name, cases in suites.items()]


class JUnitReport:
    """The `--junit FILE` reporter: written when a run finishes with a record to show."""

    name = "JUnit"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def run_finished(self, event: Any) -> None:
        if event.build_units is None:
            return
        try:
            write_junit(self.path, junit_suites(event.units()))
        except OSError as error:
            print(f"Error: could not write JUnit report {self.path}: {error}", file=sys.stderr)
            event.require(EXIT_ERROR)  # a report CI asked for and did not get is a broken run


__all__ = ["JUnitCase", "JUnitReport", "JUnitSuite", "junit_case", "junit_suites", "render_junit", "write_junit"]
