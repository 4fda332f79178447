"""Plain-text tables in the same box style as rich's default, fast enough for thousands of rows.

Rich measures and wraps every cell, which costs about a millisecond per row; long listings
(`list-samples` over a 10,000-sample case) are rendered here instead, never wrapped. On a stream that
cannot encode the box lines or a cell (a locale that is not UTF-8), both are rendered as it will show
them (ASCII lines, escapes), so the columns still line up.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from assay.core.console import encodable


def _cells(text: str) -> int:
    """The terminal columns `text` takes (rich's measure, imported only for text beyond ASCII)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def render_table(
    title: str | None, headers: Sequence[str], rows: Sequence[Sequence[str]], *, encoding: str | None = None,
) -> str:
    """The table as lines of text for a stream of `encoding` (default: the current stdout's)."""
    encoding = encoding or getattr(sys.stdout, "encoding", None) or "utf-8"
    if not encoding.lower().replace("-", "").replace("_", "").startswith("utf"):
        title = encodable(title, encoding) if title else title
        headers = [encodable(header, encoding) for header in headers]
        rows = [[encodable(cell, encoding) for cell in row] for row in rows]
    widths = [_cells(header) for header in headers]
    for row in rows:
        for column, cell in enumerate(row):
            length = _cells(cell)
            if length > widths[column]:
                widths[column] = length

    def line(cells: Sequence[str], left: str, middle: str, right: str) -> str:
        padded = []
        for cell, width in zip(cells, widths):
            length = _cells(cell)
            padded.append(f" {cell}{' ' * (width - length)} ")
        return left + middle.join(padded) + right

    def rule(left: str, fill: str, middle: str, right: str) -> str:
        return left + middle.join(fill * (width + 2) for width in widths) + right

    lines: list[str] = []
    total = sum(widths) + 3 * len(widths) + 1
    if title:
        lines.append(title.center(total).rstrip())
    lines.append(rule("┏", "━", "┳", "┓"))
    lines.append(line(headers, "┃", "┃", "┃"))
    lines.append(rule("┡", "━", "╇", "┩"))
    lines.extend(line(row, "│", "│", "│") for row in rows)
    lines.append(rule("└", "─", "┴", "┘"))
    return encodable("\n".join(lines), encoding)
