"""Reading the files users write within bounds: size, UTF-8, nesting depth, YAML aliases, number size, key types.

The YAML, JSON and TOML parsers recurse without limit, expand aliases and convert digits of any length, so
every loader of a user file parses through here: a damaged or hostile file becomes one message that names the
file, the place in it and the fix (raised with the caller's error class), never a traceback or a hang.
A plain syntax error stays the parser's own exception (`yaml.YAMLError`, `json.JSONDecodeError`,
`tomllib.TOMLDecodeError`), so every caller keeps the wording its users already know.
"""

from __future__ import annotations

import contextvars
import datetime
import functools
import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_JSON_BYTES",
    "MAX_TEXT_BYTES",
    "MAX_TOML_BYTES",
    "MAX_YAML_BYTES",
    "ErrorFactory",
    "check_size",
    "check_values",
    "check_yaml_bounds",
    "date_hint",
    "decode_text",
    "describe_value",
    "field_path",
    "load_json",
    "load_toml",
    "load_yaml",
    "read_bounded",
]

ErrorFactory = Callable[[str], AssayError]

# Real files nest a handful of levels; 64 leaves room for any config while keeping every recursive
# consumer (parsers, pydantic, json.dumps) far from Python's recursion limit.
MAX_DEPTH = 64
# Values reached through YAML aliases, counted as if written out. A case file that shares a few blocks
# uses hundreds; an alias bomb needs billions, and everything downstream walks the expanded tree.
MAX_ALIAS_NODES = 100_000
# CPython's own limit for converting decimal text to int and back (sys.int_info.default_max_str_digits):
# anything longer could not be printed, stored as JSON or compared with its text anyway.
MAX_INT_DIGITS = 4300
_MAX_INT_BITS = math.ceil(MAX_INT_DIGITS * math.log2(10))
# PyYAML builds ~0.5 MB of dense YAML per second even with libyaml; 2 MiB (~40,000 sample blocks)
# keeps the worst load within seconds. JSON parses in C, so its files may be larger.
MAX_YAML_BYTES = 2 * 1024 * 1024
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_TOML_BYTES = 1024 * 1024
MAX_TEXT_BYTES = 1024 * 1024  # line-based text such as `.env`
# Above this size a YAML syntax error is reported in libyaml's words: re-reading with the pure-Python
# parser for PyYAML's familiar wording would take several seconds.
_FRIENDLY_YAML_ERROR_BYTES = 256 * 1024
# Keys a YAML load found given twice in one mapping (key, line), while `load_yaml` runs.
_REPEATED_KEYS: contextvars.ContextVar[list[tuple[str, int]] | None] = contextvars.ContextVar("repeated_keys", default=None)


# --- bytes and text ------------------------------------------------------------------------------


def read_bounded(path: Path, *, source: str, error: ErrorFactory, max_bytes: int) -> bytes:
    """The file's bytes, refused past `max_bytes` without reading the rest; `OSError` propagates."""
    with open(path, "rb") as handle:
        # Read what the file says it holds plus one byte (a buffer of `max_bytes` for every small file
        # would be wasteful); a file that grew, a pipe or a device (size 0) is read on to the cap.
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(min(size, max_bytes) + 1)
        if len(data) > size:
            data += handle.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise error(
            f"{source}: the file is larger than {max_bytes:,} bytes, the most assay reads from it; "
            "split it into smaller files"
        )
    return data


def check_size(data: bytes, *, source: str, error: ErrorFactory, max_bytes: int) -> None:
    """The same refusal for content that did not come from disk (a review edit, a seed rewrite)."""
    if len(data) > max_bytes:
        raise error(
            f"{source}: the content is larger than {max_bytes:,} bytes, the most assay reads from it; "
            "split it into smaller files"
        )


