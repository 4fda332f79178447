"""The host side of the NDJSON process protocol: spawn an adapter command and exchange requests with it.

Kind-independent: method names and payloads come from the caller (video, agent and doc adapters).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import queue
import select
import shlex
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from assay.adapters.message_budget import DEFAULT_MESSAGE_BUDGET, MessageBudget
from assay.adapters.process_tree import ProcessTree, spawn_tree
from assay.errors import AdapterExited, AdapterRuntimeError

__all__ = [
    "EncodedJson",
    "MESSAGE_LIMIT_BYTES",
    "NO_TIMEOUT",
    "NdjsonProcess",
    "ProcessTimeouts",
    "RequestTimedOut",
    "RequestTimeout",
    "START_STDERR_HOLD_S",
    "START_TIMEOUT_VARIABLE",
    "parse_command",
    "start_ndjson_process",
    "start_timeout",
]

MESSAGE_LIMIT_BYTES = 256 * 1024 * 1024
PIPE_BUFFER_BYTES = 1024 * 1024
STDOUT_CHUNK_BYTES = 1024 * 1024
STDERR_CHUNK_BYTES = 64 * 1024
# What is read synchronously once the adapter has exited: whatever it wrote is in the pipe (a
# pipe holds at most 1 MiB); more than that comes from a descendant still writing.
EXIT_DRAIN_BYTES = 4 * 1024 * 1024
STDERR_TAIL_BYTES = 64 * 1024
INVALID_LINE_PREVIEW_BYTES = 200
PROTOCOL_HINT = "Stdout is reserved for NDJSON protocol messages; write adapter logs to stderr"

StderrSink = Callable[[bytes], None]


@dataclass(frozen=True, slots=True)
class ProcessTimeouts:
    """How long the host waits at each step of shutting an adapter down (seconds)."""

    close_s: float = 5.0
    terminate_grace_s: float = 2.0
    kill_grace_s: float = 2.0
    exit_status_s: float = 0.25  # after stdout EOF, how long to wait for the exit status
    # Once the adapter has answered close and its stdin is closed, how long it may take to exit
    # (None: whatever is left of `close_s`, as GlassKit does).
    exit_after_close_s: float | None = None


@dataclass(frozen=True, slots=True)
class RequestTimeout:
    """How long one request may take, and the setting that chose it (named when it runs out)."""

    seconds: float | None  # None: no limit
    setting: str = ""


NO_TIMEOUT = RequestTimeout(None)

# How long an adapter's stderr is held back while it starts: a crash at start (a missing module, a
# syntax error) shows its stderr once, in the error, and a slow start's logs are still seen soon.
START_STDERR_HOLD_S = 5.0

START_TIMEOUT_VARIABLE = "ASSAY_ADAPTER_START_TIMEOUT"
DEFAULT_START_TIMEOUT_S = 30.0


def start_timeout() -> RequestTimeout:
    """The limit for an adapter's first answer (`initialize`, the node bridge's `load`).

    30 s by default, so an adapter that never answers cannot hang `run` or `validate`; an adapter
    that loads a large model may need more, set with ASSAY_ADAPTER_START_TIMEOUT (0: no limit)."""
    from assay.core.format import misspelt_variable

    misspelt = misspelt_variable(os.environ, "ASSAY_ADAPTER_", [START_TIMEOUT_VARIABLE], "assay")
    if misspelt:  # (ignored, it left the 30 s default in place, and nothing said so)
        raise AdapterRuntimeError(misspelt)
    text = os.environ.get(START_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return RequestTimeout(
            DEFAULT_START_TIMEOUT_S, f"the default start limit; set {START_TIMEOUT_VARIABLE}=<seconds> to change it"
        )
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not (math.isfinite(seconds) and seconds >= 0):
        raise AdapterRuntimeError(f"{START_TIMEOUT_VARIABLE} must be a number of seconds (0 for no limit), got {text!r}")
    return RequestTimeout(seconds or None, f"set by {START_TIMEOUT_VARIABLE}")


class RequestTimedOut(AdapterRuntimeError):
    """A request got no answer within its `RequestTimeout`; the adapter was sent `cancel` for it."""

    def __init__(self, message: str, *, method: str, timeout: RequestTimeout) -> None:
        super().__init__(message)
        self.method = method
        self.timeout = timeout


@dataclass(frozen=True, slots=True)
class EncodedJson:
    """Request params already encoded as compact ASCII JSON, spliced into the message unchanged.

    Lets callers skip re-escaping megabytes of base64 (json.dumps scans every character). The
    text may come in parts, joined once into the final line, so megabyte payloads are not copied
    again at every layer."""

    text: bytes | tuple[bytes, ...]


def parse_command(command: str) -> list[str]:
    """Split a command line the POSIX way; the program is started without a shell."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise AdapterRuntimeError(f"invalid adapter command: {error}") from None
    if not argv:
        raise AdapterRuntimeError("adapter command must not be empty")
    return argv


