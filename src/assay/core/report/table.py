"""Plain-text tables in the same box style as rich's default, fast enough for thousands of rows.

Rich measures and wraps every cell, which costs about a millisecond per row; long listings
(`list-samples` over a 10,000-sample case) are rendered here instead, never wrapped.
"""

from __future__ import annotations

from collections.abc import Sequence


def _cells(text: str) -> int:
    """The terminal columns `text` takes (rich's measure, imported only for text beyond ASCII)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def render_table(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
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
    return "\n".join(lines)
