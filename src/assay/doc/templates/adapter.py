"""Generic keyword adapter for an assay document suite: covered when the candidate contains the text.

Replace these hooks with your suite's own semantics; each receives one typed input object.
"""

from __future__ import annotations

import json


def grade_candidate(grade):
    items = (grade.grader_inputs.get("expectedItems") or {}).get("items", [])
    findings = []
    for item in items:
        covered = item["required_text"] in grade.candidate_text
        findings.append(
            {
                "id": item["id"],
                "kind": item.get("kind", "generic"),
                "severity": item.get("severity", "medium"),
                "verdict": "covered" if covered else "missing",
                "evidence": ("found: " if covered else "not found: ") + item["required_text"],
            }
        )
    verdict = "green" if all(finding["verdict"] == "covered" for finding in findings) else "red"
    return {"verdict": verdict, "findings": findings}


def render_report(report):
    lines = [f"# Eval Report: {report.case_id}", "", f"Verdict: {report.grades['verdict']}", ""]
    for finding in report.findings:
        lines.append(
            f"- {finding['id']} ({finding['kind']}, {finding['severity']}): {finding['verdict']} - {finding['evidence']}"
        )
    return "\n".join(lines)


def validate_fixtures(fixtures):
    for entry in fixtures.manifests:
        if not any(artifact["role"] == "grader_input" for artifact in entry.manifest["artifacts"]):
            raise ValueError(f"{entry.relative_path} needs at least one grader_input artifact")


# Model judges (`assay doc judge-coverage`, `judge-pairwise`, `generate` with
# evals/eval-kit.model-judge.config.json): the hooks below hand the bundled prompts the case's
# material. The judge sees each expected item with its id, kind, severity and source.


def _artifact_text(artifacts, role):
    return "\n\n".join(artifact.full_path.read_text(encoding="utf-8") for artifact in artifacts if artifact.role == role)


def _expected_items(artifacts):
    sources = [artifact.path for artifact in artifacts if artifact.role == "generation_visible"] or ["input"]
    items = []
    for artifact in artifacts:
        if artifact.role == "grader_input":
            for item in json.loads(artifact.full_path.read_text(encoding="utf-8")).get("items", []):
                items.append(
                    {
                        "item_id": item["id"],
                        "kind": item.get("kind", "generic"),
                        "severity": item.get("severity", "medium"),
                        "required_text": item["required_text"],
                        "source_refs": sources,
                    }
                )
    return items


def _echo(request):
    """The run metadata the judge must copy into its answer (assay checks it)."""
    return {
        "case_id": request.case_id,
        "model": request.model,
        "provider": request.provider,
        "prompt_version": request.prompt_version,
        "rubric_version": request.rubric_version,
    }


def resolve_generation_vars(generation):
    return {
        "source_material": _artifact_text(generation.artifacts, "generation_visible"),
        "candidate_instructions": "Write the document this case describes, from the source material only.",
        "output_format": "Markdown",
    }


def resolve_pointwise_vars(pointwise):
    expected = _expected_items(pointwise.artifacts)
    return {
        **_echo(pointwise),
        "source_material": _artifact_text(pointwise.artifacts, "generation_visible"),
        "case_rubric": _artifact_text(pointwise.artifacts, "rubric"),
        "expected_items": json.dumps(expected, indent=2),
        "candidate_path": pointwise.resolver.relative_to_repo(pointwise.candidate_path),
        "candidate": pointwise.candidate_content,
        "_expectedItemsForCanonicalization": expected,  # `_` variables never reach the model
    }


def canonicalize_expected_item_metadata(actual_items, expected_items):
    """Keep the judge's verdicts, but each item's kind, severity and sources as the case states them."""
    expected = {item["item_id"]: item for item in expected_items}
    return [
        {**item, **{key: expected[item["item_id"]][key] for key in ("kind", "severity", "source_refs")}}
        for item in actual_items
        if item.get("item_id") in expected
    ]


def resolve_pairwise_vars(pairwise):
    order = pairwise.randomized_order
    return {
        **_echo(pairwise),
        "source_material": _artifact_text(pairwise.artifacts, "generation_visible"),
        "case_rubric": _artifact_text(pairwise.artifacts, "rubric"),
        "expected_items": json.dumps(_expected_items(pairwise.artifacts), indent=2),
        "candidate_a": pairwise.candidate_a_content,
        "candidate_b": pairwise.candidate_b_content,
        "randomization_method": order.method,
        "randomization_seed": order.seed,
        "original_order": ", ".join(order.original_order),
        "candidate_order": ", ".join(order.candidate_order),
    }
