"""Cases of a document suite: manifest discovery, full case resolution, and grader inputs.

A case is a directory holding `case-manifest.json`; its identity is the manifest's `case_id`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from assay.core.bounded_input import MAX_JSON_BYTES, decode_text, load_json, read_bounded
from assay.doc.config import DocSuite
from assay.doc.paths import assert_safe_id, is_contained, relative_posix, resolve_within
from assay.doc.schemas import SchemaValidationError
from assay.errors import CaseError

__all__ = [
    "MANIFEST_NAME",
    "CaseArtifact",
    "ResolvedCase",
    "configured_manifest_paths",
    "discover_case_ids",
    "glob_matches",
    "grader_input_key",
    "load_grader_inputs",
    "read_json_file",
    "read_manifest",
    "resolve_case",
    "resolve_case_manifest_path",
]

MANIFEST_NAME = "case-manifest.json"
MANIFEST_SCHEMA = "case-manifest.schema.json"


@dataclass(frozen=True, slots=True)
class CaseArtifact:
    role: str
    path: str  # as written in the manifest, relative to the case directory
    full_path: Path

    def to_json(self) -> dict[str, str]:
        # eval-kit hands hooks `{role, path, absolutePath}`; `fullPath`, the name assay used first, is kept.
        full = str(self.full_path)
        return {"role": self.role, "path": self.path, "absolutePath": full, "fullPath": full}


@dataclass(frozen=True, slots=True)
class ResolvedCase:
    case_id: str
    manifest: Mapping[str, Any]
    manifest_path: Path
    case_dir: Path
    artifacts: tuple[CaseArtifact, ...]

    def artifacts_with_role(self, role: str) -> list[CaseArtifact]:
        return [artifact for artifact in self.artifacts if artifact.role == role]


def glob_matches(pattern: str, name: str) -> bool:
    """Only `*` is special (any run of characters); the pattern must match the whole name.

    The literal pieces between stars are found left to right, so matching is linear in the name: the
    equivalent regex of many `.*` backtracks for ages on a near miss.
    """
    first, *middle, last = pattern.split("*") if "*" in pattern else (pattern, None)
    if last is None:
        return name == pattern
    if len(name) < len(first) + len(last) or not name.startswith(first) or not name.endswith(last):
        return False
    position, end = len(first), len(name) - len(last)
    for piece in middle:
        found = name.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def _is_kind(path: Path, check: Callable[[Path], bool], label: str) -> bool:
    """`path.is_file()`/`is_dir()`, with a path no file system can hold (a name past its length limit)
    reported as the case problem it is instead of escaping as an OSError."""
    try:
        return check(path)
    except OSError as error:
        raise CaseError(f"{label} cannot be used: {error.strerror or error}") from None


def configured_manifest_paths(suite: DocSuite) -> list[Path]:
    """Every manifest path the config names, sorted; `case_manifests` replaces `cases` discovery."""
    raw = suite.raw
    if "case_manifests" in raw:
        return sorted(suite.resolver.resolve_suite_path(entry, "case manifest") for entry in raw["case_manifests"])
    cases = raw.get("cases")
    if not cases:
        return []
    root = suite.resolver.resolve_suite_path(cases["root"], "cases.root")
    if not _is_kind(root, Path.is_dir, f"cases.root {relative_posix(suite.suite_root, root)}"):
        # eval-kit's words (a misspelt root is an error, not an empty suite), then where it is set
        problem = "is not a directory" if root.exists() else "does not exist"
        raise CaseError(f"cases root {problem}: {cases['root']} (cases.root in {relative_posix(suite.repo_root, suite.config_path)}"
                        f", relative to the suite root {relative_posix(suite.repo_root, suite.suite_root) or '.'})")
    include = cases.get("include") or ["*"]
    exclude = cases.get("exclude") or []
    paths = []
    for entry in sorted(os.scandir(root), key=lambda item: item.name):
        if not entry.is_dir():
            continue
        name = entry.name
        if not any(glob_matches(pattern, name) for pattern in include):
            continue
        if any(glob_matches(pattern, name) for pattern in exclude):
            continue
        directory = root / name
        if not is_contained(root, directory):
            raise CaseError(f"case directory {relative_posix(suite.repo_root, directory)} escapes {root}")
        paths.append(directory / MANIFEST_NAME)
    return paths


def read_json_file(path: Path, source: str, *, no_nul: bool = False) -> Any:
    """A JSON file a suite names, within the input bounds: `OSError` and `ValueError` (bad JSON) propagate
    for the caller to word; an oversized, non-UTF-8 or too deeply nested file is a `CaseError` naming `source`."""
    data = read_bounded(path, source=source, error=CaseError, max_bytes=MAX_JSON_BYTES)
    text = decode_text(data, source=source, error=CaseError)
    return load_json(text, source=source, error=CaseError, no_nul=no_nul)


def read_manifest(path: Path, label: str | None = None) -> Any:
    """A manifest's JSON; `label` (default: the path) is how messages name it."""
    # Manifest strings become paths and ids: a NUL would only surface later as an OS error.
    return read_json_file(path, f"case manifest {label or path}", no_nul=True)


