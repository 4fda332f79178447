"""Generic keyword adapter for an assay document suite: covered when the candidate contains the text.

Replace these hooks with your suite's own semantics; each receives one typed input object.
"""

from __future__ import annotations


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
