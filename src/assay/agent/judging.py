"""The seam for LLM-as-judge assertions: recipes on `t.judge` / `turn.judge` and the `Judge` protocol.

The judge client itself lives in `assay.judge` (not here); with no judge configured every judge
assertion is unavailable (`judge-model-unresolved`) and no network call is made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from assay.agent.matchers import MATCHED, UNAVAILABLE, Outcome

RECIPES = ("closed_qa", "factuality", "summarizes")


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    recipe: str  # closed_qa | factuality | summarizes
    criterion: str  # the question, the reference or the source
    input: str
    output: str
    config: Mapping[str, Any] | None = None  # eval > experiment judge settings, merged


@dataclass(frozen=True, slots=True)
class JudgeScore:
    score: float  # in [0, 1]; anything else errors the assertion (never clamped)
    explanation: str | None = None


class Judge(Protocol):
    async def grade(self, request: JudgeRequest) -> JudgeScore: ...


async def grade(judge: Judge | None, request: JudgeRequest) -> Outcome:
    if judge is None:
        return Outcome(UNAVAILABLE, "judge-model-unresolved: no judge is configured for this run")
    try:
        result = await judge.grade(request)
    except Exception as error:  # noqa: BLE001 - a transport failure is missing evidence, not a verdict
        return Outcome(UNAVAILABLE, f"judge-call-failed: {type(error).__name__}: {error}")
    if not isinstance(result.score, (int, float)) or not math.isfinite(result.score):
        return Outcome(MATCHED, result.explanation or "", float("nan"))
    return Outcome(MATCHED, result.explanation or "", float(result.score))


__all__ = ["Judge", "JudgeRequest", "JudgeScore", "RECIPES", "grade"]
