"""Loaders for an eval's external data (`load_text`, `load_json`, `load_yaml`) that assay remembers.

Call them at module top level: a file read this way becomes part of the eval's execution identity,
so editing it reruns the evals whose modules loaded it instead of carrying their old results.
Relative paths are relative to the file that calls the loader.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay.errors import ConfigError

__all__ = ["beside_caller", "load_json", "load_text", "load_yaml", "loaded_by"]

# module file -> the files it loaded, in order (insertion-ordered dict as a set)
_LOADED: dict[str, dict[str, None]] = {}


def beside_caller(path: str | Path) -> Path:
    """`path` as the eval or experiment file that called the public function calling this wrote it: relative to
    that file's folder (the current folder without one), so a run started from elsewhere finds the same file."""
    path = Path(path).expanduser()
    if path.is_absolute():
        return path
    caller = sys._getframe(2).f_globals.get("__file__")  # 0: here, 1: the public function, 2: its caller
    return (Path(caller).resolve().parent if caller else Path.cwd()) / path


def _read(path: str | Path, encoding: str, depth: int) -> tuple[str, Path]:
    caller = Path(sys._getframe(depth).f_code.co_filename).resolve()
    file = Path(path).expanduser()
    if not file.is_absolute():
        file = caller.parent / file
    file = file.resolve()
    try:
        text = file.read_text(encoding=encoding)
    except OSError as error:
        raise ConfigError(f"{caller}: could not load {file}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{caller}: {file} is not {encoding} text ({error.reason})") from None
    _LOADED.setdefault(str(caller), {})[str(file)] = None
    return text, file


def load_text(path: str | Path, *, encoding: str = "utf-8") -> str:
    """The file's text; the file joins the calling eval's identity."""
    return _read(path, encoding, 2)[0]


def load_json(path: str | Path) -> Any:
    """The file's JSON value; the file joins the calling eval's identity."""
    text, file = _read(path, "utf-8", 2)
    try:
        return json.loads(text)
    except ValueError as error:
        raise ConfigError(f"{file}: invalid JSON: {error}") from None


def load_yaml(path: str | Path) -> Any:
    """The file's YAML value (safe loading: plain data only); the file joins the calling eval's identity."""
    text, file = _read(path, "utf-8", 2)
    from ruamel.yaml import YAML, YAMLError

    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError as error:
        raise ConfigError(f"{file}: invalid YAML: {error}") from None


def loaded_by(module_files: Iterable[str | Path]) -> list[Path]:
    """The files these modules loaded through the loaders, in the order they were first loaded."""
    found: dict[Path, None] = {}
    if not _LOADED:
        return []
    for module in module_files:
        for file in _LOADED.get(str(Path(module).resolve()), ()):
            found[Path(file)] = None
    return list(found)
