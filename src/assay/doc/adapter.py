"""Load a suite's adapter module and call its hooks: Python modules in-process, `.mjs` through node.

Either way a hook is found by export name (snake_case first, then eval-kit's camelCase) and awaited.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import itertools
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from assay.adapters.loading import exec_module_file
from assay.doc.config import DocSuite
from assay.doc.hooks import HOOKS, RESOLVER_MARKER, Hook
from assay.errors import AdapterError, AdapterExited, AssayError

__all__ = [
    "DocAdapter",
    "JAVASCRIPT_SUFFIXES",
    "NodeDocAdapter",
    "PythonDocAdapter",
    "describe_hook_failure",
    "hook_timeout",
    "open_adapter",
]

JAVASCRIPT_SUFFIXES = (".mjs", ".js")
HOOK_TIMEOUT_VARIABLE = "ASSAY_DOC_HOOK_TIMEOUT"
# Generous: a hook may read large files or call a service of its own, and a limit that cut a slow
# but working hook short would be worse than none. What it must stop is a hook that never answers
# (a promise that never settles), which otherwise holds the command, and a CI job, until killed.
DEFAULT_HOOK_TIMEOUT_S = 600.0
RESOLVER_HELPERS = Path(__file__).resolve().parent / "node" / "resolver.mjs"
_module_numbers = itertools.count(1)


class DocAdapter(Protocol):
    path: Path

    @property
    def uses_node(self) -> bool: ...

    @property
    def node_version(self) -> str | None: ...

    def export_for(self, hook: Hook | str) -> str | None: ...

    async def call(self, export: str, *args: Any) -> Any: ...

    async def aclose(self) -> None: ...


def _hook(hook: Hook | str) -> Hook:
    return HOOKS[hook] if isinstance(hook, str) else hook


def describe_hook_failure(type_name: str, message: str, file: str | None = None, line: int | None = None) -> str:
    """`KeyError: 'required_text' (adapter.py:12)`: what was thrown and where in the adapter.

    The location is the adapter file's own line, not the library or assay frame that raised, because
    that line is the one the author can change.
    """
    message = _one_line(message)  # `Execution failed: …` is one line, whatever the adapter's message spans
    text = f"{type_name}: {message}" if type_name and message else type_name or message or "unknown error"
    if file and line:
        text += f" ({os.path.basename(file)}:{line})"
    return text


# A hook's error message past this many characters (a schema error that prints its whole schema) is cut
# there; `assay --debug` shows it whole.
_MESSAGE_LIMIT = 500


def _one_line(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    """`text` on one line: an error's lines (an assertion's diff, a schema error's parts) joined by spaces."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1] + "… (`assay --debug` shows it whole)"


def _node_crash(stderr: str, module: Path) -> str | None:
    """What ended node, when it was an exception nothing caught: node prints the place, the source line,
    a caret, the error and its stack, then `Node.js v20…` (a rejection nothing awaited, or a throw in a
    timer or an event, after or beside the hook's own return): `nothing caught Error: later (adapter.mjs:3)`,
    or None."""
    from urllib.parse import unquote, urlparse

    lines = stderr.strip().splitlines()
    if not lines or not re.match(r"Node\.js v\d", lines[-1].strip()):
        return None
    caret = next((number for number, text in enumerate(lines) if text.strip() == "^"), None)
    if caret is None:
        return None
    thrown: list[str] = []
    for text in lines[caret + 1:]:
        if thrown and (not text.strip() or re.match(r"\s+at ", text) or text.startswith("(Use `node")):
            break
        if text.strip():
            thrown.append(text.strip())
    what = " ".join(thrown).removesuffix(" {").strip()
    rejected = re.search(r"The promise rejected with the reason \"(.*)\"\.", what)
    if rejected:  # a promise rejected with a value that is no Error: node says only that and the value
        return f"a promise nothing awaited rejected with {rejected.group(1)!r}"
    where = None
    # the place is two lines above the caret (above the source line); what the adapter wrote before may precede it
    header = re.match(r"(file://\S+|/\S+):(\d+)$", lines[caret - 2].strip()) if caret >= 2 else None
    if header:
        place = header.group(1)
        place = unquote(urlparse(place).path) if place.startswith("file://") else place
        if os.path.realpath(place) == os.path.realpath(module):
            where = int(header.group(2))
    return "nothing caught " + describe_hook_failure("", what or "an error", str(module) if where else None, where)


def _node_ended(code: int | None, stderr: str, module: Path) -> str:
    """Why node ended by itself, for a message: an exception nothing caught (named, with its line), or
    its exit code with what it wrote last, on one line."""
    crash = _node_crash(stderr, module) if code == 1 else None
    if crash:
        return f"{crash}, so node exited with code 1"
    tail = "" if stderr.strip() in ("", "(empty)") else f"; stderr tail: {_one_line(stderr.strip()[-300:], 300)}"
    return f"node exited with code {code}{tail}"


