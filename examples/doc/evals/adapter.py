"""Release-notes adapter for the assay doc example: deterministic checks plus the model-judge hooks.

Each hook receives one typed input object from `assay.doc.hooks`; see docs/doc.md.
"""

from __future__ import annotations

import json

from assay.doc.verdict import aggregate_verdict

POLICY = {
    "blocking_severities": ["critical"],
    "blocking_verdicts": ["missing"],
    "non_green_verdicts": ["missing"],
}


def _missing_phrases(text: str, phrases: list[str]) -> list[str]:
    lowered = text.lower()
    return [phrase for phrase in phrases if phrase.lower() not in lowered]


def grade_candidate(grade):
    findings = []
    for item in _checked_items(grade.grader_inputs["expectedItems"], "expected-items.json"):
        missing = _missing_phrases(grade.candidate_text, item["must_include_all"])
        findings.append(
            {
                "id": item["id"],
                "kind": item["kind"],
                "severity": item["severity"],
                "verdict": "missing" if missing else "covered",
                "evidence": f"missing: {', '.join(missing)}" if missing else "all required phrases present",
            }
        )
    return {"verdict": aggregate_verdict(findings, POLICY), "findings": findings}


def render_report(report):
    lines = [f"# Eval Report: {report.case_id}", "", f"Verdict: {report.grades['verdict']}", ""]
    for finding in report.findings:
        lines.append(
            f"- {finding['id']} ({finding['kind']}, {finding['severity']}): {finding['verdict']} - {finding['evidence']}"
        )
    return "\n".join(lines)


_ITEM_KEYS = ("id", "kind", "severity")


def _checked_items(document, where):
    """The expected items, each with its id, kind, severity and must_include_all phrases: a misspelt key is a
    broken fixture that `doctor` names, not a KeyError in a judge hook after the run has started."""
    items = document.get("items") if isinstance(document, dict) else None
    if not isinstance(items, list) or not items:
        raise ValueError(f'{where} needs "items", a non-empty list of {{"id", "kind", "severity", "must_include_all"}}')
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise ValueError(f"{where}: item {number} is not an object")
        for key in _ITEM_KEYS:
            if not isinstance(item.get(key), str) or not item[key]:
                raise ValueError(f"{where}: item {item.get('id', number)} needs {key}, a non-empty string")
        phrases = item.get("must_include_all")
        if not isinstance(phrases, list) or not phrases or not all(isinstance(p, str) and p for p in phrases):
            raise ValueError(f"{where}: item {item['id']} needs must_include_all, a non-empty list of phrases")
    return items


def validate_fixtures(fixtures):
    """`doctor` and `validate-fixtures` run this: a broken case fails there, before any run or model call."""
    for entry in fixtures.manifests:
        roles = {artifact["role"] for artifact in entry.manifest["artifacts"]}
        if not {"grader_input", "generation_visible", "rubric"} <= roles:
            raise ValueError(f"{entry.relative_path} needs grader_input, generation_visible and rubric artifacts")
        for artifact in entry.manifest["artifacts"]:
            if artifact["role"] == "grader_input":
                path = entry.full_path.parent / artifact["path"]
                where = f"{entry.relative_path.rsplit('/', 1)[0]}/{artifact['path']}"
                _checked_items(json.loads(path.read_text(encoding="utf-8")), where)


def _artifact_text(artifacts, role):
    return next(artifact.full_path.read_text(encoding="utf-8") for artifact in artifacts if artifact.role == role)


def _expected_items(artifacts):
    items = json.loads(_artifact_text(artifacts, "grader_input"))["items"]
    return [
        {"item_id": item["id"], "kind": item["kind"], "severity": item["severity"], "source_refs": ["source.md"]}
        for item in items
    ]


def resolve_generation_vars(generation):
    return {
        "source_material": _artifact_text(generation.artifacts, "generation_visible"),
        "candidate_instructions": "Write user-facing release notes for version 2.0.",
        "output_format": "Markdown",
    }


def resolve_pointwise_vars(pointwise):
    expected = _expected_items(pointwise.artifacts)
    return {
        "case_id": pointwise.case_id,
        "model": pointwise.model,
        "provider": pointwise.provider,
        "prompt_version": pointwise.prompt_version,
        "rubric_version": pointwise.rubric_version,
        "source_material": _artifact_text(pointwise.artifacts, "generation_visible"),
        "case_rubric": _artifact_text(pointwise.artifacts, "rubric"),
        "expected_items": json.dumps(expected, indent=2),
        "candidate_path": pointwise.resolver.relative_to_repo(pointwise.candidate_path),
        "candidate": pointwise.candidate_content,
        "_expectedItemsForCanonicalization": expected,
    }


def canonicalize_expected_item_metadata(actual_items, expected_items):
    by_id = {item["item_id"]: item for item in actual_items}
    return [
        {**by_id[expected["item_id"]], **{key: expected[key] for key in ("kind", "severity", "source_refs")}}
        for expected in expected_items
        if expected["item_id"] in by_id
    ]


def resolve_pairwise_vars(pairwise):
    order = pairwise.randomized_order
    return {
        "case_id": pairwise.case_id,
        "model": pairwise.model,
        "provider": pairwise.provider,
        "prompt_version": pairwise.prompt_version,
        "rubric_version": pairwise.rubric_version,
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


def compile_report(request):
    # This report is built from one deterministic run: the command names it (`--deterministic RUN_ID`).
    if "deterministic" not in request.runs:
        raise ValueError("this report combines a deterministic run: give its id, assay doc report --run-id ID "
                         "--deterministic RUN_ID (the --run-id of an earlier `assay doc run-case`)")
    source = request.resolver.resolve_run_dir(request.runs["deterministic"])
    if not (source / "grades.json").is_file():
        raise ValueError(f"--deterministic {request.runs['deterministic']}: {source} holds no grades.json; give the "
                         "--run-id of a finished `assay doc run-case`")
    grades = json.loads((source / "grades.json").read_text(encoding="utf-8"))
    content = "# Manual Combined Report\n\n## Deterministic Run results\n\n" + (source / "report.md").read_text(
        encoding="utf-8"
    )
    return {"report_content": content, "case_ids": [grades["case_id"]], "artifacts": [], "output_files": []}
