"""Turn a Python adapter target into a `VideoEvaluator` (GlassKit's Python adapter rules, §8).

The target may be a frame function `(image, target_id)` / `(sample, target)`, or a factory (sync or
async, with or without the config argument) returning an object with `evaluate` and/or
`evaluate_many` (which wins) and an optional `close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import shlex
import signal
import sys
import threading
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from assay.adapters.loading import AdapterTarget, load_adapter_callable, parse_adapter_target
from assay.core.asyncutil import call_user_code, is_async_callable
from assay.errors import AdapterError
from assay.video.adapters import AdapterConfig, FrameSample, TargetContext

_WAIT_NOTICE_S = 1.0  # how long after a Ctrl-C a sync call still under way is said to be waited for
_FRAME_FUNCTION_PARAMETERS = (("image", "target_id"), ("sample", "target"))
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _frame_function_style(function: Any) -> tuple[str, str] | None:
    """The parameter pair when `function` is a frame function, else None."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    names = tuple(p.name for p in parameters if p.kind in _POSITIONAL)[:2]
    return names if names in _FRAME_FUNCTION_PARAMETERS else None  # type: ignore[return-value]


def _factory_arguments(factory: Any, config: AdapterConfig) -> tuple[tuple[Any, ...], dict[str, Any]]:
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return (config,), {}
    required = [
        p
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if not required:
        return (), {}
    # GlassKit 0.1.12 always passes the config positionally, which breaks `def f(*, config)`;
    # a single required keyword-only parameter is clearly meant to receive it.
    if len(required) == 1 and required[0].kind is inspect.Parameter.KEYWORD_ONLY:
        return (), {required[0].name: config}
    return (config,), {}


class AdapterExited(Exception):
    """The adapter's own code called `sys.exit()`: that call failed, assay itself goes on."""


async def _call(function: Callable[..., Any], *args: Any, executor: Executor | None) -> Any:
    try:
        return await call_user_code(function, *args, executor=executor)
    except SystemExit as error:  # else it would end assay with its code, no message, the checkpoint locked
        raise AdapterExited(_exit_message(error)) from None


def _exit_message(error: SystemExit) -> str:
    return f"the adapter called sys.exit({error.code!r}); raise an exception instead to report a failure"


class PythonEvaluator:
    """Drives an in-process adapter object or frame function."""

    def __init__(
        self,
        evaluate: Callable[..., Any] | None,
        evaluate_many: Callable[..., Any] | None,
        close: Callable[..., Any] | None,
        executor: Executor | None,
    ) -> None:
        self._evaluate = evaluate
        self._evaluate_many = evaluate_many
        self._close = close
        self._executor = executor
        self._running = 0  # sync calls under way on a thread: a Ctrl-C cannot stop them, the run waits for them
        self._lock = threading.Lock()
        self._told = False

    @property
    def batch(self) -> bool:
        return self._evaluate_many is not None

    async def evaluate(self, sample: FrameSample, target: TargetContext) -> Any:
        assert self._evaluate is not None
        return await self._call(self._evaluate, sample, target)

    async def evaluate_many(self, samples: Sequence[FrameSample], target: TargetContext) -> list[Any]:
        assert self._evaluate_many is not None
        return await self._call(self._evaluate_many, list(samples), target)

    async def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        if is_async_callable(function):
            return await _call(function, *args, executor=self._executor)

        def counted(*arguments: Any) -> Any:
            with self._lock:
                self._running += 1
            try:
                return function(*arguments)
            finally:
                with self._lock:
                    self._running -= 1

        try:
            return await _call(counted, *args, executor=self._executor)
        except asyncio.CancelledError:
            # Ctrl-C: the run stops once the calls under way return, which a slow or hung adapter makes a silent
            # wait (GlassKit's too). Said once, when a call is still running a moment later.
            if not self._told:
                self._told = True
                timer = threading.Timer(_WAIT_NOTICE_S, self._tell_waiting)
                timer.daemon = True
                timer.start()
            raise

    def _tell_waiting(self) -> None:
        with self._lock:
            running = self._running
        if running:
            calls = "call" if running == 1 else "calls"
            print(f"Stopping: waiting for {running} adapter {calls} under way to return (a Python adapter's call "
                  "cannot be stopped from outside); press Ctrl-C again to stop without waiting, finished results are "
                  "kept", file=sys.stderr, flush=True)

    async def close(self) -> None:
        if self._close is not None:
            await _call(self._close, executor=self._executor)


def _frame_function_evaluator(function: Any, style: tuple[str, str], executor: Executor | None) -> PythonEvaluator:
    if style == ("image", "target_id"):

        def evaluate(sample: FrameSample, target: TargetContext) -> Any:
            return function(sample.image, target.id)

        if inspect.iscoroutinefunction(function):

            async def evaluate_async(sample: FrameSample, target: TargetContext) -> Any:
                return await function(sample.image, target.id)

            return PythonEvaluator(evaluate_async, None, None, executor)
        return PythonEvaluator(evaluate, None, None, executor)
    return PythonEvaluator(function, None, None, executor)


JAVASCRIPT_ADAPTER_NAMES = ("adapter.mjs", "adapter.js")


def _missing_key_hint(error: Exception, config: AdapterConfig) -> str:
    """A KeyError says only the key (`'lamp_region'`): name it as one, and, since a factory most often
    looks its settings up in `config.config` (adapter.yaml), what that holds when the key is not there."""
    if not isinstance(error, KeyError):
        return ""
    key = error.args[0] if len(error.args) == 1 else None
    settings = config.config
    if not isinstance(key, str) or key in settings:
        return " (KeyError: a key that is not there)"
    held = ", ".join(repr(name) for name in list(settings)[:10]) or "no keys"
    return f" (KeyError: a key that is not there; the adapter config, config.config, has {held})"


def _javascript_adapter_hint(target: AdapterTarget) -> str:
    """For a missing Python adapter file with a JavaScript adapter beside it (an eval written by
    `assay video init --adapter js`), the option that runs that one; else ""."""
    if target.file is None or target.file.exists():
        return ""
    for name in JAVASCRIPT_ADAPTER_NAMES:
        if (target.file.parent / name).is_file():
            command = shlex.join(["node", Path(target.module).with_name(name).as_posix()])
            return f"; this eval's adapter is {name} (JavaScript): run it with --adapter-command {shlex.quote(command)}"
    return ""


@contextlib.contextmanager
def _waiting_said_on_ctrl_c() -> Iterator[None]:
    """Around the adapter's import and factory, which run on the event loop's own thread: a first Ctrl-C only asks
    the run to stop once they return (GlassKit's too), a silent wait when the factory loads a model. Said once on
    stderr, as for the calls under way (`PythonEvaluator._tell_waiting`), when they are still running a moment later.
    Only where a handler of the run's loop takes Ctrl-C (not Python's default, which stops at once)."""
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if not callable(previous) or previous is signal.default_int_handler or getattr(previous, "waits_for_factory", False):
        yield  # (the last: one under way already says it; a second one would leave its handler behind)
        return
    running = threading.Event()
    running.set()

    def tell() -> None:
        if running.is_set():
            print("Stopping: waiting for the adapter's import and factory to return (a Python adapter's code cannot be "
                  "stopped from outside); press Ctrl-C again to stop without waiting, finished results are kept",
                  file=sys.stderr, flush=True)

    told = False

    def on_ctrl_c(signum: int, frame: Any) -> None:
        nonlocal told
        if not told:
            told = True
            timer = threading.Timer(_WAIT_NOTICE_S, tell)
            timer.daemon = True
            timer.start()
        previous(signum, frame)

    on_ctrl_c.waits_for_factory = True  # type: ignore[attr-defined]
    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:
        running.clear()
        if signal.getsignal(signal.SIGINT) is on_ctrl_c:
            signal.signal(signal.SIGINT, previous)


async def create_python_evaluator(
    adapter: str, config: AdapterConfig, *, executor: Executor | None = None, cwd: Path | None = None
) -> PythonEvaluator:
    """Import `adapter` afresh (module globals never survive between trials) and build an evaluator."""
    with _waiting_said_on_ctrl_c():
        return await _create_python_evaluator(adapter, config, executor=executor, cwd=cwd)


async def _create_python_evaluator(
    adapter: str, config: AdapterConfig, *, executor: Executor | None, cwd: Path | None
) -> PythonEvaluator:
    try:
        function, _ = load_adapter_callable(adapter, extra_search_paths=[config.eval_dir.parent], cwd=cwd)
    except AdapterError as error:
        target = parse_adapter_target(adapter, cwd=cwd)
        if isinstance(error.__cause__, SystemExit):  # its import called sys.exit(): say so, not only the bare code
            where = target.file if target.file is not None else f"module '{target.module}'"
            raise AdapterError(f"adapter import failed for {where}: {_exit_message(error.__cause__)}") from None
        hint = _javascript_adapter_hint(target)
        if not hint:
            raise
        raise AdapterError(f"{error}{hint}") from None
    style = _frame_function_style(function)
    if style is not None and not inspect.isclass(function):
        return _frame_function_evaluator(function, style, executor)
    args, kwargs = _factory_arguments(function, config)
    try:
        product = function(*args, **kwargs)
        if inspect.isawaitable(product):
            product = await product
    except Exception as error:  # noqa: BLE001 - the factory is user code
        raise AdapterError(f"adapter factory '{adapter}' failed: {error}{_missing_key_hint(error, config)}") from error
    except SystemExit as error:
        raise AdapterError(f"adapter factory '{adapter}' failed: {_exit_message(error)}") from None
    evaluate_many = getattr(product, "evaluate_many", None)
    evaluate = getattr(product, "evaluate", None)
    evaluate_many = evaluate_many if callable(evaluate_many) else None
    evaluate = evaluate if callable(evaluate) else None
    close = getattr(product, "close", None)
    close = close if callable(close) else None
    if evaluate_many is not None:
        return PythonEvaluator(None, evaluate_many, close, executor)
    if evaluate is not None:
        return PythonEvaluator(evaluate, None, close, executor)
    style = _frame_function_style(product) if callable(product) else None
    if style is not None:
        return _frame_function_evaluator(product, style, executor)
    raise AdapterError(
        f"adapter factory '{adapter}' must return an object with evaluate(...) or evaluate_many(...), "
        "or a function whose first two parameters are (image, target_id) or (sample, target)"
    )