def _innermost_line_in(trace: TracebackType | None, path: Path) -> int | None:
    target = os.path.realpath(path)
    found = None
    for frame in traceback.extract_tb(trace):  # outermost first, so the last match is the innermost
        if frame.filename == str(path) or os.path.realpath(frame.filename) == target:
            found = frame.lineno
    return found


def _python_failure(error: BaseException, path: Path) -> str:
    """What a Python adapter raised, with its own line: `KeyError: 'x' (adapter.py:12)`; a `sys.exit()`
    says so, since its bare code (`3`, or nothing) means nothing on its own."""
    line = _innermost_line_in(error.__traceback__, path)
    if isinstance(error, SystemExit):
        code = "" if error.code is None else repr(error.code)
        message = f"it called sys.exit({code}); an adapter must return or raise, not exit the process"
        return describe_hook_failure("SystemExit", message, str(path), line)
    return describe_hook_failure(type(error).__name__, str(error), str(path), line)


def hook_timeout(option_s: float | None = None) -> Any:
    """How long one call of a JavaScript hook may take: `--hook-timeout` when given, else
    ASSAY_DOC_HOOK_TIMEOUT, else 10 minutes; 0 means no limit. (A Python hook runs in assay's own
    process, where nothing can stop it but Ctrl-C, so it has none.)"""
    import math

    from assay.adapters.ndjson import RequestTimeout

    _check_variable_names(os.environ)
    if option_s is not None:
        return RequestTimeout(option_s or None, "--hook-timeout")
    text = os.environ.get(HOOK_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return RequestTimeout(DEFAULT_HOOK_TIMEOUT_S, "the default hook limit")
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not (math.isfinite(seconds) and seconds >= 0):
        raise AdapterError(f"{HOOK_TIMEOUT_VARIABLE} must be a number of seconds (0 for no limit), got {text!r}")
    return RequestTimeout(seconds or None, HOOK_TIMEOUT_VARIABLE)


def _check_variable_names(env: Any) -> None:
    """A misspelt ASSAY_DOC_HOOK_TIMEOUT is refused, naming the one meant: it was ignored, so hooks ran with
    the 600 s default it was set to change. So is a misspelt ASSAY_ADAPTER_START_TIMEOUT, which the doc
    guide names too (said here before any adapter starts, whichever language it is written in)."""
    from assay.adapters.ndjson import START_TIMEOUT_VARIABLE
    from assay.core.format import misspelt_variable

    problem = (misspelt_variable(env, "ASSAY_DOC_", [HOOK_TIMEOUT_VARIABLE], "assay doc")
               or misspelt_variable(env, "ASSAY_ADAPTER_", [START_TIMEOUT_VARIABLE], "assay"))
    if problem:
        raise AdapterError(problem)


@contextlib.contextmanager
def _adapter_code(*, interruptible: bool = True) -> Iterator[None]:
    """Around the adapter's own Python code: what it prints goes to stderr (as a `.mjs` adapter's
    does), so it cannot corrupt `--json` or the lines a script reads. While its synchronous code runs,
    Ctrl-C (and SIGTERM, which assay turns into one) raises in it: asyncio's handler would only cancel
    the command's task, which a blocking hook never gives a chance to act, so the run went on to the end."""
    with contextlib.redirect_stdout(sys.stderr):
        if not interruptible or threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT)
        if previous in (signal.SIG_IGN, signal.default_int_handler) or previous is None:
            yield
            return
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


class PythonDocAdapter:
    """A Python module; hooks get the typed input objects from `assay.doc.hooks`."""

    uses_node = False
    node_version = None

    def __init__(self, path: Path, module: Any) -> None:
        self.path = path
        self.module = module

    @classmethod
    def load(cls, path: Path) -> "PythonDocAdapter":
        digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
        name = f"assay_doc_adapter_{digest}_{next(_module_numbers)}"
        added = str(path.parent) not in sys.path
        if added:
            sys.path.insert(0, str(path.parent))  # lets the adapter import modules beside it
        try:
            with _adapter_code():
                module = exec_module_file(path, name)
        except SyntaxError as error:  # its text already says where: `invalid syntax (adapter.py, line 1)`
            raise AdapterError(f"failed to load adapter module from {path}: {error}") from error
        except (Exception, SystemExit) as error:
            raise AdapterError(f"failed to load adapter module from {path}: {_python_failure(error, path)}") from error
        finally:
            if added:
                sys.path.remove(str(path.parent))
        if module is None:
            raise AdapterError(f"failed to load adapter module from {path}: not a Python module")
        return cls(path, module)

    def export_for(self, hook: Hook | str) -> str | None:
        for name in _hook(hook).exports:
            if callable(getattr(self.module, name, None)):
                return name
        return None

    async def call(self, export: str, *args: Any) -> Any:
        try:
            with _adapter_code():
                result = getattr(self.module, export)(*args)
            if inspect.isawaitable(result):
                with _adapter_code(interruptible=False):  # awaiting: asyncio's own Ctrl-C handling applies
                    result = await result
        except AssayError:
            raise
        except (Exception, SystemExit) as error:  # the adapter's own failure, reported with the hook's name
            # `sys.exit()` in a hook would otherwise end assay itself with the adapter's code (0 with no
            # bundle and no word, 1 as if the verdict were red): it is a failure of the hook like any other.
            raise AdapterError(f"{export} failed: {_python_failure(error, self.path)}") from error
        return result

    async def aclose(self) -> None:
        return None


