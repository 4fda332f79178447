"""The formats `assay runs import` reads, by name, and detection of a file's format from its content.

A lazy registry (like the kinds in `core.run.kinds`): each format's module is imported only when a
file is detected or read as that format. A module offers `detect(sniff) -> bool` and
`read(path) -> ImportedLog`; detection asks them in the order below, the first that claims the
file wins, and a file none claims is a usage error naming it and the formats.
"""

from __future__ import annotations

import importlib
import re
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
    unread = unread_output(head, path=path)
    if unread is not None:
        return unread, False
    return "cannot tell which tool wrote this file", True


_PROMPTFOO_JSON = "assay reads a tool's JSON report (promptfoo's is `promptfoo eval --output results.json`)"
_XML_DECLARATION = re.compile(rb"<\?xml[^>]*\?>\s*")


def unread_output(head: bytes, *, pages: bool = True, path: Path | None = None) -> str | None:
    """Why no format reads a file that is a report in a form assay does not read (promptfoo's YAML, CSV or XML
    output, an HTML page unless `pages` is false, the listing files `inspect eval-set` writes beside its logs),
    with what to give instead; None for any other file. `--format` cannot read these either, so it is not offered."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if path is not None and (eval_set := _inspect_eval_set_file(path, text)) is not None:
        return eval_set
    if path is not None and (working := _deepeval_working_file(path, text)) is not None:
        return working
    first_line = text.split(b"\n", 1)[0]
    if text.startswith(b"evalId:") or (b",Status,Score," in first_line and b"Grader Reason" in first_line):
        return f"this is promptfoo's YAML or CSV output, which assay does not read; {_PROMPTFOO_JSON}"
    # promptfoo's `--output results.xml` is its JSON output written as XML, root <promptfoo> (JUnit's is results.junit.xml)
    if _XML_DECLARATION.sub(b"", text, count=1).startswith(b"<promptfoo>"):
        return (f"this is promptfoo's XML output, which assay does not read; {_PROMPTFOO_JSON}, or its JUnit XML "
                f"(`--output results.junit.xml`)")
    if pages and (text[:14].lower() == b"<!doctype html" or text[:5].lower() == b"<html"):
        return (f"this is an HTML page (a report to read, such as promptfoo's `--output results.html`), which assay "
                f"does not read; {_PROMPTFOO_JSON}")
    return None


_INSPECT_LOG_LISTING = re.compile(rb'\{\s*"([^"\\]+\.(?:eval|json))"\s*:\s*\{\s*"version"')  # logs.json: name -> header
_INSPECT_EVAL_SET = re.compile(rb'\{\s*"eval_set_id"\s*:')  # eval-set.json: the set's id and tasks


def _inspect_eval_set_file(path: Path, text: bytes) -> str | None:
    """`inspect eval-set` writes `logs.json` (each log's header, by file name) and `eval-set.json` (the set's tasks)
    in the log folder, so `logs/*.json` of a set logged as JSON names them with the logs."""
    listing = _INSPECT_LOG_LISTING.match(text)
    if listing is None and _INSPECT_EVAL_SET.match(text) is None:
        return None
    what = "the index of an eval set's logs" if listing is not None else "the record of an eval set's tasks"
    if listing is not None:
        example: str | None = str(path.parent / listing.group(1).decode("utf-8", "replace"))
    else:  # the set's logs are named <time>_<task>_<id>: no listing file has an underscore
        logs = sorted(path.parent.glob("*_*.eval")) or sorted(path.parent.glob("*_*.json"))
        example = str(logs[0]) if logs else None
    pattern = path.parent / f"*_*{Path(example).suffix if example else '.eval'}"
    such = f", such as {example}" if example else ""
    return (f"this is Inspect's {path.name}, {what}, not an eval log; import the set's logs themselves{such} "
            f"({pattern} names them, and not this file)")


_DEEPEVAL_WORKING = {  # the first key of the files DeepEval keeps in .deepeval/ beside the run it saves whole
    b"testRunData": "its working copy of the test run in progress",
    b"test_cases_lookup_map": "its cache of metric results, not a test run",
}


def _deepeval_working_file(path: Path, text: bytes) -> str | None:
    """DeepEval's `.deepeval/.latest_test_run.json` and `.deepeval-cache.json`, found beside the run a user wants
    (`.deepeval/.latest_run_full.json`, which it always writes) when no DEEPEVAL_RESULTS_FOLDER was set."""
    first = re.match(rb'\{\s*"(\w+)"\s*:', text)
    what = _DEEPEVAL_WORKING.get(first.group(1)) if first else None
    if what is None:
        return None
    full = path.parent / ".latest_run_full.json"
    give = (f"import {full} beside it (the latest test run, saved whole), or " if full.is_file() else "import ")
    return (f"this is DeepEval's {path.name}, {what}, which assay does not read; {give}the test_run_*.json DeepEval "
            f"saves when DEEPEVAL_RESULTS_FOLDER is set")
