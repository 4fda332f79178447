"""A document command's result bundle as a run record: one unit per (case, method).

Unit ids are `case/method` (`deterministic`, `judge-coverage`, `judge-pairwise`), so two runs of
the same method on the same case pair up in `assay runs compare`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.core.gates import Gate
from assay.core.record import (
    RunManifest,
    UnitResult,
    jsonable,
)

__all__ = ["adverse_findings", "coverage_run_record", "pairwise_run_record", "run_case_record"]

_CANDIDATE_LIMIT = 200_000  # characters of candidate text kept for the viewer
_ADVERSE = ("partial", "missing", "contradicted")
_FINE = ("covered", "ok", "pass", "passed")  # a deterministic finding's verdicts that are not a problem


def _candidate_text(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text if len(text) <= _CANDIDATE_LIMIT else text[:_CANDIDATE_LIMIT] + "\n… (truncated)"


def _manifest(
    method: str, case_id: str, result_dir: Path, bundle_manifest: Mapping[str, Any], options: Mapping[str, Any],
    success: bool, identity: Mapping[str, Any] | None = None, judge_usage: Mapping[str, Any] | None = None,
) -> RunManifest:
    duration_ms = bundle_manifest.get("duration_ms")
    return RunManifest.begin(
        "doc",
        result_dir,
        title=f"{case_id} ({method})",
        identity={
            "method": method,
            "bundle_run_id": bundle_manifest.get("run_id"),
            "runner": jsonable(bundle_manifest.get("runner")),
            **(identity or {}),
        },
        options=jsonable(dict(options)),
        gates=[Gate(method, success, ("verdict is not red" if success else "verdict is red") if method == "deterministic"
                    else "advisory").to_json()],
        # A deterministic grade of a given candidate never varies by chance: a flip between two runs is a change.
        summary={"bundle": str(result_dir), **({"deterministic": True} if method == "deterministic" else {}),
                 # what the model's calls cost, as counted (no price table here: no estimate)
                 **({"judge_usage": jsonable(dict(judge_usage))} if judge_usage else {})},
        success=success,
        exit_code=0 if success or method != "deterministic" else 1,
        duration_seconds=duration_ms / 1000 if isinstance(duration_ms, (int, float)) else None,
        # the bundle's id, which eval-kit's lines and --json show
        aliases=(bundle_manifest["run_id"],) if isinstance(bundle_manifest.get("run_id"), str) else (),
    )


def adverse_findings(findings: Any) -> list[Mapping[str, Any]]:
    """The findings that kept a deterministic grade from green (any verdict but covered/ok/pass/passed)."""
    listed = jsonable(list(findings or []))
    return [item for item in listed if isinstance(item, Mapping) and item.get("verdict") not in _FINE]


def _red_reason(adverse: Sequence[Mapping[str, Any]]) -> str:
    listed = "; ".join(f"{item.get('id')}: {item.get('verdict')}" for item in adverse)
    return "verdict red" + (f": {listed}" if listed else "")


def run_case_record(
    result: Any, candidate_path: Path, options: Mapping[str, Any]
) -> tuple[RunManifest, list[UnitResult]]:
    """`result` is `CaseRunResult`: red fails, yellow/green/great pass (as the command's exit code says)."""
    passed = result.verdict != "red"
    findings = jsonable(list(result.findings or []))
    adverse = adverse_findings(findings)
    unit = UnitResult(
        unit_id=f"{result.case_id}/deterministic",
        verdict="passed" if passed else "failed",
        group=result.case_id,
        expected="not red",
        observed=result.verdict,
        reason=_red_reason(adverse) if not passed else "",
        details="\n".join(
            f"{item.get('id')}: {item.get('verdict')} — {item.get('evidence')}" for item in findings if isinstance(item, Mapping)
        ),
        artifacts={"bundle": str(result.result_dir), "candidate": str(candidate_path)},
        detail={
            "method": "deterministic",
            "grade": result.verdict,
            "findings": findings,
            "candidate": _candidate_text(candidate_path),
        },
    )
    manifest = _manifest("deterministic", result.case_id, result.result_dir, result.manifest, options, passed)
    return manifest, [unit]


def coverage_run_record(
    result: Any, candidate_path: Path, options: Mapping[str, Any], model: str | None
) -> tuple[RunManifest, list[UnitResult]]:
    """Advisory: the unit passes when the judge marks no expected item partial, missing or contradicted."""
    items = jsonable(list(result.result.get("items") or []))
    adverse = [item for item in items if isinstance(item, Mapping) and item.get("verdict") in _ADVERSE]
    passed = not adverse
    unit = UnitResult(
        unit_id=f"{result.case_id}/judge-coverage",
        verdict="passed" if passed else "failed",
        group=result.case_id,
        expected={"adverse_items": 0},
        observed=dict(result.counts),
        reason="; ".join(f"{item.get('item_id')}: {item.get('verdict')}" for item in adverse),
        artifacts={"bundle": str(result.result_dir), "candidate": str(candidate_path)},
        detail={"method": "judge-coverage", "judgements": items, "candidate": _candidate_text(candidate_path)},
    )
    manifest = _manifest("judge-coverage", result.case_id, result.result_dir, result.manifest, options, passed, {"model": model},
                         getattr(result, "judge_usage", None))
    return manifest, [unit]


def pairwise_run_record(
    result: Any, candidates: Sequence[Path], options: Mapping[str, Any], model: str | None
) -> tuple[RunManifest, list[UnitResult]]:
    """A preference, not a pass or fail: recorded as `ignored` with the winner observed."""
    unit = UnitResult(
        unit_id=f"{result.case_id}/judge-pairwise",
        verdict="ignored",
        group=result.case_id,
        observed={"winner": result.winner, "position_consistent": result.position_consistent},
        reason=f"winner: {result.winner}",
        artifacts={"bundle": str(result.result_dir), "candidates": [str(path) for path in candidates]},
        detail={
            "method": "judge-pairwise",
            "judgement": jsonable(dict(result.result)),
            "candidates": {str(path): _candidate_text(path) for path in candidates},
        },
    )
    manifest = _manifest("judge-pairwise", result.case_id, result.result_dir, result.manifest, options, True, {"model": model},
                         getattr(result, "judge_usage", None))
    return manifest, [unit]

