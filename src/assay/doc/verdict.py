"""Roll findings up to a deterministic verdict, for adapters that want eval-kit's policy helper.

red: a blocking severity with a blocking verdict; yellow: any non-green verdict; else green (never great).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["VerdictPolicy", "aggregate_verdict", "critical_blocker_count"]


@dataclass(frozen=True, slots=True)
class VerdictPolicy:
    blocking_severities: Sequence[str]
    blocking_verdicts: Sequence[str]
    non_green_verdicts: Sequence[str]
    red_verdict: str = "red"
    yellow_verdict: str = "yellow"
    green_verdict: str = "green"

    @classmethod
    def from_mapping(cls, policy: Mapping[str, Any]) -> "VerdictPolicy":
        return cls(
            blocking_severities=tuple(policy.get("blocking_severities") or ()),
            blocking_verdicts=tuple(policy.get("blocking_verdicts") or ()),
            non_green_verdicts=tuple(policy.get("non_green_verdicts") or ()),
            red_verdict=policy.get("red_verdict", "red"),
            yellow_verdict=policy.get("yellow_verdict", "yellow"),
            green_verdict=policy.get("green_verdict", "green"),
        )


def _policy(policy: VerdictPolicy | Mapping[str, Any]) -> VerdictPolicy:
    if isinstance(policy, VerdictPolicy):
        return policy
    if not isinstance(policy, Mapping):
        raise TypeError(f"policy must be a VerdictPolicy or a mapping, not {type(policy).__name__}")
    return VerdictPolicy.from_mapping(policy)


def _findings(findings: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if isinstance(findings, (str, bytes, Mapping)) or not isinstance(findings, Iterable):
        raise TypeError(f"findings must be a list of mappings, not {type(findings).__name__}")
    listed = list(findings)
    for finding in listed:
        if not isinstance(finding, Mapping):
            raise TypeError(f"findings must be a list of mappings; it holds a {type(finding).__name__}")
    return listed


def critical_blocker_count(findings: Iterable[Mapping[str, Any]], policy: VerdictPolicy | Mapping[str, Any]) -> int:
    rules = _policy(policy)
    return sum(
        1
        for finding in _findings(findings)
        if finding.get("severity") in rules.blocking_severities and finding.get("verdict") in rules.blocking_verdicts
    )


def aggregate_verdict(findings: Iterable[Mapping[str, Any]], policy: VerdictPolicy | Mapping[str, Any]) -> str:
    rules = _policy(policy)
    findings = _findings(findings)
    if critical_blocker_count(findings, rules):
        return rules.red_verdict
    if any(finding.get("verdict") in rules.non_green_verdicts for finding in findings):
        return rules.yellow_verdict
    return rules.green_verdict
