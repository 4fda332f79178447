"""An agent-eval project: its folder layout, `[tool.assay]` defaults in pyproject.toml, and `.env`.

`.env` never overrides a variable already set; settings precedence is CLI flag > experiment >
project config > built-in default.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agent.pricing import check_pricing
from assay.errors import ConfigError

EVALS_DIR = "evals"
EXPERIMENTS_DIR = "experiments"
STATE_DIR = ".assay"  # checkpoints live in .assay/runs/checkpoints
_KNOWN_KEYS = ("name", "concurrency", "timeout", "pricing", "judge")


@dataclass(frozen=True)
class ProjectConfig:
    name: str | None = None
    concurrency: int | None = None
    timeout: float | None = None  # seconds per attempt
    pricing: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    judge: Mapping[str, Any] | None = None


def load_project_config(project: Path) -> ProjectConfig:
    """`[tool.assay]` of `<project>/pyproject.toml`; sub-tables other than pricing/judge belong to other kinds."""
    path = project / "pyproject.toml"
    if not path.is_file():
        return ProjectConfig()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"could not read {path}: {error}") from None
    table = document.get("tool", {}).get("assay")
    if table is None:
        return ProjectConfig()
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.assay] must be a table")
    where = f"{path} [tool.assay]"
    for key, value in table.items():
        if key not in _KNOWN_KEYS and not isinstance(value, dict):
            raise ConfigError(f"{where}: unknown key {key!r}; agent evals read {', '.join(_KNOWN_KEYS)}")
    name = table.get("name")
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"{where}: name must be a string")
    concurrency = table.get("concurrency")
    if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1):
        raise ConfigError(f"{where}: concurrency must be an integer >= 1")
    timeout = table.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0
    ):
        raise ConfigError(f"{where}: timeout must be a positive number of seconds")
    judge = table.get("judge")
    if judge is not None and not isinstance(judge, dict):
        raise ConfigError(f"{where}: judge must be a table")
    pricing = check_pricing(table.get("pricing", {}), f"{where} pricing")
    return ProjectConfig(name, concurrency, float(timeout) if timeout is not None else None, pricing, judge)


def parse_dotenv(text: str) -> dict[str, str]:
    """`KEY=value` lines; `export ` prefixes, comments, and single or double quotes are understood."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, equals, value = line.partition("=")
        key = key.strip()
        if not equals or not key.replace("_", "").isalnum() or key[0].isdigit():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            quote = value[0]
            value = value[1:-1]
            if quote == '"':
                value = value.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
        else:
            hash_at = value.find(" #")
            if hash_at >= 0:
                value = value[:hash_at].rstrip()
        values[key] = value
    return values


def load_dotenv(directory: Path, environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Load `<directory>/.env` into the environment without overriding; returns the names set."""
    environ = os.environ if environ is None else environ
    path = directory / ".env"
    if not path.is_file():
        return []
    try:
        values = parse_dotenv(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"could not read {path}: {error}") from None
    loaded = []
    for key, value in values.items():
        if key not in environ:
            environ[key] = value
            loaded.append(key)
    return loaded


def checkpoints_base(project: Path) -> Path:
    """What `core.journal.Checkpoint` takes as its directory (it adds runs/checkpoints)."""
    return project / STATE_DIR


__all__ = [
    "EVALS_DIR", "EXPERIMENTS_DIR", "ProjectConfig", "STATE_DIR", "checkpoints_base", "load_dotenv",
    "load_project_config", "parse_dotenv",
]
