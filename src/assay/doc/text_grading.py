"""Eval-kit's text-grading helpers, for consumer graders (spec doc.md §2.11): `normalize`,
`candidate_segments`, `includes_any`, `includes_all`, `assess_coverage`, `grade_facts`.

Library-only: no command calls them. Each takes plain text and the JSON-shaped expectation a
grader input holds (`must_include_any`, `must_include_all`, `must_not_include_any`,
`accepted_alternatives`, `required_concepts`).
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

__all__ = ["assess_coverage", "candidate_segments", "grade_facts", "includes_all", "includes_any", "normalize"]

_DROPPED = re.compile("[`*_~'\u2018\u2019\u201a\u201b\u2032\u2035\u02bc\u02b9\uff07\"\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb\u2039\u203a\uff02]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d]")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_OWNERSHIP = re.compile(r"\b(own|owns|read|reads|does not own)\b", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+")


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _snippets(value: object, name: str) -> list[str]:
    from assay.doc.verdict import list_of

    return [] if value is None else list_of(value, name, str, "strings")


def normalize(text: str) -> str:
    """Lowercase; drop `` ` * _ ~ `` and every quote; dashes to `-` and `&` to ` and `; every run of
    characters outside `[a-z0-9]` to one space; trimmed."""
    value = _text(text, "text").lower()
    value = _DROPPED.sub("", value)
    value = _DASHES.sub("-", value).replace("&", " and ")
    return _NON_WORD.sub(" ", value).strip()


def _padded(text: str) -> str:
    return f" {normalize(text)} "


def _hit(padded_text: str, snippet: str) -> bool:
    return f" {normalize(snippet)} " in padded_text


def includes_any(text: str, snippets: Sequence[str]) -> bool:
    """Whether any snippet is in the text as whole tokens (both normalized)."""
    padded = _padded(_text(text, "text"))
    return any(_hit(padded, snippet) for snippet in _snippets(snippets, "snippets"))


def includes_all(text: str, snippets: Sequence[str]) -> bool:
    """Whether every snippet is in the text as whole tokens (both normalized)."""
    padded = _padded(_text(text, "text"))
    return all(_hit(padded, snippet) for snippet in _snippets(snippets, "snippets"))


def candidate_segments(text: str) -> list[str]:
    """The text split into the segments `assess_coverage` co-locates snippets in (spec §2.11)."""
    segments: list[list[str]] = []
    current: list[str] = []
    colon_children = False

    def close() -> None:
        nonlocal current, colon_children
        if current:
            segments.append(current)
        current, colon_children = [], False

    for raw in _text(text, "text").splitlines():
        line = raw.rstrip()
        if not line.strip():
            close()
            continue
        if line.lstrip().startswith("|"):
            close()
            segments.append([line.strip()])
            continue
        item = _LIST_ITEM.match(line)
        if item and item.group(1):  # an indented list item joins the current segment
            current.append(line.strip())
            continue
        if item:
            introduced = bool(current) and (current[-1].endswith(":") or colon_children)
            if introduced and not _OWNERSHIP.search(line):
                current.append(line.strip())
                colon_children = True
                continue
            close()
            current.append(line.strip())
            continue
        if current and not current[-1].endswith((".", "!", "?", ")")):
            current.append(line.strip())
            continue
        close()
        current.append(line.strip())
    close()
    return ["\n".join(lines) for lines in segments]


def _subsequence(needle: list[str], haystack: list[str]) -> bool:
    tokens = iter(haystack)
    return all(any(token == wanted for token in tokens) for wanted in needle)


def _co_located(text: str, snippets: list[str]) -> bool:
    for segment in candidate_segments(text):
        normalized = normalize(segment)
        tokens = normalized.split()
        if all(normalize(s) in normalized or _subsequence(normalize(s).split(), tokens) for s in snippets):
            return True
    return False


def _mapping(value: object, name: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping, not {type(value).__name__}")
    return value


def _option(options: Mapping[str, Any], snake: str, camel: str) -> Any:
    return options.get(snake, options.get(camel))


def assess_coverage(text: str, expectation: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> dict[str, str]:
    """`{"verdict": "covered" | "missing" | "contradicted", "evidence": str}` for one expectation.

    `options`: `default_must_include_all` (or `defaultMustIncludeAll`) and `require_co_located_all`
    (or `requireCoLocatedAll`)."""
    text = _text(text, "text")
    expectation = _mapping(expectation, "expectation")
    options = _mapping(options, "options")
    padded = _padded(text)

    forbidden = [s for s in _snippets(expectation.get("must_not_include_any"), "must_not_include_any") if _hit(padded, s)]
    if forbidden:
        return {"verdict": "contradicted", "evidence": f"contradicting evidence hit: {', '.join(forbidden)}"}

    any_of = _snippets(expectation.get("must_include_any"), "must_include_any")
    all_of = _snippets(expectation.get("must_include_all"), "must_include_all") or _snippets(
        _option(options, "default_must_include_all", "defaultMustIncludeAll"), "default_must_include_all"
    )
    any_hits = [s for s in any_of if _hit(padded, s)]
    missing_any = [] if not any_of or any_hits else any_of
    missing_all = [s for s in all_of if not _hit(padded, s)]
    not_co_located = bool(
        _option(options, "require_co_located_all", "requireCoLocatedAll") and all_of and not missing_all
        and not _co_located(text, all_of)
    )
    if not missing_any and not missing_all and not not_co_located:
        return {"verdict": "covered", "evidence": f"exact evidence hit: any={', '.join(any_hits)}; all={', '.join(all_of)}"}

    alternatives = expectation.get("accepted_alternatives") or []
    for alternative in alternatives:
        alternative = _mapping(alternative, "accepted_alternatives[]")
        required = _snippets(alternative.get("must_include_all"), "accepted_alternatives[].must_include_all")
        excluded = _snippets(alternative.get("must_not_include_any"), "accepted_alternatives[].must_not_include_any")
        if all(_hit(padded, s) for s in required) and not any(_hit(padded, s) for s in excluded):
            return {"verdict": "covered", "evidence": f"accepted alternative: {alternative.get('label', '')}"}

    concepts = [_mapping(group, "required_concepts[]") for group in expectation.get("required_concepts") or []]
    if concepts and all(
        any(_hit(padded, s) for s in _snippets(group.get("any_of"), "required_concepts[].any_of")) for group in concepts
    ):
        labels = ", ".join(str(group.get("label", "")) for group in concepts)
        return {"verdict": "covered", "evidence": f"required concepts hit: {labels}"}

    return {
        "verdict": "missing",
        "evidence": (
            f"missing_any={', '.join(missing_any)}; missing_all={', '.join(missing_all)}; "
            f"not_co_located={'true' if not_co_located else 'false'}"
        ),
    }


def grade_facts(text: str, expected: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One finding of kind `fact` per entry of `expected["facts"]` (`{id, severity, …expectation}`):
    `{id, kind: "fact", severity, verdict, evidence}`, the verdict and evidence from `assess_coverage`."""
    text = _text(text, "text")
    facts = _mapping(expected, "expected").get("facts")
    if facts is None:
        raise ValueError("expected needs a 'facts' list: grade_facts(text, {'facts': [...]})")
    findings = []
    for fact in facts:
        fact = _mapping(fact, "facts[]")
        result = assess_coverage(text, fact, options)
        findings.append(
            {
                "id": fact.get("id"),
                "kind": "fact",
                "severity": fact.get("severity", "medium"),
                "verdict": result["verdict"],
                "evidence": result["evidence"],
            }
        )
    return findings
