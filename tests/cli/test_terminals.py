"""What the commands print in the terminals and logs users have: a narrow terminal, a CI log, a locale
that is not UTF-8. Tables keep whole rows, and nothing is printed as a pile of escapes that could be shown."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

from cli_examples import AGENT_RUN, VIDEO_RUN, assay, environment

from assay.core.console import encodable, printable_console, stdout_console
from assay.core.report.table import render_table

# Python in the C locale switches to UTF-8 by itself; these keep it at ASCII, as on a system without C.UTF-8.
ASCII_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}


def _run(root: Path, *arguments: str, **settings: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(assay(*arguments), cwd=root, env={**environment(root), **settings}, capture_output=True,
                          timeout=120)


def test_a_video_runs_table_keeps_whole_rows_in_a_narrow_terminal(workspace):
    """`COLUMNS=40 assay video run …` folded the By target table into 4-column cells: `50` `.0` `%` on three
    lines, `Pass rate` as `Pa` `ss` `ra` `te`, so neither a person nor grep could read a figure."""
    done = _run(workspace, *VIDEO_RUN, COLUMNS="40")
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert any("Lamp colour (lamp_color)" in row and "100.0%" in row for row in rows), out
    assert any("brightness" in row and "50.0%" in row for row in rows), out
    assert any("Pass rate" in line and "Avg latency" in line for line in out.splitlines()), out


def test_tables_in_a_locale_that_is_not_utf8_are_drawn_in_ascii(workspace):
    """In an ASCII locale every box line came out as `\\u2503`, `\\u2501`… and an agent run's `✓` as `\\u2713`."""
    for arguments in (("runs", "list"), ("runs", "show", "latest"), VIDEO_RUN, AGENT_RUN):
        done = _run(workspace, *arguments, **ASCII_LOCALE)
        out = done.stdout.decode("ascii")
        assert done.returncode in (0, 1), out + done.stderr.decode()
        assert "\\u25" not in out and "\\u27" not in out and "\\xb7" not in out, out
        assert "+-" in out and "| " in out, out
    assert "+ passed" in out or "x failed" in out, out  # the agent run's marks


def test_a_table_with_text_the_stream_cannot_encode_stays_aligned():
    rows = [["café 中文 🚦", "100.0%"], ["plain", "50.0%"]]
    lines = render_table("Runs", ["name", "pass rate"], rows, encoding="ascii").splitlines()
    assert lines[1].startswith("+-") and lines[2].startswith("| name")
    assert "caf\\xe9 \\u4e2d\\u6587 \\U0001f6a6" in lines[4]
    assert len({len(line) for line in lines[1:]}) == 1, lines
    latin = render_table(None, ["name"], [["café 中文"]], encoding="latin-1").splitlines()
    assert "café \\u4e2d\\u6587" in latin[3] and len({len(line) for line in latin}) == 1
    utf8 = render_table(None, ["name"], [["café 中文"]], encoding="utf-8")
    assert "┏" in utf8 and "café 中文" in utf8


def test_a_rich_table_on_an_ascii_stream_measures_its_cells_as_written():
    from rich.table import Table

    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict", write_through=True)
    table = Table("target", "pass rate")
    table.add_row("Couleur é 中文 🚦", "100.0%")
    table.add_row("brightness", "50.0%")
    printable_console(file=stream, width=200).print(table)
    lines = stream.buffer.getvalue().decode("ascii").splitlines()
    assert any("Couleur \\xe9 \\u4e2d\\u6587 \\U0001f6a6 | 100.0%" in line for line in lines), lines
    assert len({len(line) for line in lines}) == 1, lines


def test_symbols_have_ascii_stand_ins_and_the_rest_is_escaped():
    assert encodable("✓ passed · 3 × 2 → done ┃━┳┡└─", "ascii") == "+ passed - 3 x 2 -> done |-+++-"
    assert encodable("中文 é", "ascii") == "\\u4e2d\\u6587 \\xe9"
    assert encodable("中文 é", "utf-8") == "中文 é"


def test_the_stdout_console_lays_tables_out_at_their_full_width(monkeypatch, capsys):
    from rich.table import Table

    monkeypatch.setenv("COLUMNS", "20")
    table = Table("Target", "Pass rate", "Avg latency")
    table.add_row("Lamp colour (lamp_color)", "100.0%", "0.25ms")
    stdout_console().print(table)
    out = capsys.readouterr().out
    assert any("Lamp colour (lamp_color)" in line and "100.0%" in line and "0.25ms" in line
               for line in out.splitlines()), out

