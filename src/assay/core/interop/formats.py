"""The formats `assay runs import` reads, by name, and detection of a file's format from its content.

A lazy registry (like the kinds in `core.run.kinds`): each format's module is imported only when a
file is detected or read as that format. A module offers `detect(sniff) -> bool` and
`read(path) -> ImportedLog`; detection asks them in the order below, the first that claims the
file wins, and a file none claims is a usage error naming it and the formats.
"""

from __future__ import annotations

import importlib
import stat
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from assay.core.interop.log import ImportedLog, Sniff
from assay.errors import UsageError

__all__ = ["FORMATS", "LogFormat", "detect_format", "format_named", "readable_head"]


@dataclass(frozen=True)
class LogFormat:
    name: str  # the `--format` value
    tool: str  # what writes it
    module: str  # where its detect/read live

    def _module(self) -> ModuleType:
        return importlib.import_module(self.module)

    def detect(self, sniff: Sniff) -> bool:
        return bool(self._module().detect(sniff))

    def read(self, path: Path) -> ImportedLog:
        return self._module().read(path)


# Detection order: the zip and XML formats by their first bytes, then the JSON ones by their keys.
FORMATS = {
    item.name: item
    for item in (
        LogFormat("inspect", "Inspect AI (.eval, .json)", "assay.core.interop.inspect_log"),
        LogFormat("junit", "JUnit XML (pytest --junitxml, Maven, Jest, gotestsum …)", "assay.core.interop.junit_xml"),
        LogFormat("pydantic-evals", "pydantic-evals (EvaluationReport as JSON)", "assay.core.interop.pydantic_evals_report"),
        LogFormat("deepeval", "DeepEval (test_run_*.json)", "assay.core.interop.deepeval_run"),
        LogFormat("promptfoo", "promptfoo (eval --output results.json)", "assay.core.interop.promptfoo_results"),
    )
}


def format_named(name: str) -> LogFormat:
    found = FORMATS.get(name) or FORMATS.get(name.lower())  # `JUnit` is the junit format: a name, not a spelling
    if found is None:
        from assay.core.format import did_you_mean

        hint = did_you_mean(name, list(FORMATS), form=" (did you mean {}?)")
        raise UsageError(f"--format {name!r} is not a format assay reads{hint}; use one of {', '.join(FORMATS)}", "--format")
    return found


def formats_text() -> str:
    return "; ".join(f"{item.name}: {item.tool}" for item in FORMATS.values())


def detect_format(path: Path) -> LogFormat:
    """The format of the file at `path`, from its content; a `UsageError` naming the file when
    it is none of them (or cannot be read)."""
    head = readable_head(path)
    sniff = Sniff(path, head)
    for item in FORMATS.values():
        if item.detect(sniff):
            return item
    why, format_reads_it = _why_unknown(path, head)
    fix = f"; give --format, one of {formats_text()}" if format_reads_it else ""
    raise UsageError(f"{path}: {why}{fix}", "--format")


def readable_head(path: Path) -> bytes:
    """The file's first 64 KB; a `UsageError` naming it when it is missing, a folder, unreadable or empty, which
    no format can import (checked before any file is imported, also when `--format` names the format)."""
    try:
        # A log is read more than once (its head here, then its content and its hash): a pipe (`<(…)`, a FIFO) or
        # a device would be read once, then waited on for ever.
        if not stat.S_ISREG(path.stat().st_mode) and not path.is_dir():
            raise UsageError(f"{path} is not a regular file (a pipe or a device); save the log to a file and import that")
        with open(path, "rb") as handle:
            head = handle.read(64 * 1024)
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder; give the log files themselves (e.g. {path}/{_logs_in(path)})") from None
    except FileNotFoundError:
        # A pattern the shell left as it is (quoted, or Windows' cmd and PowerShell, which expand none)
        found = sorted(path.parent.glob(path.name))[:3] if any(character in path.name for character in "*?[") else []
        if found:
            matches = ", ".join(str(match) for match in found) + (" …" if len(found) == 3 else "")
            raise UsageError(f"{path}: no such file: assay does not expand a pattern, the shell does (it matches "
                             f"{matches}); leave it unquoted, or name the files") from None
        raise UsageError(f"{path}: no such file") from None
    except OSError as error:
        raise UsageError(f"{path} cannot be read: {error}") from None
    if not head.strip():
        raise UsageError(f"{path}: the file is empty; there is nothing to import")
    return head


def _logs_in(folder: Path) -> str:
    """The pattern of the logs a folder holds, for the example of a folder named instead of its files."""
    for pattern in ("*.eval", "*.xml", "*.json"):
        if next(folder.glob(pattern), None) is not None:
            return pattern
    return "*.eval"


_CHECKED_JSON_BYTES = 64 << 20  # a file no format claims is parsed whole to say where it breaks, up to this size


def _why_unknown(path: Path, head: bytes) -> tuple[str, bool]:
    """Why no format claims the file, and whether `--format` could read it: JSON that breaks (a report cut short reads
    as no tool's), text that is not UTF-8, or else not one of the formats."""
    from assay.core.interop.log import not_utf8

    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] in (b"{", b"[") or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        import orjson

        encoding = not_utf8(path, head)
        try:
            if encoding is None and path.stat().st_size <= _CHECKED_JSON_BYTES:
                data = path.read_bytes()
                orjson.loads(data.removeprefix(b"\xef\xbb\xbf"))  # (a byte-order mark is not part of the document)
        except orjson.JSONDecodeError as error:
            if str(error).startswith("str is not valid UTF-8"):  # past the head: orjson says "surrogates not allowed"
                encoding = not_utf8(path, data)                  # at character 0, wherever the byte is
                if encoding is None:  # (the file ends inside a character)
                    return ("not valid JSON (it ends inside a character): a file cut short? Which tool wrote it cannot be "
                            "told"), True
            elif str(error).startswith("unexpected content after document"):  # JSON Lines, not one document cut short
                return (f"not one JSON document but several, one a line (JSON Lines: {error}), which no format is; "
                        f"{_PROMPTFOO_JSON}"), False
            else:
                cut = " a file cut short?" if str(error).startswith("unexpected end of data") else ""
                return f"not valid JSON ({error}):{cut} Which tool wrote it cannot be told", True
        except OSError:
            pass
        if encoding is not None:  # no format reads it as it is
            return encoding.removeprefix(f"{path}: "), False
    first_line = text.split(b"\n", 1)[0]
    if text.startswith(b"evalId:") or (b",Status,Score," in first_line and b"Grader Reason" in first_line):
        return f"this is promptfoo's YAML or CSV output, which assay does not read; {_PROMPTFOO_JSON}", False
    return "cannot tell which tool wrote this file", True


_PROMPTFOO_JSON = "assay reads a tool's JSON report (promptfoo's is `promptfoo eval --output results.json`)"
