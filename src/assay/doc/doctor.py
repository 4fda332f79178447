"""`doctor`: check a suite end to end without calling a model, stopping at the first failure.

Yields one `ok - ...` line per passed check so the command can print progress as it goes.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import AsyncIterator, Mapping

from assay.doc.artifacts import make_results_folder
from assay.doc.cases import configured_manifest_paths, discover_case_ids, left_out_note, resolve_case_manifest_path
from assay.doc.config import load_suite
from assay.doc.fixtures import validate_fixtures
from assay.doc.grade import deterministic_modules
from assay.doc.paths import relative_posix
from assay.doc.session import adapter_module_path, adapter_session, require_hook
from assay.errors import AdapterError, CaseError, ConfigError

__all__ = ["DOCTOR_PROBE", "MODEL_METHODS", "run_doctor"]

DOCTOR_PROBE = ".eval-kit-doctor-write-test"
MODEL_METHODS = ("generate", "judge_coverage", "judge_pairwise")


def _needed_hooks(suite) -> list[tuple[str, str, str]]:
    """The hooks the enabled methods call: (hook, command, method key). `report` is left out: it is on
    unless switched off, and the starter adapter has no `compile_report`."""
    needed = []
    if suite.raw.get("adapter") and (suite.method("deterministic") or {}).get("enabled") is not False:
        needed += [("grade", "run-case", "deterministic"), ("report", "run-case", "deterministic")]
    for key, hook, command in (
        ("generate", "generation", "generate"),
        ("judge_coverage", "pointwise", "judge-coverage"),
        ("judge_pairwise", "pairwise", "judge-pairwise"),
    ):
        if (suite.method(key) or {}).get("enabled") is True:
            needed.append((hook, command, key))
    return needed


def _uses_legacy_modules(suite) -> bool:
    """Whether `run-case` grades with the legacy `graders`/`reporters` modules (no `adapter`): a misspelt module
    path or `runner_defaults` name passed doctor and failed only in `run-case`."""
    if suite.raw.get("adapter") or not (suite.raw.get("graders") or suite.raw.get("reporters")):
        return False
    return (suite.method("deterministic") or {}).get("enabled") is not False


async def run_doctor(
    config: str | None, *, cwd: Path | None = None, environ: Mapping[str, str] | None = None,
    hook_timeout_s: float | None = None,
) -> AsyncIterator[str]:
    env = os.environ if environ is None else environ
    suite = dataclasses.replace(load_suite(config, cwd=cwd), hook_timeout_s=hook_timeout_s)
    yield f"ok - config {suite.relative_config_path()} is valid"
    if not suite.suite_root.is_dir():
        raise ConfigError(f"suite root not found: {relative_posix(suite.repo_root, suite.suite_root)}")
    yield f"ok - suite root {relative_posix(suite.repo_root, suite.suite_root) or '.'} exists"
    make_results_folder(suite, suite.results_root)
    try:
        probe = suite.results_root / DOCTOR_PROBE
        probe.write_text("ok\n", encoding="utf-8")
        probe.unlink()
    except OSError as error:
        raise ConfigError(f"results root is not writable: {suite.results_root}: {error.strerror or error}") from None
    yield f"ok - results root {relative_posix(suite.repo_root, suite.results_root)} is writable"
    adapter_path = adapter_module_path(suite)
    if adapter_path is not None:
        async with adapter_session(suite, adapter_path) as adapter:
            kind = "JavaScript (node)" if adapter.uses_node else "Python"
            for hook, command, key in _needed_hooks(suite):
                try:
                    require_hook(adapter, hook, command)
                except AdapterError as error:  # the command would fail on it: so does doctor, not "passed"
                    raise AdapterError(f"{error} (methods.{key} is enabled in {suite.relative_config_path()})") from None
        yield f"ok - adapter {relative_posix(suite.repo_root, adapter_path)} loads ({kind})"
    if _uses_legacy_modules(suite):
        # Loaded as run-case loads them; a failure fails doctor. Passing adds no line: eval-kit's doctor has no
        # such check, and its count of checks stays the same.
        async with deterministic_modules(suite):
            pass
    seen: dict[str, str] = {}
    for path in configured_manifest_paths(suite):
        case = resolve_case_manifest_path(suite, path)
        relative = relative_posix(suite.suite_root, path)
        if case.case_id in seen:
            raise CaseError(f"duplicate case id {case.case_id}: {seen[case.case_id]} and {relative}")
        seen[case.case_id] = relative
    yield f"ok - {len(seen)} case manifest(s) resolve with all artifacts present"
    checked = await validate_fixtures(suite)
    yield f"ok - fixtures validate ({checked} manifest(s))"
    # A misspelt `cases.include` passed as a suite of 0 cases, with nothing pointing at the typo.
    left_out = left_out_note(suite)
    yield f"ok - {len(discover_case_ids(suite))} case(s) discovered" + (f"; {left_out}" if left_out else "")
    enabled = [key for key in MODEL_METHODS if (suite.method(key) or {}).get("enabled") is True]
    if enabled:
        from assay.core.endpoint_defaults import JUDGE_CLIENT_DEFAULTS

        if JUDGE_CLIENT_DEFAULTS.base_url(None, env) is None:
            raise ConfigError(
                f"model methods enabled ({', '.join(enabled)}) but no judge endpoint is configured: "
                "set ASSAY_JUDGE_BASE_URL (or OPENAI_BASE_URL)"
            )
        from assay.judge.client import JudgeEndpoint
        from assay.judge.errors import JudgeError

        try:  # the URL's form and every ASSAY_JUDGE_* setting, as a model command reads them
            JudgeEndpoint.from_environment(env)
        except JudgeError as error:
            raise ConfigError(str(error)) from None
        yield f"ok - judge endpoint configured for {', '.join(enabled)}"
    else:
        yield "ok - no model method enabled; a judge endpoint is not required"
