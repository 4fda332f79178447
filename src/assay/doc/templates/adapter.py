"""Generic keyword adapter for an assay document suite: covered when the candidate contains the text.

Replace these hooks with your suite's own semantics; each receives one typed input object.
"""

from __future__ import annotations

import difflib
import json
from pathlib import PurePosixPath


def _checked_items(expected_items, where="expected-items.json"):
    """The case's expected items, checked: a misspelt key or an empty value is a broken fixture (exit 2),
    never a verdict (no items would grade green, a missing required_text red)."""
    if expected_items is None:
        raise ValueError(
            'the case has no expected-items.json: add {"role": "grader_input", "path": "expected-items.json"}'
            " to its case-manifest.json artifacts"
        )
    items = expected_items.get("items") if isinstance(expected_items, dict) else None
    if not isinstance(items, list):
        raise ValueError(f'{where} needs "items", a list of {{"id", "required_text"}}')
    for item in items:
        item_id = item.get("id", "(no id)") if isinstance(item, dict) else "(no id)"
        misspelt = _misspelt_key(item)
        if misspelt:
            raise ValueError(
                f'{where}: expected item {item_id} has "{misspelt[0]}", which is no item field; rename it to "{misspelt[1]}"'
            )
        text = item.get("required_text") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text:
            raise ValueError(f"{where}: expected item {item_id} needs required_text, a non-empty string")
        for key in ("id", "kind", "severity"):
            if (key == "id" or key in item) and (not isinstance(item.get(key), str) or not item[key]):
                raise ValueError(f"{where}: expected item {item_id} needs {key}, a non-empty string")
    return items


# An item key one or two typos away from a field it lacks ("severty"): read as absent, it would
# silently grade with the default. Other extra keys are the suite's own and are left alone.
_ITEM_FIELDS = ("id", "kind", "severity", "required_text")


def _misspelt_key(item):
    if not isinstance(item, dict):
        return None
    for key in item:
        if key in _ITEM_FIELDS:
            continue
        missing = [field for field in _ITEM_FIELDS if field not in item]
        near = difflib.get_close_matches(str(key).lower(), missing, n=1, cutoff=0.75)
        if near:
            return key, near[0]
    return None


def grade_candidate(grade):
    findings = []
    for item in _checked_items(grade.grader_inputs.get("expectedItems")):
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
    """`doctor` and `validate-fixtures` run this, so a broken expected-items.json fails there, before any run."""
    for entry in fixtures.manifests:
        expected = [
            artifact["path"]
            for artifact in entry.manifest["artifacts"]
            if artifact["role"] == "grader_input" and PurePosixPath(artifact["path"]).name == "expected-items.json"
        ]
        if not expected:
            raise ValueError(
                f"{entry.relative_path} is missing a grader_input artifact: expected-items.json, the items grade_candidate checks"
            )
        for path in expected:
            items = json.loads((entry.full_path.parent / path).read_text(encoding="utf-8"))
            _checked_items(items, str(PurePosixPath(entry.relative_path).parent / path))


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
