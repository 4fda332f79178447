"""Result bundles: artifact records with sha256, and the v2 manifest written last (fail closed).

A run directory without `manifest.json` is an unfinished or failed run; readers must ignore it.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping, Sequence

from assay import __version__
from assay.core.fsutil import (
    remove_stale_temporary_files,
    sha256_file,
    write_atomically,
)
from assay.core.timestamps import utc_timestamp
from assay.doc.config import DocSuite
from assay.doc.paths import contained_path, relative_posix
from assay.errors import CaseError, ConfigError

__all__ = [
    "MANIFEST_FILE",
    "MANIFEST_SCHEMA",
    "RUNNER_VERSION",
    "RunBundle",
    "artifact_record",
    "default_run_id",
    "dump_json",
    "media_type_for",
    "normalize_legacy_manifest",
    "make_results_folder",
    "open_run",
    "sha256_file",
]

MANIFEST_FILE = "manifest.json"
MANIFEST_SCHEMA = "result-manifest.v2.schema.json"
MANIFEST_VERSION = "eval-kit.result-manifest.v2"
RUNNER_VERSION = __version__

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def default_run_id(prefix: str, moment: datetime) -> str:
    """`<prefix>-<timestamp with ':' and '.' as '-'>`, e.g. `deterministic-2026-07-03T10-11-12-123Z`."""
    return f"{prefix}-" + utc_timestamp(moment).replace(":", "-").replace(".", "-")


def dump_json(value: Any) -> str:
    """Every JSON output: 2-space indent, UTF-8 as is, trailing newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def media_type_for(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    return {
        ".json": "application/json",
        ".md": "text/markdown",
        ".html": "text/html",
        ".txt": "text/plain",
    }.get(suffix, "application/octet-stream")


def _strict_relative(path: str, label: str) -> str:
    if os.path.isabs(path) or path.startswith("\\"):
        raise CaseError(f"{label} must be relative to the run directory, got {path}")
    return PurePosixPath(*Path(path).parts).as_posix()


def artifact_record(
    run_dir: Path, role: str, path: str, media_type: str | None = None, *, legacy: bool = False
) -> dict[str, Any]:
    """A record for one bundle file: contained in `run_dir`, hashed, sized, with its redaction status."""
    if not isinstance(role, str) or not role.strip():
        raise CaseError("artifact role must be a non-blank string")
    if not isinstance(path, str) or not path.strip():
        raise CaseError(f"artifact {role} path must be a non-blank string")
    posix = _strict_relative(path, f"artifact {role} path")
    full_path = contained_path(run_dir, run_dir / posix, f"artifact {role} path {path}")
    redaction = "legacy-unknown" if legacy else ("raw-local" if role.startswith("raw_") else "public-safe")
    if not full_path.is_file():
        if not legacy:
            raise CaseError(f"artifact {role} file not found: {posix}")
        return {
            "role": role,
            "path": posix,
            "sha256": None,
            "size_bytes": 0,
            "media_type": media_type or media_type_for(posix),
            "redaction_status": "legacy-unknown",
            "encoding": "utf-8",
        }
    return {
        "role": role,
        "path": posix,
        "sha256": sha256_file(full_path),
        "size_bytes": full_path.stat().st_size,
        "media_type": media_type or media_type_for(posix),
        "redaction_status": redaction,
        "encoding": "utf-8",
    }


def git_commit(repo_root: Path) -> str:
    git = shutil.which("git")
    if git is None:
        return "unknown"
    try:
        result = subprocess.run(
            [git, "rev-parse", "HEAD"], cwd=repo_root, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and commit else "unknown"


def _package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unavailable"


def tool_versions(*, node_version: str | None) -> dict[str, str]:
    """Versions that produced the bundle; node only when a JavaScript adapter ran (its own report)."""
    versions = {"python": platform.python_version(), "assay": __version__, "openai": _package_version("openai")}
    versions["node"] = node_version or "unused"
    return versions


@dataclass
class RunBundle:
    """One run directory being written; `finish` hashes the artifacts and writes the manifest last."""

    suite: DocSuite
    run_id: str
    run_dir: Path
    started_at: datetime
    clock: Clock = utc_now
    node_version: str | None = None
    written: list[str] = field(default_factory=list)
    # When this run took the folder over, on the clock file times use (`clock` may be a test's).
    opened_at: float = field(default_factory=time.time)

    def path(self, relative: str, label: str = "result artifact") -> Path:
        return self.suite.resolver.resolve_result_artifact(self.run_dir, relative, label)

    def write_text(self, relative: str, text: str) -> Path:
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, text)
        self.written.append(relative)
        return target

    def write_bytes(self, relative: str, data: bytes) -> Path:
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, data)
        self.written.append(relative)
        return target

    def write_json(self, relative: str, value: Any) -> Path:
        return self.write_text(relative, dump_json(value))

    def relative_to_repo(self, relative: str) -> str:
        return relative_posix(self.suite.repo_root, self.run_dir / relative)

    def build_manifest(
        self,
        *,
        run_type: str,
        runner_suffix: str,
        case_ids: Sequence[str],
        artifacts: Sequence[tuple[str, str] | tuple[str, str, str | None]],
        output_files: Sequence[str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        ended_at = self.clock()
        records = [artifact_record(self.run_dir, *entry) for entry in artifacts]
        manifest: dict[str, Any] = {
            "schema_version": MANIFEST_VERSION,
            "run_id": self.run_id,
            "run_type": run_type,
            "runner": {"id": f"{self.suite.suite_id}-{runner_suffix}", "version": RUNNER_VERSION},
            "case_ids": list(case_ids),
            "started_at": utc_timestamp(self.started_at),
            "ended_at": utc_timestamp(ended_at),
            "duration_ms": max(0, int((ended_at - self.started_at).total_seconds() * 1000)),
            "status": "completed",
            "git": {"commit": git_commit(self.suite.repo_root)},
            "command": " ".join(sys.argv),
            "tool_versions": tool_versions(node_version=self.node_version),
            **dict(extra or {}),
            "artifacts": records,
            "output_files": list(output_files)
            if output_files is not None
            else [MANIFEST_FILE, *(r["path"] for r in records)],
        }
        return manifest

    def write_manifest(self, manifest: Mapping[str, Any]) -> Path:
        """Validate against the v2 schema and write `manifest.json`: the last file of a run."""
        self.suite.schemas.validate(MANIFEST_SCHEMA, manifest, "result manifest")
        target = self.run_dir / MANIFEST_FILE
        # A finished bundle holds no temporary files. One made before this run took the folder over
        # is not this run's, and a write lasts milliseconds: it is what a killed run of the same id
        # left, however recently (a re-run at once would otherwise seal it in for good).
        _remove_temporaries_made_before(self.run_dir, self.opened_at)
        write_atomically(target, dump_json(manifest))
        return target


def open_run(suite: DocSuite, run_id: str, *, clock: Clock = utc_now, node_version: str | None = None) -> RunBundle:
    """Create (or reuse) the run directory and drop any old manifest before the first write.

    eval-kit overwrote a reused run directory in place and left its old manifest until the end, so a
    failed re-run looked complete; removing it first keeps "no manifest" meaning "not finished".
    """
    started_at = clock()
    run_dir = suite.resolver.resolve_run_dir(run_id)
    make_results_folder(suite, run_dir)
    (run_dir / MANIFEST_FILE).unlink(missing_ok=True)
    remove_stale_bundle_temporaries(suite.results_root)
    return RunBundle(
        suite=suite, run_id=run_id, run_dir=run_dir, started_at=started_at, clock=clock, node_version=node_version
    )


def make_results_folder(suite: DocSuite, folder: Path) -> None:
    """`folder` (the results root, or a run folder in it) made with its parents; a file in its way or
    a folder that cannot be written is a `ConfigError` naming the path and the setting to fix, not an
    OS error from deep inside the run."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return
    except (FileExistsError, NotADirectoryError):
        blocking = next((path for path in (folder, *folder.parents) if path.exists() and not path.is_dir()), folder)
    except OSError as error:
        raise ConfigError(
            f"results root {relative_posix(suite.repo_root, suite.results_root) or '.'} is not writable: "
            f"{error.strerror or error} (results_root in {suite.relative_config_path()})"
        ) from None
    shown = relative_posix(suite.repo_root, blocking) or "."
    if blocking == folder and folder != suite.results_root:  # the run's own folder name is taken by a file
        raise ConfigError(f"run folder {shown} is a file, not a folder; give another --run-id or move the file")
    raise ConfigError(
        f"results root {relative_posix(suite.repo_root, suite.results_root) or '.'} cannot be made: {shown} is a file, "
        f"not a folder; fix results_root in {suite.relative_config_path()} (it is relative to that file's folder)"
    )


def remove_stale_bundle_temporaries(results_root: Path) -> None:
    """Temporary files killed runs left in unfinished bundles (no manifest) under `results_root`.

    Only unfinished bundles can hold them: the manifest is the last file a run writes, a re-run
    removes it before writing again, and a run that finishes a bundle first removes what killed
    runs of the same id left in it. Links are not followed out of the results root.
    """
    try:
        with os.scandir(results_root) as listing:
            bundles = [Path(entry.path) for entry in listing if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for bundle in bundles:
        if (bundle / MANIFEST_FILE).exists():
            continue
        for folder, _subfolders, _files in os.walk(bundle):  # os.walk does not descend into links
            remove_stale_temporary_files(Path(folder))


def _remove_temporaries_made_before(bundle: Path, moment: float) -> None:
    """The `write_atomically` temporaries in `bundle` (links not followed) last changed before `moment`."""
    age = max(0.0, time.time() - moment)
    for folder, _subfolders, _files in os.walk(bundle):
        remove_stale_temporary_files(Path(folder), older_than_s=age)


def _legacy_media_type(path: str) -> str:
    """eval-kit's guess for a legacy output: JSON, Markdown, else bytes."""
    return "application/json" if path.endswith(".json") else "text/markdown" if path.endswith(".md") else (
        "application/octet-stream"
    )


def normalize_legacy_manifest(manifest: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """A v1 manifest (no `artifacts`) converted to v2 records; v2 manifests come back unchanged.

    As eval-kit: one `legacy_output` record per `output_files` entry (an existing file is hashed and
    `public-safe`; a missing one is a `legacy-unknown` record with no hash), the v1 times, command and
    tool versions kept when present (else the epoch, `unknown`, none)."""
    if isinstance(manifest.get("artifacts"), list):
        return dict(manifest)
    run_type = manifest.get("run_type")
    git = manifest.get("git")
    commit = manifest.get("git_commit") or (git.get("commit") if isinstance(git, Mapping) else None) or "unknown"
    epoch = "1970-01-01T00:00:00.000Z"
    output_files = [str(path) for path in manifest.get("output_files") or []]
    artifacts = []
    for path in output_files:
        exists = os.path.lexists(run_dir / path) if not os.path.isabs(path) else False
        artifacts.append(artifact_record(run_dir, "legacy_output", path, _legacy_media_type(path), legacy=not exists))
    tool_versions = manifest.get("tool_versions")
    return {
        "schema_version": MANIFEST_VERSION,
        "run_id": str(manifest.get("run_id") or run_dir.name),
        "run_type": str(run_type or "unknown"),
        "runner": {"id": f"legacy-{run_type or 'unknown'}", "version": "legacy"},
        "case_ids": [str(case_id) for case_id in manifest.get("case_ids") or []],
        "started_at": manifest.get("started_at") or epoch,
        "ended_at": manifest.get("ended_at") or epoch,
        "duration_ms": manifest.get("duration_ms") or 0,
        "status": "completed",
        "git": {"commit": str(commit)},
        "command": str(manifest.get("command") or "unknown"),
        "tool_versions": dict(tool_versions) if isinstance(tool_versions, Mapping) else {},
        "artifacts": artifacts,
        "output_files": output_files,
    }
