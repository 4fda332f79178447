"""Comparing what a docs page shows with what a command printed: lines normalised (run ids, tokens,
times replaced by placeholders) and the page's lines found in order among the printed ones."""

from __future__ import annotations

import re
from collections.abc import Sequence

Varying = Sequence[tuple[re.Pattern[str], str]]


def normalized(line: str, varying: Varying) -> str:
    line = line.rstrip()
    for pattern, replacement in varying:
        line = pattern.sub(replacement, line)
    return line


def shown_in_order(expected: list[str], printed: list[str]) -> list[str]:
    """The expected lines missing from `printed` (each must come after the one before)."""
    position, missing = 0, []
    for line in expected:
        try:
            position = printed.index(line, position) + 1
        except ValueError:
            missing.append(line)
    return missing
