"""What a stored unit's judges said, by kind: one small extraction per kind, in one table.

The viewer, the queue and agreement never branch on a kind's name: they look the kind up in
`KIND_LABELS` (a kind not in it, an imported run say, has no judges and its unit verdict is the
deterministic check). Each entry says where the kind keeps judge verdicts in a unit (agent:
assertion entries with `judge` details; doc: the pointwise judgements or the pairwise judgement),
what the person is asked, what content a label is about (so it applies to the same content in
another run), and how to hide the verdicts until the person has answered.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from assay.core.labels.model import Judgement
from assay.core.record import UnitResult
from assay.core.run_diff import trial_subject

__all__ = [
    "KIND_LABELS", "HIDDEN", "KindLabels", "UnitJudgements", "blind", "content_of", "judgements_of", "kind_labels", "subject_of",
]

HIDDEN = "hidden"  # what a blinded verdict or status reads


@dataclass(frozen=True)
class UnitJudgements:
    """A unit as a labeller sees it: the judges' verdicts, the deterministic checks' verdict and what
    the person is asked."""

    judgements: tuple[Judgement, ...]
    checks: str | None  # pass | fail | None (no deterministic check, or it could not decide)
    question: str

    @property
    def judged(self) -> bool:
        return bool(self.judgements)

    @property
    def disagree(self) -> bool:
        """Two judges disagree, or a judge and the deterministic checks do."""
        verdicts = {judgement.verdict for judgement in self.judgements if judgement.verdict is not None}
        if len(verdicts) > 1:
            return True
        return bool(verdicts) and self.checks is not None and self.checks not in verdicts

    def to_json(self) -> dict[str, Any]:
        return {
            "judgements": [judgement.to_json() for judgement in self.judgements], "checks": self.checks,
            "question": self.question, "disagree": self.disagree,
        }


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def subject_of(unit_id: str) -> str:
    return trial_subject(unit_id)


def _verdict_of(unit: UnitResult) -> str | None:
    return {"passed": "pass", "failed": "fail"}.get(unit.verdict)


# ---------------------------------------------------------------------------------------------
# agent: assertion entries of kind "judge" carry `judge` details (model, prompt, recipe)


def _agent_judgements(unit: UnitResult, identity: Mapping[str, Any]) -> UnitJudgements:
    detail = unit.detail or {}
    assertions = [item for item in detail.get("assertions") or () if isinstance(item, Mapping)]
    judgements = []
    checks: list[str] = []
    for item in assertions:
        status = item.get("status")
        if item.get("kind") != "judge":
            if not item.get("optional") and status in ("matched", "mismatched"):
                checks.append("pass" if status == "matched" else "fail")
            continue
        details = item.get("judge") if isinstance(item.get("judge"), Mapping) else {}
        model = details.get("model") if isinstance(details.get("model"), str) else None
        prompt = f"{details.get('prompt') or 'agent-judge'}:{details.get('recipe') or 'rubric'}"
        value = item.get("value") if status == "matched" and isinstance(item.get("value"), (int, float)) else None
        cut = item.get("threshold") if item.get("threshold") is not None else item.get("at_least")
        verdict = None if value is None or cut is None else ("pass" if value >= cut else "fail")
        judgements.append(Judgement(
            judge=f"{model or 'unknown model'} · {prompt}", model=model, prompt=prompt,
            rubric=str(item.get("description") or ""), verdict=verdict, score=value,
            score_range=(0.0, 1.0) if value is not None else None, reason=str(item.get("reason") or ""),
        ))
    check = ("fail" if "fail" in checks else "pass") if checks else None
    return UnitJudgements(tuple(judgements), check, "Does the agent's reply meet each rubric below?")


def _agent_content(unit: UnitResult) -> str:
    return digest((unit.detail or {}).get("turns") or [])  # the conversation: inputs, replies, tool calls


def _blind_agent(document: dict[str, Any]) -> None:
    detail = dict(document.get("detail") or {})
    assertions = []
    for item in detail.get("assertions") or ():
        if isinstance(item, Mapping):
            item = {key: value for key, value in item.items() if key not in ("reason", "value", "judge")}
            item["status"] = HIDDEN
        assertions.append(item)
    detail["assertions"] = assertions
    detail.pop("verdict", None)
    document["detail"] = detail
    document["observed"] = None


# ---------------------------------------------------------------------------------------------
# doc: a judge-coverage unit holds the pointwise judgements; a judge-pairwise unit the judgement


def _doc_judgements(unit: UnitResult, identity: Mapping[str, Any]) -> UnitJudgements:
    detail = unit.detail or {}
    method = str(detail.get("method") or "")
    model = identity.get("model") if isinstance(identity.get("model"), str) else None
    runner = identity.get("runner") if isinstance(identity.get("runner"), str) else ""
    prompt = f"doc:{method}" + (f" ({runner})" if runner else "")
    if method == "judge-coverage":
        items = [item for item in detail.get("judgements") or () if isinstance(item, Mapping)]
        reason = "; ".join(f"{item.get('item_id')}: {item.get('verdict')} — {item.get('explanation', '')}" for item in items)
        judgement = Judgement(f"{model or 'unknown model'} · {prompt}", model, prompt,
                              "Every expected item is covered (none partial, missing or contradicted).",
                              _verdict_of(unit), reason=reason)
        return UnitJudgements((judgement,), None, "Does the candidate cover every expected item of the case?")
    if method == "judge-pairwise":
        result = detail.get("judgement") if isinstance(detail.get("judgement"), Mapping) else {}
        winner = (unit.observed or {}).get("winner") if isinstance(unit.observed, Mapping) else result.get("winner")
        # As a pass/fail question: does candidate A win? (a tie or unknown is no verdict)
        verdict = {"candidate_a": "pass", "candidate_b": "fail"}.get(str(winner))
        judgement = Judgement(f"{model or 'unknown model'} · {prompt}", model, prompt,
                              f"Which candidate is better (rubric {result.get('rubric_version', '?')})?", verdict,
                              reason=f"winner: {winner}. {result.get('explanation', '')}".strip())
        return UnitJudgements((judgement,), None, "Pass = candidate A is better, fail = candidate B is better.")
    return UnitJudgements((), _verdict_of(unit), "Is the deterministic grade right (pass = not red)?")


def _doc_content(unit: UnitResult) -> str:
    detail = unit.detail or {}
    candidates = detail.get("candidates") if isinstance(detail.get("candidates"), Mapping) else {}
    return digest({"method": detail.get("method"), "candidate": detail.get("candidate"),
                   "candidates": sorted(candidates.values(), key=str)})


def _blind_doc(document: dict[str, Any]) -> None:
    detail = dict(document.get("detail") or {})
    for name in ("judgements", "findings"):
        if isinstance(detail.get(name), list):
            detail[name] = [
                {key: (HIDDEN if key in ("verdict", "confidence") else value) for key, value in item.items()
                 if key not in ("explanation", "candidate_evidence", "evidence")}
                if isinstance(item, Mapping) else item
                for item in detail[name]
            ]
    if "grade" in detail:
        detail["grade"] = HIDDEN
    detail.pop("judgement", None)
    document["detail"] = detail
    document["observed"] = None
    document["details"] = ""


# ---------------------------------------------------------------------------------------------
# video, and any kind without judges: the unit verdict is the deterministic check


def _video_judgements(unit: UnitResult, identity: Mapping[str, Any]) -> UnitJudgements:
    return UnitJudgements((), _verdict_of(unit), "Is the observed value right for this frame?")


def _video_content(unit: UnitResult) -> str:
    artifacts = unit.artifacts or {}
    video = str(artifacts.get("video") or "").replace("\\", "/").rsplit("/", 1)[-1]  # the file, wherever it lies
    return digest({"video": video, "at": artifacts.get("timestamp_s"), "observed": unit.observed})


def _checked_only(unit: UnitResult, identity: Mapping[str, Any]) -> UnitJudgements:
    return UnitJudgements((), _verdict_of(unit), "Is this unit's outcome right?")


def _whole_content(unit: UnitResult) -> str:
    return digest({"expected": unit.expected, "observed": unit.observed, "detail": unit.detail})


def _blind_verdict_only(document: dict[str, Any]) -> None:
    document["details"] = ""


@dataclass(frozen=True)
class KindLabels:
    """A kind's part in labelling: its judgements, the digest of the content a person judges (a label
    applies to the same content in another run), how to hide its verdicts. `judged_marker` is text
    every unit body with a judge verdict holds (a cheap SQL prefilter); None when the kind has no judges."""

    extract: Callable[[UnitResult, Mapping[str, Any]], UnitJudgements]
    content: Callable[[UnitResult], str]
    blind: Callable[[dict[str, Any]], None]
    judged_marker: str | None = None


KIND_LABELS: dict[str, KindLabels] = {
    "agent": KindLabels(_agent_judgements, _agent_content, _blind_agent, '"kind":"judge"'),
    "doc": KindLabels(_doc_judgements, _doc_content, _blind_doc, '"method":"judge-'),
    "video": KindLabels(_video_judgements, _video_content, _blind_verdict_only),
}
_OTHER_KIND = KindLabels(_checked_only, _whole_content, _blind_verdict_only)


def kind_labels(kind: str) -> KindLabels:
    return KIND_LABELS.get(kind, _OTHER_KIND)


def judgements_of(unit: UnitResult, kind: str, identity: Mapping[str, Any] | None = None) -> UnitJudgements:
    return kind_labels(kind).extract(unit, identity or {})


def content_of(unit: UnitResult, kind: str) -> str:
    return kind_labels(kind).content(unit)


def blind(document: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A unit page's document with every verdict and reason hidden, so a person answers unanchored."""
    blinded = dict(document)
    blinded["verdict"] = HIDDEN
    blinded["reason"] = ""
    kind_labels(kind).blind(blinded)
    return blinded
