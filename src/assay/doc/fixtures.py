"""`validate-fixtures`: every configured manifest exists and passes its schema, then the adapter's own check.

Artifact files are not opened here; `doctor` and case resolution check those.
"""

from __future__ import annotations

from assay.doc.cases import MANIFEST_SCHEMA, configured_manifest_paths, read_manifest
from assay.doc.config import DocSuite
from assay.doc.hooks import FixtureManifest, FixturesInput
from assay.doc.paths import is_contained, relative_posix
from assay.doc.session import adapter_module_path, adapter_session
from assay.errors import CaseError

__all__ = ["validate_fixtures"]


async def validate_fixtures(suite: DocSuite) -> int:
    """Return the number of manifests checked; the adapter's hook signals failure by raising."""
    entries = []
    for path in configured_manifest_paths(suite):
        relative = relative_posix(suite.suite_root, path)
        if not is_contained(suite.suite_root, path):
            raise CaseError(f"case manifest {relative} escapes {suite.suite_root}")
        if not path.is_file():
            raise CaseError(f"configured case manifest not found: {relative}")
        try:
            manifest = read_manifest(path)
        except (OSError, ValueError) as error:
            raise CaseError(f"case manifest {relative} is not valid JSON: {error}") from None
        suite.schemas.validate(MANIFEST_SCHEMA, manifest, f"case manifest {relative}")
        entries.append(FixtureManifest(manifest, path, relative))
    adapter_path = adapter_module_path(suite)
    if adapter_path is not None:
        async with adapter_session(suite, adapter_path) as adapter:
            export = adapter.export_for("validate_fixtures")
            if export is not None:
                await adapter.call(export, FixturesInput(suite, tuple(entries)))
    return len(entries)
