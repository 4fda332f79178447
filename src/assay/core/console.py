"""The terminal streams every command and reporter prints through (rich consoles, created once each)."""

from __future__ import annotations

from typing import Any

__all__ = ["stdout_console"]


def stdout_console() -> Any:
    """A console on stdout that never wraps lines (a terminal or not, lines stay whole for grep)."""
    from rich.console import Console

    return Console(soft_wrap=True)
