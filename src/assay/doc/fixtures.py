"""`validate-fixtures`: every file a case names is checked as `run-case` reads it, then the adapter's own check.

One definition of "valid": the manifest and its artifacts are resolved and the grader inputs parsed by
the same functions `run-case` uses, so a fixture that passes here cannot fail there on loading.
"""

from __future__ import annotations

from assay.doc.cases import configured_manifest_paths, load_grader_inputs, resolve_case_manifest_path
from assay.doc.config import DocSuite
from assay.doc.hooks import FixtureManifest, FixturesInput
from assay.doc.paths import relative_posix
from assay.doc.session import adapter_module_path, adapter_session

__all__ = ["validate_fixtures"]


async def validate_fixtures(suite: DocSuite) -> int:
    """Return the number of manifests checked; the adapter's hook signals failure by raising."""
    entries = []
    for path in configured_manifest_paths(suite):
        # eval-kit checked the manifest alone, so a broken expected-items.json passed here and only
        # failed in run-case; resolving the case and parsing its inputs catches it in CI.
        case = resolve_case_manifest_path(suite, path)
        load_grader_inputs(case)
        entries.append(FixtureManifest(case.manifest, path, relative_posix(suite.suite_root, path)))
    adapter_path = adapter_module_path(suite)
    if adapter_path is not None:
        async with adapter_session(suite, adapter_path) as adapter:
            export = adapter.export_for("validate_fixtures")
            if export is not None:
                await adapter.call(export, FixturesInput(suite, tuple(entries)))
    return len(entries)
