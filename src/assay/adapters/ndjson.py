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
import signal
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from assay.errors import AdapterRuntimeError

__all__ = [
    "EncodedJson",
    "MESSAGE_LIMIT_BYTES",
    "NdjsonProcess",
    "ProcessTimeouts",
    "parse_command",
    "start_ndjson_process",
]

MESSAGE_LIMIT_BYTES = 256 * 1024 * 1024
PIPE_BUFFER_BYTES = 1024 * 1024
STDERR_CHUNK_BYTES = 64 * 1024
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


def _decode_line(line: bytes) -> Any:
    """Strict JSON: no NaN/Infinity, no overflowing floats, UTF-8 only."""
    return json.loads(line.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)


def _default_stderr_sink(chunk: bytes) -> None:
    stream = sys.stderr
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(chunk)
        buffer.flush()
    else:
        stream.write(chunk.decode("utf-8", errors="replace"))
        stream.flush()


class _Pending:
    __slots__ = ("method", "future")

    def __init__(self, method: str, future: asyncio.Future[Any]) -> None:
        self.method = method
        self.future = future


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


class NdjsonProcess:
    """One running adapter process; use `start_ndjson_process` to create it.

    Any protocol violation, unexpected exit or write failure is fatal: pending and later requests
    fail with the same `AdapterRuntimeError`.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        stdin_fd: int,
        display_command: str,
        *,
        stderr_sink: StderrSink,
        message_limit: int,
        timeouts: ProcessTimeouts,
    ) -> None:
        self._process = process
        self._stdin = _PipeWriter(stdin_fd)
        self.display_command = display_command
        self._stderr_sink = stderr_sink
        self._message_limit = message_limit
        self._timeouts = timeouts
        self._write_lock = asyncio.Lock()
        self._next_id = 1
        self._pending: dict[int, _Pending] = {}
        # Replies to cancelled requests may still arrive; they are expected, not unknown ids.
        self._abandoned_ids: set[int] = set()
        self._failure: AdapterRuntimeError | None = None
        self._closing = False
        self._stopped = False
        self._stderr_tail = bytearray()
        self._background: set[asyncio.Task[Any]] = set()
        self._stdout_task = asyncio.create_task(self._read_stdout())
        self._stderr_task = asyncio.create_task(self._read_stderr())
        self._exit_task = asyncio.create_task(self._watch_exit())

    @property
    def message_limit(self) -> int:
        """The largest request line this process is sent, in bytes (without its newline)."""
        return self._message_limit

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @property
    def failure(self) -> AdapterRuntimeError | None:
        return self._failure

    def stderr_tail(self) -> str:
        text = bytes(self._stderr_tail).decode("utf-8", errors="replace").strip()
        return text if text else "(empty)"

    # ---- requests -------------------------------------------------------------------------

    async def request(
        self, method: str, params: Mapping[str, Any] | EncodedJson, *, error_label: str | None = None
    ) -> Any:
        """Send one request and wait for its result; an error reply raises `AdapterRuntimeError`
        (`adapter command <error_label or method> failed: <message>`).

        If the awaiting task is cancelled, a `cancel` notification for this id is sent (best effort).
        """
        self._raise_if_failed()
        request_id = self._next_id
        self._next_id += 1
        line = self._encode_request(request_id, method, params)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = _Pending(error_label or method, future)
        try:
            await self._write(line)
            return await future
        except asyncio.CancelledError:
            if self._pending.pop(request_id, None) is not None:
                self._abandoned_ids.add(request_id)
                self._send_in_background("cancel", {"id": request_id})
            raise
        finally:
            self._pending.pop(request_id, None)

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

        task = asyncio.get_running_loop().create_task(send())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _write(self, line: tuple[bytes, ...]) -> None:
        async with self._write_lock:
            self._raise_if_failed()
            if self._stdin.closed:
                raise AdapterRuntimeError(f"adapter command '{self.display_command}' stdin is already closed")
            try:
                await self._stdin.write(line)
            except OSError as error:
                if self._stopped:  # force_stop closed the pipe under this write
                    raise self._copy_failure() if self._failure else AdapterRuntimeError(
                        "adapter command was stopped"
                    ) from None
                # A broken pipe usually means the process died; its exit is the better explanation.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._exit_task), 2 * self._timeouts.exit_status_s)
                self._fail(
                    AdapterRuntimeError(
                        f"adapter command '{self.display_command}' could not write to adapter process: "
                        f"{error} ({self._exit_description()}); stderr tail: {self.stderr_tail()}"
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
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(AdapterRuntimeError(str(failure)))
        self._pending.clear()

    def _protocol_error(self, detail: str) -> None:
        self._fail(AdapterRuntimeError(f"adapter command protocol error: {detail}. {PROTOCOL_HINT}"))

    def _exit_description(self) -> str:
        code = self._process.returncode
        return "no exit status" if code is None else f"exit code {code}"

    def _exit_is_unexpected(self) -> bool:
        return not self._closing or bool(self._pending)

    # ---- readers --------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        while True:
            try:
                line = await stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                self._protocol_error(
                    f"stdout message exceeds the {_describe_limit(self._message_limit)} protocol limit"
                )
                return
            if not line:
                await self._stdout_closed()
                return
            self._handle_line(line)
            if self._failure is not None:
                return

    async def _stdout_closed(self) -> None:
        if not self._exit_is_unexpected() or self._failure is not None:
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._process.wait()), self._timeouts.exit_status_s)
        if self._process.returncode is not None:
            return  # an exit: `_watch_exit` reports it with the exit code
        self._fail(
            AdapterRuntimeError(
                f"adapter command '{self.display_command}' closed stdout unexpectedly "
                f"({self._exit_description()}); stderr tail: {self.stderr_tail()}"
            )
        )

    def _handle_line(self, line: bytes) -> None:
        try:
            message = _decode_line(line)
        except (ValueError, UnicodeDecodeError) as error:
            preview = line[:INVALID_LINE_PREVIEW_BYTES].decode("utf-8", errors="replace").rstrip("\r\n")
            self._protocol_error(f"invalid JSON on stdout: {error}; line: {preview!r}")
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

    async def _read_stderr(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        while True:
            chunk = await stderr.read(STDERR_CHUNK_BYTES)
            if not chunk:
                return
            with contextlib.suppress(Exception):
                self._stderr_sink(chunk)
            self._stderr_tail += chunk
            if len(self._stderr_tail) > STDERR_TAIL_BYTES:
                del self._stderr_tail[: len(self._stderr_tail) - STDERR_TAIL_BYTES]

    async def _watch_exit(self) -> None:
        await self._process.wait()
        # Responses written just before exiting may still sit in the pipe; deliver them first.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stdout_task), self._timeouts.exit_status_s)
        if self._exit_is_unexpected() and not self._stopped:
            self._fail(
                AdapterRuntimeError(
                    f"adapter command '{self.display_command}' exited unexpectedly "
                    f"({self._exit_description()}); stderr tail: {self.stderr_tail()}"
                )
            )

    # ---- shutdown -------------------------------------------------------------------------

    async def close(self, method: str = "close", params: Mapping[str, Any] | None = None) -> Any:
        """Ask the adapter to finish: send `method`, close stdin, wait for exit within the window.

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
                result = await self.request(method, params or {})
            except AdapterRuntimeError as error:
                if self._failure is not None:
                    raise
                reply_error = error  # the adapter answered with an error; still let it exit
            self._close_stdin()
            await self._process.wait()
            await asyncio.gather(self._stdout_task, self._stderr_task, return_exceptions=True)

        try:
            await asyncio.wait_for(finish(), window)
        except asyncio.TimeoutError:
            await self.force_stop()
            raise AdapterRuntimeError(
                f"adapter command '{self.display_command}' did not complete close within "
                f"{window:g}s; the process tree was terminated"
            ) from None
        except AdapterRuntimeError:
            await self.force_stop()
            raise
        except BaseException:
            await asyncio.shield(self.force_stop())
            raise
        await self._finish_tasks()
        self._stopped = True
        if reply_error is not None:
            raise reply_error
        if self._failure is not None:
            raise self._copy_failure()
        code = self._process.returncode
        if code != 0:
            raise AdapterRuntimeError(
                f"adapter command '{self.display_command}' exited after close "
                f"(exit code {code}); stderr tail: {self.stderr_tail()}"
            )
        return result

    def _close_stdin(self) -> None:
        self._stdin.close()

    async def force_stop(self) -> None:
        """Terminate the process group (SIGTERM, then SIGKILL) and stop reading its pipes."""
        self._closing = True
        if self._stopped:
            return
        self._stopped = True
        self._stdin.abort()
        if self._process.returncode is None:
            self._signal_group(signal.SIGTERM)
            if not await self._wait_for_exit(self._timeouts.terminate_grace_s):
                self._signal_group(signal.SIGKILL)
                await self._wait_for_exit(self._timeouts.kill_grace_s)
        else:
            # The leader is gone but its children may still hold the pipes open.
            self._signal_group(signal.SIGKILL)
        await self._finish_tasks()
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(
                    self._copy_failure() if self._failure else AdapterRuntimeError("adapter command was stopped")
                )
        self._pending.clear()

    async def _wait_for_exit(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(asyncio.shield(self._process.wait()), seconds)
        except asyncio.TimeoutError:
            return False
        return True

    def _signal_group(self, signal_number: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal_number)

    async def _finish_tasks(self) -> None:
        tasks = [self._stdout_task, self._stderr_task, self._exit_task]
        _, still_running = await asyncio.wait(tasks, timeout=self._timeouts.exit_status_s)
        for task in still_running:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
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
) -> NdjsonProcess:
    """Spawn `command` (no shell, cwd and environment inherited) in its own process group."""
    argv = parse_command(command)
    display_command = shlex.join(argv)
    # Our own pipe for stdin, written by `_PipeWriter` (the child gets the read end as its fd 0).
    stdin_read, stdin_write = os.pipe()
    try:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=stdin_read,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=message_limit,
            )
        finally:
            os.close(stdin_read)
    except BaseException as error:
        os.close(stdin_write)
        if isinstance(error, OSError):
            raise AdapterRuntimeError(f"could not start adapter command '{display_command}': {error}") from None
        raise
    _enlarge_pipe(stdin_write)
    return NdjsonProcess(
        process,
        stdin_write,
        display_command,
        stderr_sink=stderr_sink or _default_stderr_sink,
        message_limit=message_limit,
        timeouts=timeouts,
    )
