"""The schema registry for document suites: bundled schemas plus the suite's `schema_roots`.

Schemas are found by file name or `$id`; validation returns the data or raises with every error located.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from assay.errors import CaseError, ConfigError
from assay.judge.validation import schema_errors, validation_message

__all__ = ["BUNDLED_SCHEMA_ROOT", "SchemaRegistry", "SchemaValidationError", "bundled_registry", "load_registry"]

BUNDLED_SCHEMA_ROOT = Path(__file__).resolve().parent / "schemas"
SCHEMA_ID_PREFIX = "https://agentic-workflow-kit.local/eval-kit/"


class SchemaValidationError(CaseError):
    """A document crossing a boundary (manifest, grades, judge output) failed its schema."""


@dataclass(frozen=True)
class SchemaRegistry:
    by_name: dict[str, dict[str, Any]]
    by_id: dict[str, dict[str, Any]]
    registry: Registry = field(repr=False)

    def get(self, name_or_id: str) -> dict[str, Any]:
        if name_or_id in self.by_id:
            return self.by_id[name_or_id]
        if os.path.isabs(name_or_id) or "/" in name_or_id or "\\" in name_or_id:
            raise ConfigError(f"schema name must be a file name, not a path: {name_or_id}")
        try:
            return self.by_name[name_or_id]
        except KeyError:
            raise ConfigError(f"unknown schema {name_or_id}") from None

    def errors(self, name_or_id: str, data: Any) -> list[tuple[str, str]]:
        return schema_errors(data, self.get(name_or_id), self.registry)

    def validate(self, name_or_id: str, data: Any, label: str) -> Any:
        """Return `data`, or raise `SchemaValidationError("<label> failed schema validation: ...")`."""
        errors = self.errors(name_or_id, data)
        if errors:
            raise SchemaValidationError(validation_message(label, errors))
        return data


def _schema_files(root: Path) -> list[Path]:
    if not root.is_dir():
        raise ConfigError(f"schema root not found: {root}")
    return sorted(path for path in root.iterdir() if path.name.endswith(".schema.json") and path.is_file())


def load_registry(roots: Iterable[Path]) -> SchemaRegistry:
    """Load every `*.schema.json` in each root (bundled first); a repeated `$id` is an error."""
    by_name: dict[str, dict[str, Any]] = {}
    by_id: dict[str, dict[str, Any]] = {}
    id_sources: dict[str, Path] = {}
    resources: list[tuple[str, Resource[Any]]] = []
    for root in [BUNDLED_SCHEMA_ROOT, *roots]:
        for path in _schema_files(root):
            try:
                schema = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                raise ConfigError(f"could not read schema {path}: {error}") from None
            if not isinstance(schema, dict):
                raise ConfigError(f"schema {path} must be a JSON object")
            by_name[path.name] = schema
            schema_id = schema.get("$id")
            if isinstance(schema_id, str) and schema_id:
                if schema_id in id_sources:
                    raise ConfigError(f"duplicate schema $id {schema_id}: {id_sources[schema_id]} and {path}")
                id_sources[schema_id] = path
                by_id[schema_id] = schema
                resources.append((schema_id, Resource.from_contents(schema, default_specification=DRAFT202012)))
    return SchemaRegistry(by_name, by_id, Registry().with_resources(resources))


_BUNDLED: SchemaRegistry | None = None


def bundled_registry() -> SchemaRegistry:
    global _BUNDLED
    if _BUNDLED is None:
        _BUNDLED = load_registry([])
    return _BUNDLED
