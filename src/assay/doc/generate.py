"""`generate`: ask the model for one candidate document for a case and keep it in a result bundle.

The adapter supplies the prompt variables; the kit renders, calls, records and writes the manifest last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from assay.doc.artifacts import Clock, open_run, utc_now
from assay.doc.cases import resolve_case
from assay.doc.config import DocSuite
from assay.doc.hooks import GenerationInput
from assay.doc.model_run import JudgeCallLog, ModelSettings, check_vars
from assay.doc.paths import assert_safe_id
from assay.doc.prompts import load_prompt_template
from assay.doc.session import adapter_module_path, adapter_session, require_hook
from assay.errors import AdapterError
from assay.judge.errors import JudgeError

__all__ = ["GenerationResult", "generate_candidate"]

GENERATION_VARS = ("source_material", "candidate_instructions", "output_format")


@dataclass(frozen=True)
class GenerationResult:
    case_id: str
    candidate_path: Path
    result_dir: Path
    manifest: Mapping[str, Any]


async def generate_candidate(
    suite: DocSuite, settings: ModelSettings, *, case_id: str, run_id: str, clock: Clock = utc_now
) -> GenerationResult:
    assert_safe_id(case_id, "case id")
    assert_safe_id(run_id, "run id")
    case = resolve_case(suite, case_id)
    template = load_prompt_template(suite, "generation")
    adapter_path = adapter_module_path(suite)
    if adapter_path is None:
        raise AdapterError("generate requires an adapter exporting resolve_generation_vars or resolveGenerationVars")
    async with adapter_session(suite, adapter_path) as adapter:
        export = require_hook(adapter, "generation", "generate")
        bundle = open_run(suite, run_id, clock=clock, node_version=adapter.node_version)
        variables = await adapter.call(
            export, GenerationInput(case.case_id, case.case_dir, case.artifacts, suite.resolver)
        )
    check_vars(variables, export, GENERATION_VARS, template, supplied=("case_id",))
    log = JudgeCallLog(bundle, template.source, template.text)
    try:
        async with settings.client() as client:
            text = await log.ask(client, settings, {"case_id": case.case_id, **variables})
    finally:
        log_artifacts = log.write()
    text = text.strip()
    if not text:
        raise JudgeError("generation output was empty")
    candidate_file = f"cases/{case.case_id}/candidate.md"
    candidate_path = bundle.write_text(candidate_file, text + "\n")
    report = "\n".join(
        [
            f"# Generation Eval Report: {case.case_id}",
            "",
            f"Model: {settings.model}",
            f"Provider: {settings.provider}",
            f"Auth mode: {settings.endpoint.auth_mode}",
            "",
            "## Outputs",
            "",
            f"- Candidate: {bundle.relative_to_repo(candidate_file)}",
            *(f"- {role}: {bundle.relative_to_repo(path)}" for role, path in log_artifacts),
            "",
        ]
    )
    bundle.write_text("report.md", report)
    manifest = bundle.build_manifest(
        run_type="generation",
        runner_suffix="generate",
        case_ids=[case.case_id],
        artifacts=[("report", "report.md"), *log_artifacts, ("candidate_markdown", candidate_file)],
        extra=settings.manifest_fields(),
    )
    bundle.write_manifest(manifest)
    return GenerationResult(case.case_id, candidate_path, bundle.run_dir, manifest)
