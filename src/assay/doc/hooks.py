"""The typed inputs each adapter hook receives, and their JavaScript (camelCase) form for `.mjs` adapters.

Python hooks get one frozen object; JavaScript hooks get eval-kit's object with the same fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from assay.doc.cases import CaseArtifact
from assay.doc.config import DocSuite
from assay.doc.paths import PathResolver

__all__ = [
    "HOOKS",
    "RESOLVER_MARKER",
    "CompileReportInput",
    "FixtureManifest",
    "FixturesInput",
    "GenerationInput",
    "GradeInput",
    "Hook",
    "PairwiseInput",
    "PointwiseInput",
    "RandomizedOrder",
    "ReportInput",
]

# Stands for the resolver in a JavaScript payload; the node bridge swaps in a live resolver object.
RESOLVER_MARKER = "__assay_resolver__"


@dataclass(frozen=True, slots=True)
class Hook:
    """One extension point: the export names tried in order (snake_case first, then eval-kit's)."""

    name: str
    exports: tuple[str, ...]


HOOKS = {
    "grade": Hook("grade", ("grade_candidate", "gradeCandidate", "default")),
    "report": Hook(
        "report",
        ("render_deterministic_report", "renderDeterministicReport", "render_report", "renderReport", "default"),
    ),
    "generation": Hook("generation", ("resolve_generation_vars", "resolveGenerationVars")),
    "pointwise": Hook("pointwise", ("resolve_pointwise_vars", "resolvePointwiseVars")),
    "canonicalize": Hook("canonicalize", ("canonicalize_expected_item_metadata", "canonicalizeExpectedItemMetadata")),
    "pairwise": Hook("pairwise", ("resolve_pairwise_vars", "resolvePairwiseVars")),
    "compile_report": Hook("compile_report", ("compile_report", "compileReport")),
    "validate_fixtures": Hook("validate_fixtures", ("validate_fixtures", "validateFixtures")),
}


def _artifacts_js(artifacts: Sequence[CaseArtifact]) -> list[dict[str, str]]:
    return [artifact.to_json() for artifact in artifacts]


@dataclass(frozen=True, slots=True)
class GradeInput:
    case_id: str
    candidate_text: str
    grader_inputs: Mapping[str, Any]  # keyed like eval-kit: expected-items.json -> "expectedItems"

    def to_js(self) -> dict[str, Any]:
        return {**self.grader_inputs, "candidateText": self.candidate_text}


@dataclass(frozen=True, slots=True)
class ReportInput:
    case_id: str
    grades: Mapping[str, Any]
    findings: Sequence[Any]
    case_dir: Path
    candidate_path: Path
    resolver: PathResolver = field(repr=False)

    def to_js(self) -> dict[str, Any]:
        return {
            "caseId": self.case_id,
            "grades": self.grades,
            "findings": list(self.findings),
            "caseDir": str(self.case_dir),
            "candidatePath": str(self.candidate_path),
            "resolver": RESOLVER_MARKER,
        }


@dataclass(frozen=True, slots=True)
class GenerationInput:
    case_id: str
    case_dir: Path
    artifacts: tuple[CaseArtifact, ...]
    resolver: PathResolver = field(repr=False)

    def to_js(self) -> dict[str, Any]:
        return {
            "caseId": self.case_id,
            "caseDir": str(self.case_dir),
            "artifacts": _artifacts_js(self.artifacts),
            "resolver": RESOLVER_MARKER,
        }


@dataclass(frozen=True, slots=True)
class PointwiseInput:
    case_id: str
    case_dir: Path
    artifacts: tuple[CaseArtifact, ...]
    candidate_content: str
    candidate_path: Path
    prompt_version: str
    rubric_version: str
    model: str
    provider: str
    resolver: PathResolver = field(repr=False)

    def to_js(self) -> dict[str, Any]:
        return {
            "caseId": self.case_id,
            "caseDir": str(self.case_dir),
            "artifacts": _artifacts_js(self.artifacts),
            "candidateContent": self.candidate_content,
            "candidatePath": str(self.candidate_path),
            "promptVersion": self.prompt_version,
            "rubricVersion": self.rubric_version,
            "model": self.model,
            "provider": self.provider,
            "resolver": RESOLVER_MARKER,
        }


@dataclass(frozen=True, slots=True)
class RandomizedOrder:
    """Which original candidate is shown in each slot; `seed` is the parsed integer."""

    method: str
    seed: int
    original_order: tuple[str, str]
    candidate_order: tuple[str, str]

    @property
    def swapped(self) -> bool:
        return self.candidate_order != self.original_order

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "seed": self.seed,
            "original_order": list(self.original_order),
            "candidate_order": list(self.candidate_order),
        }


@dataclass(frozen=True, slots=True)
class PairwiseInput:
    """Candidate A/B here are the displayed slots after randomisation, not the CLI's --candidate-a/-b."""

    case_id: str
    case_dir: Path
    artifacts: tuple[CaseArtifact, ...]
    candidate_a_content: str
    candidate_b_content: str
    candidate_a_path: Path
    candidate_b_path: Path
    prompt_version: str
    rubric_version: str
    model: str
    provider: str
    randomized_order: RandomizedOrder
    resolver: PathResolver = field(repr=False)

    def to_js(self) -> dict[str, Any]:
        return {
            "caseId": self.case_id,
            "caseDir": str(self.case_dir),
            "artifacts": _artifacts_js(self.artifacts),
            "candidateAContent": self.candidate_a_content,
            "candidateBContent": self.candidate_b_content,
            "candidateAPath": str(self.candidate_a_path),
            "candidateBPath": str(self.candidate_b_path),
            "promptVersion": self.prompt_version,
            "rubricVersion": self.rubric_version,
            "model": self.model,
            "provider": self.provider,
            "randomizedOrder": self.randomized_order.to_json(),
            "resolver": RESOLVER_MARKER,
        }


@dataclass(frozen=True, slots=True)
class CompileReportInput:
    config: DocSuite
    run_id: str
    runs: Mapping[str, str]  # e.g. {"deterministic": "<run id>"}; resolve with resolver.resolve_run_dir
    result_dir: Path
    resolver: PathResolver = field(repr=False)

    def to_js(self) -> dict[str, Any]:
        return {
            "config": {**self.config.to_json(), "pathResolver": RESOLVER_MARKER},
            "runId": self.run_id,
            "runs": dict(self.runs),
            "resultDir": str(self.result_dir),
            "resolver": RESOLVER_MARKER,
        }


@dataclass(frozen=True, slots=True)
class FixtureManifest:
    manifest: Any
    full_path: Path
    relative_path: str

    def to_js(self) -> dict[str, Any]:
        return {"manifest": self.manifest, "fullPath": str(self.full_path), "relativePath": self.relative_path}


@dataclass(frozen=True, slots=True)
class FixturesInput:
    config: DocSuite
    manifests: tuple[FixtureManifest, ...]

    def to_js(self) -> dict[str, Any]:
        return {
            "config": {**self.config.to_json(), "pathResolver": RESOLVER_MARKER},
            "manifests": [entry.to_js() for entry in self.manifests],
        }