def _describe_limit(limit: int) -> str:
    mebibyte = 1024 * 1024
    if limit % mebibyte == 0:
        return f"{limit // mebibyte} MiB"
    return f"{limit} bytes"


def _plain_json_value(value: Any) -> Any:
    # Target and factory configs may arrive as read-only mappings; JSON only knows dicts.
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _encode_json(value: Any) -> bytes:
    text = json.dumps(
        value,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
        default=_plain_json_value,
    )
    return text.encode("ascii")


def _encode_message(
    request_id: int | None, method: str, params: Mapping[str, Any] | EncodedJson
) -> tuple[bytes, ...]:
    """The message line in parts, written as they are (a frame's base64 is never copied again)."""
    head = b"{" if request_id is None else b'{"id":%d,' % request_id
    if isinstance(params, EncodedJson):
        parts = params.text if isinstance(params.text, tuple) else (params.text,)
    else:
        parts = (_encode_json(params),)
    return (head, b'"method":', _encode_json(method), b',"params":', *parts, b"}\n")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} is out of range")
    return number


def _decode_line(line: bytes | bytearray) -> Any:
    """Strict JSON: no NaN/Infinity, no overflowing floats, UTF-8 only.

    A `bytearray` line is emptied once decoded, so a large message is never held three times
    over (its bytes, its text and the parsed value) while it is parsed."""
    text = line.decode("utf-8")
    if isinstance(line, bytearray):
        line.clear()
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)


def _default_stderr_sink(chunk: bytes) -> None:
    stream = sys.stderr
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(chunk)
        buffer.flush()
    else:
        stream.write(chunk.decode("utf-8", errors="replace"))
        stream.flush()


class _Lingered(Exception):
    """The adapter answered close but is still running once its exit window has passed."""


class _Pending:
    __slots__ = ("method", "future")

    def __init__(self, method: str, future: asyncio.Future[Any]) -> None:
        self.method = method
        self.future = future


class _Delivery:
    """Whether a request's line has begun to go to the adapter (from then on it goes whole)."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = False


_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024
_WRITE_POLL_MS = 100


class _PipeWriter:
    """Writes whole messages to the adapter's stdin, in order, without holding up the event loop.

    A message is written right away as far as the pipe takes it (small requests end there); the
    rest goes to one daemon thread per process, which writes it with `os.writev` as the adapter
    reads. Requests carry megabytes of frames, and asyncio's pipe transport copied whatever the
    pipe did not take at once into its own buffer and out again, on the event loop and holding the
    GIL (for a 600-frame run, ~2 s of the GIL). The pipe stays non-blocking and the thread polls it,
    so `abort` frees the thread even if nobody ever reads the pipe again.
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._aborted = False  # set once by abort(); the thread sees it at its next write or poll
        self._in_thread = 0  # messages handed to the thread and not yet written
        self._count_lock = threading.Lock()
        self.closed = False
        self._thread = threading.Thread(target=self._run, name="assay-adapter-stdin", daemon=True)
        self._thread.start()

    async def write(self, parts: Sequence[bytes]) -> None:
        """Write one message; raises `OSError` (e.g. `BrokenPipeError`) if the pipe fails.

        Callers write one message at a time; a message whose caller was cancelled while the
        thread writes it is still written whole, before any later one."""
        if self.closed:  # a job queued after close would never be taken
            raise BrokenPipeError("adapter stdin is closed")
        views: list[Any] = [part for part in parts if len(part)]
        first = 0
        if not self._in_thread:
            first = self._write_ready(views, 0)
            if first == len(views):
                return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        with self._count_lock:
            self._in_thread += 1
        self._jobs.put((views, first, loop, done))
        await done

    def close(self) -> None:
        """Close the pipe (end of input for the adapter) once queued messages are written."""
        if not self.closed:
            self.closed = True
            self._jobs.put(None)

    def abort(self) -> None:
        """Stop writing: queued and unfinished messages fail, then the pipe is closed."""
        self._aborted = True
        self.close()

    def _run(self) -> None:
        try:
            while (job := self._jobs.get()) is not None:
                views, first, loop, done = job
                error: OSError | None = None
                try:
                    self._write_all(views, first)
                except OSError as failure:
                    error = failure
                finally:
                    with self._count_lock:
                        self._in_thread -= 1
                with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                    loop.call_soon_threadsafe(_settle, done, error)
        finally:
            os.close(self._fd)

    def _write_ready(self, views: list[Any], first: int) -> int:
        """Write `views[first:]` until the pipe is full; the index of the first unwritten view."""
        while first < len(views):
            if self._aborted:
                raise BrokenPipeError("adapter stdin was closed")
            try:
                written = os.writev(self._fd, views[first : first + _IOV_MAX])
            except BlockingIOError:
                return first
            first = _skip(views, first, written)
        return first

    def _write_all(self, views: list[Any], first: int) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        while (first := self._write_ready(views, first)) < len(views):
            poller.poll(_WRITE_POLL_MS)


