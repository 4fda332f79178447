"""Reading a large JSON document piece by piece: the keys of an object and the items of an array,
each value decoded on its own, so a 100,000-sample log is never held whole.

Values are decoded by the standard library's C scanner (`raw_decode`) from a buffer that grows
only while a value is incomplete; a value larger than `DESCEND_ABOVE` characters that is only to
be skipped is walked into instead of buffered. Positions in errors are characters from the start.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

__all__ = ["JsonStream", "JsonStreamError", "top_level_keys"]

CHUNK = 1 << 20
DESCEND_ABOVE = 8 << 20
_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()
CUT_SHORT = ": the file is cut short (a copy or download that did not finish?); import the whole file"


class JsonStreamError(ValueError):
    """The document is not the JSON it should be; the message says where."""


class JsonStream:
    """A cursor over one JSON document in a text file."""

    def __init__(self, handle: TextIO, name: str) -> None:
        self._handle = handle
        self._name = name
        self._buffer = ""
        self._position = 0
        self._consumed = 0  # characters dropped from the front of the buffer
        self._ended = False

    @classmethod
    def open(cls, path: Path) -> JsonStream:
        # utf-8-sig: a byte-order mark some Windows tools write is not part of the document
        return cls(open(path, encoding="utf-8-sig", newline=""), str(path))

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> JsonStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the buffer ------------------------------------------------------------------------

    def _more(self) -> bool:
        if self._ended:
            return False
        try:
            chunk = self._handle.read(CHUNK)
        except UnicodeDecodeError as error:
            raise JsonStreamError(f"{self._name}: not JSON text: its bytes are not UTF-8 ({error.reason}), as in a binary "
                                  "file or one another tool wrote") from None
        if not chunk:
            self._ended = True
            return False
        if self._position > CHUNK:  # drop what was read already
            self._consumed += self._position
            self._buffer = self._buffer[self._position:]
            self._position = 0
        self._buffer += chunk
        return True

    def where(self) -> int:
        return self._consumed + self._position

    def error(self, message: str) -> JsonStreamError:
        cut = CUT_SHORT if self._ended and self._position >= len(self._buffer) else ""  # (where the file ends)
        return JsonStreamError(f"{self._name}: {message} (at character {self.where()}){cut}")

    def _cut_short(self) -> str:
        """`CUT_SHORT` when the value that did not decode goes on to the end of the file unfinished (the standard
        library's message, `Expecting ',' delimiter`, does not tell that from a malformed value)."""
        import orjson

        try:
            orjson.loads(self._buffer[self._position:])
        except orjson.JSONDecodeError as error:
            return CUT_SHORT if str(error).startswith("unexpected end of data") else ""
        return ""

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end of the file)."""
        while True:
            buffer, position = self._buffer, self._position
            while position < len(buffer) and buffer[position] in _WHITESPACE:
                position += 1
            self._position = position
            if position < len(buffer):
                return buffer[position]
            if not self._more():
                return ""

    def _expect(self, character: str) -> None:
        found = self.peek()
        if found != character:
            raise self.error(f"expected {character!r}, found {found or 'the end of the file'!r}")
        self._position += 1

    # -- values ----------------------------------------------------------------------------

    def value(self) -> Any:
        """Decode the next value whole."""
        if not self.peek():
            raise self.error("expected a value, found the end of the file")
        while True:
            try:
                value, end = _DECODER.raw_decode(self._buffer, self._position)
            except json.JSONDecodeError as error:
                # An incomplete value fails like a malformed one; only more text can tell them apart.
                if self._more():
                    continue
                raise JsonStreamError(f"{self._name}: not valid JSON: {error.msg} (at character "
                                      f"{self._consumed + error.pos}){self._cut_short()}") from None
            # A number at the very end of the buffer may go on in the next chunk.
            if end == len(self._buffer) and not self._ended and self._more():
                continue
            self._position = end
            return value

    def skip(self) -> None:
        """Pass over the next value, walking into it when it is too large to buffer."""
        start = self.peek()
        if start not in ("{", "["):
            self.value()
            return
        if self._decoded_within(len(self._buffer) - self._position + DESCEND_ABOVE):
            return
        if start == "{":
            for _ in self.keys():
                self.skip()
        else:
            for _ in self.items(decode=False):
                pass

    def _decoded_within(self, length: int) -> bool:
        """Pass over the next value if it ends within `length` characters of here, reading more as
        needed; False, where it was, when it does not (or is malformed: walking into it says where)."""
        while True:
            try:
                _, end = _DECODER.raw_decode(self._buffer, self._position)
            except json.JSONDecodeError:
                if len(self._buffer) - self._position >= length or not self._more():
                    return False
                continue
            self._position = end
            return True

    def skip_small(self, budget: int) -> bool:
        """Pass over the next value if the document up to its end is at most `budget` characters
        long; False when it is not (a sniff stops there instead of reading a large log)."""
        self.peek()
        return self._decoded_within(max(0, budget - self.where()))

    def keys(self) -> Iterator[str]:
        """The keys of the object starting here; after each, the caller reads or skips its value."""
        self._expect("{")
        if self.peek() == "}":
            self._position += 1
            return
        while True:
            if self.peek() != '"':
                raise self.error("expected an object key")
            key = self.value()
            self._expect(":")
            yield key
            separator = self.peek()
            self._position += 1
            if separator == "}":
                return
            if separator != ",":
                raise self.error(f"expected ',' or '}}' after the value of {key!r}")

    def items(self, *, decode: bool = True) -> Iterator[Any]:
        """The items of the array starting here, each decoded (or skipped) in turn."""
        self._expect("[")
        if self.peek() == "]":
            self._position += 1
            return
        while True:
            if decode:
                yield self.value()
            else:
                self.skip()
                yield None
            separator = self.peek()
            self._position += 1
            if separator == "]":
                return
            if separator != ",":
                raise self.error("expected ',' or ']' between array items")

    def end(self) -> None:
        """Nothing but whitespace may follow the document."""
        if self.peek():
            raise self.error("unexpected text after the document")


def top_level_keys(path: Path, *, limit: int = 64, budget: int = 4 << 20) -> list[str]:
    """The first keys of the top-level object (values skipped), or [] when the file is not a JSON
    object; reading stops after `limit` keys or about `budget` characters, so sniffing a large log
    costs little."""
    found: list[str] = []
    try:
        with JsonStream.open(path) as stream:
            if stream.peek() != "{":
                return []
            for key in stream.keys():
                found.append(key)
                if len(found) >= limit or not stream.skip_small(budget):
                    break
    except (JsonStreamError, UnicodeDecodeError, OSError):
        return found
    return found