def _line_and_column(text: str | bytes, offset: int) -> tuple[int, int]:
    newline = "\n" if isinstance(text, str) else b"\n"
    line = text.count(newline, 0, offset) + 1  # type: ignore[arg-type]
    return line, offset - (text.rfind(newline, 0, offset) + 1) + 1  # type: ignore[arg-type]


def _at(text: str | bytes, offset: int) -> str:
    line, column = _line_and_column(text, offset)
    return f"line {line}, column {column}"


def decode_text(data: bytes, *, source: str, error: ErrorFactory) -> str:
    """UTF-8 text; an undecodable byte is reported with its line and column."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as problem:
        raise error(
            f"{source}: {_at(data, problem.start)}: byte 0x{data[problem.start]:02x} is not valid UTF-8; "
            "save the file as UTF-8"
        ) from None


# --- describing values and where they are ----------------------------------------------------------


def field_path(parts: list[Any] | tuple[Any, ...]) -> str:
    """`targets.t.samples[0]`, with keys that are not plain names quoted: `config['a b']`."""
    text = ""
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
        elif isinstance(part, str) and re.fullmatch(r"[A-Za-z0-9_$-]+", part):
            text += f".{part}" if text else part
        else:
            text += f"[{_short(part)}]"
    return text or "the top level"


def _short(value: Any, limit: int = 60) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return "a very large integer"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_value(value: Any) -> str:
    """What a misplaced value is, in the file's terms: `a date (2026-01-01)`, `a list`, `the integer 3`."""
    if isinstance(value, datetime.datetime):
        return f"a timestamp ({value.isoformat()})"
    if isinstance(value, datetime.date):
        return f"a date ({value.isoformat()})"
    if isinstance(value, datetime.time):
        return f"a time of day ({value.isoformat()})"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {_short(value)}"
    if isinstance(value, str):
        return f"the text {_short(value)}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def date_hint(value: Any) -> str:
    """The fix for a date written where text belongs (YAML and TOML read unquoted dates as dates)."""
    if isinstance(value, (datetime.date, datetime.time)):
        return f"; quote it (\"{value.isoformat()}\") to keep it as text"
    return ""


# --- walking parsed values without recursion ---------------------------------------------------------


def check_values(
    value: Any,
    *,
    source: str,
    error: ErrorFactory,
    json_like: bool = False,
    no_nul: bool = False,
    where: Callable[[], str | None] | None = None,
) -> None:
    """Depth and integer size of a parsed value, checked iteratively (it may be deeper than Python's stack).

    `json_like` also requires string keys, finite numbers and only JSON types (no dates, sets, bytes);
    `no_nul` refuses NUL characters in strings and keys (they cannot be paths or environment values).
    `where` locates a too-deep value in the text (line and column) when the field path would be unreadable.
    """
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            if item.bit_length() > _MAX_INT_BITS:
                raise error(
                    f"{source}: {field_path(path)}: an integer with more than {MAX_INT_DIGITS:,} digits; "
                    "quote it to keep it as text"
                )
            continue
        if isinstance(item, float):
            if json_like and not math.isfinite(item):
                raise error(f"{source}: {field_path(path)}: {item} is not a finite number; use a finite number")
            continue
        if isinstance(item, str):
            if no_nul and "\x00" in item:
                raise error(f"{source}: {field_path(path)}: contains a NUL character; remove it")
            continue
        if isinstance(item, (Mapping, list, tuple)):
            if len(path) >= MAX_DEPTH:
                located = where() if where is not None else None
                place = located or f"{field_path(path[:3])}..."
                raise error(
                    f"{source}: {place}: nested more than {MAX_DEPTH} levels deep; "
                    f"assay reads at most {MAX_DEPTH} levels of lists and mappings"
                )
            if isinstance(item, Mapping):
                for key, child in item.items():
                    if json_like and not isinstance(key, str):
                        raise error(
                            f"{source}: {field_path(path)}: the key {_short(key)} is {describe_value(key)}, "
                            f"not text; keys must be strings{date_hint(key)}"
                        )
                    if no_nul and isinstance(key, str) and "\x00" in key:
                        raise error(f"{source}: {field_path(path)}: a key contains a NUL character; remove it")
                    stack.append((child, (*path, key)))
            else:
                stack.extend((child, (*path, index)) for index, child in enumerate(item))
            continue
        if json_like:
            raise error(
                f"{source}: {field_path(path)}: {describe_value(item)} is not a JSON value{date_hint(item)}"
            )


