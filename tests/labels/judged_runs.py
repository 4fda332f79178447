"""Runs with judge verdicts in the shapes each kind records them, published to a real store.

Agent units carry assertion entries with `judge` details (as `assay agent run` writes them), doc
units the pointwise judgements or the pairwise judgement, video units a deterministic verdict. The
browser and CLI tests make the same shapes with real runs; these keep the statistics tests fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import publish_run


def agent_unit(index: int, score: float | None, *, check: str = "matched", model: str = "judge-1",
               rubric: str = "names a city", turns_text: str | None = None, status: str = "matched") -> UnitResult:
    judge: dict[str, Any] = {"kind": "judge", "scope": "t", "description": f"judge({rubric!r}, threshold=0.5)",
                             "status": status, "threshold": 0.5, "gated": True}
    if score is not None:
        judge.update(value=score, reason=f"score {score}",
                     judge={"recipe": "rubric", "model": model, "cached": False, "prompt": "assay-agent-judge/1"})
    else:
        judge["reason"] = "judge-error: judge answer: model output was not valid JSON"
    passed = check == "matched" and score is not None and score >= 0.5
    return UnitResult(
        unit_id=f"main/eval{index}#1", verdict="passed" if passed else "failed", group=f"main/eval{index}",
        detail={
            "assertions": [{"kind": "check", "scope": "t", "description": "check(includes('Paris'))", "status": check}, judge],
            "turns": [{"session": 0, "turn": 1, "input": f"question {index}", "status": "completed",
                       "events": [{"type": "message", "role": "assistant", "text": turns_text or f"answer {index}"}]}],
        },
    )


def publish(database: Path, kind: str, units: list[UnitResult], *, identity: dict[str, Any] | None = None,
            run_id: str | None = None, created_at: str | None = None) -> str:
    manifest = RunManifest.begin(kind, database.parent, run_id=run_id, title=f"{kind} test run", identity=identity or {})
    if created_at is not None:
        from dataclasses import replace

        manifest = replace(manifest, created_at=created_at)
    publish_run(manifest, units, database=database)
    return manifest.run_id
