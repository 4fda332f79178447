"""Open the adapter a command needs for exactly as long as the command runs.

Chooses the module from the config (`adapter`, else `hooks.module` for model hooks) and closes it after.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import AsyncIterator

from assay.doc.adapter import DocAdapter, open_adapter
from assay.doc.config import DocSuite
from assay.errors import AdapterError

__all__ = ["adapter_module_path", "adapter_session", "missing_hook", "require_hook"]


def adapter_module_path(suite: DocSuite, *, allow_hooks_module: bool = True) -> Path | None:
    """The configured adapter; `hooks.module` is the legacy fallback (not for run-case, as in eval-kit)."""
    if suite.raw.get("adapter"):
        return suite.module_path(suite.raw["adapter"], "adapter")
    hooks = suite.raw.get("hooks")
    if allow_hooks_module and isinstance(hooks, dict) and hooks.get("module"):
        return suite.module_path(hooks["module"], "hooks.module")
    return None


@contextlib.asynccontextmanager
async def adapter_session(suite: DocSuite, path: Path) -> AsyncIterator[DocAdapter]:
    adapter = await open_adapter(path, suite)
    try:
        yield adapter
    finally:
        await adapter.aclose()


# eval-kit's words for a hook the adapter lacks (tested substrings of its own); ours follow them.
_NOT_EXPORTED = {
    "grade": "grader module does not export a grading function",
    "report": "reporter module does not export a report rendering function",
}


def require_hook(adapter: DocAdapter, hook: str, command: str) -> str:
    from assay.doc.hooks import HOOKS

    export = adapter.export_for(hook)
    if export is None:
        exports = HOOKS[hook].exports
        said = _NOT_EXPORTED.get(hook) or f"adapter module does not export {exports[1]} function"
        raise AdapterError(f"{said}: {command} requires the adapter to export {' or '.join(exports[:2])}")
    return export


async def missing_hook(suite: DocSuite, hook: str, command: str) -> str | None:
    """What `require_hook` would refuse for `command`, said before the command runs (so a user who
    left out flags hears about the adapter too); None when the hook is there or the adapter cannot
    even load (the command itself reports that)."""
    from assay.errors import AssayError

    path = adapter_module_path(suite)
    if path is None:
        return None
    try:
        async with adapter_session(suite, path) as adapter:
            require_hook(adapter, hook, command)
    except AdapterError as error:
        if "requires the adapter to export" in str(error):
            return str(error)
        return None
    except AssayError:
        return None
    return None
