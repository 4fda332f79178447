"""An agent-eval project: its folder layout, `[tool.assay]` defaults in pyproject.toml, and `.env`.

`.env` never overrides a variable already set; settings precedence is CLI flag > experiment >
project config > built-in default.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agent.pricing import check_pricing
from assay.core.bounded_input import (
    MAX_TEXT_BYTES,
    MAX_TOML_BYTES,
    date_hint,
    decode_text,
    describe_value,
    load_toml,
    read_bounded,
)
from assay.errors import ConfigError, UsageError

EVALS_DIR = "evals"
EXPERIMENTS_DIR = "experiments"
STATE_DIR = ".assay"  # checkpoints live in .assay/runs/checkpoints
_KNOWN_KEYS = ("name", "concurrency", "timeout", "pricing", "judge")
_KNOWN_TABLES = ("telemetry", "export")  # read where they are used (the run's receiver, the export after a run)
# Sane maximums: more attempts in flight, or per eval, than any machine runs would only allocate the
# plan and the workers for them (10**9 of them exhaust memory before anything runs).
MAX_CONCURRENCY = 10_000
MAX_ATTEMPTS = 10_000
# Setting an environment variable costs time linear in the environment's size (glibc scans it), so
# loading n variables is quadratic: 100,000 took ~16 s, 10,000 take ~0.2 s; a real .env holds dozens.
MAX_DOTENV_VARIABLES = 10_000


@dataclass(frozen=True)
class ProjectConfig:
    name: str | None = None
    concurrency: int | None = None
    timeout: float | None = None  # seconds per attempt
    pricing: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    judge: Mapping[str, Any] | None = None
    telemetry: Mapping[str, Any] | None = None  # [tool.assay.telemetry], checked (traces.config reads it)


def is_finite_number(value: Any) -> bool:
    """An int or float (not a bool) that is finite; an int too large for a float is not."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _got(value: Any) -> str:
    return f", got {describe_value(value)}{date_hint(value)}"


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    from assay.core.format import did_you_mean

    return did_you_mean(key, known, form=" (did you mean {}?)")


def tool_assay_table(document: Mapping[str, Any], path: Path) -> dict[str, Any] | None:
    """`[tool.assay]` of a parsed pyproject.toml (None without one). A `tool` or `tool.assay` that is
    not a table (`tool = 5`) is one `ConfigError` naming the file and the key; every reader of the
    table goes through here."""
    tool = document.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table (it holds [tool.assay]){_got(tool)}")
    table = tool.get("assay")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.assay] must be a table{_got(table)}")
    from assay.core.format import did_you_mean

    # `[tool.asay]` was read as some other tool's table, so its settings were dropped without a word; so were they
    # beside a `[tool.assay.pricing]` that is spelt right (the header `[tool.assay]` above it misspelt).
    near = did_you_mean("assay", [str(key) for key in tool if key != "assay"], cutoff=0.8, form="{}", shown=str)
    if near:
        raise ConfigError(f"{path}: [tool.{near}] is not read by assay; did you mean [tool.assay]? "
                          "(rename the table so its settings apply)")
    return table


def load_project_config(project: Path) -> ProjectConfig:
    """`[tool.assay]` of `<project>/pyproject.toml`; sub-tables other than pricing/judge belong to other kinds."""
    path = project / "pyproject.toml"
    if not path.is_file():
        return ProjectConfig()
    source = str(path)
    try:
        data = read_bounded(path, source=source, error=ConfigError, max_bytes=MAX_TOML_BYTES)
    except OSError as error:
        raise ConfigError(f"could not read {path}: {error}") from None
    text = decode_text(data, source=source, error=ConfigError)
    try:
        document = load_toml(text, source=source, error=ConfigError)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"could not read {path}: {error}") from None
    table = tool_assay_table(document, path)
    if table is None:
        return ProjectConfig()
    where = f"{path} [tool.assay]"
    known = (*_KNOWN_KEYS, *_KNOWN_TABLES)
    for key, value in table.items():
        # Another table may be another kind's (`[tool.assay.video]`); one spelt nearly as ours is a typo.
        if key not in known and (not isinstance(value, dict) or _did_you_mean(key, known)):
            raise ConfigError(f"{where}: unknown key {key!r}{_did_you_mean(key, known)}; agent evals read "
                              f"{', '.join(_KNOWN_KEYS)} and the {' and '.join(_KNOWN_TABLES)} tables")
    _check_tables(table, path)
    name = table.get("name")
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"{where}: name must be a string{_got(name)}")
    concurrency = table.get("concurrency")
    if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1):
        raise ConfigError(f"{where}: concurrency must be an integer >= 1{_got(concurrency)}")
    if concurrency is not None and concurrency > MAX_CONCURRENCY:
        raise ConfigError(f"{where}: concurrency must be at most {MAX_CONCURRENCY:,} (attempts in flight at once)")
    timeout = table.get("timeout")
    if timeout is not None and (not is_finite_number(timeout) or timeout <= 0):
        raise ConfigError(f"{where}: timeout must be a positive number of seconds{_got(timeout)}")
    judge = table.get("judge")
    if judge is not None and not isinstance(judge, dict):
        raise ConfigError(f"{where}: judge must be a table")
    if judge:
        from assay.agent.judging import check_judge_settings

        check_judge_settings(judge, f"{path} [tool.assay.judge]")
    pricing = check_pricing(table.get("pricing", {}), f"{where} pricing")
    return ProjectConfig(name, concurrency, float(timeout) if timeout is not None else None, pricing, judge,
                         table.get("telemetry"))


