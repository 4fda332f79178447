"""Run a JavaScript ES module's exports from Python: node runs `node/bridge.mjs` over the NDJSON transport.

Kind-independent: callers name an export and pass JSON arguments; optional helper modules turn marker
strings in the arguments into live JavaScript objects (the doc kind's path resolver).
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
from pathlib import Path
from typing import Any, Mapping, Sequence

from assay.adapters.ndjson import (
    NO_TIMEOUT,
    NdjsonProcess,
    ProcessTimeouts,
    RequestTimedOut,
    RequestTimeout,
    StderrSink,
    start_ndjson_process,
    start_timeout,
)
from assay.errors import AdapterError, AdapterExited, AdapterRuntimeError

__all__ = ["BRIDGE_SCRIPT", "NodeModuleBridge", "NodeHookError", "find_node"]

BRIDGE_SCRIPT = Path(__file__).resolve().parent / "node" / "bridge.mjs"


class NodeHookError(AdapterError):
    """An exported function threw (or rejected); the message is the JavaScript error's message.

    `name` is the error's class (`TypeError`; empty when a non-Error was thrown) and `location` the
    innermost `{file, line, column}` of the stack that lies in the served module, or None.
    """

    def __init__(
        self, message: str, stack: str = "", *, name: str = "", location: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.stack = stack
        self.name = name
        self.location = dict(location) if location else None


def find_node() -> str:
    node = shutil.which("node")
    if node is None:
        raise AdapterError("node was not found on PATH; it is needed to run JavaScript adapter modules (.mjs)")
    return node


class NodeModuleBridge:
    """One node process serving one module; `await NodeModuleBridge.start(path)`, then `call`, then `close`."""

    def __init__(
        self, process: NdjsonProcess, module_path: Path, exports: Sequence[str], node_version: str = ""
    ) -> None:
        self._process = process
        self.module_path = module_path
        self.exports = frozenset(exports)
        self.node_version = node_version

    @classmethod
    async def start(
        cls,
        module_path: Path,
        *,
        helpers: Path | None = None,
        helper_config: Mapping[str, Any] | None = None,
        stderr_sink: StderrSink | None = None,
        timeouts: ProcessTimeouts = ProcessTimeouts(),
        load_timeout: RequestTimeout | None = None,
        call_timeout: RequestTimeout = NO_TIMEOUT,
    ) -> "NodeModuleBridge":
        """Start node and import the module; `load_timeout` defaults to `start_timeout()` (30 s),
        `call_timeout` (none by default) limits each `call`."""
        command = shlex.join([find_node(), str(BRIDGE_SCRIPT)])
        load_limit = load_timeout or start_timeout()
        process = await start_ndjson_process(
            command, stderr_sink=stderr_sink, timeouts=timeouts, call_timeout=call_timeout
        )
        params: dict[str, Any] = {"module": str(module_path)}
        if helpers is not None:
            params["helpers"] = str(helpers)
            params["helperConfig"] = dict(helper_config or {})
        try:
            loaded = await process.request("load", params, timeout=load_limit)
        except RequestTimedOut as timed_out:
            await process.force_stop()
            setting = f" ({timed_out.timeout.setting})" if timed_out.timeout.setting else ""
            raise AdapterError(
                f"failed to load adapter module from {module_path}: it did not finish loading within "
                f"{timed_out.timeout.seconds:g}s{setting}; a top-level await that never settles does this"
            ) from None
        except AdapterRuntimeError as error:
            await process.force_stop()
            reason = str(error).removeprefix("adapter command load failed: ")
            message = f"failed to load adapter module from {module_path}: {reason}"
            if isinstance(error, AdapterExited):  # (its exit code and stderr kept, for a caller that says more)
                raise AdapterExited(message, error.exit_code, error.stderr_tail) from None
            raise AdapterError(message) from None
        except BaseException:  # Ctrl-C while loading: node is in its own session and never saw it
            await asyncio.shield(process.force_stop())
            raise
        exports = loaded.get("exports") if isinstance(loaded, dict) else None
        if not isinstance(exports, list):
            await process.force_stop()
            raise AdapterError(f"failed to load adapter module from {module_path}: the bridge sent no export list")
        return cls(process, module_path, [str(name) for name in exports], str(loaded.get("nodeVersion") or ""))

    @property
    def exit_code(self) -> int | None:
        """node's exit code once it has exited by itself (negative: killed by that signal); else None."""
        return self._process.returncode

    def stderr_tail(self) -> str:
        return self._process.stderr_tail()

    async def call(self, export: str, args: Sequence[Any]) -> Any:
        """Await `module[export](...args)`; a throw becomes `NodeHookError` with the JS name, message and place."""
        reply = await self._process.request("call", {"export": export, "args": list(args)})
        if not isinstance(reply, dict) or "ok" not in reply:
            raise AdapterRuntimeError(f"node bridge sent a malformed reply for {export}")
        if not reply["ok"]:
            location = reply.get("location")
            raise NodeHookError(
                str(reply.get("error", "")),
                str(reply.get("stack", "")),
                name=str(reply.get("name") or ""),
                location=location if isinstance(location, dict) else None,
            )
        return reply.get("value")

    async def close(self) -> None:
        """Close politely, unless the caller is being cancelled (Ctrl-C): hooks cannot be cancelled
        in the bridge, so a hook still running would hold a polite close for its whole window and
        then fail it, turning the interrupt into an adapter error."""
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            await asyncio.shield(self._process.force_stop())
            return
        await self._process.close("close", {})

    async def force_stop(self) -> None:
        await self._process.force_stop()
