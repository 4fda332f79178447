"""Safe ids and contained paths for document suites: the resolver every doc command and hook uses.

Containment is checked twice, lexically and on real paths, so `..`, absolute paths and symlinks that
leave their root are all refused (eval-kit checked lexically only).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from assay.core import fsutil
from assay.errors import CaseError, UsageError

__all__ = [
    "PathResolver",
    "assert_safe_id",
    "contained_path",
    "is_contained",
    "is_safe_id",
    "relative_posix",
    "resolve_within",
]

SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def is_safe_id(value: object) -> bool:
    # fullmatch, not `$`: Python's `$` would accept "case\n".
    return isinstance(value, str) and SAFE_ID.fullmatch(value) is not None


def assert_safe_id(value: object, label: str) -> str:
    """Return `value` if it is a safe id; else `UsageError("<label> must be an id, not a path")`, naming
    the id meant when `value` is a folder path such as `release-notes/`."""
    if not is_safe_id(value):
        raise UsageError(f"{label} must be an id, not a path{_folder_hint(value) or _rule_hint(value)}")
    return value  # type: ignore[return-value]


def _rule_hint(value: object) -> str:
    """A value that is no path at all (`my case`, `-x`, `notes!`): eval-kit's words alone left the user looking for
    a path they never gave, so say what an id may hold and what in this one breaks the rule."""
    if not isinstance(value, str) or not value or any(mark in value for mark in "/\\\r\n") or set(value) <= {"."}:
        return ""
    bad = next((character for character in value
                if not (character.isascii() and (character.isalnum() or character in "._-"))), None)
    why = f"{value!r} has {bad!r}" if bad is not None else f"{value!r} begins with {value[0]!r}"
    return f" (an id is letters, digits, '.', '_' and '-', beginning with a letter or digit: {why})"


def _folder_hint(value: object) -> str:
    """A value ending in a slash is a folder name completed by the shell (`--case release-notes/`,
    `--case evals/cases/release-notes/`): name the id it ends with, which is the one meant."""
    if not isinstance(value, str) or not value.endswith(("/", "\\")):
        return ""
    parts = re.split(r"[/\\]+", value.rstrip("/\\"))
    if ".." in parts or not is_safe_id(parts[-1]):
        return ""
    return f" (give the name alone: {parts[-1]})"


def is_contained(base: Path, candidate: Path) -> bool:
    """True if `candidate` is `base` or inside it, both lexically (`..` resolved) and after resolving symlinks."""
    return fsutil.is_contained(Path(os.path.normpath(base)), Path(os.path.normpath(candidate)))


def contained_path(base: Path, candidate: Path, label: str, *, error: type[Exception] = CaseError) -> Path:
    """`candidate` normalised, or `error("<label> escapes <base>")` when it leaves `base`."""
    if not is_contained(base, candidate):
        raise error(f"{label} escapes {base}")
    return Path(os.path.normpath(os.path.abspath(candidate)))


def resolve_within(base: Path, relative: object, label: str, *, error: type[Exception] = CaseError) -> Path:
    """Resolve a relative path under `base`; absolute paths and escapes are refused."""
    if not isinstance(relative, str) or not relative.strip():
        raise error(f"{label} is required")
    if os.path.isabs(relative) or relative.startswith("\\") or re.match(r"[A-Za-z]:[\\/]", relative):
        raise error(f"{label} must be a relative path, got {relative}")
    return contained_path(base, base / relative, label, error=error)


def relative_posix(base: Path, target: Path) -> str:
    """`target` relative to `base` with `/` separators (may contain `..`; for display and records)."""
    relative = os.path.relpath(os.path.abspath(target), os.path.abspath(base))
    return PurePosixPath(*Path(relative).parts).as_posix() if relative != "." else ""


@dataclass(frozen=True, slots=True)
class PathResolver:
    """The contained path helpers hooks receive (eval-kit's resolver API, snake_case)."""

    repo_root: Path
    config_dir: Path
    suite_root: Path
    results_root: Path

    def resolve_run_dir(self, run_id: object) -> Path:
        assert_safe_id(run_id, "run id")
        return contained_path(self.results_root, self.results_root / str(run_id), "run id", error=UsageError)

    def resolve_result_artifact(self, run_dir: Path, relative: object, label: str = "result artifact") -> Path:
        run_dir = contained_path(self.results_root, Path(run_dir), "run directory")
        return resolve_within(run_dir, relative, label)

    def resolve_suite_path(self, relative: object, label: str = "suite path") -> Path:
        return resolve_within(self.suite_root, relative, label)

    def resolve_repo_path(self, relative: object, label: str = "repo path") -> Path:
        return resolve_within(self.repo_root, relative, label)

    def relative_to_repo(self, path: Path | str) -> str:
        return relative_posix(self.repo_root, Path(path))

    def relative_to_suite(self, path: Path | str) -> str:
        return relative_posix(self.suite_root, Path(path))

    def relative_to_results(self, path: Path | str) -> str:
        return relative_posix(self.results_root, Path(path))