def _skip(views: list[Any], first: int, written: int) -> int:
    """Drop `written` bytes from the front of `views[first:]` (non-empty buffers); the index of
    the first one not fully written, its rest as a memoryview (a bytes slice would copy it)."""
    while written and written >= len(views[first]):
        written -= len(views[first])
        first += 1
    if written:
        views[first] = memoryview(views[first]).cast("B")[written:]
    return first


def _settle(done: asyncio.Future[None], error: OSError | None) -> None:
    if done.done():
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


class _LineReader:
    """Reads the adapter's stdout from the event loop, one line at a time, within the message budget.

    A line longer than the budget's free size waits for the budget's turn (the pipe is not read
    meanwhile, so the adapter waits too); one longer than `limit` is refused as soon as it gets
    there and the rest of it is read and dropped as it arrives, never held."""

    def __init__(
        self,
        fd: int,
        *,
        budget: MessageBudget,
        limit: int,
        on_line: Callable[[bytes | bytearray], None],
        on_too_long: Callable[[], None],
        on_stalled: Callable[[float, int], None],
        on_eof: Callable[[], None],
    ) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._budget = budget
        self._limit = limit
        self._on_line = on_line
        self._on_too_long = on_too_long
        self._on_stalled = on_stalled
        self._on_eof = on_eof
        self._line = bytearray()
        self._held: tuple[bytes, int] | None = None  # read while waiting for the budget's turn
        self._has_turn = False
        self._skipping_line = False  # the rest of a refused line is dropped as it arrives
        self._discarding = False  # after a fatal failure: everything is dropped
        self.at_eof = False
        self.closed = False
        self._watching = False
        self._watch()

    # ---- reading --------------------------------------------------------------------------

    def _watch(self) -> None:
        if not self._watching and not self.closed and not self.at_eof and self._held is None:
            self._loop.add_reader(self._fd, self._on_readable)
            self._watching = True

    def _unwatch(self) -> None:
        if self._watching:
            self._loop.remove_reader(self._fd)
            self._watching = False

    def _on_readable(self) -> None:
        self._read_once()

    def _read_once(self) -> int:
        """Read one chunk and take it in; its size, 0 at end of file, -1 if the pipe is empty."""
        try:
            chunk = os.read(self._fd, STDOUT_CHUNK_BYTES)
        except BlockingIOError:
            return -1
        except OSError:
            chunk = b""
        if not chunk:
            self._end_of_file()
            return 0
        self._take(chunk, 0)
        return len(chunk)

    def read_available(self, most: int) -> None:
        """Take in what the pipe holds now (up to `most` bytes), without waiting for more."""
        taken = 0
        while taken < most and not self.closed and not self.at_eof and self._held is None:
            count = self._read_once()
            if count <= 0:
                return
            taken += count

    def _take(self, chunk: bytes, start: int) -> None:
        view = memoryview(chunk)
        while start < len(chunk) and not self.closed:
            if self._discarding:
                return
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            if self._skipping_line:
                if newline < 0:
                    return
                self._skipping_line = False
                start = newline + 1
                continue
            size = len(self._line) + end - start
            if size > self._budget.free_line_bytes and not self._has_turn:
                if not self._budget.try_take(self):
                    self._held = (chunk, start)
                    self._unwatch()
                    self._budget.wait(self)
                    return
                self._has_turn = True
            if size > self._limit:
                self._line = bytearray()
                self._skipping_line = True
                self._give_back_turn()
                self._on_too_long()
                start = end
                continue
            if self._has_turn:
                self._budget.progressed(self)
            if newline < 0:
                self._line += view[start:end]
                return
            if self._line:
                self._line += view[start:end]
                line: bytes | bytearray = self._line
                self._line = bytearray()
            else:
                line = chunk[start:end]
            start = newline + 1
            try:
                self._on_line(line)
            finally:
                del line
                self._give_back_turn()

    def _end_of_file(self) -> None:
        self.at_eof = True
        self._unwatch()
        # A last line without its newline still counts, as it does for asyncio's readline.
        if self._line and not (self._skipping_line or self._discarding):
            line, self._line = self._line, bytearray()
            try:
                self._on_line(line)
            finally:
                del line
                self._give_back_turn()
        self._give_back_turn()
        self._on_eof()

    # ---- the budget's turn ----------------------------------------------------------------

    def _give_back_turn(self) -> None:
        if self._has_turn:
            self._has_turn = False
            self._budget.release(self)

    def budget_granted(self) -> None:
        self._has_turn = True
        held, self._held = self._held, None
        if held is not None and not self.closed:
            self._take(*held)
        self._watch()

    def budget_stalled(self, idle_s: float) -> None:
        held_bytes = len(self._line)
        self.discard()
        self._on_stalled(idle_s, held_bytes)

    # ---- stopping -------------------------------------------------------------------------

    def discard(self) -> None:
        """Drop everything from now on (the process has failed); keep the pipe drained."""
        self._discarding = True
        self._line = bytearray()
        self._held = None
        self._give_back_turn()
        self._budget.release(self)
        self._watch()

    def close(self) -> None:
        if self.closed:
            return
        self._unwatch()
        self.closed = True
        self._line = bytearray()
        self._held = None
        self._give_back_turn()
        self._budget.release(self)
        os.close(self._fd)


