"""What the shared console prints from user-controlled text: control characters escaped, and text the
stream cannot encode written as escapes instead of raising."""

from __future__ import annotations

import io

from rich.table import Table
from rich.text import Text

from assay.core.stdout_guard import StdoutGuard
from assay.core.console import printable, stdout_console


def test_printable_escapes_terminal_controls_and_lone_surrogates_but_keeps_newlines_and_tabs() -> None:
    assert printable("a\x1b[31mred\x1b[0m\tb\nc") == "a\\x1b[31mred\\x1b[0m\tb\nc"
    assert printable("\x9b2J \x07 \r \x7f \ud800") == "\\x9b2J \\x07 \\x0d \\x7f \\ud800"
    assert printable("café ☃") == "café ☃"
    assert printable(printable("\x1b")) == "\\x1b"


def test_the_console_escapes_strings_text_objects_and_table_cells(capsys) -> None:
    console = stdout_console()
    console.print("label \x1b[2J", markup=False, highlight=False)
    console.print(Text("text \x1b]0;title\x07"))
    table = Table("target")
    table.add_row("cell \x1b[31m")
    console.print(table)
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "label \\x1b[2J" in out and "text \\x1b]0;title" in out and "cell \\x1b[31m" in out


class _StrictAscii(io.TextIOWrapper):
    def __init__(self) -> None:
        self.raw_bytes = io.BytesIO()
        super().__init__(self.raw_bytes, encoding="ascii", errors="strict")


def test_the_stdout_guard_writes_what_the_stream_cannot_encode_as_escapes() -> None:
    stream = _StrictAscii()
    guard = StdoutGuard(stream)
    guard.write("café \ud800 ok\n")
    guard.flush()
    assert stream.raw_bytes.getvalue() == b"caf\\xe9 \\ud800 ok\n"


def test_emoji_codes_are_still_replaced_and_text_without_a_colon_is_unchanged() -> None:
    from assay.core.console import printable_console

    def shown(text: str, **options: object) -> str:
        stream = io.StringIO()
        printable_console(file=stream, width=80).print(text, **options)
        return stream.getvalue()

    assert shown("a :smile: b") == "a \U0001f604 b\n"
    assert shown("a :smile: b", emoji=False) == "a :smile: b\n"
    assert shown("[bold]x[/bold] y, 12:30") == "x y, 12:30\n"
    assert shown("plain text") == "plain text\n"


def test_lines_for_a_person_are_printed_as_written_and_escaped(capsys) -> None:
    """`say` (and an agent run's console) printed through a rich console: `:x:` in a unit id became an emoji,
    a tab became spaces. A `LineWriter` line is the text itself, escaped as `printable` says, flushed at once."""
    from assay.cli.common import say
    from assay.core.console import LineWriter

    say("tests::test_a[:x:]\tfailed", "red \x1b[31m:warning:")
    assert capsys.readouterr().out == "tests::test_a[:x:]\tfailed\nred \\x1b[31m:warning:\n"
    stream = io.StringIO()
    LineWriter(stream).print("one")
    assert stream.getvalue() == "one\n"