class NodeDocAdapter:
    """An eval-kit `adapter.mjs`, unchanged: hooks get eval-kit's camelCase objects and a JS resolver."""

    uses_node = True

    def __init__(self, path: Path, bridge: Any) -> None:
        self.path = path
        self.bridge = bridge
        self._node_ended = False  # node went while a hook ran: said by that hook's error, not again on close

    @property
    def node_version(self) -> str | None:
        return self.bridge.node_version or None

    @classmethod
    async def start(cls, path: Path, suite: DocSuite) -> "NodeDocAdapter":
        from assay.adapters.node_bridge import NodeModuleBridge

        resolver = suite.resolver
        roots = {
            "repoRoot": str(resolver.repo_root),
            "configDir": str(resolver.config_dir),
            "suiteRoot": str(resolver.suite_root),
            "resultsRoot": str(resolver.results_root),
        }
        try:
            bridge = await NodeModuleBridge.start(
                path, helpers=RESOLVER_HELPERS, helper_config={"marker": RESOLVER_MARKER, "roots": roots},
                call_timeout=hook_timeout(suite.hook_timeout_s),
            )
        except AdapterExited as error:  # said as what the module did, not as the bridge's command line exiting
            code, tail = error.exit_code, error.stderr_tail
            if code is None:  # (no exit status to speak of)
                raise AdapterError(str(error)) from None
            crashed = code == 1 and _node_crash(tail, path) is not None
            advice = "" if crashed else "; an adapter must not call process.exit()"
            raise AdapterError(f"failed to load adapter module from {path}: node stopped while it loaded: "
                               f"{_node_ended(code, tail, path)}{advice}") from None
        return cls(path, bridge)

    def export_for(self, hook: Hook | str) -> str | None:
        for name in _hook(hook).exports:
            if name in self.bridge.exports:
                return name
        return None

    async def call(self, export: str, *args: Any) -> Any:
        from assay.adapters.ndjson import RequestTimedOut
        from assay.adapters.node_bridge import NodeHookError
        from assay.errors import AdapterRuntimeError

        payload = [arg.to_js() if hasattr(arg, "to_js") else arg for arg in args]
        try:
            return await self.bridge.call(export, payload)
        except RequestTimedOut as timed_out:
            # node cannot cancel a running function: the process goes, and the command fails now.
            await self.bridge.force_stop()
            raise AdapterError(
                f"{export} did not answer within {timed_out.timeout.seconds:g}s ({timed_out.timeout.setting}); "
                f"set --hook-timeout or {HOOK_TIMEOUT_VARIABLE} to the seconds it needs (0: no limit)"
            ) from None
        except NodeHookError as error:
            location = error.location or {}
            described = describe_hook_failure(error.name, str(error), location.get("file"), location.get("line"))
            raise AdapterError(f"{export} failed: {described}") from error
        except AdapterRuntimeError as error:  # node itself went while the hook ran: `process.exit()`, a crash
            self._node_ended = True
            code = self.bridge.exit_code
            if code is None or code < 0:  # a crash or a kill: what the process layer saw
                raise AdapterError(f"{export} ended node while it ran ({self.bridge.module_path}): {error}") from None
            tail = self.bridge.stderr_tail()
            if code == 1 and _node_crash(tail, self.path):  # not process.exit(): an exception nothing caught
                raise AdapterError(
                    f"node stopped while {export} ran ({self.bridge.module_path}): {_node_ended(code, tail, self.path)}"
                    "; a hook must await the promises it starts and catch what its callbacks (timers, events) throw"
                ) from None
            raise AdapterError(
                f"{export} ended node while it ran ({self.bridge.module_path}): node exited with code {code} before "
                "the hook returned; a hook must return or throw, not call process.exit()"
                + (f"; stderr tail: {_one_line(tail[-300:], 300)}" if tail and tail != "(empty)" else "")
            ) from None

    async def aclose(self) -> None:
        if self._node_ended:  # closing would raise the exit again, in place of the hook's error
            await self.bridge.force_stop()
            return
        from assay.errors import AdapterRuntimeError

        try:
            await self.bridge.close()
        except AdapterRuntimeError:  # node went by itself between hooks: a rejection nothing awaited, a timer's throw
            code = self.bridge.exit_code
            if code is None or code < 0:
                raise
            raise AdapterError(
                f"node stopped while no hook was running ({self.bridge.module_path}): "
                f"{_node_ended(code, self.bridge.stderr_tail(), self.path)}; an adapter must await the promises it "
                "starts and catch what its callbacks (timers, events) throw, and not call process.exit()"
            ) from None