def parse_dotenv(text: str, source: str = ".env") -> dict[str, str]:
    """`KEY=value` lines; `export ` prefixes, comments, and single or double quotes are understood.

    Linear in the text; a NUL character (which no environment can hold) is refused with its line.
    """
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, equals, value = line.partition("=")
        key = key.strip()
        if not equals or not key.replace("_", "").isalnum() or key[0].isdigit():
            continue
        if "\x00" in value:
            raise ConfigError(f"{source}: line {number}: the value of {key} contains a NUL character, "
                              "which environment variables cannot hold; remove it")
        values[key] = _dotenv_value(value.strip())
        if len(values) > MAX_DOTENV_VARIABLES:
            raise ConfigError(
                f"{source}: more than {MAX_DOTENV_VARIABLES:,} variables; assay loads at most that many "
                "(each is copied into every process it starts): keep only what the project needs"
            )
    return values


def _dotenv_value(value: str) -> str:
    """A value as written after `=`: quoted (a comment may follow the closing quote: `A="x y"  # why`; in
    double quotes `\\n`, `\\"` and `\\\\` are escapes), or bare, up to a ` #` comment."""
    quote = value[:1]
    if quote in ("'", '"'):
        end = value.find(quote, 1)
        while quote == '"' and end > 0 and _escaped(value, end):
            end = value.find(quote, end + 1)
        rest = value[end + 1:].lstrip() if end > 0 else "x"
        if not rest or rest.startswith("#"):
            inner = value[1:end]
            return inner.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\") if quote == '"' else inner
    hash_at = value.find(" #")
    return value[:hash_at].rstrip() if hash_at >= 0 else value


def _escaped(text: str, at: int) -> bool:
    """Whether `text[at]` follows an odd number of backslashes."""
    count = 0
    while at - count - 1 >= 0 and text[at - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def telemetry_for(config: ProjectConfig, project: Path, bind: str | None = None) -> Any:
    """The run's `TelemetryConfig` from the project's `[tool.assay.telemetry]` and `--telemetry-host` (None:
    no receiver)."""
    from assay.agent.traces.config import telemetry_config

    return telemetry_config(config.telemetry, f"{project / 'pyproject.toml'} [tool.assay.telemetry]", bind)


def _check_tables(table: Mapping[str, Any], path: Path) -> None:
    """`[tool.assay.telemetry]` and `[tool.assay.export]` as a run reads them, checked with the rest, so `list`
    and `run --dry` refuse what `run` would (after its evals, for the export)."""
    if "telemetry" in table:
        from assay.agent.traces.config import telemetry_config

        telemetry_config(table["telemetry"], f"{path} [tool.assay.telemetry]")
    if "export" in table:
        from assay.core.interop.export_endpoint import table_endpoint

        try:
            table_endpoint(table["export"], f"{path} [tool.assay.export]")
        except UsageError as error:
            raise ConfigError(str(error)) from None


def load_dotenv(directory: Path, environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Load `<directory>/.env` into the environment without overriding; returns the names set."""
    environ = os.environ if environ is None else environ
    path = directory / ".env"
    if not path.is_file():
        return []
    source = str(path)
    try:
        data = read_bounded(path, source=source, error=ConfigError, max_bytes=MAX_TEXT_BYTES)
    except OSError as error:
        raise ConfigError(f"could not read {path}: {error}") from None
    values = parse_dotenv(decode_text(data, source=source, error=ConfigError), source)
    loaded = []
    for key, value in values.items():
        if key not in environ:
            environ[key] = value
            loaded.append(key)
    return loaded


def project_folder(given: str | Path | None, option: str = "--project") -> Path:
    """The project folder `given` names (default: the current folder), resolved; a folder that does
    not exist is a usage error on `option`."""
    path = Path(given if given is not None else Path.cwd()).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path} is a file, not a folder; give the project's folder", option)
    if not path.is_dir():
        raise UsageError(f"project folder does not exist: {path}", option)
    return path


def _is_project(folder: Path) -> bool:
    try:
        return (folder / EVALS_DIR).is_dir() and (folder / EXPERIMENTS_DIR).is_dir()
    except OSError:
        return False


def nearby_project_hint(folder: Path) -> str:
    """For a folder that is no agent project: where the project is when it is near, as the fix ("" when none is).
    A newcomer runs from inside the project (`evals/`, `agents/`) or from the folder above it; both get
    "no evals/ folder", and `assay agent init` there would start a second, empty project."""
    from itertools import islice

    folder = Path(folder)
    for parent in folder.parents:
        if _is_project(parent):
            return f"it is inside the agent project {parent}: run from there (cd {parent}) or pass --project {parent}"
    try:
        below = sorted(child.name for child in islice(folder.iterdir(), 1000) if child.is_dir() and _is_project(child))
    except OSError:
        below = []
    if below:
        return (f"the agent project is in the folder below, {below[0]}: run from there (cd {below[0]}) "
                f"or pass --project {below[0]}")
    return ""


def checkpoints_base(project: Path) -> Path:
    """What `core.journal.Checkpoint` takes as its directory (it adds runs/checkpoints); a linked
    `.assay` is refused, as for the results store (`core.record.state_folder`)."""
    from assay.core.record import state_folder

    return state_folder(project)


__all__ = [
    "EVALS_DIR", "EXPERIMENTS_DIR", "MAX_ATTEMPTS", "MAX_CONCURRENCY", "MAX_DOTENV_VARIABLES", "STATE_DIR",
    "ProjectConfig", "checkpoints_base", "is_finite_number", "load_dotenv", "load_project_config", "parse_dotenv",
    "nearby_project_hint", "project_folder",
]
