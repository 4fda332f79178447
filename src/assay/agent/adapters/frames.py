"""Your own streaming agent, from its raw frames (NiceEval's `sseJsonFrames`, `driveFrameStream`, `deltaStream`).

Three pieces, each usable alone:

- `sse_json_frames(body)` reads a server-sent-event body (an aiohttp response, an httpx response, any async or
  plain iterable of bytes) as the JSON value of each event, in order: `data:` lines (several make one event,
  joined by newlines), CRLF or CR line ends, `:` comments, `id:`/`retry:` fields and empty events are handled
  by assay's one SSE decoder (the one the OpenAI and UI message stream adapters read with); `event:` names are
  kept when asked for (`events=True` yields `SSEFrame(event, data)`); a `[DONE]` event ends the frames.
  Whatever is wrong with the stream (an event that is no JSON, a body cut before `[DONE]` when it is required,
  an HTTP error status, a connection that broke) raises `FrameStreamError`, naming the frame.
- `DeltaStream` folds token and argument deltas into a turn's events, in the order they began: text deltas
  are one assistant `Message` until something else happens (or per `id`), reasoning deltas one `Thinking`,
  `tool_call(id, name)` is an `operation.started` whose input is the JSON its `tool_arguments` deltas add up to
  (parsed when the turn is made; text that is no JSON is kept raw, as `turn_from_chat_completion` keeps it),
  and `tool_result(id, output, status)` its `operation.finished`. Give it `read(stream, frame)`, which says
  what one frame means, and it is a reducer for `drive_frame_stream`.
- `drive_frame_stream(frames, reducer, ctx, on_frame)` feeds each frame to the reducer (anything with
  `feed(frame)` and `turn()`: a `DeltaStream`, `CodexTranscript`, your own) and returns its turn when the
  frames end. `on_frame(frame)` may return `Pause(id, action, options)`: the turn then ends `waiting`, with
  one `input.requested` for it, and the stream stays open in the session line; the next send's
  `resume_frame_stream(input, ctx)` hands it back with the answer (`t.respond(...)`), to be driven on.

A paused stream is closed, never left open: when the next send on its line is not an answer (a new message:
warned as `frame-stream-abandoned`), when the answer is to another request (a send failure), and when its
session line ends, at the end of the attempt (whatever ended it). A stream that breaks, or a frame
that is no JSON, is a send failure (`agent-stream-broken`, `agent-http-error` for an error status) with
acceptance `started`: the service had the request, so it is not resent.
"""

from __future__ import annotations

import asyncio
import collections
import collections.abc
import dataclasses
import functools
import inspect
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, NamedTuple

from assay.agent.adapter import SendFailure
from assay.agent.context import AgentContext, say_once_a_run
from assay.agent.model import (
    MISSING, ErrorEvent, InputOption, InputRequest, InputRequested, InputResponse, Message, OperationFinished,
    OperationStarted, StreamEvent, Thinking, ToolOperation, Turn, TurnInput, Usage, unavailable,
)
from assay.agent.session import SessionSlot, create_session_slot

__all__ = [
    "DeltaStream", "FrameStreamError", "Pause", "ResumedStream", "SSEFrame", "SSEFrames", "drive_frame_stream",
    "resume_frame_stream", "sse_json_frames",
]

# Said once a run too, not only in `assay agent show`.
say_once_a_run("frame-stream-abandoned", "an answer may have been meant")

_PAUSED = create_session_slot("paused frame stream")
_EXCERPT = 120


class FrameStreamError(Exception):
    """The frames cannot be trusted: `drive_frame_stream` makes it a send failure with this `code`."""

    def __init__(self, message: str, *, code: str = "agent-stream-broken") -> None:
        super().__init__(message)
        self.code = code


class SSEFrame(NamedTuple):
    """One event of `sse_json_frames(body, events=True)`: its `event:` name (`message` when it has none) and
    its data, parsed."""

    event: str
    data: Any