# --- YAML ------------------------------------------------------------------------------------------

def _refusing_unreadable_scalars(base: type) -> type:
    """A safe loader whose scalar conversions fail as YAML errors at the value's line.

    PyYAML's own constructors raise bare ValueError/KeyError for `2026-13-45`, `!!bool maybe` or a
    4,301-digit integer, which would escape as tracebacks.
    """
    from yaml.constructor import ConstructorError

    class Loader(base):  # type: ignore[misc, valid-type]
        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
            try:
                value = super().construct_object(node, deep)
            except (ValueError, OverflowError, TypeError, KeyError) as problem:
                reason = str(problem).split(";")[0]  # CPython's int limit message ends in Python advice
                raise ConstructorError(
                    None, None, f"cannot read the value {_short(node.value)}: {reason}; quote it to keep it as text",
                    node.start_mark,
                ) from None
            if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _MAX_INT_BITS:
                raise ConstructorError(
                    None, None, f"an integer with more than {MAX_INT_DIGITS:,} digits; quote it to keep it as text",
                    node.start_mark,
                )
            return value

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
            # A key given twice: PyYAML (and so GlassKit) keeps the later value without a word, which drops
            # what the first one held (a second `brightness:` target takes the first one's samples away).
            repeated = _REPEATED_KEYS.get()
            if repeated is not None and isinstance(node.value, list):
                seen: set[str] = set()
                for key_node, _ in node.value:
                    key = getattr(key_node, "value", None)
                    if isinstance(key, str) and key != "<<":
                        if key in seen:
                            repeated.append((key, key_node.start_mark.line + 1))
                        seen.add(key)
            return super().construct_mapping(node, deep)

    Loader.__name__ = f"Bounded{base.__name__}"
    return Loader


@functools.cache
def _loaders() -> tuple[type, type, type]:
    """(libyaml's safe loader, the same bounded, pure PyYAML's bounded), made on the first YAML read: importing
    PyYAML costs ~15 ms of CPU that a command reading no YAML (a one-eval agent run) need not pay."""
    import yaml

    pure = yaml.SafeLoader
    fast = getattr(yaml, "CSafeLoader", pure)
    bounded_fast = _refusing_unreadable_scalars(fast)
    return fast, bounded_fast, _refusing_unreadable_scalars(pure) if fast is not pure else bounded_fast


