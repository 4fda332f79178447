"""What every importer hands over: one other tool's log as an assay run — who made it, when, the
tool's own summary, and its units as record lines — plus the small helpers importers share.

Units stream: an importer yields each unit as it reads it, so a log of 100,000 samples is never
held whole. A streaming importer fills `summary` as it goes; it is complete once the units are
exhausted, which is when `write_record` writes the manifest (last).
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.interop.jsonstream import CUT_SHORT
from assay.core.record import UnitLine, UnitResult, dumps_if_plain, jsonable, unit_document
from assay.errors import UsageError

__all__ = [
    "ImportFormatError", "ImportedLog", "Sniff", "UnitIds", "bounded", "document_line", "file_time", "iso_time", "number",
    "not_utf8", "read_json", "unit_line", "usage_total",
]

TEXT_LIMIT = 2_000  # characters of any one text kept in a unit (inputs, outputs, tracebacks)


class ImportFormatError(UsageError):
    """A log that is not what its format says; the message names the file and the place (exit 2)."""


_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def not_utf8(path: Path | str, data: bytes) -> str | None:
    """Why the JSON file whose bytes begin with `data` is not UTF-8 text, naming the file and the fix; None when it is
    (as far as `data` goes: a character cut at its end is not counted)."""
    if data.startswith(_UTF16_BOMS):
        return (f"{path}: the file is UTF-16 text (as Windows PowerShell's `>` and Out-File write it), and assay reads "
                "a JSON report as UTF-8: save it as UTF-8 (iconv -f UTF-16 -t UTF-8 FILE > NEW, or in PowerShell "
                "Get-Content FILE | Set-Content -Encoding utf8 NEW) and import that")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start >= len(data) - 3 and error.reason == "unexpected end of data":
            return None
        return (f"{path}: not JSON text: its bytes are not UTF-8 ({error.reason} at byte {error.start}), as in a "
                "binary file or one another tool wrote")
    return None


def read_json(path: Path) -> Any:
    """The file's whole JSON document (a report a tool writes at once); an `ImportFormatError` naming the file when it
    is not JSON, and saying what to do when it ends inside the document (a copy or a download cut short)."""
    import orjson

    data = path.read_bytes()
    # A byte-order mark some Windows tools write is not part of the document (as `JsonStream` and detection read it).
    document = memoryview(data)[len(_UTF8_BOM):] if data.startswith(_UTF8_BOM) else data
    try:
        return orjson.loads(document)
    except orjson.JSONDecodeError as error:
        if str(error).startswith("str is not valid UTF-8"):  # orjson says "surrogates not allowed" at character 0,
            # wherever the byte is; a file whose last character is cut ends in the middle of the document
            cut_inside = f"{path}: not valid JSON (it ends inside a character){CUT_SHORT}"
            raise ImportFormatError(not_utf8(path, data) or cut_inside) from None
        cut = str(error).startswith("unexpected end of data")
        lines = str(error).startswith("unexpected content after document")  # JSON Lines: a document a line
        raise ImportFormatError(f"{path}: not valid JSON ({error})" + (
            CUT_SHORT if cut else
            ": the file holds several JSON documents, one a line (JSON Lines); give the tool's JSON report, such as "
            "promptfoo's `promptfoo eval --output results.json`" if lines else ""),
        ) from None


@dataclass(frozen=True)
class ImportedLog:
    """One log read as a run. `units` may be iterated once."""

    format: str  # the `--format` name: junit, inspect, pydantic-evals, deepeval, promptfoo
    tool: str  # what wrote it: pytest, inspect-ai, …
    tool_version: str | None
    title: str  # what the run was about: the task, suite, report or eval description
    created_at: str | None  # when the tool ran it (ISO 8601 UTC), None when the log does not say
    units: Iterator[UnitLine]
    identity: Mapping[str, Any] = field(default_factory=dict)  # task, model, dataset … as the log names them
    summary: dict[str, Any] = field(default_factory=dict)  # the tool's own totals; see the module docstring


class Sniff:
    """What format detection looks at: the file's first bytes, and (computed once, when a format
    asks) the first keys of a JSON object or the first 16 member names of a zip archive."""

    def __init__(self, path: Path, head: bytes) -> None:
        self.path = path
        self.head = head

    @functools.cached_property
    def json_keys(self) -> frozenset[str]:
        from assay.core.interop.jsonstream import top_level_keys

        if not self.head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
            return frozenset()
        return frozenset(top_level_keys(self.path))

    @functools.cached_property
    def zip_names(self) -> frozenset[str]:
        from assay.core.interop.zipstream import ZipStreamError, is_zip, member_names

        if not is_zip(self.head):
            return frozenset()
        try:
            return frozenset(member_names(self.path, limit=16))
        except (ZipStreamError, OSError):
            return frozenset()


class UnitIds:
    """Unit ids that stay unique: an id seen before gets `#2`, `#3`, … so a repeated case (a JUnit
    element pytest writes twice, a rerun) is one more trial of the same unit, as assay counts trials."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def unique(self, unit_id: str) -> str:
        count = self._seen.get(unit_id)
        if count is None:
            self._seen[unit_id] = 1
            return unit_id
        while True:
            count += 1
            candidate = f"{unit_id}#{count}"
            if candidate not in self._seen:
                self._seen[unit_id] = count
                self._seen[candidate] = 1
                return candidate


