"""A package namespace filled on first use: each public name is imported from its module when first read.

`from package import Name` and `package.Name` work as with eager imports (the same object, then kept in the
package), but importing the package, or one of its submodules, costs nothing for the names not used.

A submodule may share its name with what it defines (`adapters/http_agent.py` defines `http_agent`). Python sets
the package's attribute to a submodule once the submodule is imported, so whichever import came first decided
whether `package.http_agent` was the function or the module; such a package keeps the name's value instead.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    namespace: dict[str, Any], modules: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's `__getattr__` and `__dir__` for `modules` (module -> the public names it defines)."""
    where = {name: module for module, names in modules.items() for name in names}
    package = namespace["__name__"]
    clashing = {name: module for name, module in where.items() if module == f"{package}.{name}"}
    owner = sys.modules.get(package)
    if clashing and owner is not None and type(owner) is types.ModuleType:
        owner.__class__ = type("LazyPackage", (_NamesOverSubmodules,), {"_names_of": clashing})

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(import_module(module), name)
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__


class _NamesOverSubmodules(types.ModuleType):
    """A package whose public names include submodules' own names: the import system's setting of the package's
    attribute to such a submodule sets the name's value instead (once the submodule ran, which is when it is set)."""

    _names_of: dict[str, str] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and self._names_of.get(name) == value.__name__:
            value = getattr(value, name, value)
        super().__setattr__(name, value)
