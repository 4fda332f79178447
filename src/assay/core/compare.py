"""Comparison of an observation with an expectation: dot-path field extraction and the six modes.

Kind-independent and pure; the reason strings are GlassKit Eval 0.1.12's, word for word.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

__all__ = [
    "COMPARE_MODES",
    "MATCHED",
    "Comparison",
    "compare_values",
    "evaluate_observation",
    "extract_field",
    "infer_mode",
]

MATCHED = "matched"
NULL_OBSERVATION_REASON = "adapter returned null but the sample expects a non-null value"
MISSING_FIELD_PREFIX = "adapter observation is missing configured field: "

# One reusable encoder: json.dumps with non-default options builds a new encoder per call.
# The options are exactly `json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=True)`.
_canonical_item = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode


@dataclass(frozen=True, slots=True)
class Comparison:
    """The outcome for one sample; `effective_mode` is the declared mode or the inferred one."""

    passed: bool
    reason: str
    observed_value: Any
    effective_mode: str


def _is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple)) or (
        isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))
    )


def extract_field(observation: Any, field: str | None) -> tuple[bool, Any]:
    """Walk `field` ("a.0.b") into the observation; returns (found, value)."""
    if not field:
        return True, observation
    current = observation
    for part in field.split("."):
        if isinstance(current, Mapping):
            if part not in current:
                return False, None
            current = current[part]
        elif _is_array(current):
            # isdecimal() rejects signs, so "-1" never indexes from the end.
            if not part.isdecimal():
                return False, None
            position = int(part)
            if position >= len(current):
                return False, None
            current = current[position]
        else:
            return False, None
    return True, current


def infer_mode(expected: Any) -> str:
    """Numbers compare numerically; everything else (bool, str, None, list, dict) exactly."""
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        return "numeric"
    return "exact"


# Exact types (not isinstance) so bool, a subclass of int, never takes the fast path.
_PLAIN_SCALAR_TYPES = frozenset({str, int, float, type(None)})


def _exactly_equal(expected: Any, observed: Any) -> bool:
    # Booleans only equal booleans, at any depth; other scalars use `==`, so 1 == 1.0.
    if type(expected) in _PLAIN_SCALAR_TYPES and type(observed) in _PLAIN_SCALAR_TYPES:
        return expected == observed
    if isinstance(expected, bool) or isinstance(observed, bool):
        return isinstance(expected, bool) and isinstance(observed, bool) and expected == observed
    if isinstance(expected, Mapping):
        if not isinstance(observed, Mapping) or len(expected) != len(observed):
            return False
        for key, value in expected.items():
            if key not in observed or not _exactly_equal(value, observed[key]):
                return False
        return True
    if _is_array(expected):
        if not _is_array(observed) or len(expected) != len(observed):
            return False
        return all(_exactly_equal(item, other) for item, other in zip(expected, observed))
    if isinstance(observed, Mapping) or _is_array(observed):
        return False
    return expected == observed


def _is_json_subset(expected: Any, observed: Any) -> bool:
    if isinstance(expected, Mapping):
        if not isinstance(observed, Mapping):
            return False
        for key, value in expected.items():
            if key not in observed or not _is_json_subset(value, observed[key]):
                return False
        return True
    if _is_array(expected):
        if not _is_array(observed):
            return False
        # Greedy on purpose (GlassKit compatibility): each expected item takes the first unused
        # observed item it fits, with no backtracking.
        used = [False] * len(observed)
        for item in expected:
            for position, candidate in enumerate(observed):
                if not used[position] and _is_json_subset(item, candidate):
                    used[position] = True
                    break
            else:
                return False
        return True
    return _exactly_equal(expected, observed)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _compare_numeric(expected: Any, observed: Any, tolerance: float | None) -> tuple[bool, str]:
    if not _is_number(expected):
        return False, "numeric comparison expected value is not numeric"
    if not _is_number(observed):
        return False, "observed value is not numeric"
    allowed = 0.0 if tolerance is None else float(tolerance)
    difference = abs(float(observed) - float(expected))
    if difference <= allowed:
        return True, MATCHED
    return False, f"numeric difference {difference:g} exceeds tolerance {allowed:g}"


def _canonical_set(items: Any) -> set[str]:
    return {_canonical_item(item) for item in items}


def _compare_as_sets(
    expected: Any, observed: Any, holds: Callable[[set[str], set[str]], bool], failure: str
) -> tuple[bool, str]:
    if not _is_array(observed):
        return False, "observed value is not an array"
    if not _is_array(expected):
        return False, "expected value is not an array"
    if holds(_canonical_set(expected), _canonical_set(observed)):
        return True, MATCHED
    return False, failure


def _compare_exact(expected: Any, observed: Any, tolerance: float | None) -> tuple[bool, str]:
    if _exactly_equal(expected, observed):
        return True, MATCHED
    return False, "expected exact match"


def _compare_json_subset(expected: Any, observed: Any, tolerance: float | None) -> tuple[bool, str]:
    if _is_json_subset(expected, observed):
        return True, MATCHED
    return False, "expected JSON subset"


def _compare_set_equals(expected: Any, observed: Any, tolerance: float | None) -> tuple[bool, str]:
    return _compare_as_sets(expected, observed, lambda want, got: want == got, "expected set equality")


def _compare_set_contains_any(expected: Any, observed: Any, tolerance: float | None) -> tuple[bool, str]:
    # An empty expected list has nothing to intersect, so it always fails.
    return _compare_as_sets(
        expected, observed, lambda want, got: not want.isdisjoint(got), "expected any matching set item"
    )


def _compare_set_contains_all(expected: Any, observed: Any, tolerance: float | None) -> tuple[bool, str]:
    return _compare_as_sets(expected, observed, lambda want, got: want <= got, "expected all set items")


_COMPARATORS: dict[str, Callable[[Any, Any, float | None], tuple[bool, str]]] = {
    "exact": _compare_exact,
    "json_subset": _compare_json_subset,
    "numeric": _compare_numeric,
    "set_contains_all": _compare_set_contains_all,
    "set_contains_any": _compare_set_contains_any,
    "set_equals": _compare_set_equals,
}
COMPARE_MODES = tuple(sorted(_COMPARATORS))


def compare_values(expected: Any, observed_value: Any, mode: str, tolerance: float | None) -> tuple[bool, str]:
    """(passed, reason) of one mode; an unknown mode raises ValueError."""
    try:
        comparator = _COMPARATORS[mode]
    except (KeyError, TypeError):
        raise ValueError(
            f"unsupported compare mode {mode!r}; expected one of: {', '.join(COMPARE_MODES)}"
        ) from None
    return comparator(expected, observed_value, tolerance)


def evaluate_observation(
    *, expected: Any, observation: Any, field: str | None, mode: str | None, tolerance: float | None
) -> Comparison:
    """Extract the field, apply the null-observation rule, then compare in the effective mode."""
    effective_mode = mode if mode is not None else infer_mode(expected)
    found, observed_value = extract_field(observation, field)
    if not found:
        return Comparison(False, MISSING_FIELD_PREFIX + str(field), None, effective_mode)
    if observation is None and expected is not None:
        return Comparison(False, NULL_OBSERVATION_REASON, observed_value, effective_mode)
    passed, reason = compare_values(expected, observed_value, effective_mode, tolerance)
    return Comparison(passed, reason, observed_value, effective_mode)