def discover_case_ids(suite: DocSuite, skipped: list[str] | None = None) -> list[str]:
    """Case ids of readable manifests, sorted; missing, unreadable or id-less manifests are skipped, as
    eval-kit's discovery does. `skipped` collects, for a manifest that is there but was skipped, why. An id two
    manifests share is listed twice, as eval-kit lists it (`doctor` refuses the pair)."""
    ids: list[str] = []
    for path in configured_manifest_paths(suite):
        relative = _suite_relative(suite, path)
        try:
            manifest = read_manifest(path, relative)
        except FileNotFoundError:
            continue  # a case folder without a manifest (yet) is not a case
        except (OSError, ValueError, CaseError) as error:
            if skipped is not None:
                skipped.append(_unreadable(relative, error))
            continue
        if isinstance(manifest, dict) and isinstance(manifest.get("case_id"), str) and manifest["case_id"]:
            ids.append(manifest["case_id"])
        elif skipped is not None:
            skipped.append(f"case manifest {relative} has no case_id")
    return sorted(ids)


def _unreadable(relative: str, error: Exception) -> str:
    """Why the manifest at `relative` could not be read, as `resolve_case_manifest_path` says it."""
    if isinstance(error, json.JSONDecodeError):
        return f"case manifest {relative} is not valid JSON: {error}"
    if isinstance(error, OSError):
        return f"case manifest {relative}: {error.strerror or error}"
    return str(error)


def _suite_relative(suite: DocSuite, path: Path) -> str:
    return relative_posix(suite.suite_root, path)


def _manifest_fixes(suite: DocSuite, manifest: Any) -> str:
    """The key a misspelt one was meant to be (`case_idd` for `case_id`, `pth` for an artifact's `path`),
    as a config's schema errors say it: eval-kit's message says only what is missing or extra."""
    from jsonschema import Draft202012Validator

    from assay.core.format import did_you_mean

    validator = Draft202012Validator(suite.schemas.get(MANIFEST_SCHEMA), registry=suite.schemas.registry)
    fixes: list[str] = []
    for error in validator.iter_errors(manifest):
        if error.validator != "required" or not isinstance(error.instance, dict):
            continue
        where = "".join(f"{part}." for part in error.absolute_path)
        properties = error.schema.get("properties", {})
        extra = [key for key in error.instance if key not in properties]
        for missing in error.validator_value:
            if missing in error.instance:
                continue
            meant = did_you_mean(missing, extra, form="{}", shown=str)
            if meant:
                fixes.append(f"{where}{meant} should be {where}{missing}")
    return f" ({'; '.join(dict.fromkeys(fixes))})" if fixes else ""