class NdjsonProcess:
    """One running adapter process; use `start_ndjson_process` to create it.

    Any protocol violation, unexpected exit or write failure is fatal: pending and later requests
    fail with the same `AdapterRuntimeError`. A request that runs out of time fails alone.

    The adapter's exit is seen as it happens (a pidfd or a waitpid thread, not the end of its
    pipes, which a descendant may hold), and stopping it stops every process it started.
    """

    def __init__(
        self,
        tree: ProcessTree,
        stdin_fd: int,
        stdout_fd: int,
        stderr_fd: int,
        display_command: str,
        *,
        stderr_sink: StderrSink,
        message_limit: int,
        timeouts: ProcessTimeouts,
        budget: MessageBudget,
        call_timeout: RequestTimeout,
        hold_stderr_s: float = 0.0,
    ) -> None:
        self._tree = tree
        self._stdin = _PipeWriter(stdin_fd)
        self.display_command = display_command
        self._stderr_sink = stderr_sink
        self._message_limit = message_limit
        self._timeouts = timeouts
        self._budget = budget
        self._call_timeout = call_timeout
        self._write_lock = asyncio.Lock()
        self._next_id = 1
        self._pending: dict[int, _Pending] = {}
        # Replies to cancelled requests may still arrive; they are expected, not unknown ids.
        self._abandoned_ids: set[int] = set()
        # What each request lent the adapter, handed back when it answers (see `request`).
        self._answer_callbacks: dict[int, Callable[[], None]] = {}
        self._failure: AdapterRuntimeError | None = None
        self._closing = False
        self._stopped = False
        self._stderr_tail = bytearray()
        self._background: set[asyncio.Task[Any]] = set()
        self._loop = asyncio.get_running_loop()
        # Stderr held back while the adapter starts (None: mirrored as it arrives), see `release_stderr`.
        self._held_stderr: bytearray | None = None
        self._hold_timer: asyncio.TimerHandle | None = None
        if hold_stderr_s > 0:
            self._held_stderr = bytearray()
            self._hold_timer = self._loop.call_later(hold_stderr_s, self.release_stderr)
        self._stdout = _LineReader(
            stdout_fd,
            budget=budget,
            limit=min(message_limit, budget.capacity),
            on_line=self._handle_line,
            on_too_long=self._line_too_long,
            on_stalled=self._line_stalled,
            on_eof=self._stdout_closed,
        )
        os.set_blocking(stderr_fd, False)
        self._stderr_fd: int | None = stderr_fd
        self._loop.add_reader(stderr_fd, self._read_stderr_once)
        tree.exited.add_done_callback(self._exited)

    @property
    def message_limit(self) -> int:
        """The largest request line this process is sent, in bytes (without its newline)."""
        return self._message_limit

    @property
    def pid(self) -> int:
        return self._tree.pid

    @property
    def returncode(self) -> int | None:
        return self._tree.returncode

    @property
    def failure(self) -> AdapterRuntimeError | None:
        return self._failure

    def stderr_tail(self) -> str:
        text = bytes(self._stderr_tail).decode("utf-8", errors="replace").strip()
        return text if text else "(empty)"

    def _stderr_tail_for_message(self) -> str:
        """The stderr tail for a failure message; stderr still held back is shown there, so it is
        never mirrored as well (a crash at start would print its stack trace twice)."""
        self._stop_holding_stderr()
        return self.stderr_tail()

    def _stop_holding_stderr(self) -> bytes:
        """What was held back (b"" if nothing), from now on mirrored as it arrives."""
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        held, self._held_stderr = self._held_stderr, None
        return bytes(held or b"")

    def release_stderr(self) -> None:
        """Mirror the stderr held back since the start and everything after it as it arrives.

        Called once the adapter has started (or when the hold runs out, or the process stops): an
        adapter that fails to start has its stderr shown once, in the failure's message."""
        held = self._stop_holding_stderr()
        if held:
            with contextlib.suppress(Exception):
                self._stderr_sink(held)

    # ---- requests -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | EncodedJson,
        *,
        error_label: str | None = None,
        timeout: RequestTimeout | None = None,
        on_answer: Callable[[], None] | None = None,
    ) -> Any:
        """Send one request and wait for its result; an error reply raises `AdapterRuntimeError`
        (`adapter command <error_label or method> failed: <message>`).

        `timeout` (default: the process's call timeout) covers writing the request and its answer;
        when it runs out the adapter is sent `cancel` and `RequestTimedOut` is raised. If the
        awaiting task is cancelled, a `cancel` notification for this id is sent (best effort).

        `on_answer` is called once the adapter has answered (a result or an error, also one that
        arrives after the request was abandoned), or at once if the request never reached it; never
        while the adapter may still be reading the request, so whatever the request lent it (a
        shared-memory frame) can be taken back there. An adapter that ends without answering
        never calls it: what it was lent goes with it.
        """
        limit = timeout or self._call_timeout
        if limit.seconds is None:
            return await self._exchange(method, params, error_label, on_answer)
        scope = asyncio.timeout(limit.seconds)
        try:
            async with scope:
                return await self._exchange(method, params, error_label, on_answer)
        except TimeoutError:
            if not scope.expired():
                raise
            setting = f" ({limit.setting})" if limit.setting else ""
            raise RequestTimedOut(
                f"adapter command '{self.display_command}' did not answer {error_label or method} "
                f"within {limit.seconds:g}s{setting}",
                method=method,
                timeout=limit,
            ) from None

    async def _exchange(
        self,
        method: str,
        params: Mapping[str, Any] | EncodedJson,
        error_label: str | None,
        on_answer: Callable[[], None] | None,
    ) -> Any:
        try:
            self._raise_if_failed()
            request_id = self._next_id
            self._next_id += 1
            line = self._encode_request(request_id, method, params)
        except BaseException:
            if on_answer is not None:
                on_answer()
            raise
        future: asyncio.Future[Any] = self._loop.create_future()
        self._pending[request_id] = _Pending(error_label or method, future)
        if on_answer is not None:
            self._answer_callbacks[request_id] = on_answer
        delivery = _Delivery()
        try:
            await self._write(line, delivery)
            return await future
        except asyncio.CancelledError:
            if self._pending.pop(request_id, None) is not None:
                self._abandoned_ids.add(request_id)
                self._send_in_background("cancel", {"id": request_id})
            raise
        finally:
            self._pending.pop(request_id, None)
            if not delivery.started and (callback := self._answer_callbacks.pop(request_id, None)) is not None:
                callback()

    async def notify(self, method: str, params: Mapping[str, Any] | EncodedJson) -> None:
        """Send a notification (no id, no reply)."""
        self._raise_if_failed()
        await self._write(self._encode_request(None, method, params))

    def _encode_request(
        self, request_id: int | None, method: str, params: Mapping[str, Any] | EncodedJson
    ) -> tuple[bytes, ...]:
        try:
            line = _encode_message(request_id, method, params)
        except (TypeError, ValueError) as error:
            raise AdapterRuntimeError(f"adapter command {method} request is not valid JSON: {error}") from None
        if sum(map(len, line)) - 1 > self._message_limit:
            raise AdapterRuntimeError(
                f"adapter command {method} request exceeds the {_describe_limit(self._message_limit)} protocol limit"
            )
        return line

    def _send_in_background(self, method: str, params: Mapping[str, Any]) -> None:
        if self._failure is not None or self._stopped:
            return

        async def send() -> None:
            with contextlib.suppress(Exception):
                await self._write(_encode_message(None, method, params))

        task = self._loop.create_task(send())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _write(self, line: tuple[bytes, ...], delivery: _Delivery | None = None) -> None:
        async with self._write_lock:
            self._raise_if_failed()
            if self._stdin.closed:
                raise AdapterRuntimeError(f"adapter command '{self.display_command}' stdin is already closed")
            if delivery is not None:
                delivery.started = True
            try:
                await self._stdin.write(line)
            except OSError as error:
                if self._stopped:  # force_stop closed the pipe under this write
                    raise self._copy_failure() if self._failure else AdapterRuntimeError(
                        "adapter command was stopped"
                    ) from None
                # A broken pipe usually means the process died; its exit is the better explanation.
                await self._tree.wait_exit(2 * self._timeouts.exit_status_s)
                self._fail(
                    AdapterRuntimeError(
                        f"adapter command '{self.display_command}' could not write to adapter process: "
                        f"{error} ({self._exit_description()}); stderr tail: {self._stderr_tail_for_message()}"
                    )
                )
                raise self._copy_failure() from None

    # ---- failures -------------------------------------------------------------------------

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._copy_failure()

    def _copy_failure(self) -> AdapterRuntimeError:
        assert self._failure is not None
        return AdapterRuntimeError(str(self._failure))

    def _fail(self, failure: AdapterRuntimeError) -> None:
        if self._failure is not None:
            return
        self._failure = failure
        self._stdout.discard()  # nothing more is read as a reply; the pipe is kept from filling
        self._answer_callbacks.clear()  # no answer will come: what requests lent goes with the process
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(  # one exception each (and an exit keeps its code and stderr)
                    AdapterExited(str(failure), failure.exit_code, failure.stderr_tail)
                    if isinstance(failure, AdapterExited) else AdapterRuntimeError(str(failure)))
        self._pending.clear()

    def _protocol_error(self, detail: str) -> None:
        self._fail(AdapterRuntimeError(f"adapter command protocol error: {detail}. {PROTOCOL_HINT}"))

    def _exit_description(self) -> str:
        code = self._tree.returncode
        return "no exit status" if code is None else f"exit code {code}"

    def _exit_is_unexpected(self) -> bool:
        return not self._closing or bool(self._pending)

    # ---- stdout ---------------------------------------------------------------------------

    def _line_too_long(self) -> None:
        limit = min(self._message_limit, self._budget.capacity)
        if self._message_limit <= self._budget.capacity:
            self._protocol_error(f"stdout message exceeds the {_describe_limit(limit)} protocol limit")
            return
        self._fail(
            AdapterRuntimeError(
                f"adapter command '{self.display_command}' sent a stdout message over the "
                f"{_describe_limit(limit)} that assay holds for adapter messages at once; "
                "it was refused and the rest of it discarded unread"
            )
        )

    def _line_stalled(self, idle_s: float, held_bytes: int) -> None:
        self._fail(
            AdapterRuntimeError(
                f"adapter command '{self.display_command}' stopped for {idle_s:.1f}s in the middle of a "
                f"{held_bytes // (1024 * 1024)} MiB stdout message while other adapters waited to send theirs; "
                "it was refused"
            )
        )

    def _stdout_closed(self) -> None:
        if not self._exit_is_unexpected() or self._failure is not None or self._stopped:
            return
        task = self._loop.create_task(self._judge_stdout_closed())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _judge_stdout_closed(self) -> None:
        if await self._tree.wait_exit(self._timeouts.exit_status_s):
            return  # an exit: `_exited` reports it with the exit code
        if not self._exit_is_unexpected() or self._stopped:
            return
        self._fail(
            AdapterRuntimeError(
                f"adapter command '{self.display_command}' closed stdout unexpectedly "
                f"({self._exit_description()}); stderr tail: {self._stderr_tail_for_message()}"
            )
        )

    def _handle_line(self, line: bytes | bytearray) -> None:
        if self._failure is not None:
            return
        preview = bytes(line[:INVALID_LINE_PREVIEW_BYTES])
        try:
            message = _decode_line(line)
        except (ValueError, UnicodeDecodeError) as error:
            shown = preview.decode("utf-8", errors="replace").rstrip("\r\n")
            self._protocol_error(f"invalid JSON on stdout: {error}; line: {shown!r}")
            return
        if not isinstance(message, dict):
            self._protocol_error("stdout response must be a JSON object")
            return
        request_id = message.get("id")
        if not isinstance(request_id, int) or isinstance(request_id, bool):
            self._protocol_error("stdout response must contain an integer id")
            return
        pending = self._pending.get(request_id)
        if pending is None and request_id not in self._abandoned_ids:
            self._protocol_error(f"stdout response has unknown request id {request_id}")
            return
        if ("result" in message) == ("error" in message):
            self._protocol_error("stdout response must contain exactly one of result or error")
            return
        error = message.get("error")
        if "error" in message and not (isinstance(error, dict) and isinstance(error.get("message"), str)):
            self._protocol_error("stdout error response must contain a string error.message")
            return
        if (answered := self._answer_callbacks.pop(request_id, None)) is not None:
            answered()
        if pending is None:
            self._abandoned_ids.discard(request_id)
            return
        del self._pending[request_id]
        if pending.future.done():
            return
        if "error" in message:
            pending.future.set_exception(
                AdapterRuntimeError(f"adapter command {pending.method} failed: {error['message']}")
            )
        else:
            pending.future.set_result(message["result"])

    # ---- stderr ---------------------------------------------------------------------------

    def _read_stderr_once(self) -> int:
        """Mirror one chunk of stderr and keep its tail; its size, 0 at end of file, -1 if empty."""
        if self._stderr_fd is None:
            return 0
        try:
            chunk = os.read(self._stderr_fd, STDERR_CHUNK_BYTES)
        except BlockingIOError:
            return -1
        except OSError:
            chunk = b""
        if not chunk:
            self._close_stderr()
            return 0
        if self._held_stderr is not None:
            self._held_stderr += chunk
            if len(self._held_stderr) > STDERR_TAIL_BYTES:  # more than a message shows: show it all now
                self.release_stderr()
        else:
            with contextlib.suppress(Exception):
                self._stderr_sink(chunk)
        self._stderr_tail += chunk
        if len(self._stderr_tail) > STDERR_TAIL_BYTES:
            del self._stderr_tail[: len(self._stderr_tail) - STDERR_TAIL_BYTES]
        return len(chunk)

    def _read_stderr_available(self, most: int) -> None:
        taken = 0
        while taken < most and (count := self._read_stderr_once()) > 0:
            taken += count

    def _close_stderr(self) -> None:
        if self._stderr_fd is not None:
            self._loop.remove_reader(self._stderr_fd)
            os.close(self._stderr_fd)
            self._stderr_fd = None

    # ---- exit -----------------------------------------------------------------------------

    def _exited(self, _: asyncio.Future[int]) -> None:
        if self._stopped or self._loop.is_closed():
            return
        # Whatever the adapter wrote before exiting is in its pipes now: take it in before judging
        # the exit, without waiting for end of file (a descendant may hold the pipes open).
        self._stdout.read_available(EXIT_DRAIN_BYTES)
        self._read_stderr_available(EXIT_DRAIN_BYTES)
        if self._exit_is_unexpected():
            tail = self._stderr_tail_for_message()
            self._fail(
                AdapterExited(
                    f"adapter command '{self.display_command}' exited unexpectedly "
                    f"({self._exit_description()}); stderr tail: {tail}", self._tree.returncode, tail,
                )
            )

    # ---- shutdown -------------------------------------------------------------------------

    async def close(self, method: str = "close", params: Mapping[str, Any] | None = None) -> Any:
        """Ask the adapter to finish: send `method`, close stdin, wait for exit within the window,
        then stop whatever it left running.

        After an earlier fatal failure the process is force-stopped and that failure re-raised.
        """
        if self._failure is not None:
            await self.force_stop()
            raise self._copy_failure()
        if self._stopped:
            return None
        self._closing = True
        window = self._timeouts.close_s
        reply_error: AdapterRuntimeError | None = None
        result: Any = None

        async def finish() -> None:
            nonlocal reply_error, result
            try:
                result = await self.request(method, params or {}, timeout=NO_TIMEOUT)  # the window bounds it
            except AdapterRuntimeError as error:
                if self._failure is not None:
                    raise
                reply_error = error  # the adapter answered with an error; still let it exit
            self._stdin.close()
            if not await self._tree.wait_exit(self._timeouts.exit_after_close_s):
                raise _Lingered

        try:
            await asyncio.wait_for(finish(), window)
        except asyncio.TimeoutError:
            await self.force_stop()
            raise AdapterRuntimeError(
                f"adapter command '{self.display_command}' did not complete close within "
                f"{window:g}s; the process tree was terminated"
            ) from None
        except _Lingered:
            await self.force_stop()
            raise AdapterRuntimeError(
                f"adapter command '{self.display_command}' answered close but did not exit within "
                f"{self._timeouts.exit_after_close_s:g}s of its input ending; the process tree was terminated"
            ) from None
        except AdapterRuntimeError:
            await self.force_stop()
            raise
        except BaseException:
            await asyncio.shield(self.force_stop())
            raise
        self._stopped = True
        await self._stop_tree()
        if reply_error is not None:
            raise reply_error
        if self._failure is not None:
            raise self._copy_failure()
        code = self._tree.returncode
        if code != 0:
            raise AdapterRuntimeError(
                f"adapter command '{self.display_command}' exited after close "
                f"(exit code {code}); stderr tail: {self._stderr_tail_for_message()}"
            )
        return result

    async def force_stop(self) -> None:
        """Stop the whole process tree (SIGTERM, then SIGKILL after the grace) and stop reading it."""
        self._closing = True
        if self._stopped:
            return
        self._stopped = True
        self._stdin.abort()
        await self._stop_tree()
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(
                    self._copy_failure() if self._failure else AdapterRuntimeError("adapter command was stopped")
                )
        self._pending.clear()

    async def _stop_tree(self) -> None:
        try:
            await self._tree.stop(
                terminate_grace_s=self._timeouts.terminate_grace_s, kill_grace_s=self._timeouts.kill_grace_s
            )
        finally:
            # Everything that could write to the pipes is gone: take in the last of it, then let go.
            self._stdout.read_available(EXIT_DRAIN_BYTES)
            self._read_stderr_available(EXIT_DRAIN_BYTES)
            self.release_stderr()
            self._stdout.close()
            self._close_stderr()
            for task in list(self._background):
                task.cancel()


