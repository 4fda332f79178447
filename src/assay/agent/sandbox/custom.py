"""`define_sandbox(...)`: a provider of your own (a remote VM, a pool, a container service) as a template.

`create(request)` returns an object with `workdir`, `exec`, `read_bytes`, `write_bytes` and `stop`;
anything else the interface offers (path checks, folder transfers, the change ledger) is built on those.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox.layers import SandboxLayer
from assay.errors import ConfigError


class CustomProvider:
    def __init__(self, name: str, create: Callable[[CreateRequest], Any], description: dict[str, Any]) -> None:
        self.name = name
        self._create = create
        self._description = description

    def describe(self) -> dict[str, Any]:
        return {"provider": self.name, **self._description}

    async def create(self, request: CreateRequest) -> Any:
        backend = self._create(request)
        if inspect.isawaitable(backend):
            backend = await backend
        if not hasattr(backend, "sandbox_id"):
            try:
                backend.sandbox_id = request.sandbox_id
            except AttributeError:
                pass
        return backend


def define_sandbox(*, name: str, create: Callable[[CreateRequest], Any], **description: Any) -> SandboxLayer:
    """A template-bearing layer whose sandboxes `create(request)` makes (sync or async)."""
    if not isinstance(name, str) or not name:
        raise ConfigError("define_sandbox needs a non-empty name")
    if not callable(create):
        raise ConfigError("define_sandbox(create=...) must be a function of the CreateRequest")
    return SandboxLayer(CustomProvider(name, create, dict(description)))


__all__ = ["CustomProvider", "define_sandbox"]
