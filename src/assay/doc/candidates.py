"""Candidate documents named on the command line: resolved from the repo root and kept inside it.

eval-kit read any file the user named (and copied it into the bundle); assay refuses paths outside the repo.
"""

from __future__ import annotations

import os
from pathlib import Path

from assay.doc.artifacts import Clock, default_run_id
from assay.doc.cases import ResolvedCase, resolve_case
from assay.doc.config import DocSuite
from assay.doc.paths import assert_safe_id, contained_path
from assay.errors import UsageError

__all__ = ["read_candidate", "resolve_candidate", "start_candidate_run"]


def resolve_candidate(suite: DocSuite, value: str, option: str = "--candidate") -> Path:
    """A repo-relative (or absolute, inside the repo) path to an existing file."""
    path = Path(value) if os.path.isabs(value) else suite.repo_root / value
    resolved = contained_path(suite.repo_root, path, f"{option} {_shown(value)}", error=UsageError)
    try:
        found = resolved.is_file()
    except OSError as error:  # a name longer than the file system allows, say: no file can be there
        raise UsageError(f"{option} {_shown(value)} cannot be used: {error.strerror or error}") from None
    if not found:
        # eval-kit's words, then where the file is when it is not where eval-kit looks
        raise UsageError(f"candidate path does not exist: {_shown(value)}{_where_it_is(suite.repo_root, value, resolved)}")
    return resolved


def _where_it_is(root: Path, value: str, resolved: Path) -> str:
    """What the user likely meant: a folder named instead of a file, or a path from the current folder (candidate
    paths are the repository root's, as eval-kit reads them)."""
    if resolved.is_dir():
        return " (that is a folder; give the candidate file)"
    here = Path.cwd() / value
    if not os.path.isabs(value) and here.is_file():
        try:
            return (f" (candidate paths are relative to the repository root {root}, not the current folder: give "
                    f"{here.resolve().relative_to(root.resolve())} or an absolute path)")
        except ValueError:
            pass
    return f" (candidate paths are relative to the repository root {root})" if not os.path.isabs(value) else ""


def _shown(value: str, limit: int = 120) -> str:
    """The path as the user gave it, cut short: a message that repeats a 5,000-character value says nothing more."""
    return value if len(value) <= limit else f"{value[: limit - 20]}…{value[-19:]} ({len(value):,} characters)"


def read_candidate(path: Path, value: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"candidate {value} is not valid UTF-8 text") from None
    except OSError as error:
        raise UsageError(f"could not read candidate {value}: {error.strerror or error}") from None


def start_candidate_run(
    suite: DocSuite, case_id: str, candidate: str, run_id: str | None, method: str, clock: Clock
) -> tuple[Path, ResolvedCase, str]:
    """What a command that judges one candidate for one case checks first, in eval-kit's order:
    safe ids, the candidate, the case, then the result bundle's id (`<method>-<time>` by default)
    and that its folder stays inside the results root."""
    assert_safe_id(case_id, "case id")
    if run_id is not None:
        assert_safe_id(run_id, "run id")
    candidate_path = resolve_candidate(suite, candidate)
    case = resolve_case(suite, case_id)
    run_id = run_id or default_run_id(method, clock())
    suite.resolver.resolve_run_dir(run_id)
    return candidate_path, case, run_id