def unit_line(unit_id: str, verdict: str, group: str = "", **fields: Any) -> UnitLine:
    """The unit with these fields (those a `UnitResult` takes) as its record line, encoded once
    (orjson when nothing needs converting), without making the `UnitResult` (`unit_document`)."""
    return document_line(unit_document(unit_id, verdict, group, **fields))


def document_line(document: dict[str, Any]) -> UnitLine:
    """A unit's record document (`unit_document`'s keys, in its order) as its line."""
    text = dumps_if_plain(document)
    if text is None:
        return UnitLine.of(UnitResult.from_json(jsonable(document, non_finite_as_null=True)))
    return UnitLine(document["unit_id"], document["group"], document["verdict"], text)


_SCALARS = frozenset({type(None), bool, int, float})


def bounded(value: Any, limit: int = TEXT_LIMIT) -> Any:
    """Texts cut to `limit` characters (with a mark), anywhere in a JSON-like value: a log may hold
    whole transcripts, and a unit keeps what a person reads in the viewer, not a copy of the log."""
    kind = type(value)
    if kind is str:  # most values, then scalars: answered before any isinstance (a Mapping check is an ABC's)
        return value if len(value) <= limit else value[:limit] + f"… [{len(value) - limit} more characters]"
    if kind in _SCALARS:
        return value
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"… [{len(value) - limit} more characters]"
    if kind is dict or isinstance(value, Mapping):
        return {str(key): bounded(item, limit) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = [bounded(item, limit) for item in value[:100]]
        if len(value) > 100:
            items.append(f"… [{len(value) - 100} more items]")
        return items
    return value


def number(value: Any) -> float | None:
    """A finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def iso_time(value: Any) -> str | None:
    """A tool's timestamp as assay writes them (`2026-12-03T08:32:11.000Z`), or None. A time without
    a zone is taken as UTC; numbers are seconds (or milliseconds) since the epoch."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            seconds = value / 1000 if value > 1e11 else value
            moment = _dt.datetime.fromtimestamp(seconds, _dt.UTC)
        else:
            text = str(value).strip()
            if text.endswith("Z"):
                text = text[:-1] + "+00:00"
            moment = _dt.datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=_dt.UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return moment.astimezone(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def file_time(path: Path) -> str | None:
    """When the file was last written: the time of a log that does not record one."""
    try:
        return iso_time(os.stat(path).st_mtime)
    except OSError:
        return None


_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_creation_tokens", "reasoning_tokens")


def usage_total(parts: Iterable[Mapping[str, Any]]) -> dict[str, int] | None:
    """Token counts summed over `parts` (assay's usage keys), None when there are none."""
    total: dict[str, int] = {}
    for part in parts:
        for key in _USAGE_KEYS:
            value = part.get(key)
            if type(value) is int or isinstance(value, int) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total or None
