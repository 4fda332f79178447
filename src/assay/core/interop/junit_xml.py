"""JUnit XML from any tool (pytest `--junitxml`, Maven Surefire, Jest, Go's gotestsum …) as a run.

One unit per `<testcase>` element, read with `iterparse` and let go of as soon as it is converted,
so memory stays flat however many there are. Its id is `classname::name` (`name` without a
classname); an element repeating an earlier id (pytest writes a teardown error as a second
element) becomes `id#2`, so the totals are exactly the file's own: `<failure>` → failed,
`<error>` → errored, `<skipped>` → skipped, else passed. The group is the enclosing testsuite(s)
and the classname.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.core.interop.jsonstream import CUT_SHORT
from assay.core.interop.log import (
    ImportFormatError, ImportedLog, Sniff, UnitIds, bounded, file_time, iso_time, number, unit_line,
)
from assay.core.record import UnitLine

__all__ = ["detect", "read"]

_TOTALS = ("tests", "failures", "errors", "skipped")


def detect(sniff: Sniff) -> bool:
    head = sniff.head
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 XML (its byte-order mark first): the parser reads it too
        head = head[:8192].decode("utf-16", "ignore").encode()
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:4096]
    return text.startswith(b"<") and (b"<testsuites" in text or b"<testsuite" in text)


def _not_utf8(path: Path, line: int, column: int) -> str:
    """For a parse that failed on an invalid token at `line`, `column`: why, when the bytes there are not UTF-8 (a report
    written in Latin-1 or cp1252 that declares no encoding, which the parser then reads as UTF-8), with the fix;
    else "". ("not well-formed (invalid token)" alone sent the user looking for a bad tag.)"""
    try:
        with path.open("rb") as file:
            for number, text in enumerate(file, 1):
                if number == line:
                    text.decode("utf-8")
                    return ""
    except UnicodeDecodeError as error:
        if len(text[:error.start].decode("utf-8")) != column:  # the token refused is another one, before it
            return ""
        return (f": the bytes there are not UTF-8 text ({error.reason}), and the file declares no "
                "other encoding: save it as UTF-8 (iconv -f LATIN1 -t UTF-8 FILE > NEW), or name its encoding in its first "
                "line, <?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>, and import that")
    except OSError:
        return ""
    return ""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]  # a namespaced tag: {uri}testcase


def _integer(value: str | None) -> int | None:
    """A suite's count as written (absent: 0); None when it is no number (`tests="four"`, hand-edited)."""
    try:
        return int(float(value)) if value else 0
    except (ValueError, OverflowError):
        return None


