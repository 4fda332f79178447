"""The code of the methods `dataclasses` writes for assay's own classes, compiled once and kept between runs.

On Python 3.11 and 3.12, `@dataclass` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__`,
`__setattr__` ... as source text and compiles every one with its own `exec` when the class is made. assay
defines ~100 dataclasses, so that is ~550 compilations and ~34 ms of CPU at every start of the `assay`
command: a quarter of a one-eval run.

The text depends only on the class's fields and options, so its compiled code can be kept the way Python keeps
a module's bytecode: in `~/.cache/assay/` (`$XDG_CACHE_HOME`, or under `PYTHONPYCACHEPREFIX` when set), keyed
by a digest of the exact text (a class whose fields change writes a different text and is compiled afresh) and
stamped with the interpreter's bytecode magic number. `dataclasses` looks `exec` up in its own module before
the builtins; `install()` puts one there that serves texts written for this package's modules from the cache
and hands every other call to the builtin unchanged, so classes outside assay are made exactly as before.
Nothing is written when Python is told not to write bytecode (`PYTHONDONTWRITEBYTECODE`, `-B`), and a cache
that cannot be read or written is simply not used.
"""

from __future__ import annotations

import atexit
import builtins
import marshal
import os
import sys

import _frozen_importlib_external

try:  # what hashlib's blake2b is, without hashlib's OpenSSL import (~2.5 ms) in `assay --version`
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

# Past this many texts (several versions' worth of every class) the file keeps only what this process used.
KEPT_AT_MOST = 4000


def _cache_path() -> str | None:
    """Where the kept code lives: beside the user's other caches, not in the package, since a file pip did
    not install would be left behind by `pip uninstall` and make the leftover folder a namespace package."""
    name = f"dataclass-methods.{sys.implementation.cache_tag}.marshal"
    if sys.pycache_prefix:  # PYTHONPYCACHEPREFIX: where this Python keeps all its bytecode
        return os.path.join(sys.pycache_prefix, "assay", name)
    folder = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(folder):  # unset, empty or relative: the XDG rule is to ignore it
        folder = os.path.join(os.path.expanduser("~"), ".cache")
    # A home that cannot be found leaves "~" as it is: a relative folder would be the working directory.
    return os.path.join(folder, "assay", name) if os.path.isabs(folder) else None


_path = _cache_path()
# Keyed by a digest of the text; an entry is dropped once used, so what stays in memory is what is not needed yet.
_known: dict[bytes, bytes] = {}
_used: set[bytes] = set()
_added: dict[bytes, bytes] = {}
_loaded = False


def _ours(namespace: object) -> bool:
    if not isinstance(namespace, dict):
        return False
    name = namespace.get("__name__")
    return isinstance(name, str) and (name == "assay" or name.startswith("assay."))


def _exec(source, globals=None, locals=None, /):  # noqa: A002 - the builtin's own parameter names
    """`exec` as `dataclasses` calls it: the kept code for a text written for an assay class."""
    if type(source) is not str or not _ours(globals):
        return builtins.exec(source, globals, locals)
    if not _loaded:
        _load()
    key = blake2b(source.encode(), digest_size=16).digest()
    blob = _known.pop(key, None)
    code = None
    if blob is not None:
        try:
            code = marshal.loads(blob)
        except (EOFError, ValueError, TypeError):
            code = None
    if code is None:
        # As the builtin compiles a string: no `from __future__` flag of this module leaks into the methods.
        code = builtins.compile(source, "<string>", "exec", dont_inherit=True)
        if key not in _used:  # a second class with the same text as one already served: the file has it
            _added[key] = marshal.dumps(code)
    else:
        _used.add(key)
    return builtins.exec(code, globals, locals)


def _load() -> None:
    """Read the file when the first of assay's classes is made, not when the package is imported: so
    `import assay` reads nothing, and Ctrl-C while it is read falls inside the command line's own
    handling (`assay.__main__`)."""
    global _loaded
    _loaded = True
    if _path is not None:
        _known.update(_read(_path))


def _read(path: str) -> dict[bytes, bytes]:
    try:
        with open(path, "rb") as file:
            stamp, entries = marshal.load(file)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if stamp != _frozen_importlib_external.MAGIC_NUMBER or not isinstance(entries, dict):
        return {}
    return entries


def _write(path: str) -> None:
    """Keep what this process compiled, beside what the file holds now (another process may have added to it
    since), replacing the file whole so that a reader never sees half of it."""
    if not _added or sys.dont_write_bytecode:
        return
    entries = _read(path)
    if len(entries) + len(_added) > KEPT_AT_MOST:
        entries = {key: entries[key] for key in _used if key in entries}
    entries.update(_added)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as file:
            marshal.dump((_frozen_importlib_external.MAGIC_NUMBER, entries), file)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return
    _used.update(_added)
    _added.clear()


def _save() -> None:
    if _path is not None:
        _write(_path)


def install() -> None:
    """Serve assay's dataclass methods from the kept code; a no-op where `dataclasses` does not `exec` text."""
    import dataclasses

    if getattr(dataclasses, "exec", None) is _exec or sys.version_info >= (3, 13):
        # 3.13 compiles all of a class's methods in one `exec` already; the gain left is small.
        return
    if _path is None:
        return
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(_save)
