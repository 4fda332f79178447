"""Load a `<module-or-file>:<callable>` adapter target, as every kind writes them.

The left side is a Python file (ends with `.py` or exists on disk) or an importable module; the
right side is a dotted attribute path. Errors name the target and say what to fix.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from assay.errors import AdapterError


@dataclass(frozen=True, slots=True)
class AdapterTarget:
    module: str  # the left side as written
    attribute: str  # the dotted right side
    file: Path | None  # resolved file when the left side is a file


def parse_adapter_target(text: str, *, cwd: Path | None = None) -> AdapterTarget:
    module, colon, attribute = text.rpartition(":")
    module, attribute = module.strip(), attribute.strip()
    if not colon or not module or not attribute:
        raise AdapterError(f"adapter must be '<module-or-file>:<callable>', got '{text}'")
    base = cwd or Path.cwd()
    candidate = Path(module).expanduser()
    if not candidate.is_absolute():
        candidate = base / candidate
    if module.endswith(".py") or candidate.exists():
        return AdapterTarget(module, attribute, candidate.resolve())
    return AdapterTarget(module, attribute, None)


def _import_file(path: Path, search_paths: Sequence[Path]) -> Any:
    if not path.exists():
        raise AdapterError(f"adapter file does not exist: {path}")
    if not path.is_file():
        raise AdapterError(f"could not load adapter file: {path}")
    for directory in reversed([str(p) for p in search_paths]):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    # Executed afresh on every load, so module globals never leak from one trial into the next.
    try:
        module = exec_module_file(path, f"assay_adapter_{abs(hash(str(path)))}")
    except (Exception, SystemExit) as error:  # any import-time failure is the adapter's to fix
        raise AdapterError(f"adapter import failed for {path}: {error}") from error
    if module is None:
        raise AdapterError(f"could not load adapter file: {path}")
    return module


def exec_module_file(path: Path, name: str) -> Any:
    """Execute the Python file `path` as a new module `name`, registered in `sys.modules` (so
    dataclasses, pickling and lookups inside it work); None if `path` cannot be a module. An
    error while executing propagates once the registration is undone."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _not_on_the_path(module: str, error: BaseException, cwd: Path | None) -> str:
    """For a module not found that lies in the current folder: a module target is imported from the Python
    path, which does not hold the current folder (GlassKit's rule), so say how to reach it."""
    top = module.split(".")[0]
    if not isinstance(error, ModuleNotFoundError) or error.name not in (top, module):
        return ""
    folder = (cwd or Path.cwd()).resolve()
    if not ((folder / top).is_dir() or (folder / f"{top}.py").is_file()):
        return ""
    as_file = module.replace(".", "/") + ".py"
    return (f" (a module adapter is imported from the Python path, which does not include the current folder: give "
            f"the file instead, {as_file}:…, or set PYTHONPATH=.)")


def load_adapter_callable(
    text: str, *, extra_search_paths: Sequence[Path] = (), cwd: Path | None = None
) -> tuple[Callable[..., Any], AdapterTarget]:
    """Import the target and return its callable.

    A file target is imported with its own directory, the current directory and
    `extra_search_paths` (the eval directory's parent for video) on `sys.path`, in that order."""
    target = parse_adapter_target(text, cwd=cwd)
    if target.file is not None:
        search = [target.file.parent, (cwd or Path.cwd()).resolve(), *extra_search_paths]
        owner = _import_file(target.file, search)
    else:
        try:
            owner = importlib.import_module(target.module)
        except (Exception, SystemExit) as error:  # noqa: BLE001 - as a file's import: the adapter's to fix
            raise AdapterError(f"adapter import failed for module '{target.module}': {error}"
                               f"{_not_on_the_path(target.module, error, cwd)}") from error
    value: Any = owner
    for part in target.attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise AdapterError(
                f"adapter callable '{target.attribute}' was not found in '{target.module}'"
            ) from None
    if not callable(value):
        raise AdapterError(f"adapter attribute '{target.attribute}' in '{target.module}' is not callable")
    return value, target