class _Reading:
    """The parse in progress: the suites open around the current element and the file's totals."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events = ElementTree.iterparse(path, events=("start", "end"))
        self.stack: list[Any] = []  # open elements, outermost first
        self.suites: list[str] = []  # names of the open testsuites
        self.summary: dict[str, Any] = {name: 0 for name in _TOTALS}
        self.summary["time"] = 0.0
        self.summary["suites"] = 0
        self.first_suite: dict[str, str] | None = None
        self.root_name: str | None = None
        self.ids = UnitIds()
        self.testcases = 0  # read so far: a testcase without a name is named by its place

    def _count_suite(self, attributes: dict[str, str]) -> None:
        # Only outermost suites count: a suite's totals include the suites nested in it.
        if len(self.suites) == 1:
            for name in _TOTALS:
                self._add(name, _integer(attributes.get(name)))
            self.summary["suites"] += 1
            self.summary["time"] = round(self.summary["time"] + (number(_float(attributes.get("time"))) or 0.0), 6)
            if "disabled" in attributes:
                self._add("disabled", _integer(attributes.get("disabled")))

    def _add(self, name: str, amount: int | None) -> None:
        """One more suite's (or loose testcase's) share of a file total. A share that is no number makes the
        total unknown (null) rather than read as 0: "tests: 0" beside four imported units would be believed."""
        total = self.summary.get(name, 0)
        self.summary[name] = None if total is None or amount is None else total + amount

    def header(self) -> None:
        """Read up to the first testsuite (or testcase): the file's name and time come from there."""
        for event, element in self._events():
            if event == "start" and not self.stack:
                if _local(element.tag) not in ("testsuites", "testsuite"):
                    raise ImportFormatError(f"{self.path}: the root element is <{_local(element.tag)}>, not <testsuites> "
                                            "or <testsuite>: not a JUnit XML file")
                self.root_name = element.get("name") if _local(element.tag) == "testsuites" else None
            self._handle(event, element)
            if event == "start" and _local(element.tag) in ("testsuite", "testcase"):
                if self.first_suite is None and _local(element.tag) == "testsuite":
                    self.first_suite = dict(element.attrib)
                return
        # No suite and no testcase: a valid file of no tests (nothing was collected), a run of no units.

    def _events(self) -> Iterator[tuple[str, Any]]:
        try:
            yield from self.events
        except ElementTree.ParseError as error:
            from xml.parsers.expat import errors

            line, column = getattr(error, "position", (0, 0))
            # The parser met the end of the file inside an element ("no element found") or a tag ("unclosed token"):
            # a report copied or downloaded in part, which "not well-formed XML" alone did not say.
            ended = {errors.codes[errors.XML_ERROR_NO_ELEMENTS], errors.codes[errors.XML_ERROR_UNCLOSED_TOKEN]}
            cut = CUT_SHORT if getattr(error, "code", None) in ended and self.path.stat().st_size else ""
            if getattr(error, "code", None) == errors.codes[errors.XML_ERROR_INVALID_TOKEN]:
                cut = _not_utf8(self.path, line, column) or cut
            raise ImportFormatError(f"{self.path}:{line}:{column}: not well-formed XML: {error}{cut}") from None

    def _handle(self, event: str, element: Any) -> UnitLine | None:
        tag = _local(element.tag)
        if event == "start":
            self.stack.append(element)
            if tag == "testsuite":
                self.suites.append(element.get("name") or "")
                self._count_suite(element.attrib)
            return None
        self.stack.pop()
        line = None
        if tag == "testcase":
            line = self._unit(element)
        elif tag == "testsuite":
            self.suites.pop()
        else:
            return None
        element.clear()  # and let go of it: a parent would otherwise keep every converted testcase
        if self.stack:
            self.stack[-1].remove(element)
        return line

    def units(self) -> Iterator[UnitLine]:
        for event, element in self._events():
            line = self._handle(event, element)
            if line is not None:
                yield line

    def _unit(self, element: Any) -> UnitLine:
        self.testcases += 1
        # A testcase must have a name; one without (a hand-made or broken file) was the unit "", which no page,
        # `compare` or `--map` could name.
        name = element.get("name") or f"testcase-{self.testcases}"
        classname = element.get("classname") or ""
        unit_id = self.ids.unique(f"{classname}::{name}" if classname else name)
        verdict, outcome = "passed", None
        for child in element:
            kind = _local(child.tag)
            if kind == "error":
                verdict, outcome = "errored", child
                break
            if kind == "failure" and verdict != "errored":
                verdict, outcome = "failed", child
            elif kind == "skipped" and verdict == "passed":
                verdict, outcome = "skipped", child
        if len(self.suites) == 0:  # a testcase outside any suite counts towards the file's totals itself
            self._add("tests", 1)
            key = {"failed": "failures", "errored": "errors", "skipped": "skipped"}.get(verdict)
            if key:
                self._add(key, 1)
        detail: dict[str, Any] = {"evaluation": classname or (self.suites[-1] if self.suites else "junit")}
        for attribute in ("file", "line"):
            if element.get(attribute):
                detail[attribute] = element.get(attribute)
        reason = details = ""
        if outcome is not None:
            text = (outcome.text or "").strip()
            # Jest's jest-junit writes a failure with no `message`, its text only: the text's first line is the reason
            reason = bounded(outcome.get("message") or text.split("\n", 1)[0].strip(), 1_000)
            details = bounded(text)
            if outcome.get("type"):
                detail["type"] = outcome.get("type")
        group = "/".join([*self.suites, classname] if classname else self.suites)
        return unit_line(
            unit_id=unit_id, verdict=verdict, group=group, title=name, details=details, reason=reason,
            duration_seconds=number(_float(element.get("time"))), detail=detail,
        )


def _float(value: str | None) -> float | None:
    """A `time` attribute in seconds; None when absent, unreadable or negative (`time="-1"`, a runner's "unknown",
    is no duration)."""
    try:
        seconds = float(value.replace(",", "")) if value else None
    except ValueError:
        return None
    return seconds if seconds is None or seconds >= 0 else None


def read(path: Path) -> ImportedLog:
    reading = _Reading(path)
    reading.header()
    first = reading.first_suite or {}
    suite = first.get("name") or reading.root_name or path.stem
    return ImportedLog(
        format="junit", tool="junit", tool_version=None, title=f"JUnit {suite}: {path.name}",
        created_at=iso_time(first.get("timestamp")) or file_time(path),
        units=reading.units(),
        identity={"producer": reading.root_name or first.get("name"), "hostname": first.get("hostname")},
        summary=reading.summary,
    )

