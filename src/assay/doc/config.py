"""Load an `eval-kit.config.v1` suite config: strict schema, repo-root discovery, contained roots.

The result, `DocSuite`, is what every doc command and hook works from.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from assay.core.bounded_input import MAX_JSON_BYTES, decode_text, load_json, read_bounded
from assay.core.fsutil import shown_path
from assay.doc.paths import PathResolver, contained_path, relative_posix
from assay.doc.schemas import SchemaRegistry, SchemaValidationError, bundled_registry, load_registry
from assay.errors import ConfigError

__all__ = ["CONFIG_SCHEMA", "DEFAULT_CONFIG_PATH", "DocSuite", "NoRepositoryRootError", "find_repo_root", "load_suite"]

DEFAULT_CONFIG_PATH = "evals/eval-kit.config.json"
CONFIG_SCHEMA = "eval-kit.config.schema.json"


@dataclass(frozen=True)
class DocSuite:
    raw: Mapping[str, Any]
    config_path: Path
    config_dir: Path
    repo_root: Path
    resolver: PathResolver
    schemas: SchemaRegistry
    hook_timeout_s: float | None = None  # --hook-timeout when given (0: no limit); else see adapter.hook_timeout

    @property
    def suite_id(self) -> str:
        return str(self.raw["suite_id"])

    @property
    def suite_root(self) -> Path:
        return self.resolver.suite_root

    @property
    def results_root(self) -> Path:
        return self.resolver.results_root

    def method(self, key: str) -> Mapping[str, Any] | None:
        methods = self.raw.get("methods") or {}
        block = methods.get(key)
        return block if isinstance(block, Mapping) else None

    def module_path(self, value: str, label: str) -> Path:
        """An adapter/grader/reporter module: suite-relative (or absolute), and inside the repo.

        eval-kit did not contain module paths; code outside the repository is refused here.
        """
        path = Path(value) if os.path.isabs(value) else self.suite_root / value
        return contained_path(self.repo_root, path, f"{label} {value}", error=ConfigError)

    def to_json(self) -> dict[str, Any]:
        """The config as hooks see it (`config` argument of validate_fixtures/compile_report in JS)."""
        return {
            "raw": dict(self.raw),
            "configPath": str(self.config_path),
            "configDir": str(self.config_dir),
            "repoRoot": str(self.repo_root),
            "suiteRoot": str(self.suite_root),
            "resultsRoot": str(self.results_root),
        }

    def relative_config_path(self) -> str:
        return relative_posix(self.repo_root, self.config_path)


class NoRepositoryRootError(ConfigError):
    """No `.git` entry above the config. `raw` and `config_path` are the config that was read (valid against
    its schema) when `load_suite` raised it, so a command can still apply its method gate first, as eval-kit
    (whose repo root fell back to `/`) would have."""

    raw: Mapping[str, Any] | None = None
    config_path: Path | None = None


def find_repo_root(start: Path) -> Path:
    """The first directory from `start` upward that holds a `.git` entry (file or directory).

    eval-kit fell back to `/` when none existed, which made containment meaningless; this refuses.
    """
    current = Path(os.path.abspath(start))
    for directory in [current, *current.parents]:
        if (directory / ".git").exists():
            return directory
    raise NoRepositoryRootError(
        f"no repository root found: no .git entry in {current} or any parent directory (run inside a git repository)"
    )


def _read_json(path: Path, label: str) -> Any:
    source = f"{label} {path}"
    try:
        data = read_bounded(path, source=source, error=ConfigError, max_bytes=MAX_JSON_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"{label} not found: {path}") from None
    except OSError as error:
        raise ConfigError(f"could not read {label} {path}: {error.strerror or error}") from None
    text = decode_text(data, source=source, error=ConfigError)
    try:
        # Every string in a suite config is a path, an id or a glob: a NUL in one can only break them.
        return load_json(text, source=source, error=ConfigError, no_nul=True)
    except ValueError as error:
        raise ConfigError(f"{label} {path} is not valid JSON: {error}") from None


def _root(config_path: Path, repo_root: Path, value: str, label: str) -> Path:
    path = Path(value) if os.path.isabs(value) else config_path.parent / value
    root = contained_path(repo_root, path, label, error=ConfigError)
    try:
        root.exists()
    except OSError as error:  # e.g. a name longer than the file system allows
        raise ConfigError(f"config {config_path}: {label} cannot be used: {error.strerror or error}") from None
    return root


def _config_fixes(raw: Any) -> str:
    """What to change in a config that fails its schema: the key a misspelt one was meant to be, the
    value a constant must have (eval-kit's message names neither)."""
    from jsonschema import Draft202012Validator

    from assay.core.format import did_you_mean

    registry = bundled_registry()
    validator = Draft202012Validator(registry.get(CONFIG_SCHEMA), registry=registry.registry)
    fixes: list[str] = []
    for error in validator.iter_errors(raw):
        where = "".join(f"{part}." for part in error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = [key for key in error.schema.get("properties", {}) if key not in error.instance]
            for key in sorted(set(error.instance) - set(error.schema.get("properties", {}))):
                meant = did_you_mean(key, known, form="{}", shown=str)
                fixes.append(f"{where}{key} should be {where}{meant}" if meant else f"remove {where}{key}")
        elif error.validator == "const":
            fixes.append(f"{where.rstrip('.')} must be {json.dumps(error.validator_value)}")
    return "; " + "; ".join(fixes) if fixes else ""


def _check_config_path(config_path: Path, given: str | Path | None, base: Path) -> None:
    """A config that is a folder, or is not there, said with the `--config` to give: `--config evals`
    said only `Is a directory`, and running from inside `evals/` looked for `evals/evals/...`."""
    shown = shown_path(config_path, base)
    if config_path.is_dir():
        inside = config_path / Path(DEFAULT_CONFIG_PATH).name
        example = shown_path(inside, base) if inside.is_file() else f"{shown}/eval-kit.config.json"
        raise ConfigError(f"config {shown} is a folder; give the config file, e.g. --config {example}")
    if given is None and not config_path.exists():
        here = Path(os.path.abspath(base)) / Path(DEFAULT_CONFIG_PATH).name
        hint = (
            f"here, give --config {shown_path(here, base)}" if here.is_file()
            else "run from the folder that holds evals/, give --config, or create a suite with `assay doc init`"
        )
        raise ConfigError(f"config not found: {config_path} (the default --config {DEFAULT_CONFIG_PATH} is relative "
                          f"to the current folder; {hint})")


def load_suite(config: str | Path | None = None, *, cwd: Path | None = None) -> DocSuite:
    """Read, validate and resolve a suite config (`--config`, default `evals/eval-kit.config.json`)."""
    if config is not None and not isinstance(config, (str, os.PathLike)):
        raise TypeError(f"load_suite(config=...) must be a str or Path, not {type(config).__name__}")
    if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
        raise TypeError(f"load_suite(cwd=...) must be a str or Path, not {type(cwd).__name__}")
    base = Path(cwd) if cwd is not None else Path.cwd()
    config_path = Path(os.path.abspath(base / (config or DEFAULT_CONFIG_PATH)))
    _check_config_path(config_path, config, base)
    raw = _read_json(config_path, "config")
    try:
        bundled_registry().validate(CONFIG_SCHEMA, raw, "eval-kit config")
    except SchemaValidationError as error:
        raise ConfigError(f"{error} (in {shown_path(config_path, base)}{_config_fixes(raw)})") from None
    config_dir = config_path.parent
    try:
        repo_root = find_repo_root(config_dir)
    except NoRepositoryRootError as error:
        error.raw, error.config_path = raw, config_path
        raise
    suite_root = _root(config_path, repo_root, raw["suite_root"], "suite root")
    results_root = _root(config_path, repo_root, raw["results_root"], "results root")
    schema_roots = [
        _root(config_path, repo_root, value, f"schema root {value}") for value in raw.get("schema_roots", [])
    ]
    schemas = load_registry(schema_roots) if schema_roots else bundled_registry()
    resolver = PathResolver(
        repo_root=repo_root, config_dir=config_dir, suite_root=suite_root, results_root=results_root
    )
    return DocSuite(
        raw=raw, config_path=config_path, config_dir=config_dir, repo_root=repo_root, resolver=resolver, schemas=schemas
    )