def check_yaml_bounds(text: str, *, source: str, error: ErrorFactory) -> None:
    """Refuse nesting past `MAX_DEPTH`, recursive aliases and alias expansion past `MAX_ALIAS_NODES`.

    Reads the event stream (a flat loop, libyaml when installed) before anything recursive runs. A syntax
    error ends the check early: the real load reports it in the parser's words.
    """
    import yaml

    collection_start = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    collection_end = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    stack: list[list[Any]] = []  # [anchor, nodes counted so far] per open collection
    sizes: dict[str, int] = {}  # expanded node count of each closed anchor
    open_anchors: set[str] = set()
    through_aliases = 0
    events = yaml.parse(text, Loader=_loaders()[0])
    try:
        for event in events:
            if isinstance(event, yaml.ScalarEvent):
                if event.anchor is not None:
                    sizes[event.anchor] = 1
                if stack:
                    stack[-1][1] += 1
            elif isinstance(event, collection_start):
                if len(stack) >= MAX_DEPTH:
                    raise error(
                        f"{source}: {_mark(event)}: nested more than {MAX_DEPTH} levels deep; "
                        f"assay reads at most {MAX_DEPTH} levels of lists and mappings"
                    )
                stack.append([event.anchor, 1])
                if event.anchor is not None:
                    open_anchors.add(event.anchor)
            elif isinstance(event, collection_end):
                anchor, size = stack.pop()
                if anchor is not None:
                    sizes[anchor] = size
                    open_anchors.discard(anchor)
                if stack:
                    stack[-1][1] += size
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor in open_anchors:
                    raise error(
                        f"{source}: {_mark(event)}: the alias *{event.anchor} is inside the value it refers to; "
                        "a value cannot contain itself, remove the alias"
                    )
                size = sizes.get(event.anchor, 1)
                through_aliases += size
                if through_aliases > MAX_ALIAS_NODES:
                    raise error(
                        f"{source}: {_mark(event)}: aliases expand to more than {MAX_ALIAS_NODES:,} values; "
                        "write the repeated values out, or alias fewer or smaller ones"
                    )
                if stack:
                    stack[-1][1] += size
            elif isinstance(event, yaml.DocumentStartEvent):
                sizes.clear()  # anchors are per document
    except yaml.MarkedYAMLError as problem:
        # libyaml gives up at 1,000 levels while still reading ahead, before the events above reach 64.
        if "maximum nesting depth" in str(problem.problem) and problem.problem_mark is not None:
            mark = problem.problem_mark
            raise error(_too_deep_message(source, f"line {mark.line + 1}, column {mark.column + 1}")) from None
    except yaml.YAMLError:
        pass
    finally:
        events.close()


def _mark(event: yaml.Event) -> str:
    mark = event.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _too_deep_message(source: str, place: str | None) -> str:
    where = f"{place}: " if place else ""
    return (
        f"{source}: {where}nested more than {MAX_DEPTH} levels deep; "
        f"assay reads at most {MAX_DEPTH} levels of lists and mappings"
    )


def load_yaml(text: str, *, source: str, error: ErrorFactory) -> Any:
    """PyYAML's safe load (YAML 1.1: `yes` is true, unquoted dates are dates) within the bounds above.

    libyaml is used for speed, but its error texts differ from pure PyYAML's, which GlassKit users see;
    on a syntax error the pure loader reruns (for files of moderate size) so the message is the familiar one.
    """
    import yaml

    check_yaml_bounds(text, source=source, error=error)
    _, bounded_fast, bounded_pure = _loaders()
    repeated: list[tuple[str, int]] = []
    token = _REPEATED_KEYS.set(repeated)
    try:
        try:
            value = yaml.load(text, Loader=bounded_fast)  # a safe loader
        except yaml.YAMLError:
            if bounded_fast is bounded_pure or len(text) > _FRIENDLY_YAML_ERROR_BYTES:
                raise
            value = yaml.load(text, Loader=bounded_pure)  # a safe loader
    except RecursionError:
        # The event check keeps nesting shallow; this is the last line should a parser disagree with it.
        raise error(_too_deep_message(source, None)) from None
    finally:
        _REPEATED_KEYS.reset(token)
    _warn_of_repeated_keys(source, repeated)
    return value


def _warn_of_repeated_keys(source: str, repeated: list[tuple[str, int]]) -> None:
    """One warning line on stderr per key given twice in a mapping. Read as PyYAML (and GlassKit) reads it, the
    later value stands: refusing the file would fail suites that run elsewhere, saying nothing loses data."""
    import sys

    from assay.core.format import PROBLEMS_SHOWN

    for key, line in repeated[:PROBLEMS_SHOWN]:
        sys.stderr.write(f"Warning: {source}: line {line}: the key {key!r} is given again; the later one replaces "
                         "the earlier, whose content is not read (rename or merge them)\n")