def resolve_case_manifest_path(suite: DocSuite, manifest_path: Path) -> ResolvedCase:
    """Read and validate one manifest, resolving every artifact as a relative, contained, existing file."""
    relative = _suite_relative(suite, manifest_path)
    if not is_contained(suite.suite_root, manifest_path):
        raise CaseError(f"case manifest {relative} escapes {suite.suite_root}")
    if not _is_kind(manifest_path, Path.is_file, f"case manifest {relative}"):
        raise CaseError(f"configured case manifest not found: {relative}{_no_manifest_hint(suite, manifest_path)}")
    try:
        manifest = read_manifest(manifest_path, relative)
    except (OSError, ValueError) as error:
        raise CaseError(f"case manifest {relative} is not valid JSON: {error}") from None
    try:
        suite.schemas.validate(MANIFEST_SCHEMA, manifest, f"case manifest {relative}")
    except SchemaValidationError as error:
        raise SchemaValidationError(f"{error}{_manifest_fixes(suite, manifest)}") from None
    case_dir = manifest_path.parent
    artifacts = []
    for entry in manifest["artifacts"]:
        label = f"case {manifest['case_id']} artifact {entry['path']}"
        full_path = resolve_within(case_dir, entry["path"], label)
        shown = entry["path"] if len(entry["path"]) <= 80 else entry["path"][:77] + "..."
        if not _is_kind(full_path, Path.is_file, f"case manifest {relative}: artifact {shown}"):
            raise CaseError(f"{label} not found: {relative_posix(suite.repo_root, full_path)}")
        artifacts.append(CaseArtifact(entry["role"], entry["path"], full_path))
    return ResolvedCase(manifest["case_id"], manifest, manifest_path, case_dir, tuple(artifacts))


def _no_manifest_hint(suite: DocSuite, manifest_path: Path) -> str:
    """What to do about a folder `cases.include` selects that holds no `case-manifest.json` (an empty folder, a
    manifest saved under another name): eval-kit's message named only the file, which `doctor` and
    `validate-fixtures` then stop at."""
    from assay.core.format import did_you_mean

    folder = manifest_path.parent
    if "case_manifests" in suite.raw or manifest_path.name != MANIFEST_NAME or not folder.is_dir():
        return ""
    shown = _suite_relative(suite, folder)
    files = [entry.name for entry in folder.iterdir() if entry.is_file()]
    near = did_you_mean(MANIFEST_NAME, files, form="{}", shown=str)
    if near:
        return f" (the case folder {shown} has {near}: rename it {MANIFEST_NAME})"
    return (f" (cases.include selects the folder {shown}, which has no {MANIFEST_NAME}: "
            f"`assay doc scaffold-case --case {folder.name}` writes a starter case there, or leave the folder out "
            f"with cases.exclude)")


def resolve_case(suite: DocSuite, case_id: str) -> ResolvedCase:
    """The first configured manifest (sorted) whose `case_id` is `case_id`, fully resolved.

    A manifest that names no case id (not JSON, not an object, no `case_id`) cannot be matched by
    it; when such a manifest lies in a folder named `case_id` it is the one meant, and its problem
    is reported as `doctor` reports it (with line and column) instead of "not found".
    """
    assert_safe_id(case_id, "case id")
    known: list[str] = []
    unnamed: list[Path] = []
    configured = configured_manifest_paths(suite)
    for path in configured:
        try:
            manifest = read_manifest(path)
        except (OSError, ValueError, CaseError):
            unnamed.append(path)
            continue
        named = manifest.get("case_id") if isinstance(manifest, dict) else None
        if named == case_id:
            return resolve_case_manifest_path(suite, path)
        if isinstance(named, str) and named:
            known.append(named)
        else:
            unnamed.append(path)
    for path in unnamed:
        if path.parent.name == case_id:
            resolve_case_manifest_path(suite, path)  # raises: it has no case id, so it is not valid
    hint = _unselected_hint(suite, case_id, configured) or _not_found_hint(suite, case_id, known, unnamed)
    raise CaseError(f"case manifest not found for case: {case_id}{hint}")


def _unselected_hint(suite: DocSuite, case_id: str, configured: list[Path]) -> str:
    """The case's folder and manifest are there, but the config leaves them out (a misspelt
    `cases.include`, an `exclude` that matches, a `case_manifests` list without it): "not found" alone
    sent people looking for a file that exists."""
    left_out = [path for path in left_out_manifests(suite, configured) if path.parent.name == case_id]
    if not left_out:
        return ""
    return (f"; {_suite_relative(suite, left_out[0])} is there, but the config does not select it: check "
            f"{selection_settings(suite)}")


