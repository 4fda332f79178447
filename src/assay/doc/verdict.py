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


def list_of(value: Any, name: str, kind: type | tuple[type, ...], described: str) -> list[Any]:
    """`value` as a list whose items are all `kind`; a TypeError naming `name` when it is not one (a
    string or a mapping is never taken for a list of its characters or keys)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of {described}, not {type(value).__name__}")
    listed = list(value)
    for item in listed:
        if not isinstance(item, kind):
            raise TypeError(f"{name} must be a list of {described}; it holds a {type(item).__name__}")
    return listed


def _findings(findings: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return list_of(findings, "findings", Mapping, "mappings")


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
