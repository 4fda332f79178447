"""Exceptions that carry control flow from eval code to the runner: skip, stop, and authoring mistakes.

None of them is an assay CLI error: the runner turns each into the attempt's verdict.
"""

from __future__ import annotations


class AuthoringError(Exception):
    """The eval used the API wrongly (e.g. `respond` with nothing pending); the attempt is errored."""


class SkipEval(BaseException):
    """Raised by `t.skip(reason)`; a BaseException so a broad `except Exception` in eval code cannot eat it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StopEval(BaseException):
    """Raised by `await handle.or_stop()` when its assertion did not hold: the test body ends there."""


__all__ = ["AuthoringError", "SkipEval", "StopEval"]