def _enlarge_pipe(fd: int) -> None:
    # Frames are megabytes; a 1 MiB pipe (Linux) needs far fewer writes and wake-ups than 64 KiB.
    set_pipe_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if set_pipe_size is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, set_pipe_size, PIPE_BUFFER_BYTES)


async def start_ndjson_process(
    command: str,
    *,
    stderr_sink: StderrSink | None = None,
    message_limit: int = MESSAGE_LIMIT_BYTES,
    timeouts: ProcessTimeouts = ProcessTimeouts(),
    budget: MessageBudget = DEFAULT_MESSAGE_BUDGET,
    call_timeout: RequestTimeout = NO_TIMEOUT,
    extra_env: Mapping[str, str] | None = None,
    hold_stderr_s: float = 0.0,
    cwd: str | os.PathLike[str] | None = None,
) -> NdjsonProcess:
    """Spawn `command` (no shell; environment inherited, plus `extra_env`; in `cwd`, else the current folder) as
    the leader of a new session.

    `budget` bounds the adapter output held at once; the default one is shared by every process
    of the run. `call_timeout` applies to every request that does not bring its own. With
    `hold_stderr_s`, stderr is held back for up to that long, until `release_stderr()`: a failure
    before then shows it once, in its message, instead of also mirroring it."""
    argv = parse_command(command)
    display_command = shlex.join(argv)
    # Our own pipes (the child gets the other ends as fds 0-2), read and written without asyncio's
    # subprocess transports, which wait for the pipes to close before they report an exit.
    pipes = [os.pipe(), os.pipe(), os.pipe()]
    (stdin_read, stdin_write), (stdout_read, stdout_write), (stderr_read, stderr_write) = pipes
    try:
        try:
            tree = spawn_tree(argv, stdin=stdin_read, stdout=stdout_write, stderr=stderr_write, extra_env=extra_env, cwd=cwd)
        finally:
            for fd in (stdin_read, stdout_write, stderr_write):
                os.close(fd)
    except BaseException as error:
        for fd in (stdin_write, stdout_read, stderr_read):
            os.close(fd)
        if isinstance(error, OSError):
            raise AdapterRuntimeError(f"could not start adapter command '{display_command}': {error}") from None
        raise
    _enlarge_pipe(stdin_write)
    _enlarge_pipe(stdout_read)
    return NdjsonProcess(
        tree,
        stdin_write,
        stdout_read,
        stderr_read,
        display_command,
        stderr_sink=stderr_sink or _default_stderr_sink,
        message_limit=message_limit,
        timeouts=timeouts,
        budget=budget,
        call_timeout=call_timeout,
        hold_stderr_s=hold_stderr_s,
    )
