"""Method gates: which run-producing commands a suite config allows, checked before anything else runs.

Deterministic and report runs are on unless disabled; model runs must be switched on explicitly.
"""

from __future__ import annotations

from assay.doc.config import DocSuite
from assay.errors import UsageError

__all__ = ["METHOD_KEYS", "MethodDisabledError", "check_method_gate"]

METHOD_KEYS = {
    "run-case": "deterministic",
    "report": "report",
    "generate": "generate",
    "judge-coverage": "judge_coverage",
    "judge-pairwise": "judge_pairwise",
}
_ON_UNLESS_DISABLED = {"run-case", "report"}


class MethodDisabledError(UsageError):
    """The config does not enable the method this command runs."""


def check_method_gate(suite: DocSuite, command: str) -> None:
    key = METHOD_KEYS[command]
    block = suite.method(key) or {}
    if command in _ON_UNLESS_DISABLED:
        if block.get("enabled") is False:
            raise MethodDisabledError(f"{command} is disabled by methods.{key}.enabled=false")
    elif block.get("enabled") is not True:
        raise MethodDisabledError(f"{command} requires methods.{key}.enabled=true")