# --- JSON ------------------------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _json_number_hooks(text: str) -> dict[str, Callable[[str], Any]]:
    def where(literal: str) -> str:
        offset = text.find(literal)
        return _at(text, offset) if offset >= 0 else "a number"

    def parse_int(literal: str) -> int:
        digits = len(literal.lstrip("-"))
        if digits > MAX_INT_DIGITS:
            raise _Refused(
                f"{where(literal)}: an integer with {digits:,} digits; assay reads at most {MAX_INT_DIGITS:,}, "
                "write it as a string"
            )
        return int(literal)

    def parse_float(literal: str) -> float:
        number = float(literal)
        if not math.isfinite(number):
            shown = literal if len(literal) <= 30 else literal[:27] + "..."
            raise _Refused(f"{where(literal)}: the number {shown} is out of range; use a finite number")
        return number

    def parse_constant(name: str) -> Any:
        raise _Refused(f"{where(name)}: {name} is not valid JSON; use a finite number or null")

    return {"parse_int": parse_int, "parse_float": parse_float, "parse_constant": parse_constant}


# A whole string (to its closing quote, or to the end when unterminated) or one bracket. The string
# patterns are "unrolled" (no nested alternation), so each runs in time linear in what it consumes.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_TOML_TOKEN = re.compile(
    r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"""|\Z)'
    r"|'''[^']*(?:'(?!'')[^']*)*(?:'''|\Z)"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"?'
    r"|'[^'\n]*'?"
    r"|#[^\n]*"
    r"|[\[\]{}]",
    re.DOTALL,
)


def _depth_excess(text: str, tokens: re.Pattern[str]) -> int | None:
    """Offset of the first bracket opening level `MAX_DEPTH + 1`, strings and comments skipped."""
    depth = 0
    for match in tokens.finditer(text):
        character = match.group()
        if character in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        elif character in ("]", "}"):
            depth = max(0, depth - 1)
    return None


def load_json(text: str, *, source: str, error: ErrorFactory, no_nul: bool = False) -> Any:
    """`json.loads` within bounds: depth, integer size, finite numbers (NaN and Infinity are not JSON).

    A syntax error stays `json.JSONDecodeError` (a ValueError) for the caller to word.
    """

    def where() -> str | None:
        offset = _depth_excess(text, _JSON_TOKEN)
        return _at(text, offset) if offset is not None else None

    if text.startswith("\ufeff"):  # (json's own words: "Unexpected UTF-8 BOM (decode using utf-8-sig)")
        raise json.JSONDecodeError("the file starts with a UTF-8 byte-order mark (BOM), which JSON does not allow; "
                                   "save it as UTF-8 without one", text, 0)
    try:
        value = json.loads(text, **_json_number_hooks(text))
    except RecursionError:
        raise error(_too_deep_message(source, where())) from None
    except _Refused as refused:
        raise error(f"{source}: {refused.message}") from None
    check_values(value, source=source, error=error, no_nul=no_nul, where=where)
    return value


# --- TOML ------------------------------------------------------------------------------------------


_LONG_DIGITS = re.compile(rf"[0-9][0-9_]{{{MAX_INT_DIGITS},}}")


def load_toml(text: str, *, source: str, error: ErrorFactory) -> dict[str, Any]:
    """`tomllib.loads` within bounds; nesting is checked first because tomllib recurses on it.

    A syntax error stays `tomllib.TOMLDecodeError` for the caller to word.
    """
    excess = _depth_excess(text, _TOML_TOKEN)
    if excess is not None:
        raise error(_too_deep_message(source, _at(text, excess)))
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except RecursionError:
        raise error(_too_deep_message(source, None)) from None
    except ValueError:
        # tomllib converts integers with int(): past CPython's digit limit that is a bare ValueError.
        match = _LONG_DIGITS.search(text)
        place = f"{_at(text, match.start())}: " if match else ""
        raise error(
            f"{source}: {place}an integer with more than {MAX_INT_DIGITS:,} digits; "
            "assay reads at most that many, write it as a string"
        ) from None
    check_values(document, source=source, error=error)
    return document
