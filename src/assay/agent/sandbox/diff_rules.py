"""Which of a sandbox's changes count as the agent's work: the default exclusions and an eval's `diff` rules.
Read by link planning (a pair's binding carries its rules) and by the change ledger that applies them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Version control, dependencies, build output and tool caches are not the agent's work (spec §1.2).
DEFAULT_EXCLUDES = (
    ".git", "node_modules", "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".venv",
    ".cache", ".npm", ".pnpm-store", ".yarn", ".gradle", "dist", "build", "target", ".next",
)


@dataclass(frozen=True, slots=True)
class DiffRules:
    """The eval's `diff={"include": [...], "ignore": [...]}`: counted = (default ∪ ignore) − include."""

    include: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> DiffRules:
        if not config:
            return cls()
        return cls(tuple(config.get("include") or ()), tuple(config.get("ignore") or ()))

    def excluded(self) -> list[str]:
        return [pattern for pattern in (*DEFAULT_EXCLUDES, *self.ignore) if pattern not in self.include]

    def reincluded(self) -> list[str]:
        return [pattern for pattern in self.include if pattern not in (*DEFAULT_EXCLUDES, *self.ignore)]


__all__ = ["DEFAULT_EXCLUDES", "DiffRules"]
