"""A content-addressed cache for model calls: the key is a hash of model, prompt and call input.

A three-method storage interface (get/put/delete) with a directory store and a read-only wrapper,
composed rather than configured with flags.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Protocol

from assay.core.fsutil import write_atomically

__all__ = ["CallCache", "DirectoryCallCache", "MemoryCallCache", "call_cache_key"]

_KEY = re.compile(r"[0-9a-f]{64}")


def call_cache_key(model: str, prompt: Any, call_input: Any) -> str:
    """SHA-256 over the canonical JSON of (model, prompt, call input); equal calls share a key."""
    payload = json.dumps(
        {"model": model, "prompt": prompt, "input": call_input},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CallCache(Protocol):
    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, value: bytes) -> None: ...

    def delete(self, key: str) -> None: ...


class MemoryCallCache:
    """An in-process store (tests, and runs that want dedup without touching disk)."""

    def __init__(self) -> None:
        self._values: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        return self._values.get(key)

    def put(self, key: str, value: bytes) -> None:
        self._values[key] = bytes(value)

    def delete(self, key: str) -> None:
        self._values.pop(key, None)


class DirectoryCallCache:
    """One file per key under `<root>/<first two hex digits>/<key>`, replaced atomically."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        # Keys come from call_cache_key; refusing anything else keeps a key from naming a path.
        if not _KEY.fullmatch(key):
            raise ValueError(f"cache key must be 64 lowercase hex digits, got {key!r}")
        return self.root / key[:2] / key

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, key: str, value: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, value)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

