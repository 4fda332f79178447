"""JUnit XML for CI: suites of test cases with a time and a failure, error or skipped message.

One writer for every kind, knowing nothing of any: it reads the shared unit results (a suite per
outermost group, a test case per unit, named by its title) and is a reporter on the run events,
like pytest's junitxml. A unit that measured a score is a test case that ran, the score in its
properties. The file is written atomically; one that cannot be written fails the run.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.fsutil import names_a_stream, remove_stale_temporaries_of, write_atomically, write_into_stream
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
    properties: tuple[tuple[str, str], ...] = ()  # (name, value) pairs, e.g. a score eval's score


@dataclass(frozen=True, slots=True)
class JUnitSuite:
    name: str
    cases: Sequence[JUnitCase] = field(default_factory=tuple)
    time_seconds: float = 0.0


def _clean(text: str) -> str:
    # XML 1.0 cannot carry most control characters, even escaped.
    return "".join(c for c in text if c in "\t\n\r" or ord(c) >= 32)


# xml.sax.saxutils is imported where a report is written: it pulls in urllib.request, http and ssl
# (~10 MiB), which a run without --junit would otherwise carry.


def _attribute(text: str) -> str:
    from xml.sax.saxutils import quoteattr

    return quoteattr(_clean(text))


def _case_xml(case: JUnitCase) -> str:
    from xml.sax.saxutils import escape

    head = (
        f"    <testcase name={_attribute(case.name)} classname={_attribute(case.classname)} "
        f'time="{case.time_seconds:.3f}"'
    )
    body = []
    if case.properties:
        body.append("      <properties>")
        body.extend(
            f"        <property name={_attribute(name)} value={_attribute(value)}/>" for name, value in case.properties
        )
        body.append("      </properties>")
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
        suite_lines.append(_suite_head(suite.name, counts, suite.time_seconds))
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
    _write_report(path, render_junit(suites))


def _write_report(path: Path, text: str) -> None:
    """Atomic: a reader never sees half a report. A stream (`--junit /dev/stdout`, a pipe) is written into, and a
    link to the report stays a link."""
    path = Path(path)
    if names_a_stream(path):
        write_into_stream(path, text.encode("utf-8"))
        return
    if path.is_symlink():
        path = path.resolve()
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries_of(path)  # what a run killed while writing this report left beside it
    write_atomically(path, text)


def junit_case(unit: UnitResult) -> JUnitCase:
    message = unit.reason or unit.verdict
    observed = unit.observed
    measured = isinstance(observed, dict) and "score" in observed
    # An `ignored` unit that measured a score (an agent score eval) ran and produced its result: it is
    # kept out of pass rates, not skipped. Other ignored units (a video sample left out) did not run.
    skipped = unit.verdict == "skipped" or (unit.verdict == "ignored" and not measured)
    score = observed["score"] if measured else None
    return JUnitCase(
        name=unit.title or unit.unit_id,
        classname=unit.group.replace("/", ".") or unit.unit_id,
        time_seconds=unit.duration_seconds or 0.0,
        failure=message if unit.verdict == "failed" else None,
        error=message if unit.verdict == "errored" else None,
        skipped=message if skipped else None,
        details=(unit.details or None) if unit.verdict in ("failed", "errored") else None,
        properties=((("score", format(score, "g") if isinstance(score, float) else str(score)),)
                    if score is not None else ()) + _reported_properties(unit),
    )


def _reported_properties(unit: UnitResult) -> tuple[tuple[str, str], ...]:
    """What a kind asks reports to show beside a unit (`artifacts["properties"]`, e.g. an agent attempt's
    eval group), as JUnit properties."""
    named = (unit.artifacts or {}).get("properties")
    if not isinstance(named, dict):
        return ()
    return tuple((str(name), str(value)) for name, value in sorted(named.items()))


def junit_suites(units: Iterable[UnitResult]) -> list[JUnitSuite]:
    """A suite per outermost group (a video case, an agent experiment, a doc case), in first-seen order."""
    suites: dict[str, list[JUnitCase]] = {}
    times: dict[str, float] = {}
    for unit in units:
        suite = unit.group.split("/", 1)[0] or unit.unit_id
        suites.setdefault(suite, []).append(junit_case(unit))
        times[suite] = times.get(suite, 0.0) + (unit.duration_seconds or 0.0)
    return [JUnitSuite(name, cases, times[name]) for name, cases in suites.items()]


def _suite_head(name: str, counts: dict[str, int], time_seconds: float) -> str:
    return (
        f"  <testsuite name={_attribute(name)} tests=\"{counts['tests']}\" failures=\"{counts['failures']}\" "
        f"errors=\"{counts['errors']}\" skipped=\"{counts['skipped']}\" time=\"{time_seconds:.3f}\">"
    )


def write_junit_units(path: Path, units: Iterable[UnitResult]) -> None:
    """`write_junit(path, junit_suites(units))` in one pass over `units`, holding none of them.

    A suite's counts come before its cases in the XML, and an agent run's units interleave their
    suites (plan order is eval first, experiment second), so each suite's cases are rendered into
    a buffer of their own (on disk once it grows) and the file is assembled from those."""
    buffers: dict[str, Any] = {}
    counts: dict[str, dict[str, int]] = {}
    times: dict[str, float] = {}
    try:
        for unit in units:
            suite = unit.group.split("/", 1)[0] or unit.unit_id
            buffer = buffers.get(suite)
            if buffer is None:
                buffer = buffers[suite] = tempfile.SpooledTemporaryFile(
                    max_size=1 << 20, mode="w+", encoding="utf-8", newline=""  # a \r in a message stays a \r
                )
                counts[suite] = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
                times[suite] = 0.0
            case = junit_case(unit)
            tally = counts[suite]
            tally["tests"] += 1
            if case.failure is not None:
                tally["failures"] += 1
            elif case.error is not None:
                tally["errors"] += 1
            elif case.skipped is not None:
                tally["skipped"] += 1
            times[suite] += unit.duration_seconds or 0.0
            buffer.write(_case_xml(case) + "\n")
        totals = {key: sum(tally[key] for tally in counts.values()) for key in ("tests", "failures", "errors", "skipped")}
        parts = [
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<testsuites tests=\"{totals['tests']}\" failures=\"{totals['failures']}\" errors=\"{totals['errors']}\" "
            f"skipped=\"{totals['skipped']}\" time=\"{sum(times.values()):.3f}\">\n"
        ]
        for suite, buffer in buffers.items():
            buffer.seek(0)
            parts.append(_suite_head(suite, counts[suite], times[suite]) + "\n")
            parts.append(buffer.read())
            parts.append("  </testsuite>\n")
        parts.append("</testsuites>\n")
    finally:
        for buffer in buffers.values():
            buffer.close()
    _write_report(path, "".join(parts))


class JUnitReport:
    """The `--junit FILE` reporter: written when a run finishes with a record to show."""

    name = "JUnit"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def run_finished(self, event: Any) -> None:
        if event.build_units is None:
            if event.error is not None and not event.interrupted:
                self._failed_run(event)
            return
        try:
            write_junit_units(self.path, event.units())
        except OSError as error:
            # The OS names the temporary file the report was written to first: the reason alone, with the path asked for.
            print(f"Error: could not write JUnit report {self.path}: {error.strerror or error}", file=sys.stderr)
            event.require(EXIT_ERROR)  # a report CI asked for and did not get is a broken run

    def _failed_run(self, event: Any) -> None:
        """A run that failed before it had a result (a config error, an adapter that never started) is one
        errored test case saying why, as pytest reports a collection error: CI's test view showed "no report
        found" and the reason was in the log alone. Never over a file the report path check refuses."""
        from assay.core.fsutil import check_report_path
        from assay.errors import AssayError

        try:
            check_report_path("--junit", self.path)
        except AssayError:
            return
        text = str(event.error)  # (an adapter's stderr tail may follow its first line: that goes in the body)
        case = JUnitCase(name=f"assay {event.kind} run", classname=f"assay.{event.kind}", error=text.split("\n", 1)[0],
                         details=text if "\n" in text else None)
        try:
            write_junit(self.path, [JUnitSuite(f"assay {event.kind}", (case,))])
        except OSError as error:  # the run has failed already, with its own message: this one is said beside it
            print(f"Error: could not write JUnit report {self.path}: {error.strerror or error}", file=sys.stderr)


__all__ = [
    "JUnitCase", "JUnitReport", "JUnitSuite", "junit_case", "junit_suites", "render_junit", "write_junit",
    "write_junit_units",
]
