"""Method gates: which run-producing commands a suite config allows, checked before anything else runs.

Deterministic and report runs are on unless disabled; model runs must be switched on explicitly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.doc.config import DocSuite
from assay.errors import UsageError

__all__ = ["METHOD_KEYS", "MethodDisabledError", "check_config_method_gate", "check_method_gate"]

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
    check_config_method_gate(suite.raw, suite.config_path, command)


def check_config_method_gate(raw: Mapping[str, Any], config_path: Path, command: str) -> None:
    """The gate on a config as read (`raw`, from `config_path`): it needs nothing resolved, so it also runs
    for a config outside any repository, before that is refused."""
    key = METHOD_KEYS[command]
    methods = raw.get("methods")
    block = methods.get(key) if isinstance(methods, Mapping) else None
    block = block if isinstance(block, Mapping) else {}
    if block.get("enabled") is False:  # switched off: eval-kit says so for every method, model ones too
        beside = _enabled_beside(config_path, key)
        raise MethodDisabledError(f"{command} is disabled by methods.{key}.enabled=false{beside}")
    if command not in _ON_UNLESS_DISABLED and block.get("enabled") is not True:
        raise MethodDisabledError(f"{command} requires methods.{key}.enabled=true{_enabled_beside(config_path, key)}")


def _enabled_beside(config_path: Path, key: str) -> str:
    """When the model-judge config `assay doc init` writes beside this one enables the method, the `--config` to
    pass: a newcomer who leaves it out ran with the main config, which keeps model methods off; "" otherwise."""
    import json
    import os

    from assay.core.bounded_input import MAX_JSON_BYTES, read_bounded
    from assay.core.fsutil import shown_path
    from assay.doc.bootstrap import MODEL_JUDGE_CONFIG_PATH
    from assay.errors import AssayError

    beside = config_path.parent / Path(MODEL_JUDGE_CONFIG_PATH).name
    try:
        raw = read_bounded(beside, source=str(beside), error=UsageError, max_bytes=MAX_JSON_BYTES)
        if beside == config_path or json.loads(raw)["methods"][key]["enabled"] is not True:
            return ""
    except (OSError, ValueError, LookupError, TypeError, AssayError):
        return ""
    shown = shown_path(beside)
    return (f" (it is off in {os.path.basename(config_path)}); {shown} enables it: "
            f"add --config {shown}")
