"""A human label as data: who said what about which unit, and what the judges had said about it then.

A label is immutable; saying something else about a unit appends a new label (the latest one of a
labeller counts). Its id is a hash of its content, so importing a label that is already there adds
nothing. `parse_label` checks a label read from a file and names the field that is wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from assay.errors import UsageError

__all__ = [
    "ANSWERS",
    "LABEL_SCHEMA",
    "MAX_NOTE_CHARACTERS",
    "SCORES",
    "Judgement",
    "Label",
    "LabelError",
    "latest_labels",
    "made_at",
    "parse_label",
]

LABEL_SCHEMA = "assay.label.v1"
ANSWERS = ("pass", "fail")
SCORES = (1, 2, 3, 4, 5)
MAX_NOTE_CHARACTERS = 10_000
_UTC_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")


class LabelError(UsageError):
    """A label that cannot be stored or read back (exit 2); the message names the field."""


@dataclass(frozen=True)
class Judgement:
    """What one judge (or the deterministic checks) said about a unit, on its own scale.

    `judge` is the identity agreement is counted by: the model and the prompt (recipe or method)
    that produced the verdict; `rubric` is what it was asked to check, for a person to read."""

    judge: str
    model: str | None
    prompt: str
    rubric: str
    verdict: str | None  # pass | fail | None (no verdict: a score-only judge, an unavailable one)
    score: float | None = None
    score_range: tuple[float, float] | None = None  # the judge's own scale, e.g. (0, 1)
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge, "model": self.model, "prompt": self.prompt, "rubric": self.rubric,
            "verdict": self.verdict, "score": self.score,
            "score_range": list(self.score_range) if self.score_range is not None else None, "reason": self.reason,
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any], where: str = "judgement", *, strict: bool = False) -> Judgement:
        _require_mapping(document, where)
        unknown = sorted(set(document) - _JUDGEMENT_FIELDS)
        if strict and unknown:  # a misspelt field would be dropped, and the label's id still match the unedited one
            raise LabelError(f"{where}: unknown field(s) {_unknown_fields(unknown, _JUDGEMENT_FIELDS)}; a judgement has "
                             f"{', '.join(sorted(_JUDGEMENT_FIELDS))}")
        score_range = document.get("score_range")
        if score_range is not None and not (
            isinstance(score_range, list) and len(score_range) == 2 and all(_is_number(item) for item in score_range)
            and (not strict or score_range[0] < score_range[1])
        ):
            raise LabelError(f"{where}.score_range must be [low, high] with low < high, or null; got {score_range!r}")
        score = document.get("score")
        if score is not None and not _is_number(score):
            raise LabelError(f"{where}.score must be a number or null")
        if strict and score is not None and score_range is not None and not score_range[0] <= score <= score_range[1]:
            # mapped onto the labels' 1–5 scale it would land outside it and skew α
            raise LabelError(f"{where}.score {score!r} is outside its score_range {score_range!r}")
        verdict = document.get("verdict")
        if verdict is not None and verdict not in ANSWERS:
            raise LabelError(f"{where}.verdict must be pass, fail or null, got {verdict!r}")
        return cls(
            judge=_text(document, "judge", where), model=_optional_text(document, "model", where),
            prompt=_text(document, "prompt", where, allow_empty=True),
            rubric=_text(document, "rubric", where, allow_empty=True), verdict=verdict,
            score=float(score) if score is not None else None,
            score_range=(float(score_range[0]), float(score_range[1])) if score_range is not None else None,
            reason=_text(document, "reason", where, allow_empty=True, default=""),
        )


@dataclass(frozen=True)
class Label:
    """One person's answer about one unit: pass/fail and/or a score 1–5, and a note.

    The unit is named by its run and id, and by what makes the label apply to the same unit in
    another run: its kind, its subject (the unit id without a trial suffix) and a digest of the
    content the person judged (transcript, document, frame and observation). `judgements` and
    `checks` are what the judges and the deterministic checks said when the label was made."""

    labeller: str
    created_at: str
    run_id: str
    unit_id: str
    kind: str
    subject: str
    content: str
    verdict: str | None = None
    score: int | None = None
    note: str = ""
    judgements: tuple[Judgement, ...] = ()
    checks: str | None = None
    label_id: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.verdict is not None and self.verdict not in ANSWERS:
            raise LabelError(f"verdict must be pass or fail, got {self.verdict!r}")
        if self.score is not None and (isinstance(self.score, bool) or self.score not in SCORES):
            raise LabelError(f"score must be an integer from 1 to 5, got {self.score!r}")
        if self.verdict is None and self.score is None:
            raise LabelError("a label needs a verdict (pass or fail) or a score (1 to 5)")
        if len(self.note) > MAX_NOTE_CHARACTERS:
            raise LabelError(f"note is longer than {MAX_NOTE_CHARACTERS} characters")
        if not self.labeller.strip():
            raise LabelError("labeller must not be empty")
        if not self.label_id:
            object.__setattr__(self, "label_id", _label_id(self._content_json()))

    @property
    def item(self) -> tuple[str, str, str]:
        """What the label is about wherever it appears: (kind, subject, content digest)."""
        return self.kind, self.subject, self.content

    def _content_json(self) -> dict[str, Any]:
        return {
            "schema": LABEL_SCHEMA, "labeller": self.labeller, "created_at": self.created_at, "run_id": self.run_id,
            "unit_id": self.unit_id, "kind": self.kind, "subject": self.subject, "content": self.content,
            "verdict": self.verdict, "score": self.score, "note": self.note,
            "judgements": [judgement.to_json() for judgement in self.judgements], "checks": self.checks,
        }

    def to_json(self) -> dict[str, Any]:
        return {"label_id": self.label_id, **self._content_json()}


def _label_id(document: Mapping[str, Any]) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


_JUDGEMENT_FIELDS = frozenset({"judge", "model", "prompt", "rubric", "verdict", "score", "score_range", "reason"})
_FIELDS = frozenset({
    "label_id", "schema", "labeller", "created_at", "run_id", "unit_id", "kind", "subject", "content", "verdict",
    "score", "note", "judgements", "checks",
})


def parse_label(document: Any, *, strict: bool = False) -> Label:
    """A label from its JSON form, every field checked; its id must be the hash of its content.

    `strict` (a file being imported) also refuses what assay never writes and would read wrongly: a
    `created_at` that is no UTC time, a misspelt judgement field, a score range upside down or a score outside
    it. Labels already in a store are read as they were accepted, so an older one never makes the store unreadable."""
    _require_mapping(document, "label")
    unknown = sorted(set(document) - _FIELDS)
    if unknown:
        raise LabelError(f"unknown field(s) {_unknown_fields(unknown, _FIELDS)}; a label has {', '.join(sorted(_FIELDS))}")
    if document.get("schema") is None:  # `{}` or a label written by hand read "schema must be 'assay.label.v1', got None"
        raise LabelError(f'schema is {"null" if "schema" in document else "missing"}; a label line holds "schema": '
                         f'"{LABEL_SCHEMA}", as `assay labels export` writes it')
    if document["schema"] != LABEL_SCHEMA:
        raise LabelError(f"schema must be {LABEL_SCHEMA!r}, got {document['schema']!r}")
    judgements = document.get("judgements", [])
    if not isinstance(judgements, list):
        raise LabelError("judgements must be a list")
    checks = document.get("checks")
    if checks is not None and checks not in ANSWERS:
        raise LabelError(f"checks must be pass, fail or null, got {checks!r}")
    score = document.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int)):
        raise LabelError(f"score must be an integer from 1 to 5, got {score!r}")
    label = Label(
        labeller=_text(document, "labeller", "label"),
        created_at=_utc_time(document) if strict else _text(document, "created_at", "label"),
        run_id=_text(document, "run_id", "label"), unit_id=_text(document, "unit_id", "label"),
        kind=_text(document, "kind", "label"), subject=_text(document, "subject", "label"),
        content=_text(document, "content", "label"), verdict=document.get("verdict"), score=score,
        note=_text(document, "note", "label", allow_empty=True, default=""),
        judgements=tuple(Judgement.from_json(item, f"judgements[{index}]", strict=strict)
                         for index, item in enumerate(judgements)),
        checks=checks,
    )
    given = document.get("label_id")
    if given is not None and given != label.label_id:
        # the fix said too: a person who corrected a note by hand was left with "it was edited" and no way on
        raise LabelError(f"label_id {given!r} is not the hash of the label's content ({label.label_id}): it was edited; "
                         "put the line back as it was exported, or remove its label_id to add the edited label as a new one")
    return label


def _unknown_fields(unknown: Iterable[str], fields: Iterable[str]) -> str:
    """The unknown fields, each with the field it is close to: `verdic (did you mean 'verdict'?)`, where the whole
    list of fields left a person to spot the misspelling among fourteen names."""
    from assay.core.format import did_you_mean

    return ", ".join(f"{name}{did_you_mean(name, sorted(fields), form=' (did you mean {}?)')}" for name in unknown)


def _require_mapping(document: Any, where: str) -> None:
    if not isinstance(document, Mapping):  # named as JSON names it: `null` read "got NoneType"
        raise LabelError(f"{where} must be a JSON object, got {_JSON_TYPES.get(type(document), type(document).__name__)}")


_JSON_TYPES = {type(None): "null", bool: "true or false", int: "a number", float: "a number", str: "a string",
               list: "an array"}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) != float("inf")


def _text(document: Mapping[str, Any], name: str, where: str, *, allow_empty: bool = False, default: str | None = None) -> str:
    value = document.get(name, default)
    if not isinstance(value, str) or (not allow_empty and not value):
        raise LabelError(f"{where}.{name} must be a{'' if allow_empty else ' non-empty'} string")
    return value


def _utc_time(document: Mapping[str, Any]) -> str:
    """`created_at` as labels write it: which label of a labeller is the latest is decided by comparing these
    texts, so one that is no UTC time ("yesterday", a local time) would silently outrank every other."""
    value = _text(document, "created_at", "label")
    wanted = "an ISO 8601 UTC time such as 2026-12-01T09:00:00.000Z"
    if not _UTC_TIME.fullmatch(value):
        raise LabelError(f"label.created_at must be {wanted}, got {value!r}")
    try:
        datetime.fromisoformat(value[:-1])
    except ValueError:
        raise LabelError(f"label.created_at {value!r} is no date and time of the calendar; give {wanted}") from None
    return value


def _optional_text(document: Mapping[str, Any], name: str, where: str) -> str | None:
    value = document.get(name)
    if value is not None and not isinstance(value, str):
        raise LabelError(f"{where}.{name} must be a string or null")
    return value


def made_at(label: Label) -> str:
    """`created_at` in a form that sorts as the moments do: `09:00:00Z`, `09:00:00.5Z` and `09:00:00.123Z` (all valid)
    sorted as text put the first last; another text (a label of an older assay) is left as it is."""
    moment = _UTC_TIME.fullmatch(label.created_at)
    if moment is None:
        return label.created_at
    return f"{label.created_at[:19]}.{(moment.group(1) or '.')[1:].ljust(6, '0')}"


def latest_labels(labels: Iterable[Label]) -> dict[tuple[str, str, str], Label]:
    """(labeller, run id, unit id) -> that labeller's latest label of the unit: the one made last (`labels` in the order
    added; of two made at the same moment, the one added last). An import appends labels made earlier, elsewhere: taken
    in the order added, a golden set imported after a person labelled again put back the answer they had changed."""
    latest: dict[tuple[str, str, str], Label] = {}
    for label in labels:
        key = (label.labeller, label.run_id, label.unit_id)
        if key not in latest or made_at(label) >= made_at(latest[key]):
            latest[key] = label
    return latest
