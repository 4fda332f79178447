"""The terminal streams every command and reporter prints through (rich consoles, created once each).

Text on them is made harmless first: terminal control characters and lone surrogates from case
labels, ids or adapter messages are shown as escapes, and what the stream cannot encode (a table's
box lines, `✓` or `中文` on a terminal whose locale is not UTF-8) is written as an ASCII stand-in or a
backslash escape instead of raising in the middle of a run.
"""

from __future__ import annotations

import codecs
import re
import sys
import unicodedata
from typing import Any, TextIO

__all__ = [
    "LineWriter", "encodable", "printable", "printable_console", "stdout_console", "stdout_lines", "write_escaped",
]

# C0 controls except tab and newline, DEL, C1 controls (ESC and CSI start terminal sequences; CR and
# BS overwrite what was printed), and lone surrogates, which no strict codec can encode.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every character that could drive a terminal (or not encode) written as an escape.

    `"\\x1b[31mred"` becomes `"\\\\x1b[31mred"`; newlines and tabs stay as they are. Idempotent.
    """
    if _UNPRINTABLE.search(text) is None:
        return text
    return _UNPRINTABLE.sub(_escape, text)


# What assay prints beyond ASCII itself, as an ASCII stream shows it. Box-drawing lines are worked out
# from their names (see `_stand_in`), one character for one, so a table stays aligned.
_STAND_INS = {
    "✓": "+", "✔": "+", "✗": "x", "✘": "x", "·": "-", "×": "x", "→": "->", "←": "<-", "—": "-", "–": "-",
    "…": "...", "█": "#", "▌": "#", "░": ".", "≥": ">=", "≤": "<=", "±": "+/-", "‘": "'", "’": "'", "“": '"', "”": '"',
}


def _stand_in(character: str) -> str | None:
    """The ASCII that shows `character` on a stream that cannot encode it, or None (escape it)."""
    if character in _STAND_INS:
        return _STAND_INS[character]
    if "\u2500" <= character <= "\u257f":  # box drawing
        words = set(unicodedata.name(character, "").split())
        if "HORIZONTAL" in words and not words & {"VERTICAL", "UP", "DOWN"}:
            return "-"  # a line across
        if "VERTICAL" in words and not words & {"HORIZONTAL", "LEFT", "RIGHT"}:
            return "|"  # a line down
        return "+"  # a corner or a junction
    return None


def _ascii_stand_ins(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    shown = []
    for character in error.object[error.start:error.end]:
        stand_in = _stand_in(character)
        shown.append(stand_in if stand_in is not None else printable(character) if _UNPRINTABLE.match(character)
                     else character.encode("ascii", "backslashreplace").decode("ascii"))
    return "".join(shown), error.end


codecs.register_error("assay.stand-ins", _ascii_stand_ins)


def encodable(text: str, encoding: str | None) -> str:
    """`text` as a stream of `encoding` can write it: what it cannot encode as an ASCII stand-in (`┃` `|`,
    `✓` `+`) or a backslash escape (`中` `\\u4e2d`). Measure text after this, as the stream shows it."""
    encoding = encoding or "utf-8"
    if text.isascii():
        return text
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "assay.stand-ins").decode(encoding)
    except LookupError:  # an encoding Python does not know: ASCII is safe
        return text.encode("ascii", "assay.stand-ins").decode("ascii")
    return text


def write_escaped(stream: TextIO, text: str) -> int:
    """Write `text`; characters `stream`'s encoding cannot represent go out as ASCII stand-ins or backslash
    escapes (see `encodable`)."""
    try:
        return stream.write(text)
    except UnicodeEncodeError:
        # A text stream encodes the whole string before it buffers any of it, so nothing of the
        # failed write went out and writing the escaped text instead duplicates nothing.
        return stream.write(encodable(text, getattr(stream, "encoding", None)))


class _CurrentStdout:
    """Whatever `sys.stdout` is at each write (the CLI's guard, a test's capture), written with
    `write_escaped`; everything else (isatty, encoding, fileno) is asked of that stream."""

    def write(self, text: str) -> int:
        return write_escaped(sys.stdout, text)

    def flush(self) -> None:
        sys.stdout.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.stdout, name)


def _console_class() -> type:
    from rich.console import Console
    from rich.segment import Segment

    class PrintableConsole(Console):
        """A rich console that escapes unprintable characters in everything it renders.

        Strings are escaped before rich measures them (so columns stay aligned), and so is what the
        console's encoding cannot represent (see `encodable`); every rendered segment is checked too,
        which covers `Text` objects and tables built elsewhere. Control segments are rich's own cursor
        movements and are left alone.
        """

        def render_str(self, text: str, **options: Any) -> Any:
            text = encodable(printable(text), self.encoding)
            if ":" not in text:  # no `:code:` to replace, so rich's table of emoji codes (~5 ms) stays unimported
                options["emoji"] = False
            return super().render_str(text, **options)

        def render(self, renderable: Any, options: Any = None) -> Any:
            for segment in super().render(renderable, options):
                if segment.control or _UNPRINTABLE.search(segment.text) is None:
                    yield segment
                else:
                    yield Segment(printable(segment.text), segment.style, segment.control)

    return PrintableConsole


_printable_console_class: type | None = None


def printable_console(**options: Any) -> Any:
    """A `rich.console.Console` (same keyword options) whose output is escaped as `printable` says.

    The class is built on first use, so importing this module does not import rich.
    """
    global _printable_console_class
    if _printable_console_class is None:
        _printable_console_class = _console_class()
    return _printable_console_class(**options)


# The width `stdout_console` lays tables out in: wide enough for any table assay prints, so none is squeezed.
UNBOUNDED_WIDTH = 10_000


def stdout_console() -> Any:
    """A console on stdout that never wraps lines (a terminal or not, lines stay whole for grep): its
    tables take their full width whatever `COLUMNS` or the terminal's width says, as `render_table`'s
    do, so a narrow terminal or a CI log never folds a number across lines."""
    return printable_console(soft_wrap=True, file=_CurrentStdout(), width=UNBOUNDED_WIDTH)


class LineWriter:
    """Lines for a person, printed as written: no markup, highlighting, emoji codes, tab expansion or
    wrapping (what a rich console adds to a string), each escaped as `printable` says and flushed at once,
    so a CI log shows it as it happens. On `stream`, else on whatever `sys.stdout` is at each write (the
    CLI's guard, a test's capture). Commands that only print lines need no rich (~20 ms to import)."""

    __slots__ = ("_stream",)

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def print(self, text: str = "") -> None:
        stream = self._stream or sys.stdout
        write_escaped(stream, printable(text) + "\n")
        stream.flush()


def stdout_lines() -> LineWriter:
    """Plain lines on stdout (see `LineWriter`)."""
    return LineWriter()

