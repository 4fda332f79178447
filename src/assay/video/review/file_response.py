"""Serve a file over HTTP with validators, conditional requests and single byte ranges.

Precedence follows RFC 9110 as GlassKit's review server applies it (spec/video.md §22.3): If-Match,
else If-Unmodified-Since (412); then If-None-Match, else If-Modified-Since (304); then Range (206/416).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from assay.core.fsutil import sha256_file
from assay.video.review.frames import FileIdentity, file_identity
from assay.web.app import ApiError, error_response

__all__ = ["FileDigests", "file_response"]

_CHUNK_BYTES = 256 * 1024
_ENTITY_TAG = re.compile(r'\s*(W/)?("[^"]*")\s*(?:,|$)')
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


class FileDigests:
    """SHA-256 of files, remembered per file identity so a video is hashed once while unchanged."""

    def __init__(self) -> None:
        self._known: dict[tuple[Path, FileIdentity], str] = {}

    async def sha256(self, path: Path, identity: FileIdentity) -> str:
        key = (path, identity)
        if key not in self._known:
            self._known[key] = await anyio.to_thread.run_sync(sha256_file, path)
        return self._known[key]


def _entity_tags(header: str) -> list[tuple[bool, str]] | None:
    """(weak, opaque tag) pairs of an If-Match/If-None-Match list; None for `*`."""
    if header.strip() == "*":
        return None
    tags = []
    position = 0
    while position < len(header):
        match = _ENTITY_TAG.match(header, position)
        if match is None:
            break
        tags.append((match.group(1) is not None, match.group(2)))
        position = match.end()
    return tags


def _single_date(request: Request, name: str) -> float | None:
    values = request.headers.getlist(name)
    if len(values) != 1:
        return None
    try:
        return parsedate_to_datetime(values[0]).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _byte_range(header: str, size: int) -> tuple[int, int] | None:
    """Inclusive (first, last) of one satisfiable range; None when the header cannot be honoured."""
    match = _RANGE.fullmatch(header.strip())
    if match is None or size == 0:
        return None
    first_text, last_text = match.groups()
    if not first_text and not last_text:
        return None
    if not first_text:
        suffix = int(last_text)
        if suffix == 0:
            return None
        return max(0, size - suffix), size - 1
    first = int(first_text)
    last = int(last_text) if last_text else size - 1
    if first >= size or last < first:
        return None
    return first, min(last, size - 1)


class _FileSlice:
    """An ASGI response streaming `length` bytes of a file from `offset` (nothing for HEAD)."""

    def __init__(self, path: Path, offset: int, length: int, status: int, headers: Mapping[str, str], body: bool) -> None:
        self.path, self.offset, self.length, self.status, self.body = path, offset, length, status, body
        self.headers = [(key.lower().encode("latin-1"), value.encode("latin-1")) for key, value in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        if not self.body or self.length == 0:
            await send({"type": "http.response.body", "body": b""})
            return
        remaining = self.length
        try:
            with open(self.path, "rb") as stream:
                stream.seek(self.offset)
                while remaining > 0:
                    chunk = await anyio.to_thread.run_sync(stream.read, min(_CHUNK_BYTES, remaining))
                    if not chunk:
                        break
                    remaining -= len(chunk)
                    await send({"type": "http.response.body", "body": chunk, "more_body": remaining > 0})
        except OSError:
            pass  # the browser went away mid-stream: nothing to report
        if remaining > 0:
            try:
                await send({"type": "http.response.body", "body": b""})
            except OSError:
                pass


async def file_response(request: Request, path: Path, content_type: str, digests: FileDigests) -> Any:
    """The response for GET/HEAD of `path` honouring validators, preconditions and Range."""
    try:
        identity = file_identity(path)
    except OSError:
        raise ApiError(404, "video_unavailable", "The video file is no longer available.") from None
    size = identity[2]
    etag = f'"sha256-{await digests.sha256(path, identity)}"'
    last_modified = int(min(identity[3] / 1e9, time.time()))
    validators = {
        "etag": etag,
        "last-modified": formatdate(last_modified, usegmt=True),
        "cache-control": "private, max-age=0",
        "accept-ranges": "bytes",
    }

    if_match = request.headers.get("if-match")
    if if_match is not None:
        tags = _entity_tags(if_match)
        if tags is not None and not any(not weak and tag == etag for weak, tag in tags):
            return _precondition_failed(validators)
    else:
        since = _single_date(request, "if-unmodified-since")
        if since is not None and last_modified > since:
            return _precondition_failed(validators)

    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        tags = _entity_tags(if_none_match)
        if tags is None or any(tag == etag.removeprefix("W/") for _, tag in tags):
            return _FileSlice(path, 0, 0, 304, validators, body=False)
    else:
        since = _single_date(request, "if-modified-since")
        if since is not None and last_modified <= since:
            return _FileSlice(path, 0, 0, 304, validators, body=False)

    headers = {**validators, "content-type": content_type}
    send_body = request.method != "HEAD"
    range_header = request.headers.get("range")
    if range_header is not None and request.method == "GET":
        if_range = request.headers.get("if-range")
        if if_range is None or if_range.strip() == etag:
            selected = _byte_range(range_header, size)
            if selected is None:
                error = ApiError(
                    416, "range_not_satisfiable", f"The requested range cannot be served from {size} bytes.",
                    headers={**validators, "content-range": f"bytes */{size}"},
                )
                return error_response(error)
            first, last = selected
            headers |= {"content-range": f"bytes {first}-{last}/{size}", "content-length": str(last - first + 1)}
            return _FileSlice(path, first, last - first + 1, 206, headers, send_body)
    headers["content-length"] = str(size)
    return _FileSlice(path, 0, size, 200, headers, send_body)


def _precondition_failed(validators: Mapping[str, str]) -> Any:
    return error_response(
        ApiError(412, "precondition_failed", "The video changed since it was last fetched.", headers=dict(validators))
    )