def _excerpt(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    elif not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return repr(value if len(value) <= _EXCERPT else value[:_EXCERPT] + "…")


@functools.cache
def _decoder_class() -> type:
    """assay's SSE decoder (`assay.judge.openai_http`, which imports aiohttp: read on first use), keeping each
    event's `event:` name too."""
    from assay.judge.openai_http import EventStreamDecoder

    class NamedEventDecoder(EventStreamDecoder):
        __slots__ = ("_event", "_names")

        def __init__(self) -> None:
            super().__init__()
            self._event = ""
            self._names: list[str] = []

        def _line(self, line: bytes, events: list[bytes]) -> None:
            if line.startswith(b"event:"):
                value = line[6:]
                self._event = (value[1:] if value.startswith(b" ") else value).decode("utf-8", "replace")
                return
            before = len(events)
            super()._line(line, events)
            if len(events) > before:
                self._names.append(self._event or "message")
            if not line:  # an event's end: its name does not carry over to the next one
                self._event = ""

        def named(self, events: list[bytes]) -> list[tuple[str, bytes]]:
            names, self._names = self._names, []
            names += [self._event or "message"] * (len(events) - len(names))  # the last one, completed by the end
            return list(zip(names, events))

    return NamedEventDecoder


class SSEFrames:
    """The JSON frames of one server-sent-event body (see `sse_json_frames`): an async iterator that owns the body.

    `frames` counts the frames read so far. `aclose()` (or leaving it unreferenced) closes the body: an aiohttp or
    httpx response is closed, so its connection is not left open."""

    def __init__(self, body: Any, *, done: str | None, require_done: bool, events: bool) -> None:
        self.frames = 0
        self._body = body
        self._done = done.encode() if done is not None else None
        self._require_done = require_done
        self._events = events
        self._queue: collections.deque[tuple[str, bytes]] = collections.deque()
        self._decoder: Any = None
        self._chunks: Any = None
        self._close_sync: Callable[[], Any] | None = None
        self._close_async: Callable[[], Any] | None = None
        self._release: Callable[[], Any] | None = None
        self._status_checked = False
        self._ended = False
        self._closed = False
        self._open(body)

    def _open(self, body: Any) -> None:
        if inspect.isawaitable(body) and not hasattr(body, "__aiter__"):  # (`http.post(...)` without its await)
            closing = getattr(body, "close", None) or getattr(getattr(body, "_coro", None), "close", None)
            if callable(closing):
                closing()  # (never awaited: closed, so Python does not warn about it)
            raise TypeError(f"sse_json_frames takes the response, got {type(body).__name__}, which was not awaited: "
                            "write sse_json_frames(await http.post(...))")
        if isinstance(body, collections.abc.Mapping):  # (a parsed JSON body: its keys would be read as chunks)
            raise TypeError("sse_json_frames takes the response whose body is server-sent events, not a parsed JSON "
                            f"body ({type(body).__name__} with keys {', '.join(map(str, list(body)[:5]))}); pass the "
                            "response itself, unread")
        if isinstance(body, (bytes, bytearray, memoryview, str)):
            self._chunks = _iterate([body])
        elif hasattr(body, "aiter_bytes"):  # an httpx response (first: its `content` raises until it is read)
            self._chunks = body.aiter_bytes().__aiter__()
            self._close_async = body.aclose
        elif hasattr(body, "release") and hasattr(getattr(body, "content", None), "iter_any"):  # an aiohttp response
            self._chunks = body.content.iter_any().__aiter__()
            self._close_sync, self._release = body.close, body.release
        elif hasattr(body, "iter_any"):  # an aiohttp StreamReader (`response.content`): it cannot close its connection
            self._chunks = body.iter_any().__aiter__()
        elif hasattr(body, "__aiter__"):
            self._chunks = body.__aiter__()
            self._close_async = getattr(self._chunks, "aclose", None)
        elif hasattr(body, "__iter__"):
            self._chunks = _iterate(body)
        else:
            raise TypeError(f"sse_json_frames takes an HTTP response (aiohttp or httpx), its body as async or plain "
                            f"chunks of bytes, or bytes, got {type(body).__name__}")

    def __aiter__(self) -> SSEFrames:
        return self

    async def __anext__(self) -> Any:
        if not self._status_checked:
            self._status_checked = True
            await self._check_status()
        while not self._queue:
            if self._ended:
                raise StopAsyncIteration
            await self._read()
        event, data = self._queue.popleft()
        if self._done is not None and data.strip() == self._done:
            self._ended = True
            self._queue.clear()
            await self.aclose(finished=True)
            raise StopAsyncIteration
        frame = self._parse(data)
        self.frames += 1
        return SSEFrame(event, frame) if self._events else frame

    async def _read(self) -> None:
        if self._decoder is None:
            self._decoder = _decoder_class()()
        try:
            chunk = await self._chunks.__anext__()
        except StopAsyncIteration:
            self._ended = True
            self._queue.extend(self._decoder.named(self._decoder.finish()))
            if not self._queue:
                await self.aclose(finished=True)
                if self._require_done:
                    raise FrameStreamError(f"the stream ended after {self.frames} frame(s) without "
                                           f"{self._done.decode() if self._done else 'its end'}") from None
            return
        except Exception as error:  # noqa: BLE001 - a transport break, said with how far the stream got
            await self.aclose()
            raise FrameStreamError(f"the stream broke after {self.frames} frame(s): {type(error).__name__}: "
                                   f"{error}") from error
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        self._queue.extend(self._decoder.named(self._decoder.feed(bytes(chunk))))

    def _parse(self, data: bytes) -> Any:
        where = f"frame {self.frames + 1} of the stream"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            self._abandon()
            raise FrameStreamError(f"{where} is not UTF-8 (byte 0x{data[error.start]:02x} at {error.start}): "
                                   f"{_excerpt(data)}; the server must send UTF-8") from None
        try:
            return json.loads(text)
        except ValueError as error:
            self._abandon()
            raise FrameStreamError(f"{where} is not JSON ({error}): {_excerpt(text)}") from None

    async def _check_status(self) -> None:
        status = getattr(self._body, "status", getattr(self._body, "status_code", None))
        if isinstance(status, int) and not 200 <= status < 300:
            try:
                raw = await self._body.aread() if hasattr(self._body, "aread") else await self._body.read()
            except Exception:  # noqa: BLE001 - the status says enough without its body
                raw = b""
            await self.aclose()
            raise FrameStreamError(f"the stream's response is HTTP {status}: {_excerpt(raw)}", code="agent-http-error")

    def _abandon(self) -> None:
        """Stop reading: the frames cannot go on after one that is broken."""
        self._ended = True
        self._queue.clear()
        self.close_now()

    def close_now(self) -> None:
        """Close the body without waiting: an aiohttp response at once, an async body on the running loop."""
        if self._closed:
            return
        self._closed = True
        if self._close_sync is not None:
            self._close_sync()
        if self._close_async is not None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            closing = self._close_async()
            if inspect.isawaitable(closing):
                loop.create_task(_quietly(closing))

    async def aclose(self, *, finished: bool = False) -> None:
        """Close the body (idempotent). `finished`: read to its end, so its connection may be kept for reuse."""
        if self._closed:
            return
        self._closed = True
        if finished and self._release is not None:
            self._release()
        elif self._close_sync is not None:
            self._close_sync()
        if self._close_async is not None:
            closing = self._close_async()
            if inspect.isawaitable(closing):
                await _quietly(closing)

    @property
    def closed(self) -> bool:
        return self._closed


async def _quietly(closing: Any) -> None:
    try:
        await closing
    except Exception:  # noqa: BLE001 - closing a body that already broke: nothing left to say
        pass


async def _iterate(chunks: Any) -> AsyncIterator[Any]:
    for chunk in chunks:
        yield chunk


def sse_json_frames(
    body: Any, *, done: str | None = "[DONE]", require_done: bool = False, events: bool = False,
) -> SSEFrames:
    """The JSON frames of a server-sent-event `body`, as they arrive: `async for frame in sse_json_frames(response)`.

    `body` is an aiohttp `ClientResponse` (closed when the frames end or are closed), an httpx `Response` opened
    with `stream=True`, an aiohttp `StreamReader`, any async or plain iterable of bytes, or bytes. The event
    whose data is `done` (`[DONE]`; None: no sentinel) ends the frames, and the rest of the body is not read;
    `require_done=True` makes a body that ends without it a `FrameStreamError` (a stream cut short).
    `events=True` yields `SSEFrame(event, data)` with each event's `event:` name, for services that name their
    events instead of typing their JSON. An HTTP error status, a frame that is not UTF-8 JSON, or a broken
    connection raises `FrameStreamError` naming the frame."""
    if done is not None and (not isinstance(done, str) or not done.strip()):
        raise TypeError(f"sse_json_frames done takes the data that ends the stream (\"[DONE]\") or None, got {done!r}")
    return SSEFrames(body, done=done, require_done=bool(require_done), events=bool(events))


# -- DeltaStream ----------------------------------------------------------------------------------


class _Text:
    __slots__ = ("kind", "parts")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.parts: list[str] = []


class _Call:
    __slots__ = ("id", "name", "parts", "input")

    def __init__(self, call_id: str, name: str) -> None:
        self.id = call_id
        self.name = name
        self.parts: list[str] = []
        self.input: Any = MISSING  # set whole by tool_input


_STATUSES = ("completed", "failed", "rejected")
_USAGE_FIELDS = tuple(field.name for field in dataclasses.fields(Usage))


class DeltaStream:
    """A turn built from deltas, in the order each piece began.

    - `text(delta, id=None)`: assistant text. Deltas without an id continue the message in progress, which
      ends when anything else is recorded; deltas with an id belong to that message wherever they come.
    - `reasoning(delta, id=None)`: the same for `Thinking`.
    - `tool_call(id, name, arguments=None)`, then `tool_arguments(id, delta)`: a tool call whose input is its
      argument text, parsed as JSON when the turn is made (text that is no JSON is kept as it came, an empty
      one is `{}`); or `tool_input(id, value)` for an input that arrives whole.
    - `tool_result(id, output, status="completed")`: its end (`failed`, or `rejected` for a refused call). A
      call with no result stays pending; a result for a call this stream never started (one started before a
      pause, in the turn before) is recorded as the end of that call.
    - `usage(input_tokens=…, output_tokens=…, …)`: `Usage` fields; the latest value of each wins, as streams
      report running totals. A stream that reports none says its turn's usage is unavailable.
    - `error(message)`: an `ErrorEvent`, and the turn is `failed` (the service reported a failure).
    - `end()`: the stream's own end was seen; with `require_end=True`, `turn()` without it is a
      `FrameStreamError` (a stream cut short).

    `DeltaStream(read)` with `read(stream, frame)` (a plain function, not `async def`), which makes the calls one
    frame means, is a reducer for `drive_frame_stream` (`feed(frame)` calls it); or subclass it and write `feed`
    yourself. Deltas are strings; a call or result without an id is a `FrameStreamError`."""

    def __init__(self, read: Callable[[DeltaStream, Any], Any] | None = None, *, require_end: bool = False) -> None:
        if read is not None and not callable(read):
            raise TypeError(f"DeltaStream read takes a function (stream, frame) -> None, got {type(read).__name__}")
        if inspect.iscoroutinefunction(read) or inspect.isasyncgenfunction(read):
            raise TypeError(f"DeltaStream read must be a plain function (def, not async def): it is called for each "
                            f"frame and not awaited, so {getattr(read, '__qualname__', 'it')} would record nothing")
        self._read = read
        self.require_end = require_end
        self.frames = 0
        self.ended = False
        self.failed = False
        self._items: list[Any] = []
        self._open: _Text | None = None  # the text or reasoning without id that deltas continue
        self._by_id: dict[tuple[str, str], _Text] = {}
        self._calls: dict[str, _Call] = {}
        self._finished: set[str] = set()
        self._usage: dict[str, Any] = {}

    def feed(self, frame: Any) -> None:
        if self._read is None:
            raise TypeError("DeltaStream.feed needs a read function: DeltaStream(read) with read(stream, frame) "
                            "calling stream.text(...), stream.tool_call(...), …; or subclass DeltaStream and write feed")
        self.frames += 1
        made = self._read(self, frame)
        if inspect.isawaitable(made):
            getattr(made, "close", lambda: None)()  # (never awaited: closed, so Python does not warn about it)
            raise TypeError("DeltaStream read returned an awaitable: it must be a plain function (def, not async def), "
                            "since it is called for each frame and not awaited")

    def _add(self, item: Any) -> None:
        self._open = None
        self._items.append(item)

    def _delta(self, kind: str, delta: Any, part_id: Any) -> None:
        if delta is None or delta == "":
            return
        _check_text(f"DeltaStream.{'text' if kind == 'text' else 'reasoning'}", delta)
        if part_id is not None:
            key = (kind, str(part_id))
            part = self._by_id.get(key)
            if part is None:
                part = self._by_id[key] = _Text(kind)
                self._add(part)
        else:
            part = self._open
            if part is None or part.kind != kind:
                part = _Text(kind)
                self._add(part)
                self._open = part
        part.parts.append(str(delta))

    def text(self, delta: str | None, *, id: Any = None) -> None:  # noqa: A002 - the protocols' word
        self._delta("text", delta, id)

    def reasoning(self, delta: str | None, *, id: Any = None) -> None:  # noqa: A002
        self._delta("reasoning", delta, id)

    def tool_call(self, id: Any, name: str, arguments: str | None = None) -> None:  # noqa: A002
        if name is not None and not isinstance(name, str):
            raise TypeError(f"DeltaStream.tool_call takes (id, name, arguments=None), its name a str; got name "
                            f"{type(name).__name__} {name!r:.60}")
        if arguments:
            _check_text("DeltaStream.tool_call arguments", arguments)
        if id is None or id == "":
            raise FrameStreamError(f"frame {self.frames} starts a tool call {name!r} without an id")
        call_id = str(id)
        call = self._calls.get(call_id)
        if call is None:
            call = self._calls[call_id] = _Call(call_id, str(name or ""))
            self._add(call)
        elif name and not call.name:
            call.name = str(name)
        if arguments:
            call.parts.append(str(arguments))

    def _call(self, id: Any, what: str) -> _Call:  # noqa: A002
        if id is None or id == "":
            raise FrameStreamError(f"frame {self.frames} has {what} for a tool call without an id")
        call = self._calls.get(str(id))
        if call is None:
            raise FrameStreamError(f"frame {self.frames} has {what} for tool call {str(id)!r}, which the stream never "
                                   "started (call stream.tool_call(id, name) first)")
        return call

    def tool_arguments(self, id: Any, delta: str | None) -> None:  # noqa: A002
        call = self._call(id, "arguments")
        if delta:
            _check_text("DeltaStream.tool_arguments", delta)
            call.parts.append(delta)

    def tool_input(self, id: Any, value: Any) -> None:  # noqa: A002
        self._call(id, "an input").input = value

    def tool_result(self, id: Any, output: Any = MISSING, status: str = "completed") -> None:  # noqa: A002
        if status not in _STATUSES:
            raise ValueError(f"tool_result status must be completed, failed or rejected, got {status!r}")
        if id is None or id == "":
            raise FrameStreamError(f"frame {self.frames} has a tool result without an id")
        call_id = str(id)
        if call_id in self._finished:
            return
        self._finished.add(call_id)
        self._add(OperationFinished(call_id, status, output, "tool"))

    def usage(self, **fields: Any) -> None:
        unknown = sorted(set(fields) - set(_USAGE_FIELDS))
        if unknown:
            raise TypeError(f"DeltaStream.usage takes {', '.join(_USAGE_FIELDS)}; got {', '.join(unknown)}")
        self._usage.update({key: value for key, value in fields.items() if value is not None})

    def error(self, message: str) -> None:
        self.failed = True
        self._add(ErrorEvent(str(message)))

    def end(self) -> None:
        self.ended = True

    def turn(self) -> Turn:
        if self.require_end and not self.ended:
            said = "".join("".join(item.parts) for item in self._items if isinstance(item, _Text) and item.kind == "text")
            received = f"; the partial text was {said[:200]!r}" if said else ""
            raise FrameStreamError(f"the stream ended after {self.frames} frame(s) before its end{received}")
        events: list[StreamEvent] = []
        for item in self._items:
            if isinstance(item, _Text):
                text = "".join(item.parts)
                if text:
                    events.append(Message(text) if item.kind == "text" else Thinking(text))
            elif isinstance(item, _Call):
                events.append(OperationStarted(item.id, ToolOperation(item.name, _arguments(item))))
            else:
                events.append(item)
        usage = Usage(**self._usage) if self._usage else None
        coverage = None if usage is not None else {"usage": unavailable("the stream reported no token usage")}
        return Turn(events, "failed" if self.failed else "completed", usage=usage, evidence_coverage=coverage)


def _check_text(what: str, delta: Any) -> None:
    if not isinstance(delta, str):
        fix = ("for an input that arrives whole, call stream.tool_input(id, value)" if "argument" in what else
               "pass the frame's text field, like stream.text(frame[\"delta\"])")
        raise TypeError(f"{what} takes the text of one delta (a str), got {type(delta).__name__} {_excerpt(delta)}: "
                        f"{fix}")


def _arguments(call: _Call) -> Any:
    if call.input is not MISSING:
        return call.input
    text = "".join(call.parts)
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text  # kept as it came: the call's input is what the model wrote


# -- driving frames into a turn, and pausing ------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Pause:
    """What `on_frame` returns to end the turn `waiting` on one input request, the stream kept open.

    `id` is the request's id (stable: the answer is matched to it), `action` what waits (a tool's name),
    `options` the answers offered (`InputOption`s or plain ids, like `("approve", "deny")`), `prompt` and
    `input` what a person would be shown."""

    id: str
    action: str | None = None
    options: tuple[InputOption | str, ...] = ()
    prompt: str | None = None
    input: Any = MISSING

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise TypeError(f"Pause id must be the request's non-empty id, got {self.id!r}")
        for name in ("action", "prompt"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Pause {name} takes a str or None, got {type(value).__name__} {value!r:.60}")
        if isinstance(self.options, (str, InputOption)) or not isinstance(self.options, (tuple, list)):
            raise TypeError(f"Pause options takes a tuple of option ids or InputOption(id, label)s, like "
                            f"options=(\"approve\", \"deny\"); got {type(self.options).__name__} {self.options!r:.60}")
        options = tuple(InputOption(option) if isinstance(option, str) else option for option in self.options)
        for option in options:
            if not isinstance(option, InputOption):
                raise TypeError(f"Pause options are option ids or InputOption(id, label)s, got {option!r}")
        object.__setattr__(self, "options", options)

    def request(self) -> InputRequest:
        return InputRequest(id=self.id, prompt=self.prompt, action=self.action, input=self.input, options=self.options)


class _Paused:
    """A stream paused in a session slot. When its session line ends (the attempt's end) it closes its body."""

    __slots__ = ("frames", "pause", "__weakref__")

    def __init__(self, frames: Any, pause: Pause) -> None:
        self.frames = frames
        self.pause = pause

    def close_now(self) -> None:
        frames, self.frames = self.frames, None
        if frames is None:
            return
        close_now = getattr(frames, "close_now", None)
        if close_now is not None:
            close_now()
            return
        aclose = getattr(frames, "aclose", None)  # an async generator: closed on the running loop
        if aclose is not None:
            try:
                asyncio.get_running_loop().create_task(_quietly(aclose()))
            except RuntimeError:
                pass

    async def aclose(self) -> None:
        frames, self.frames = self.frames, None
        if frames is not None:
            await _aclose(frames)

    def session_ended(self) -> None:  # the attempt ended with the stream still paused (AgentSession.end)
        self.close_now()

    def __del__(self) -> None:  # a session dropped without ending (a run of your own): closed all the same
        self.close_now()


async def _aclose(frames: Any) -> None:
    aclose = getattr(frames, "aclose", None)
    if aclose is not None:
        await _quietly(aclose())


@dataclasses.dataclass(frozen=True, slots=True)
class ResumedStream:
    """A paused stream handed back with its answer: drive `frames` on once the service has the answer."""

    frames: Any
    pause: Pause
    response: InputResponse

    @property
    def answer(self) -> str:
        """The chosen option's id, or the free text answered."""
        return self.response.option_id if self.response.option_id is not None else (self.response.text or "")


def _slot(slot: SessionSlot[Any] | None) -> SessionSlot[Any]:
    if slot is None:
        return _PAUSED
    if not isinstance(slot, SessionSlot):
        raise TypeError(f"slot takes a slot from create_session_slot(name), got {type(slot).__name__}")
    return slot


async def drive_frame_stream(
    frames: Any,
    reducer: Any,
    ctx: AgentContext,
    on_frame: Callable[[Any], Any] | None = None,
    *,
    slot: SessionSlot[Any] | None = None,
) -> Turn:
    """The turn the `frames` (an async iterator: `sse_json_frames(...)`, a resumed stream's `frames`, your own)
    add up to: each frame is given to `reducer.feed(frame)`, then to `on_frame(frame)` (sync or async), and the
    turn is `reducer.turn()` once the frames end.

    When `on_frame` returns a `Pause`, the turn ends there as `waiting`, the reducer's events followed by one
    `input.requested` for the pause (without usage, and not marked as missing it: the stream reports it with
    the rest, in the turn that reads on), and the frames are kept, unread, in the session line (in `slot`, a private
    one by default) for `resume_frame_stream`. Otherwise the frames are closed however the turn ends. A frame
    stream that breaks, or a `FrameStreamError` from the reducer, is a `SendFailure`."""
    if not callable(getattr(reducer, "feed", None)) or not callable(getattr(reducer, "turn", None)):
        raise TypeError(f"drive_frame_stream reducer must have feed(frame) and turn(), like DeltaStream(read); got "
                        f"{type(reducer).__name__}")
    if on_frame is not None and not callable(on_frame):
        raise TypeError(f"drive_frame_stream on_frame takes a function (frame) -> Pause | None, got {type(on_frame).__name__}")
    if not hasattr(frames, "__aiter__"):
        hint = ": pass resumed.frames" if isinstance(frames, ResumedStream) else ""
        raise TypeError(f"drive_frame_stream frames must be an async iterator of frames, like "
                        f"sse_json_frames(response); got {type(frames).__name__}{hint}")
    slot = _slot(slot)
    count = 0
    kept = False
    try:
        iterator = frames.__aiter__()
        while True:
            try:
                frame = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except FrameStreamError as error:
                raise SendFailure(str(error), acceptance="started", code=error.code) from None
            except Exception as error:  # noqa: BLE001 - any iterator's break: the turn cannot be trusted
                raise SendFailure(f"the frame stream broke after {count} frame(s): {type(error).__name__}: {error}",
                                  acceptance="started", code="agent-stream-broken") from error
            count += 1
            try:
                reducer.feed(frame)
            except FrameStreamError as error:
                raise SendFailure(str(error), acceptance="started", code=error.code) from None
            except Exception as error:
                error.add_note(f"(while {type(reducer).__name__} read frame {count}: {_excerpt(frame)})")
                raise
            if on_frame is None:
                continue
            decided = on_frame(frame)
            if inspect.isawaitable(decided):
                decided = await decided
            if decided is None:
                continue
            if not isinstance(decided, Pause):
                raise TypeError(f"on_frame returns Pause(id, action, options) to pause the turn, or None, got "
                                f"{type(decided).__name__} {decided!r:.60}")
            turn = _made(reducer)
            events = [*turn.events, InputRequested(decided.request())]
            coverage = turn.evidence_coverage
            if turn.usage is None and coverage and "usage" in coverage:
                # The stream has not reported its usage yet: it comes with the turn that reads the rest.
                coverage = {channel: value for channel, value in coverage.items() if channel != "usage"} or None
            ctx.session.set(slot, _Paused(iterator, decided))
            kept = True
            return dataclasses.replace(turn, events=events, status="waiting", evidence_coverage=coverage)
        return _made(reducer)
    finally:
        if not kept:
            await _aclose(frames)


def _made(reducer: Any) -> Turn:
    try:
        turn = reducer.turn()
    except FrameStreamError as error:
        raise SendFailure(str(error), acceptance="started", code=error.code) from None
    if not isinstance(turn, Turn):
        raise TypeError(f"{type(reducer).__name__}.turn() returned {type(turn).__name__}, not a Turn")
    return turn


async def resume_frame_stream(
    turn_input: TurnInput, ctx: AgentContext, *, slot: SessionSlot[Any] | None = None,
) -> ResumedStream | None:
    """The stream this session line paused on, with this turn's answer to it (`t.respond(...)`), taken from
    the line; None when no stream is paused.

    A turn that answers nothing (a new message) closes the paused stream (warned as `frame-stream-abandoned`)
    and gets None: send the message as a new request. A turn that answers another request than the pause's,
    or more than it, closes the stream and is a `SendFailure`: the stream can take one answer, to its pause."""
    held = ctx.session.take(_slot(slot))
    if held is None:
        return None
    if not isinstance(held, _Paused) or held.frames is None:
        raise TypeError(f"the session slot holds {type(held).__name__}, not a stream drive_frame_stream paused: "
                        "give drive_frame_stream and resume_frame_stream a slot of their own")
    pause = held.pause
    if not turn_input.responses:
        await held.aclose()
        ctx.diagnostic("frame-stream-abandoned", "warning",
                       f"the stream paused on request {pause.id!r} was closed unanswered: the next turn sent a new "
                       "message instead of answering it with t.respond(...)")
        return None
    answer = [response for response in turn_input.responses if response.request_id == pause.id]
    others = [response.request_id for response in turn_input.responses if response.request_id != pause.id]
    if not answer or others:
        await held.aclose()
        given = ", ".join(repr(response.request_id) for response in turn_input.responses)
        raise SendFailure(f"the stream is paused on request {pause.id!r}, but the turn answered {given}; the paused "
                          f"stream takes one answer, to {pause.id!r} (t.respond(...) right after the waiting turn), so "
                          "it was closed", acceptance="rejected", retried=True)
    frames, held.frames = held.frames, None  # handed over: the holder no longer closes it when dropped
    return ResumedStream(frames, pause, answer[0])
