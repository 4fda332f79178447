"""Pointwise summaries (counts, calibration record) and the run-metadata checks with eval-kit's wording."""

from __future__ import annotations

import copy

import pytest

from assay.doc.pointwise import (
    calibration_flags,
    count_pointwise_verdicts,
    format_pointwise_calibration_summary,
    validate_pointwise_run_metadata,
)
from assay.doc.verdict import aggregate_verdict, critical_blocker_count
from assay.errors import CaseError

ITEMS = [
    {"item_id": "a", "severity": "critical", "verdict": "covered"},
    {"item_id": "b", "severity": "critical", "verdict": "missing"},
    {"item_id": "c", "severity": "medium", "verdict": "unknown"},
    {"item_id": "d", "severity": "medium", "verdict": "unknown"},
]


def test_counts_have_all_five_verdicts_in_order():
    assert list(count_pointwise_verdicts(ITEMS).items()) == [
        ("covered", 1),
        ("partial", 0),
        ("missing", 1),
        ("contradicted", 0),
        ("unknown", 2),
    ]


def test_counts_reject_unknown_verdicts_and_non_lists():
    with pytest.raises(CaseError, match="unknown pointwise verdict 'great'"):
        count_pointwise_verdicts([{"verdict": "great"}])
    with pytest.raises(CaseError):
        count_pointwise_verdicts({"verdict": "covered"})


def test_calibration_summary_defaults():
    summary = format_pointwise_calibration_summary(counts=count_pointwise_verdicts([]))
    assert summary.splitlines()[0] == "## Advisory Pointwise Model-Judge Summary"
    assert summary.splitlines()[2] == (  # eval-kit's sentence
        "Model-judge evidence is manual and advisory. It cannot upgrade deterministic red or yellow results."
    )
    assert (
        "### Verdict Counts\n\n- covered: 0\n- partial: 0\n- missing: 0\n- contradicted: 0\n- unknown: 0\n" in summary
    )
    assert summary.endswith(
        "### Calibration Record\n\n- fixture label: not recorded\n- expected outcome: not recorded\n"
        "- false pass: not reviewed\n- false fail: not reviewed\n- notes: not reviewed\n"
    )


def test_expected_good_flags_adverse_critical_items_as_possible_false_fails():
    flags = calibration_flags(ITEMS, "expected-good")
    assert flags.false_fail == "review b (critical, judged adverse)"
    assert flags.false_pass.startswith("not applicable")
    assert flags.notes.startswith("repeated unknown verdicts (c, d)")


def test_expected_bad_flags_covered_critical_items_as_possible_false_passes():
    flags = calibration_flags(ITEMS, "expected-bad")
    assert flags.false_pass == "review a (critical, judged covered)" and flags.false_fail.startswith("not applicable")


MANIFEST = {
    "run_id": "r1",
    "run_type": "judge-coverage",
    "case_ids": ["case-one"],
    "model": "m",
    "provider": "openai",
    "reasoning_effort": "low",
    "prompt_version": "p1",
    "rubric_version": "r1v",
    "runner": {"id": "x", "version": "0.1.0"},
    "artifacts": [
        {"role": role, "path": path}
        for role, path in [
            ("report", "report.md"),
            ("pointwise_result", "pointwise-result.json"),
            ("judge_request", "judge-request.json"),
            ("raw_judge_response", "judge-response.json"),
        ]
    ],
    "output_files": [
        "manifest.json",
        "report.md",
        "pointwise-result.json",
        "judge-request.json",
        "judge-response.json",
    ],
}
EXPECTED = {
    "run_id": "r1",
    "case_id": "case-one",
    "model": "m",
    "provider": "openai",
    "reasoning_effort": "low",
    "prompt_version": "p1",
    "rubric_version": "r1v",
    "runner_version": "0.1.0",
}


def test_consistent_manifest_passes():
    validate_pointwise_run_metadata(MANIFEST, EXPECTED)


def _broken(change):
    manifest = copy.deepcopy(MANIFEST)
    change(manifest)
    return manifest


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update(run_id=" "), "missing run_id"),
        (lambda m: m.update(model="other"), "model mismatch"),
        (lambda m: m["artifacts"].pop(1), "missing artifact role pointwise_result"),
        (
            lambda m: m["output_files"].remove("pointwise-result.json"),
            "output_files missing artifact path pointwise-result.json",
        ),
        (lambda m: m["artifacts"][0].update(path="../report.md"), "relative contained path"),
        (lambda m: m["artifacts"][0].update(path="/report.md"), "relative contained path"),
        (lambda m: m["output_files"].append("a\\b"), "relative contained path"),
        (lambda m: m["artifacts"][0].update(path="x/./report.md"), "must not contain . or .. path segments"),
        (lambda m: m["output_files"].append("x/.."), "must not contain . or .. path segments"),
        # eval-kit's own cases: a leading `./` is a `.` segment, not an escape
        (lambda m: m["output_files"].append("./judge-request.json"), "must not contain . or .. path segments"),
        (lambda m: m["output_files"].append("judge/./request.json"), "must not contain . or .. path segments"),
        (lambda m: m.update(run_type="judge"), "run_type mismatch"),
    ],
)
def test_inconsistent_manifests_fail_with_eval_kit_substrings(change, message):
    with pytest.raises(CaseError, match=message.replace("\\", "\\\\").replace(".", "\\.")):
        validate_pointwise_run_metadata(_broken(change), EXPECTED)


def test_values_not_expected_are_only_required_not_compared():
    """eval-kit's `expected` defaults to {}: what it leaves out must be there (non-blank), at any value."""
    validate_pointwise_run_metadata(MANIFEST)
    validate_pointwise_run_metadata(MANIFEST, {"run_id": "r1"})
    with pytest.raises(CaseError, match="missing model"):
        validate_pointwise_run_metadata(_broken(lambda m: m.update(model="")))
    with pytest.raises(CaseError, match="model mismatch"):
        validate_pointwise_run_metadata(MANIFEST, {"model": "other"})


def test_verdict_roll_up_never_yields_great():
    policy = {
        "blocking_severities": ["critical"],
        "blocking_verdicts": ["missing"],
        "non_green_verdicts": ["missing", "partial"],
    }
    assert aggregate_verdict([{"severity": "critical", "verdict": "missing"}], policy) == "red"
    assert aggregate_verdict([{"severity": "medium", "verdict": "partial"}], policy) == "yellow"
    assert aggregate_verdict([{"severity": "critical", "verdict": "covered"}], policy) == "green"
    assert critical_blocker_count([{"severity": "critical", "verdict": "missing"}] * 2, policy) == 2
