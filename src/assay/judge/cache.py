"""A content-addressed cache for model calls: the key is a hash of model, prompt and call input.

A three-method storage interface (get/put/delete) with an in-memory and a directory store, and
`clear_directory_cache` (`assay judge cache clear`), which removes only the cache's own entries.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from assay.core.fsutil import write_atomically
from assay.judge.errors import JudgeCacheError

__all__ = ["CacheCleared", "CallCache", "DirectoryCallCache", "MemoryCallCache", "call_cache_key", "clear_directory_cache"]

_KEY = re.compile(r"[0-9a-f]{64}")
_SHARD = re.compile(r"[0-9a-f]{2}")
_ENTRY_TEMPORARY = re.compile(r"\.[0-9a-f]{64}\.[0-9a-f]{12}\.tmp")  # write_atomically's, of an entry


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
        path = self._path(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise self._unusable(path, "read", error) from None

    def put(self, key: str, value: bytes) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, value)
        except OSError as error:
            raise self._unusable(path, "written", error) from None

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            raise self._unusable(path, "written", error) from None

    def _unusable(self, path: Path, done: str, error: OSError) -> JudgeCacheError:
        # A file where a folder belongs, or a folder without permission, is the cache's state, not a bug nor a
        # failed model call: name what is in the way and what to do, not just the errno.
        blocker = next((folder for folder in (self.root, path.parent) if folder.exists() and not folder.is_dir()), None)
        problem = (f"{blocker} is a file where the cache keeps a folder" if blocker is not None
                   else f"{error.strerror or error} ({error.filename or path})")
        return JudgeCacheError(
            f"the judge cache {self.root} cannot be {done}: {problem}; move aside what is in the way, or fix the "
            "folder's permissions"
        )


@dataclass(frozen=True)
class CacheCleared:
    entries: int
    bytes: int


def clear_directory_cache(root: Path | str) -> CacheCleared:
    """Remove every entry of a `DirectoryCallCache` (and a killed write's temporary beside one).

    Only the cache's own names are touched — `<2 hex>/<64 hex>` — so a folder named by mistake
    (a project root, a home directory) loses nothing else; emptied shard folders are removed."""
    folder = Path(root)
    entries = size = 0
    try:
        shards = [path for path in folder.iterdir() if _SHARD.fullmatch(path.name) and path.is_dir() and not path.is_symlink()]
    except FileNotFoundError:
        return CacheCleared(0, 0)
    for shard in shards:
        for path in shard.iterdir():
            entry = _KEY.fullmatch(path.name) and path.name.startswith(shard.name)
            if not (entry or _ENTRY_TEMPORARY.fullmatch(path.name)) or not path.is_file() or path.is_symlink():
                continue
            size += path.stat().st_size
            path.unlink(missing_ok=True)
            entries += 1 if entry else 0
        try:
            shard.rmdir()
        except OSError:
            pass  # something else lives there: it stays
    return CacheCleared(entries, size)


def clear_cache_line(project: Path | None, cache_dir: Path | None) -> str:
    """`assay judge cache clear`: clear `cache_dir`, or the project's (default: the current folder's)
    `.assay/cache/judge`; what was done, in one line. A missing project, or both given, is a `UsageError`; a
    cache that cannot be cleared an `AssayError`."""
    from assay.core.record import state_folder
    from assay.errors import AssayError, UsageError

    if project is not None and cache_dir is not None:  # one of them would be ignored: say which to keep
        raise UsageError(f"give --project or --cache-dir, not both: --cache-dir {cache_dir} is a cache folder of its "
                         f"own, not one inside --project {project}", "--cache-dir")
    project = Path(".") if project is None else project.expanduser()  # `--project=~/shop` reaches us unexpanded; --cache-dir was expanded, this was refused
    if cache_dir is None and not project.is_dir():
        raise UsageError(f"--project {project}: {'not a folder' if project.exists() else 'no such folder'}")
    folder = cache_dir.expanduser() if cache_dir else state_folder(project) / "cache" / "judge"
    if cache_dir is not None and folder.exists() and not folder.is_dir():
        raise UsageError(f"--cache-dir {cache_dir}: not a folder")
    if cache_dir is not None and not folder.exists():  # a misspelt folder is not an empty cache
        raise UsageError(f"--cache-dir {cache_dir}: no such folder{_nearby_folder(folder)}", "--cache-dir")
    if folder.exists() and not folder.is_dir():  # runs cannot cache there either: "nothing to clear" would hide it
        raise AssayError(f"{folder} is a file, not the judge cache's folder, so no judge answer can be cached: "
                         "move the file aside")
    if not folder.is_dir():
        if cache_dir is None:  # (from a project's evals/, "nothing to clear" left the project's cache in place)
            _refuse_inside_a_cached_project(project)
        return f"No judge cache at {folder}; nothing to clear."
    try:
        cleared = clear_directory_cache(folder)
    except OSError as error:
        raise AssayError(f"could not clear the judge cache: {error}") from error
    return f"Removed {cleared.entries} cached judge answer(s) ({cleared.bytes / 1024:.1f} KiB) from {folder}."


def _refuse_inside_a_cached_project(project: Path) -> None:
    """A `UsageError` naming the folder above `project` that has a judge cache, when one has: `project` is inside it."""
    from assay.core.record import STATE_FOLDER
    from assay.errors import UsageError

    if (project / "pyproject.toml").is_file():  # a project of its own, whose cache is empty
        return
    for parent in project.resolve().parents:
        cache = parent / STATE_FOLDER / "cache" / "judge"
        if cache.is_dir() and not (parent / STATE_FOLDER).is_symlink():
            where = "the current folder" if project == Path(".") else f"--project {project}"
            raise UsageError(f"{where} has no judge cache, and is inside {parent}, which has one ({cache}); clear "
                             f"that one from there (cd {parent}) or with --project {parent}", "--project")


def _nearby_folder(folder: Path) -> str:
    """" (did you mean …?)" with the folder beside `folder` whose name is closest to its (a misspelt name), if any."""
    from assay.core.format import did_you_mean

    try:
        names = [child.name for child in folder.parent.iterdir() if child.is_dir()]
    except OSError:
        return ""
    return did_you_mean(folder.name, names, form=" (did you mean {}?)", shown=lambda name: str(folder.parent / name))