def left_out_manifests(suite: DocSuite, configured: list[Path] | None = None) -> list[Path]:
    """Manifests in `cases.root`'s folders that the config does not select, sorted."""
    cases = suite.raw.get("cases")
    if not isinstance(cases, dict) or not isinstance(cases.get("root"), str):
        return []
    root = suite.resolver.resolve_suite_path(cases["root"], "cases.root")
    if not os.path.isdir(root):
        return []
    selected = set(configured_manifest_paths(suite) if configured is None else configured)
    found = (Path(entry.path) / MANIFEST_NAME for entry in os.scandir(root) if entry.is_dir())
    return sorted(path for path in found if path not in selected and os.path.isfile(path))


def left_out_note(suite: DocSuite) -> str:
    """`N case folder(s) left out by <settings>: <first three>`, or "" when the config selects every case folder."""
    left_out = left_out_manifests(suite)
    if not left_out:
        return ""
    listed = ", ".join(_suite_relative(suite, path.parent) for path in left_out[:3])
    more = f" and {len(left_out) - 3} more" if len(left_out) > 3 else ""
    return f"{len(left_out)} case folder(s) left out by {selection_settings(suite)}: {listed}{more}"


def selection_settings(suite: DocSuite) -> str:
    """Where the config chooses its cases, for a message about one it left out."""
    settings = "case_manifests" if "case_manifests" in suite.raw else "cases.include and cases.exclude"
    return f"{settings} in {relative_posix(suite.repo_root, suite.config_path)}"


def _not_found_hint(suite: DocSuite, case_id: str, known: list[str], unnamed: list[Path]) -> str:
    from assay.core.format import did_you_mean

    hint = did_you_mean(case_id, known, form=" (did you mean {}?)", shown=str)
    unnamed = [path for path in unnamed if os.path.isfile(path)]  # a case folder without a manifest is not a case
    if unnamed:
        listed = ", ".join(_suite_relative(suite, path) for path in unnamed[:3])
        more = f" and {len(unnamed) - 3} more" if len(unnamed) > 3 else ""
        hint += f"; {len(unnamed)} case manifest(s) name no case id ({listed}{more}): `assay doc doctor` says why"
    return hint


def grader_input_key(file_name: str) -> str:
    """`expected-items.json` -> `expectedItems`: drop `.json`, camelCase `-x` (lowercase x only)."""
    # As node's `path.basename(name, ".json")`: a name that is only `.json` keeps it.
    stem = file_name[: -len(".json")] if file_name.endswith(".json") and file_name != ".json" else file_name
    return re.sub(r"-([a-z])", lambda match: match.group(1).upper(), stem)


def load_grader_inputs(case: ResolvedCase) -> dict[str, Any]:
    """Every `grader_input` artifact parsed as JSON, keyed by `grader_input_key` of its file name.

    Two files with the same key, or a key equal to `candidateText`, are refused: eval-kit let the
    later file silently replace the earlier value (or the candidate text itself).
    """
    inputs: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for artifact in case.artifacts_with_role("grader_input"):
        key = grader_input_key(artifact.full_path.name)
        if key == "candidateText":
            raise CaseError(f"case {case.case_id} grader_input {artifact.path} would replace candidateText; rename it")
        if key in sources:
            raise CaseError(
                f"case {case.case_id} grader_input {artifact.path} and {sources[key]} both map to key {key}"
            )
        try:
            inputs[key] = read_json_file(artifact.full_path, f"case {case.case_id} grader_input {artifact.path}")
        except OSError as error:
            raise CaseError(
                f"case {case.case_id} grader_input {artifact.path} could not be read: {error.strerror or error}"
            ) from None
        except ValueError as error:
            raise CaseError(f"case {case.case_id} grader_input {artifact.path} is not valid JSON: {error}") from None
        sources[key] = artifact.path
    return inputs
