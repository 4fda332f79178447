"""What one attempt leaves behind: the `AttemptResult`, its journal payload and its human locator.

Every slot of a run is journaled once settled: sealed attempts as they finish, interrupted and
undispatched ones as the run stops (a resume reruns those); `@XXXXXXXXXXXX` names one for `assay agent show`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ATTEMPT_RECORD = "attempt"
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CROCKFORD_PAIRS = [high + low for high in _CROCKFORD for low in _CROCKFORD]  # ten bits a lookup

# outcomes: executed here, reused from the checkpoint being resumed, never started
EXECUTED = "executed"
REUSED = "reused"
NOT_DISPATCHED = "not_dispatched"
INTERRUPTED = "interrupted"


def attempt_locator(attempt_id: str) -> str:
    """`@` + 12 Crockford base32 characters of SHA-256(attempt id) (its first 8 bytes' low 60 bits)."""
    number = int.from_bytes(hashlib.sha256(attempt_id.encode("utf-8")).digest()[:8], "big")
    pairs = _CROCKFORD_PAIRS
    return "@" + pairs[(number >> 50) & 1023] + pairs[(number >> 40) & 1023] + pairs[(number >> 30) & 1023] \
        + pairs[(number >> 20) & 1023] + pairs[(number >> 10) & 1023] + pairs[number & 1023]


def slot_key(experiment_id: str, eval_id: str, ordinal: int) -> str:
    return f"{experiment_id}\0{eval_id}\0{ordinal}"


_OPTIONAL_FIELDS = (
    "model", "failing", "unavailable", "score", "score_state", "error", "assertions", "diagnostics", "usage",
    "estimated_cost_usd", "coverage", "turns", "tags", "retries", "position", "sandbox", "timing", "spans",
    "eval_group", "skip_reason",
)


@dataclass(slots=True)
class AttemptResult:
    experiment_id: str
    eval_id: str
    ordinal: int  # 0-based attempt number
    attempt_id: str
    outcome: str  # executed | reused | not_dispatched | interrupted
    verdict: str | None  # passed | failed | errored | skipped | scored; None when it never ran to the end
    agent: str
    model: str | None = None
    duration_seconds: float = 0.0
    failing: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)
    score: float | None = None
    score_state: str | None = None
    error: dict[str, Any] | None = None  # {code, message, traceback?}
    assertions: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    estimated_cost_usd: float | None = None
    coverage: dict[str, Any] | None = None
    turns: list[dict[str, Any]] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    retries: dict[str, int] | None = None  # retried requests by reason (rate_limited, connection, resend, …)
    position: int | None = None  # the slot's place in discovery order, so readback need not rediscover
    sandbox: dict[str, Any] | None = None  # sandbox attempts: provider, isolation, File Changes, commands run
    timing: list[dict[str, Any]] | None = None  # the phase tree: {phase, label?, start_offset_ms, duration_ms, parent?}
    spans: dict[str, Any] | None = None  # OTel spans per turn ({turns: [...]}); only the waterfall reads them
    eval_group: dict[str, str] | None = None  # {id, definition_hash} of the eval group it ran in
    skip_reason: str | None = None  # the reason given to `t.skip(reason)`, for a skipped attempt

    @property
    def locator(self) -> str:
        return attempt_locator(self.attempt_id)

    @property
    def key(self) -> str:
        return slot_key(self.experiment_id, self.eval_id, self.ordinal)

    def to_json(self) -> dict[str, Any]:
        """Empty and unset fields are left out: one of these is journaled per attempt."""
        document: dict[str, Any] = {
            # Attempts are numbered from 1 wherever a person or a program reads them; `numbered_from`
            # tells this payload from one journaled before (numbered from 0), so those still resume.
            "experiment_id": self.experiment_id, "eval_id": self.eval_id, "attempt": self.ordinal + 1,
            "numbered_from": 1,
            "attempt_id": self.attempt_id, "outcome": self.outcome, "verdict": self.verdict, "agent": self.agent,
            "duration_seconds": round(self.duration_seconds, 6),
        }
        for name in _OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value is not None and value != []:
                document[name] = value
        return document

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> AttemptResult:
        return cls(
            experiment_id=document["experiment_id"], eval_id=document["eval_id"],
            ordinal=document["attempt"] - document.get("numbered_from", 0),
            attempt_id=document["attempt_id"], outcome=document["outcome"], verdict=document["verdict"],
            agent=document["agent"], model=document.get("model"),
            duration_seconds=document.get("duration_seconds", 0.0), failing=list(document.get("failing") or []),
            unavailable=list(document.get("unavailable") or []), score=document.get("score"),
            score_state=document.get("score_state"), error=document.get("error"),
            assertions=list(document.get("assertions") or []), diagnostics=list(document.get("diagnostics") or []),
            usage=document.get("usage"), estimated_cost_usd=document.get("estimated_cost_usd"),
            coverage=document.get("coverage"), turns=list(document.get("turns") or []),
            tags=list(document.get("tags") or []), retries=document.get("retries"), position=document.get("position"),
            sandbox=document.get("sandbox"), timing=document.get("timing"), spans=document.get("spans"),
            eval_group=document.get("eval_group"), skip_reason=document.get("skip_reason"),
        )


__all__ = [
    "ATTEMPT_RECORD", "AttemptResult", "EXECUTED", "INTERRUPTED", "NOT_DISPATCHED", "REUSED", "attempt_locator",
    "slot_key",
]