def _config_key_of(suite: DocSuite, path: Path) -> str:
    """The config key that names the module at `path` (`adapter`, `hooks.module`, `graders.<name>`, ...)."""
    raw = suite.raw
    named = {"adapter": raw.get("adapter"), "hooks.module": (raw.get("hooks") or {}).get("module")}
    for table in ("graders", "reporters"):
        named.update({f"{table}.{name}": value for name, value in (raw.get(table) or {}).items()})
    for key, value in named.items():
        if isinstance(value, str) and value:
            if (Path(value) if os.path.isabs(value) else suite.suite_root / value) == path:
                return key
    return "adapter"


async def open_adapter(path: Path, suite: DocSuite) -> DocAdapter:
    """Load the module at `path` (already contained by the caller); the file must exist."""
    if not path.is_file():
        from assay.doc.paths import relative_posix

        key = _config_key_of(suite, path)
        raise AdapterError(
            f"failed to load adapter module from {path}: file not found (fix {key} in {suite.relative_config_path()};"
            f" it is relative to the suite root {relative_posix(suite.repo_root, suite.suite_root) or '.'})"
        )
    if path.suffix == ".py":
        hook_timeout(suite.hook_timeout_s)  # no limit applies in-process, but a typo in it is still said
        adapter: DocAdapter = PythonDocAdapter.load(path)
        module = adapter.module  # type: ignore[attr-defined]
        exported = [name for name, value in vars(module).items() if not name.startswith("_") and callable(value)]
    elif path.suffix in JAVASCRIPT_SUFFIXES:
        adapter = await NodeDocAdapter.start(path, suite)
        exported = sorted(adapter.bridge.exports)  # type: ignore[attr-defined]
    else:
        raise AdapterError(f"failed to load adapter module from {path}: expected a .py, .mjs or .js file")
    try:
        _check_export_names(adapter, exported, suite)
    except BaseException:
        await adapter.aclose()
        raise
    return adapter


def _likeness(name: str, target: str) -> float:
    """How alike two export names are, ignoring case and `_` (`gradCandidate`, `validate_fixture`,
    `canonicaliseExpectedItemMetadata`): 1.0 only for the same name written otherwise."""
    import difflib

    return difflib.SequenceMatcher(None, name.replace("_", "").lower(), target.replace("_", "").lower()).ratio()


# A hook name one or two letters off (the names are long: 14 to 32 letters) is at least this alike.
_TYPO_LIKENESS = 0.9


def _check_export_names(adapter: DocAdapter, exported: list[str], suite: DocSuite) -> None:
    """An export one typo away from a hook the adapter lacks is refused: hooks are found by exact name,
    so `validateFixture` was silently never run (doctor passed), `canonicaliseExpectedItemMetadata`
    left the judge's kinds and severities in place, and `gradCandidate` failed only at run-case."""
    from assay.doc.paths import relative_posix

    import difflib

    names = set(exported)
    hook_names = {export for hook in HOOKS.values() for export in hook.exports}
    for hook in HOOKS.values():
        if adapter.export_for(hook) is not None:
            continue
        for name in exported:
            if name in hook_names:  # another hook, spelt right (resolve_pairwise_vars is no resolve_pointwise_vars)
                continue
            near = [export for export in hook.exports
                    if export != "default" and export != name and _likeness(name, export) >= _TYPO_LIKENESS]
            # the closest as written: in the export's own style (gradCandidate -> gradeCandidate)
            meant = max(near, key=lambda export: difflib.SequenceMatcher(None, name, export).ratio()) if near else None
            if meant is None or meant in names:
                continue
            where = relative_posix(suite.repo_root, adapter.path) or str(adapter.path)
            others = " or ".join(export for export in hook.exports if export != "default")
            raise AdapterError(
                f"adapter {where} exports {name}, which is no hook (did you mean {meant}?); hooks are found by exact "
                f"name ({others}), so rename it"
            )
