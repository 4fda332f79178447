"""The judge's error type: a model call or a model answer the caller cannot use.

Raised for transport failures (at once, or once resends run out), empty output, unparsable JSON and schema misses,
and for a call cache that cannot be read or written.
"""

from __future__ import annotations

from assay.errors import AssayError


class JudgeError(AssayError):
    """A model endpoint failed, or its answer was not the JSON the caller asked for."""


class JudgeAnswerError(JudgeError):
    """The model answered, but not with what the caller can use; `completion` is the answer (never cached)."""

    def __init__(self, message: str, completion: object) -> None:
        super().__init__(message)
        self.completion = completion


class JudgeCacheError(JudgeError):
    """The call cache's folder cannot be read or written (a file where a folder belongs, no permission)."""
